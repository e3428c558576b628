#pragma once
/// \file
/// \brief Chapter 05: many blocks, and the block reduction.
///
/// Every version has the same shape: device pointers in, the result written to one float in
/// device memory, asynchronously on a stream (the two-level version must wait for its partials:
/// that is its point). The registry, versions(), is the only list of them: the command line, the
/// tests, the benchmark and the text all iterate it.

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "course/buffer.hpp"
#include "course/registry.hpp"

struct cublasContext;  // cuBLAS's handle type; only dot.cu needs its header

namespace ch05 {

/// Elements each thread of the two-level version sums before the block reduction (--per-thread).
constexpr int kDefaultPerThread = 8;

/// What launchers keep between calls: scratch memory, grown on first use (so the first call of a
/// size allocates and the timed ones do not), the cuBLAS handle, the two-level knob, and the shape
/// of the last launch for the driver's tables and the tests. One workspace per stream; not
/// copyable.
class Workspace {
 public:
  Workspace() = default;
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  int per_thread = kDefaultPerThread;  ///< elements per thread of two_level, >= 1
  int grid = 0;                        ///< blocks of the last launch's main kernel (0: a library call)
  int block = 0;                       ///< threads per block of the last launch's main kernel

  /// `count` floats of device scratch (one partial per block); waits for `stream` before growing.
  float* device_partials(std::size_t count, cudaStream_t stream);
  /// `count` floats of pinned host scratch, for partials copied back; waits before growing.
  float* host_partials(std::size_t count, cudaStream_t stream);
  /// One pinned float: a result computed on the host, on its way to the device.
  float* host_result();
  /// The cuBLAS handle, created on first use, with the result pointer mode set to device.
  cublasContext* cublas();

 private:
  course::DeviceBuffer<float> d_partials_;
  std::unique_ptr<course::PinnedBuffer<float>> h_partials_;  // (PinnedBuffer cannot be reassigned)
  std::unique_ptr<course::PinnedBuffer<float>> h_result_;
  cublasContext* cublas_ = nullptr;
};

/// Computes x·y over n elements into *d_result (device memory), asynchronously on `stream`.
using Launcher = void (*)(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                          cudaStream_t stream);

/// One entry of the registry: the launcher and what the driver and the tests need to know.
struct GpuDot {
  Launcher launch;
  /// The same inputs give the same bits on every run (no atomics: a fixed order of additions).
  bool deterministic = false;
};

/// The chapter's registry, in the order the text tells the story; cuBLAS first, as the baseline.
const std::vector<course::Version<GpuDot>>& versions();

}  // namespace ch05
