#pragma once
// Chapter 01 — timing, and when the GPU wins. Declarations shared by the driver and the tests.

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/random.hpp"  // COURSE_HOST_DEVICE: __host__ __device__ under nvcc, nothing under g++
#include "course/registry.hpp"

namespace ch01 {

/// Inputs, output and parameters of one experiment in one precision, on host and device.
template <class T>
struct Problem {
  std::size_t n = 0;
  int iters = 0;  ///< square roots per element in the arithmetic-intensity experiment
  std::vector<T> h_a, h_b, h_out;
  course::DeviceBuffer<T> d_a, d_b, d_out;  ///< empty without a context (the CPU versions need none)
  course::Context* ctx = nullptr;           ///< the GPU's context: its stream orders every copy and fill

  /// Random signed inputs of n elements (seeded) and outputs poisoned with NaN. With a context,
  /// also on its device: uploaded and poisoned on ctx->stream(), which is synchronized once before
  /// returning. Without one (nullptr), host arrays only.
  Problem(std::size_t n, int iters, unsigned long long seed, course::Context* ctx);
  /// Makes every output NaN: on the host at once, on the device enqueued on the context's stream
  /// (work enqueued after it on that stream sees the poison; no wait).
  void poison();
};

/// One way of computing the experiment, in both precisions.
struct Runner {
  void (*f32)(Problem<float>&, cudaStream_t);
  void (*f64)(Problem<double>&, cudaStream_t);
  bool on_gpu;     ///< needs a GPU; timed with CUDA events (else with a host clock)
  bool intensity;  ///< the arithmetic-intensity experiment (else the vector add)
};

/// The chapter's versions, in the order the text discusses them.
const std::vector<course::Version<Runner>>& versions();

// ---------------------------------------------------------------------------------------------
// The index arithmetic of exercise 1, on the host and on the device. add_kernel and launch_add
// (add.cu) call these two functions for the thread's element and the launch's shape, and the host
// tests `ch01 index: ...` call the same functions, so a student without a GPU learns whether the
// arithmetic is right. They are compiled for the host too: use their arguments only, no blockIdx,
// blockDim or threadIdx.
// ---------------------------------------------------------------------------------------------

/// The shape of a one-dimensional launch: `grid` blocks of `block` threads each. The grid is a
/// std::size_t so that a shape can say how many blocks n elements need even where that is more
/// than one launch can have (launch_add refuses those).
struct LaunchShape {
  unsigned block = 0;
  std::size_t grid = 0;
};

// [global_index]
/// Exercise 1: the global index of thread `tid` of block `block`, in a grid of blocks of
/// `block_dim` threads: the thread's place among all the threads of the grid, counted from 0.
COURSE_HOST_DEVICE inline std::size_t global_index(unsigned block, unsigned block_dim, unsigned tid) {
  // BEGIN SOLUTION
  // In 64 bits from the first product: block * block_dim is an unsigned product that wraps past
  // 2^32 threads, and a grid of 10^10 threads is a legal launch.
  return static_cast<std::size_t>(block) * block_dim + tid;
  // STUB
  //> // TODO(student): the number of threads of the grid that come before this one: all the threads
  //> // of the blocks before `block`, then the threads before `tid` in its own block. Exact for
  //> // every block, block_dim and tid a launch can have, past 2^32 threads too. Tests (host, no
  //> // GPU): `ch01 index: global_index *`; then `ch01 add_gpu: *`. See README §Exercise 1.
  //> (void)block, (void)block_dim, (void)tid;
  //> return 0;
  // END SOLUTION
}
// [global_index]

// [launch_shape]
/// Exercise 1: threads per block and blocks for a launch of one thread per element over n >= 1
/// elements. launch_add uses it (and refuses a grid larger than a launch can have).
COURSE_HOST_DEVICE inline LaunchShape launch_shape(std::size_t n) {
  // BEGIN SOLUTION
  LaunchShape shape;
  shape.block = 256;                                 // a multiple of the warp size (32)
  shape.grid = (n + shape.block - 1) / shape.block;  // round up: every element gets a thread
  return shape;
  // STUB
  //> // TODO(student): a block of a whole number of warps (a multiple of 32, at most 1024 threads),
  //> // and enough blocks that each of the n elements gets a thread, with less than one block of
  //> // threads to spare, for every n >= 1 (past 2^32 too). Tests (host, no GPU): `ch01 index:
  //> // launch_shape *`; then `ch01 add_gpu: *`, `ch01 add_gpu_copies: *`. See README §Exercise 1.
  //> (void)n;
  //> return LaunchShape{1, 1};
  // END SOLUTION
}
// [launch_shape]

/// The vector add on the device: out[i] = a[i] + b[i] for i < n, asynchronous on `stream`.
template <class T>
void launch_add(const T* d_a, const T* d_b, T* d_out, std::size_t n, cudaStream_t stream);

/// What the add and the square-root loop compute for one element, on the host: the reference.
template <class T>
T sqrt_loop(T a, T b, int iters);

/// Exercise 3 (think): the milliseconds that launch_add on n elements of `elem_bytes` bytes each
/// would take if the kernel were limited by memory alone, on a card that moves `gbps` GB/s
/// (10^9 bytes per second). The driver prints it beside the measured time. Throws
/// course::UsageError unless gbps > 0.
double predicted_add_ms(std::size_t n, std::size_t elem_bytes, double gbps);

/// add_kernel's thread `tid` of block `block` (blocks of `block_dim` threads) on host arrays, without a
/// GPU: the kernel calls the same __host__ __device__ helper (add.cu's exercise 1), so the host tests
/// run every thread of a grid here.
namespace on_host {
void add_thread(const float* a, const float* b, float* out, std::size_t n, unsigned block, unsigned block_dim,
                unsigned tid);
void add_thread(const double* a, const double* b, double* out, std::size_t n, unsigned block, unsigned block_dim,
                unsigned tid);
}  // namespace on_host

/// Times whatever `launch` enqueues on `stream` with a pair of CUDA events; returns milliseconds
/// of GPU time (exercise 2).
float time_with_events_ms(const std::function<void()>& launch, cudaStream_t stream);

}  // namespace ch01
