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
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/registry.hpp"

namespace ch05 {

/// Elements each thread of the two-level version sums before the block reduction (--per-thread).
constexpr int kDefaultPerThread = 8;
/// The largest n a Workspace plans for unless told otherwise (2^24: 128 MiB of inputs).
constexpr std::size_t kDefaultMaxN = std::size_t{1} << 24;

/// What launchers are given and keep between calls: the context of the GPU they run on (its
/// stream, its cuBLAS handle, its cached launch shapes, its scratch arena), the partials' place in
/// that arena and pinned host scratch, both planned at construction for inputs of up to max_n
/// elements (so no call allocates), the two-level knob, and the shape of the last launch for the
/// driver's tables and the tests. `ch05::Workspace ws(ctx);` or `ws(ctx, max_n)`; the context must
/// outlive it. Not copyable.
///
/// The scratch is the context's: two workspaces of one context share it, which is safe while
/// their calls run on one stream (ctx.stream()), one after another.
class Workspace {
 public:
  explicit Workspace(course::Context& context, std::size_t max_n = kDefaultMaxN);
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  course::Context& ctx;                ///< the GPU's state; launchers normally run on ctx.stream()
  int per_thread = kDefaultPerThread;  ///< elements per thread of two_level, >= 1
  int grid = 0;                        ///< blocks of the last launch's main kernel (0: a library call)
  int block = 0;                       ///< threads per block of the last launch's main kernel

  /// The largest n two_level accepts (it needs one partial per block); the other versions take any n.
  std::size_t max_n() const noexcept { return max_n_; }
  /// `count` floats of device scratch (one partial per block), in the context's arena. Throws
  /// UsageError when the workspace was planned for fewer.
  float* device_partials(std::size_t count);
  /// `count` floats of pinned host scratch, for partials copied back; the same limit.
  float* host_partials(std::size_t count);
  /// One pinned float: a result computed on the host, on its way to the device.
  float* host_result() noexcept { return h_result_.data(); }

 private:
  std::size_t max_n_;
  std::size_t partials_ = 0;          // partials planned for: the most any version needs up to max_n
  std::size_t partials_offset_ = 0;   // where they start in the context's scratch
  std::size_t scratch_bytes_ = 0;     // the layout's total: what this workspace asks the arena for
  course::PinnedBuffer<float> h_partials_;
  course::PinnedBuffer<float> h_result_;
};

/// Computes x·y over n elements into *d_result (device memory), asynchronously on `stream`
/// (normally ws.ctx.stream()).
using Launcher = void (*)(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                          cudaStream_t stream);

/// One entry of the registry: the launcher and what the driver and the tests need to know.
struct GpuDot {
  Launcher launch;
  /// The same inputs give the same bits on every run (no atomics: a fixed order of additions).
  bool deterministic = false;
  /// Not a dot product: the speed-of-light row, the same bytes read with the best access pattern and
  /// nothing else, timed beside the versions. Its value is only a sign that it ran (finite): the
  /// driver and the tests never hold it to the reference.
  bool floor = false;
};

/// The chapter's registry, in the order the text tells the story; cuBLAS first, as the baseline.
const std::vector<course::Version<GpuDot>>& versions();

/// Exercise 4 (think): the sum of `values` (1 to 1024 of them) by one block of values.size()
/// threads, thread t holding values[t], through the device function block_sum_any (a tree for any
/// block size). Waits for the result. For the tests.
float block_sum_any_on_gpu(const std::vector<float>& values, course::Context& ctx);

}  // namespace ch05
