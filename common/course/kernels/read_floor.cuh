#pragma once
/// \file read_floor.cuh
/// \brief The speed-of-light kernel: taught in chapter 06 (its speed_of_light row, read_only_kernel
/// there), kept here once for the chapters after it whose floor is a read of device memory (11).
///
/// Not a dot product: the floor a dot is held to. The same 8n bytes read with the best access
/// pattern the course knows (chapter 06's version 12: thread_dot_vec4's 16-byte loads, kFloorUnroll
/// float4 of x and of y in flight per thread, on version 12's grid) and nothing else: no block
/// reduction, no partials, no combine. Each thread sums its products only so that the compiler
/// cannot drop its loads, and one value is written. A floor that skipped its loads would be a lie.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "course/check.hpp"
#include "course/kernels/vec4_dot.cuh"

namespace course::kernels {

/// Chapter 06's version 12 shape: threads per block, and 16-byte loads of x and of y per thread
/// per trip (kBlock12, kUnroll12 there).
constexpr unsigned kFloorBlock = 1024;
constexpr int kFloorUnroll = 2;

// [read_floor_kernel]
// Thread 0 of block 0 writes its sum; so does any thread whose sum has one unlikely bit pattern, so
// the compiler must keep every thread's loads (it cannot prove that no sum has those bits). Its time
// per call is what the launch, the first trip to DRAM and the bytes cost together.
template <unsigned Block = kFloorBlock, int Unroll = kFloorUnroll>
__global__ void __launch_bounds__(Block, 2) read_floor_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                              std::size_t n, float* __restrict__ result) {
  const std::size_t thread = blockIdx.x * std::size_t{Block} + threadIdx.x;
  const float sum = thread_dot_vec4<Unroll>(x, y, n, thread, std::size_t{gridDim.x} * Block);
  if ((blockIdx.x == 0 && threadIdx.x == 0) || __float_as_uint(sum) == 0x7fc0deadu) *result = sum;
}
// [read_floor_kernel]

/// The blocks the SMs hold at once: two per SM at most, never more than kFloorBlock (chapter 06's
/// grid12). The current device must be the one the kernel will run on.
inline int read_floor_resident(int sm_count) {
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_floor_kernel<>, static_cast<int>(kFloorBlock), 0));
  if (per_sm < 1)
    throw CudaError(cudaErrorLaunchOutOfResources, "read_floor_kernel: not one block of " +
                                                       std::to_string(kFloorBlock) + " threads fits on an SM");
  return std::min<int>(static_cast<int>(kFloorBlock), sm_count * std::min(2, per_sm));
}

/// Enqueues the floor over x[0, n) and y[0, n) on `stream`: one trip per thread (kFloorBlock ×
/// kFloorUnroll float4 = 8192 elements per block) while that fits in `resident` blocks
/// (read_floor_resident), else `resident` blocks, each looping. One value lands in *result (any n,
/// 0 included: one block that reads nothing writes 0). Any 4-byte alignment of x and y.
inline void launch_read_floor(const float* x, const float* y, std::size_t n, float* result, int resident,
                              cudaStream_t stream) {
  const std::size_t per_block = std::size_t{kFloorBlock} * 4 * kFloorUnroll;
  const std::size_t wanted = std::max<std::size_t>(1, (n + per_block - 1) / per_block);
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(std::max(1, resident))));
  read_floor_kernel<><<<blocks, kFloorBlock, 0, stream>>>(x, y, n, result);
  CUDA_CHECK_LAUNCH("read_floor_kernel");
}

}  // namespace course::kernels
