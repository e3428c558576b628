#pragma once
/// \file two_pass.cuh
/// \brief The two-pass dot: taught in chapter 05 (two_level, warp_shuffle with sum_partials); used
/// by the chapters that need a plain deterministic dot beside their own lesson (07, 08, 09).
///
/// Pass 1 (dot_partials): a grid-stride loop, one partial per block, no atomics. Pass 2
/// (sum_partials): one block adds the partials in a fixed order. The grid depends only on n and the
/// device, so the order of every addition is fixed: the same inputs give the same bits.

#include <cstddef>

#include "course/kernels/block_sum.cuh"

namespace course::kernels {

// [dot_kernels]
/// Pass 1. With Vec4, x and y must be 16-byte aligned: the first n / 4 float4 of each are read with
/// 16-byte loads, the scalar tail by the first threads. Launch with Block threads per block.
template <unsigned Block, bool Vec4 = false>
__global__ void __launch_bounds__(Block) dot_partials(const float* __restrict__ x, const float* __restrict__ y,
                                                      std::size_t n, float* __restrict__ partials) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float sum = 0.0f;
  std::size_t done = 0;
  if constexpr (Vec4) {
    const std::size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    for (std::size_t i = tid; i < n4; i += stride) {
      const float4 a = x4[i], b = y4[i];
      sum += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    done = n4 * 4;
  }
  for (std::size_t i = done + tid; i < n; i += stride) sum += x[i] * y[i];
  sum = block_sum<Block>(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

/// Pass 2: one block of Block threads adds the `count` partials in a fixed order, writes *result.
template <unsigned Block>
__global__ void __launch_bounds__(Block) sum_partials(const float* __restrict__ partials, int count,
                                                      float* __restrict__ result) {
  float sum = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) sum += partials[i];
  sum = block_sum<Block>(sum);
  if (threadIdx.x == 0) *result = sum;
}
// [dot_kernels]

}  // namespace course::kernels
