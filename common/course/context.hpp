#pragma once
/// \file context.hpp
/// \brief course::Context: everything that belongs to one GPU, in one object.
///
/// A function-local static is right only for the first device a process touches: a second device,
/// a second thread or a library that outlives one run all get the wrong handle. So the state that
/// belongs to a device lives here, once per device: its id, a non-blocking stream, the facts
/// queried from it, its measured roofline, the cuBLAS handle (made on first use), cached launch
/// shapes, and one scratch arena that is sized in two phases (add up what every user needs for the
/// largest n, allocate once, reuse on every call; CUB's temp-storage pattern).
///
/// Rules: every operation that touches the GPU takes the context's stream; only the edge of a
/// program synchronizes. A Context is not thread-safe: use one per host thread, or lock around it.

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "course/device.hpp"

struct cublasContext;  // cuBLAS's handle type; only context.cu includes cuBLAS's header

namespace course {

/// Two-phase scratch layout: each user adds the regions it needs for the largest n it will see,
/// and keeps the offsets; the context allocates the total once (Context::reserve_scratch), and the
/// users find their regions at scratch_base() + offset on every call.
class ScratchLayout {
 public:
  /// Adds a region of `bytes` (aligned to `align`, a power of two) and returns its offset.
  std::size_t add(std::size_t bytes, std::size_t align = 256);
  /// Bytes the whole layout needs.
  std::size_t bytes() const noexcept { return total_; }

 private:
  std::size_t total_ = 0;
};

/// A launch shape from the occupancy API: threads per block and resident blocks per SM.
struct LaunchShape {
  int block = 0;
  int blocks_per_sm = 0;
};

/// One GPU's state. Not copyable; movable (a moved-from Context holds nothing).
class Context {
 public:
  /// Selects `device` (cudaSetDevice), queries its facts and creates a non-blocking stream.
  /// Throws NoGpuError when there is no usable GPU, UsageError when `device` does not exist.
  explicit Context(int device = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;

  /// The device id this context belongs to.
  int device() const noexcept { return device_; }
  /// Makes this context's device current on the calling thread (cheap; call before launching
  /// from a thread that may have used another device).
  void activate() const;
  /// The context's stream: non-blocking, so it never waits for the legacy default stream.
  cudaStream_t stream() const noexcept { return stream_; }
  /// Waits until everything enqueued on the stream has finished (for the edge of a program).
  void synchronize() const;

  /// The device's facts, queried at construction.
  const DeviceFacts& facts() const noexcept { return facts_; }
  /// The measured roofline of this device: measured on first use (a few hundred ms), then cached.
  const Roofline& roofline();

  /// The cuBLAS handle, created on first use, bound to stream(), pointer mode device (results
  /// stay on the GPU). Links CUDA::cublas (course_common does).
  cublasContext* cublas();

  /// The scratch arena holds at least `bytes` afterwards. Grows (after waiting for the stream,
  /// whose work may still use the old arena) or keeps what it has; never shrinks. Call it at set-up
  /// with the total of a ScratchLayout, not in a timed loop.
  void reserve_scratch(std::size_t bytes);
  /// The arena's start, for offsets from a ScratchLayout. Throws UsageError when fewer than
  /// `bytes` were reserved: a call that needs more than the set-up planned is a bug to report,
  /// not a reason to allocate in a timed loop.
  void* scratch(std::size_t bytes) const;
  /// Bytes the arena holds now.
  std::size_t scratch_bytes() const noexcept { return scratch_bytes_; }

  /// The occupancy shape of `kernel` with `shared_per_thread` bytes of dynamic shared memory per
  /// thread, cached per kernel: the block size that keeps the most warps resident (rounded down
  /// to a power of two, at least 32), and how many such blocks an SM holds.
  template <class Kernel>
  LaunchShape occupancy(Kernel kernel, std::size_t shared_per_thread = 0) {
    return occupancy_of(reinterpret_cast<const void*>(kernel), shared_per_thread);
  }

  /// Blocks that fill the GPU for `shape`: blocks_per_sm × SMs.
  int resident_blocks(const LaunchShape& shape) const noexcept { return shape.blocks_per_sm * facts_.sm_count; }

 private:
  LaunchShape occupancy_of(const void* kernel, std::size_t shared_per_thread);
  void release() noexcept;

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  DeviceFacts facts_;
  std::unique_ptr<Roofline> roofline_;
  cublasContext* cublas_ = nullptr;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  std::map<std::pair<const void*, std::size_t>, LaunchShape> shapes_;
};

/// Queries the facts of `device` (no caching: Context keeps them).
DeviceFacts query_device_facts(int device);

/// Measures the read roofline of the context's device on its stream (a few hundred ms).
Roofline measure_roofline(Context& ctx);

/// Number of CUDA devices, 0 when there is no usable GPU (never throws).
int device_count();

}  // namespace course
