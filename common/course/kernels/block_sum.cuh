#pragma once
/// \file block_sum.cuh
/// \brief The block sum: taught in chapter 05 (block_sum_shuffle), kept here once for the chapters
/// after it, from chapter 06's version 8 on (CUB's BlockReduce is the model).
///
/// Shuffles within each warp, the warps' sums through shared memory, shuffles again in warp 0. The
/// order of the additions depends only on the thread index: the same inputs give the same bits on
/// every run. Any accumulator of up to 8 bytes (float, double, int, long long, __half, ...): a
/// shuffle moves its bits.

#include <cstring>

namespace course::kernels {

constexpr unsigned kWarp = 32;               ///< lanes per warp: the shuffles below are written for 32
constexpr unsigned kFullMask = 0xffffffffu;  ///< every lane takes part in each shuffle

/// __shfl_down_sync for any type of up to 8 bytes.
template <class T>
__device__ __forceinline__ T shfl_down(T v, unsigned offset) {
  static_assert(sizeof(T) <= 8, "accumulators of up to 8 bytes");
  if constexpr (sizeof(T) <= 4) {
    unsigned u = 0;
    std::memcpy(&u, &v, sizeof(T));
    u = __shfl_down_sync(kFullMask, u, offset);
    std::memcpy(&v, &u, sizeof(T));
  } else {
    unsigned long long u = 0;
    std::memcpy(&u, &v, sizeof(T));
    u = __shfl_down_sync(kFullMask, u, offset);
    std::memcpy(&v, &u, sizeof(T));
  }
  return v;
}

// [block_sum]
/// The warp's sum, in lane 0 (offsets 16, 8, 4, 2, 1). shfl_down (above) is __shfl_down_sync for
/// any type of up to 8 bytes: it moves the bits.
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) v += shfl_down(v, offset);
  return v;
}

/// The block's total, valid in thread 0. Block threads (a multiple of 32, at most 1024) must all
/// call it: it holds a barrier. Its shared memory is used again by a second call only after a
/// __syncthreads() of the caller's.
template <unsigned Block, class T>
__device__ __forceinline__ T block_sum(T v) {
  static_assert(Block % kWarp == 0 && Block <= kWarp * kWarp, "Block: a multiple of 32, at most 1024");
  __shared__ alignas(sizeof(T)) unsigned char s_raw[Block / kWarp * sizeof(T)];
  T* s_warp = reinterpret_cast<T*>(s_raw);
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned warp = threadIdx.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) s_warp[warp] = v;
  __syncthreads();  // every warp's sum is written before warp 0 reads them
  if (warp == 0) v = warp_sum(lane < Block / kWarp ? s_warp[lane] : static_cast<T>(0.0f));
  return v;
}
// [block_sum]

}  // namespace course::kernels
