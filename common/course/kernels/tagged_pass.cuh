#pragma once
/// \file tagged_pass.cuh
/// \brief The tagged single pass with its occupancy-checked grid: taught in chapter 06 (version 12,
/// dot_kernel12 there), kept here once for the kernels after it (chapters 07, 10, 11).
///
/// Every block but the last publishes its partial with the call's tag in 8-byte words
/// (tag << 32 | 32 bits of the partial: one store, seen whole or not at all, so no fence is needed)
/// and exits; the last block waits until every slot carries the tag and adds them in block order:
/// deterministic, one launch, nothing to reset (the host draws a new tag per call). Waiting for
/// other blocks is safe only while every block of the grid is resident at once, so the grid comes
/// from the occupancy API (resident_grid), never from a guess: __launch_bounds__ caps registers, it
/// guarantees no residency.

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/kernels/block_sum.cuh"

namespace course::kernels {

/// 8-byte words a partial of type Acc takes: 1 for up to 4 bytes, 2 for 8.
template <class Acc>
constexpr int kTaggedWords = sizeof(Acc) <= 4 ? 1 : 2;

/// Block `block`'s partial, tagged, into its slot: words [Stride·block, Stride·block + words).
/// One thread calls it.
template <class Acc, int Stride = kTaggedWords<Acc>>
__device__ __forceinline__ void publish_tagged(unsigned long long* tagged, unsigned block, unsigned tag, Acc sum) {
  constexpr int kWords = kTaggedWords<Acc>;
  unsigned words[2] = {0, 0};
  std::memcpy(words, &sum, sizeof(Acc));
#pragma unroll
  for (int w = 0; w < kWords; ++w)
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(tagged[Stride * block + w])
        .store(static_cast<unsigned long long>(tag) << 32 | words[w], cuda::memory_order_relaxed);
}

/// The last block's side: the sum, in block order, of the `last` partials of blocks 0 .. last − 1,
/// each read (from L2: never a stale L1 line) once its slot carries `tag`; valid in thread 0. Every
/// thread of the block (Block threads, at least `last` of them: one slot per thread) calls it, after
/// a __syncthreads() when block_sum's shared memory was used just before.
template <unsigned Block, class Acc, int Stride = kTaggedWords<Acc>>
__device__ __forceinline__ Acc gather_tagged(unsigned long long* tagged, unsigned last, unsigned tag) {
  constexpr int kWords = kTaggedWords<Acc>;
  Acc others = static_cast<Acc>(0.0f);
  for (unsigned b = threadIdx.x; b < last; b += Block) {
    unsigned words[2] = {0, 0};
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> slot(tagged[Stride * b + w]);
      unsigned long long word = slot.load(cuda::memory_order_relaxed);
      while (static_cast<unsigned>(word >> 32) != tag) word = slot.load(cuda::memory_order_relaxed);
      words[w] = static_cast<unsigned>(word);
    }
    Acc v;
    std::memcpy(&v, words, sizeof(Acc));
    others += v;
  }
  return block_sum<Block>(others);
}

/// The whole combine after each thread's share: the block's sum, then (every block but the last)
/// publish and exit, or (the last block) gather the others and write `to_result(others + sum)` to
/// *result from thread 0. Slots are Stride words apart.
template <unsigned Block, int Stride, class Acc, class Out, class ToResult>
__device__ __forceinline__ void tagged_single_pass(Acc sum, unsigned long long* tagged, unsigned tag, Out* result,
                                                   ToResult to_result) {
  sum = block_sum<Block>(sum);  // valid in thread 0
  const unsigned last = gridDim.x - 1;
  if (blockIdx.x != last) {
    if (threadIdx.x == 0) publish_tagged<Acc, Stride>(tagged, blockIdx.x, tag, sum);
    return;
  }
  if (last == 0) {  // one block had the whole input
    if (threadIdx.x == 0) *result = to_result(sum);
    return;
  }
  __syncthreads();  // block_sum's shared memory is used again below
  const Acc others = gather_tagged<Block, Acc, Stride>(tagged, last, tag);
  if (threadIdx.x == 0) *result = to_result(others + sum);
}

/// The most blocks of `kernel` (`block` threads, no dynamic shared memory) resident on the device at
/// once, two per SM at most, and at most grid_max (the slots there are). The last block waits for
/// all the others: a block left waiting for an SM would never come. `who` names the kernel in the
/// error when not one block fits. The current device must be the kernel's.
inline int resident_grid(const void* kernel, unsigned block, int sm_count, int grid_max, const std::string& who) {
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(block), 0));
  if (per_sm < 1)
    throw CudaError(cudaErrorLaunchOutOfResources,
                    who + ": not one block of " + std::to_string(block) + " threads fits on an SM");
  return std::min(grid_max, std::min(2, per_sm) * sm_count);
}

/// The tag of the next call on `slots` after `tag` (never 0 nor 0xFFFFFFFF: slots start at 0 and a
/// poisoned slot holds 0xFFFFFFFF); clears the slots on `stream` when the 32-bit tag wraps.
inline unsigned next_tag(unsigned& tag, DeviceBuffer<unsigned long long>& slots, cudaStream_t stream) {
  if (++tag == 0xFFFFFFFFu || tag == 0) {
    CUDA_CHECK(cudaMemsetAsync(slots.data(), 0, slots.bytes(), stream));
    tag = 1;
  }
  return tag;
}

}  // namespace course::kernels
