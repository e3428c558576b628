// Chapter 06 — the reduction ladder: from the classic seven reduction kernels to the bandwidth
// limit of the card, applied to the dot product Σ x[i]·y[i].
//
// Versions (ch06::versions(); one with `06_ladder --kernel NAME --n 2^28`, the report with `06_ladder`):
//   cublas             cublasSdot_64, the library baseline (two kernels)     06_ladder --kernel cublas
//   cub                cub::DeviceReduce::TransformReduce over x·y           06_ladder --kernel cub
//   atomic_vec4        float4 loop, shuffles, atomicAdd per block (baseline) 06_ladder --kernel atomic_vec4
//   speed_of_light     not a dot: version 12's loads and grid, no combine    06_ladder --kernel speed_of_light
//   v1_divergent       interleaved addressing, divergent branch (tid % 2s)   06_ladder --kernel v1_divergent
//   v2_bank_conflicts  interleaved addressing, strided index: bank conflicts 06_ladder --kernel v2_bank_conflicts
//   v3_sequential      sequential addressing (exercise)                      06_ladder --kernel v3_sequential
//   v4_first_add       first add during load: half the blocks (exercise)     06_ladder --kernel v4_first_add
//   v5_unroll_warp     the last warp without __syncthreads (__syncwarp)      06_ladder --kernel v5_unroll_warp
//   v6_unroll_all      complete unrolling, block size as a template          06_ladder --kernel v6_unroll_all
//   v7_many_per_thread several elements per thread, grid-stride loop         06_ladder --kernel v7_many_per_thread
//   v8_shuffle         warp shuffles: the kit's block_sum (chapter 05)       06_ladder --kernel v8_shuffle
//   v9_float4          16-byte loads, scalar head and tail, misaligned path  06_ladder --kernel v9_float4
//   v10_machine_grid   grid = SMs × resident blocks                          06_ladder --kernel v10_machine_grid
//   v11_single_pass    the last block adds the partials: one launch (exercise) 06_ladder --kernel v11_single_pass
//   v12_tagged_partials tagged partials, the last block reads them at once  06_ladder --kernel v12_tagged_partials
// The library baselines live in baselines.cu; the atomic baseline (not deterministic) lives here.
// Two measuring sticks, not dot products: the speed-of-light row of the registry (the read-only
// kernel: the final version's loads on its grid, no combine, timed like every version) and, in the
// driver only, an empty kernel (the launch-latency floor).
//
// Versions 1–10 write one partial sum per block; a second, one-block kernel (finish_kernel) adds
// them, in the same stream, without the host waiting. Versions 11 and 12 need no second launch.

#include <cuda/atomic>

#include <algorithm>
#include <cstdint>
#include <string>

#include "course/check.hpp"
#include "course/kernels/block_sum.cuh"
#include "course/kernels/vec4_dot.cuh"
#include "dot.hpp"

namespace ch06 {
namespace {

/// Versions 7 and 9 give each thread about log2(n) elements (Brent's theorem, the 2007 text's
/// "algorithm cascading"): 32 elements per thread.
constexpr std::size_t kPerThread = 32;
/// 16-byte loads each thread of versions 9–11 has in flight per input before it adds anything.
constexpr int kUnroll = 4;
/// Version 12: threads per block, and 16-byte loads of x and of y per thread per trip.
constexpr unsigned kBlock12 = 1024;
constexpr int kUnroll12 = 2;
/// Threads of the one block that adds the partial sums of versions 1–10.
constexpr unsigned kFinishBlock = 1024;

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The tests' forced finishing order for version 11 (force_finish_order in dot.hpp). Read from
// constant memory once per block, on a branch every thread of the block takes alike: the default
// (no delay) costs the benchmark one cached load per block.
struct FinishDelay {
  unsigned order;  // FinishOrder
  unsigned block;
  unsigned ns;
};
__constant__ FinishDelay c_finish_delay = {0, 0, 0};

__device__ __forceinline__ void forced_finish_delay() {
  const FinishDelay d = c_finish_delay;
  if (d.order == 0) return;
  const unsigned long long ns = finish_delay_ns(static_cast<FinishOrder>(d.order), d.block, d.ns, blockIdx.x, gridDim.x);
  for (unsigned long long waited = 0; waited < ns; waited += 1000) __nanosleep(1000);
}

// ---------------------------------------------------------------------------------------------
// The classic sequence (Harris, "Optimizing parallel reduction in CUDA", 2007), summing products.
// ---------------------------------------------------------------------------------------------

// [v1_kernel]
// Version 1: each thread puts one product in shared memory; at step s, the threads whose index is
// a multiple of 2s add the neighbour s away. Still slow: `tid % (2 * s)` leaves most threads of
// every warp idle, but the warp runs the branch for all of them (divergence), and % by a
// divisor unknown at compile time is some fifteen instructions.
__global__ void dot_kernel1(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[kBlock];
  const unsigned tid = threadIdx.x;
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + tid;
  s_data[tid] = i < n ? x[i] * y[i] : 0.0f;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) s_data[tid] += s_data[tid + s];
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = s_data[0];
}
// [v1_kernel]

// [v2_kernel]
// Version 2: the same additions, done by the first threads of the block (index = 2·s·tid), so
// whole warps are either busy or idle: no divergence. Still slow: consecutive threads touch words
// 2s apart, which fall into the same shared-memory bank: a 2s-way bank conflict serializes them.
__global__ void dot_kernel2(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[kBlock];
  const unsigned tid = threadIdx.x;
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + tid;
  s_data[tid] = i < n ? x[i] * y[i] : 0.0f;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * tid;
    if (index < blockDim.x) s_data[index] += s_data[index + s];
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = s_data[0];
}
// [v2_kernel]

// [v3_kernel]
// Version 3: sequential addressing. Fold the upper half of the array onto the lower half, then the
// upper quarter onto the lower quarter, ...: consecutive threads read consecutive words, one bank
// each. Still slow: half the threads idle from the first step on, and every thread loads one
// product only, so a block does little work for its launch and its eight barriers.
// The tree runs in a __host__ __device__ helper that gets the block's barrier as an argument, so
// that the host tests play it on a simulated block (`ch06 v3 player: *`, no GPU). Its steps are
// exercise 1's hole, sequential_steps (dot.hpp).
COURSE_HOST_DEVICE_TEMPLATE
template <class Barrier>
COURSE_HOST_DEVICE inline void sequential_in_shared(float* s_data, unsigned tid, unsigned count, Barrier barrier) {
  sequential_steps(tid, count, [&](unsigned to, unsigned from) { s_data[to] += s_data[from]; }, barrier);
}

__global__ void dot_kernel3(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[kBlock];
  const unsigned tid = threadIdx.x;
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + tid;
  s_data[tid] = i < n ? x[i] * y[i] : 0.0f;
  __syncthreads();
  sequential_in_shared(s_data, tid, blockDim.x, [] { __syncthreads(); });
  if (tid == 0) partials[blockIdx.x] = s_data[0];
}
// [v3_kernel]

// [v4_kernel]
// Version 4: first add during load. Each block covers 2·blockDim.x elements and each thread adds
// two products before the tree starts: half the blocks, and no thread idle at the first step.
// Still slow: the tree's last five steps run in one warp, yet pay for __syncthreads() and the
// loop's arithmetic as if the whole block took part.
// A thread's first add is a __host__ __device__ helper: the host tests run it for every thread of
// every block on host arrays (`ch06 v4 on the host: *`, no GPU). Its indices are exercise 2's hole,
// first_add_elements (dot.hpp).
COURSE_HOST_DEVICE inline float first_add_share(const float* x, const float* y, std::size_t n, unsigned block,
                                                unsigned tid, unsigned block_dim) {
  float sum = 0.0f;
  first_add_elements(block, tid, block_dim, n, [&](std::size_t i) { sum += x[i] * y[i]; });
  return sum;
}

__global__ void dot_kernel4(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[kBlock];
  const unsigned tid = threadIdx.x;
  s_data[tid] = first_add_share(x, y, n, blockIdx.x, tid, blockDim.x);
  __syncthreads();
  sequential_in_shared(s_data, tid, blockDim.x, [] { __syncthreads(); });  // version 3's tree
  if (tid == 0) partials[blockIdx.x] = s_data[0];
}
// [v4_kernel]

// [warp_reduce_shared]
// The last six steps of the tree (64 values to 1) inside warp 0, with __syncwarp() instead of
// __syncthreads(). The 2007 code relied on a warp's 32 threads running in lockstep and marked
// s_data volatile; since Volta, threads of a warp are scheduled independently, so lane 0 may read
// s_data[16] before or after lane 16 overwrote it. Each step therefore reads into a register,
// waits for the whole warp (__syncwarp), writes, and waits again before the next read.
__device__ __forceinline__ void warp_reduce_shared(float* s_data, unsigned tid) {
  float v = s_data[tid];
#pragma unroll
  for (unsigned offset = kWarp; offset > 0; offset /= 2) {
    v += s_data[tid + offset];
    __syncwarp();
    s_data[tid] = v;
    __syncwarp();
  }
}
// [warp_reduce_shared]

// [fold_to_64]
// Version 3's tree (exercise 1's sequential_steps) while more than 64 of `count` values are left,
// played on rows of 64 words: value c of the tree is row c, and thread tid, in row tid / 64, adds
// the word as many rows on as its add says into its own word. With `count` known at compile time
// the compiler unrolls the steps and decides every comparison.
__device__ __forceinline__ void fold_to_64(float* s_data, unsigned tid, unsigned count) {
  constexpr unsigned kRow = 2 * kWarp;
  sequential_steps(
      tid / kRow, count / kRow,
      [&](unsigned to, unsigned from) { s_data[tid] += s_data[tid + (from - to) * kRow]; },
      [] { __syncthreads(); });
}
// [fold_to_64]

// [v5_kernel]
// Version 5: unroll the last warp. The tree stops when 64 values are left; warp 0 finishes with
// warp_reduce_shared: no block-wide barrier for the last six steps, no idle warps waiting at them.
// Still slow: the steps are still a loop (counter, compare, branch) with blockDim.x unknown to
// the compiler.
__global__ void dot_kernel5(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[kBlock];
  const unsigned tid = threadIdx.x;
  s_data[tid] = first_add_share(x, y, n, blockIdx.x, tid, blockDim.x);  // version 4's first add
  __syncthreads();
  fold_to_64(s_data, tid, blockDim.x);
  if (tid < kWarp) warp_reduce_shared(s_data, tid);
  if (tid == 0) partials[blockIdx.x] = s_data[0];
}
// [v5_kernel]

// [block_tree_unrolled]
// The tree of version 5 with the block size known at compile time: the number of steps and every
// step's comparison are decided by the compiler, so what remains is straight-line code with no
// loop at all (`cuobjdump -sass`: no branch back).
template <unsigned Block>
__device__ __forceinline__ void block_tree_unrolled(float* s_data, unsigned tid) {
  static_assert(Block >= 64 && Block <= 1024 && (Block & (Block - 1)) == 0, "Block: a power of two in [64, 1024]");
  fold_to_64(s_data, tid, Block);
  if (tid < kWarp) warp_reduce_shared(s_data, tid);
}
// [block_tree_unrolled]

// [v6_kernel]
// Version 6: complete unrolling. The block size is a template parameter; the launcher picks the
// instance. Still slow: each thread loads two products and the block then spends as many
// instructions reducing as it did loading. The memory system sees few bytes in flight per thread.
template <unsigned Block>
__global__ void __launch_bounds__(Block) dot_kernel6(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[Block];
  const unsigned tid = threadIdx.x;
  s_data[tid] = first_add_share(x, y, n, blockIdx.x, tid, Block);  // version 4's first add
  __syncthreads();
  block_tree_unrolled<Block>(s_data, tid);
  if (tid == 0) partials[blockIdx.x] = s_data[0];
}
// [v6_kernel]

// [pairs_loop]
// Each thread walks the vectors with a grid-stride loop, two products (Block apart) per trip.
template <unsigned Block>
__device__ __forceinline__ float thread_dot_pairs(const float* x, const float* y, std::size_t n) {
  const std::size_t grid_size = 2 * std::size_t{Block} * gridDim.x;
  float sum = 0.0f;
  for (std::size_t i = blockIdx.x * (2 * std::size_t{Block}) + threadIdx.x; i < n; i += grid_size) {
    sum += x[i] * y[i];
    if (i + Block < n) sum += x[i + Block] * y[i + Block];
  }
  return sum;
}
// [pairs_loop]

// [v7_kernel]
// Version 7: several elements per thread (kPerThread = 32, about log2 n: "algorithm cascading").
// A block now reads 16 KB instead of 2 KB for one tree, and each thread has four loads in flight
// per trip. Still slow: 4-byte loads (a warp asks for 128 bytes per instruction), and the tree
// still goes through shared memory with four __syncthreads().
template <unsigned Block>
__global__ void __launch_bounds__(Block) dot_kernel7(const float* x, const float* y, std::size_t n, float* partials) {
  __shared__ float s_data[Block];
  s_data[threadIdx.x] = thread_dot_pairs<Block>(x, y, n);
  __syncthreads();
  block_tree_unrolled<Block>(s_data, threadIdx.x);
  if (threadIdx.x == 0) partials[blockIdx.x] = s_data[0];
}
// [v7_kernel]

// ---------------------------------------------------------------------------------------------
// Past 2007: what Kepler and later added (shuffles), and what a 132-SM card with 50 MB of L2 needs.
// ---------------------------------------------------------------------------------------------

// The block's sum with shuffles, chapter 05's block_sum_shuffle, from the kit for every version from
// 8 on and for the second pass: course::kernels::block_sum (common/course/kernels/block_sum.cuh).
using course::kernels::block_sum;

// [v8_kernel]
// Version 8: version 7's loads, and the block's tree in registers: each warp adds its 32 values
// with five shuffles, no shared memory and no barrier; only the 8 warp totals go through shared
// memory, behind one __syncthreads(). Still slow: 4-byte loads.
template <unsigned Block>
__global__ void __launch_bounds__(Block) dot_kernel8(const float* x, const float* y, std::size_t n, float* partials) {
  const float sum = block_sum<Block>(thread_dot_pairs<Block>(x, y, n));
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}
// [v8_kernel]

// [finish_kernel]
// The second pass of versions 1–10: one block adds the `count` partial sums of the first pass, in
// a fixed order, and writes the result. The partials were written by the previous kernel in the
// same stream, so they are complete when this one starts. 16-byte loads (the partials are aligned).
__global__ void __launch_bounds__(kFinishBlock)
    finish_kernel(const float* __restrict__ partials, std::size_t count, float* __restrict__ result) {
  const float4* p4 = reinterpret_cast<const float4*>(partials);
  const std::size_t count4 = count / 4;
  float sum = 0.0f;
  for (std::size_t i = threadIdx.x; i < count4; i += kFinishBlock) {
    const float4 v = p4[i];
    sum += (v.x + v.y) + (v.z + v.w);
  }
  if (4 * count4 + threadIdx.x < count) sum += partials[4 * count4 + threadIdx.x];
  sum = block_sum<kFinishBlock>(sum);
  if (threadIdx.x == 0) *result = sum;
}
// [finish_kernel]

// This thread's share with 16-byte loads: the kit's thread_dot_vec4
// (common/course/kernels/vec4_dot.cuh; the text shows it), Unroll float4 of x and of y in flight.
using course::kernels::thread_dot_vec4;

// [v9_kernel]
// Version 9: 16-byte loads (LDG.E.128): a warp asks for 512 bytes per instruction, a quarter of
// the load instructions, and each thread has 2 × kUnroll loads (128 bytes) in flight. Version 10
// runs this same kernel on another grid. Still slow: the grid is sized to n (32 elements per
// thread), and the partial sums need a second launch.
template <unsigned Block>
__global__ void __launch_bounds__(Block) dot_kernel9(const float* __restrict__ x, const float* __restrict__ y,
                                                    std::size_t n, float* __restrict__ partials) {
  const std::size_t thread = blockIdx.x * std::size_t{Block} + threadIdx.x;
  float sum = thread_dot_vec4<kUnroll>(x, y, n, thread, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}
// [v9_kernel]

// [v11_kernel]
// Version 11: single pass. Each block writes its partial sum, then takes a ticket from a counter;
// the block that draws the last ticket knows every other partial is written, adds them all, and
// sets the counter back to zero for the next call: no memset, no second launch. The last block
// adds the partials in index order, whichever block it is, so the result is deterministic.
// What a block does once its sum is known is a __host__ __device__ helper; the kernel passes the
// block's barrier, its block sum and the partials' load (__ldcg), so that the host tests play whole
// grids whose blocks finish in any order (`ch06 v11 player: *`, no GPU).
COURSE_HOST_DEVICE_TEMPLATE
template <unsigned Block, class Barrier, class BlockSum, class Load>
COURSE_HOST_DEVICE inline void combine_if_last(float sum, unsigned block, unsigned grid, unsigned tid, float* partials,
                                               unsigned* counter, float* result, bool& s_is_last, Barrier barrier,
                                               BlockSum block_sum, Load load) {
  // BEGIN SOLUTION
  if (tid == 0) {
    partials[block] = sum;
    // Release: the partial above is visible GPU-wide before the ticket is. Acquire: the last
    // block sees every partial written before the other tickets.
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> done(*counter);
    s_is_last = done.fetch_add(1, cuda::memory_order_acq_rel) == grid - 1;
  }
  barrier();  // thread 0's acquire now covers the whole block
  if (!s_is_last) return;
  // Four independent sums keep four loads in flight per thread; the order is still fixed.
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  unsigned b = tid;
  for (; b + 3 * Block < grid; b += 4 * Block)
#pragma unroll
    for (int k = 0; k < 4; ++k) t[k] += load(partials + b + k * Block);
  for (; b < grid; b += Block) t[0] += load(partials + b);
  const float total = block_sum((t[0] + t[1]) + (t[2] + t[3]));
  if (tid == 0) {
    *result = total;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*counter).store(0, cuda::memory_order_relaxed);
  }
  // STUB
  //> // TODO(student): thread 0 stores `sum` (block `block`'s total) as its partial. Exactly one block
  //> // of the grid, the last to finish, then reads every partial (load(partials + b): on the GPU from
  //> // L2) once all are visible to it (guaranteed by the C++ memory model, not by timing), adds them
  //> // in a fixed order with all its threads (block_sum: valid in thread 0), writes *result and leaves
  //> // *counter ready for the next call. s_is_last is shared by the block; barrier() is its
  //> // barrier on the GPU. It runs on the host too: arguments and cuda::atomic_ref only. Tests:
  //> // `ch06 v11 player: *` (host), `ch06 v11_single_pass: *`, `ch06 integrity: *` (the ticket's
  //> // order). See README §One launch.
  //> (void)sum, (void)block, (void)grid, (void)tid, (void)partials, (void)counter, (void)result;
  //> (void)s_is_last, (void)barrier, (void)block_sum, (void)load;
  // END SOLUTION
}

template <unsigned Block>
__global__ void __launch_bounds__(Block) dot_kernel11(const float* __restrict__ x, const float* __restrict__ y,
                                                     std::size_t n, float* __restrict__ partials,
                                                     unsigned* counter, float* __restrict__ result) {
  const std::size_t thread = blockIdx.x * std::size_t{Block} + threadIdx.x;
  float sum = thread_dot_vec4<kUnroll>(x, y, n, thread, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  if (gridDim.x == 1) {  // small n: one block has the whole answer
    if (threadIdx.x == 0) *result = sum;
    return;
  }
  forced_finish_delay();  // the tests' forced order of finishing; nothing unless a test asks
  __shared__ bool s_is_last;
  combine_if_last<Block>(
      sum, blockIdx.x, gridDim.x, threadIdx.x, partials, counter, result, s_is_last, [] { __syncthreads(); },
      [](float v) { return block_sum<Block>(v); },
      [](const float* p) { return __ldcg(p); });  // L2, never a stale L1 line
}
// [v11_kernel]

// [atomic_kernel]
// The baseline most engineers write first: the float4 grid-stride loop (one float4 of x and of y
// per trip), warp shuffles, and one atomicAdd per block into a result the launcher zeroed with a
// memset. One launch plus a memset, no partials, no counter. Not deterministic: the blocks add
// into the result in whatever order they finish, and float addition is not associative.
template <unsigned Block>
__global__ void __launch_bounds__(Block) dot_kernel_atomic(const float* __restrict__ x, const float* __restrict__ y,
                                                          std::size_t n, float* result) {
  const std::size_t thread = blockIdx.x * std::size_t{Block} + threadIdx.x;
  float sum = thread_dot_vec4<1>(x, y, n, thread, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  if (threadIdx.x == 0) atomicAdd(result, sum);
}
// [atomic_kernel]

// [v12_kernel]
// Version 12: tagged partials, no counter. What version 11 pays at middle n is the chain after the
// last block's loads: store the partial, a device-wide fence, an atomic round trip to L2, a block
// barrier, the partials read back from L2, a reduction, the counter's reset. Here every block but
// the last stores its partial and the call's tag in one 8-byte word (one store, seen whole or not
// at all: no fence is needed to order a flag after its data) and exits. The last block, by index,
// reads all the slots at once, thread t slot t, each until it carries this call's tag, and adds
// them in a fixed order: deterministic, one store per block, no read-modify-write, nothing to
// reset (the host draws a new tag per call). Waiting for other blocks is safe because the waiting
// block is the last one: blocks are dispatched in index order, so every block it waits for is
// already running (CUB's single-pass scan relies on the same), and the grid never exceeds what the
// SMs hold at once. What is left is the launch and the bytes: see the floor.
template <unsigned Block>
__global__ void __launch_bounds__(Block, 2) dot_kernel12(const float* __restrict__ x, const float* __restrict__ y,
                                                        std::size_t n, unsigned long long* tagged, unsigned tag,
                                                        float* __restrict__ result) {
  const std::size_t thread = blockIdx.x * std::size_t{Block} + threadIdx.x;
  float sum = thread_dot_vec4<kUnroll12>(x, y, n, thread, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);  // valid in thread 0
  const unsigned last = gridDim.x - 1;
  if (blockIdx.x != last) {
    if (threadIdx.x == 0) {
      const unsigned long long word = static_cast<unsigned long long>(tag) << 32 | __float_as_uint(sum);
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(tagged[blockIdx.x])
          .store(word, cuda::memory_order_relaxed);
    }
    return;
  }
  if (last == 0) {  // one block had the whole input
    if (threadIdx.x == 0) *result = sum;
    return;
  }
  __syncthreads();  // block_sum's shared memory is used again below
  float others = 0.0f;
  for (unsigned b = threadIdx.x; b < last; b += Block) {  // one slot per thread: the grid is at most Block
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> slot(tagged[b]);
    unsigned long long word = slot.load(cuda::memory_order_relaxed);  // from L2: never a stale L1 line
    while (static_cast<unsigned>(word >> 32) != tag) word = slot.load(cuda::memory_order_relaxed);
    others += __uint_as_float(static_cast<unsigned>(word));
  }
  others = block_sum<Block>(others);
  if (threadIdx.x == 0) *result = others + sum;
}
// [v12_kernel]

// [read_only_kernel]
// Not a dot product: the floor with memory latency. Version 12's loop on version 12's grid, each
// thread's sum and nothing after it: no block reduction, no partials, no combine. One value is
// written (block 0, thread 0's sum); any thread whose sum has one unlikely bit pattern writes too,
// so the compiler cannot drop another thread's loads. Its time per call is what the launch, the
// first trip to DRAM and the bytes cost together; the final version minus this is its combine.
template <unsigned Block>
__global__ void __launch_bounds__(Block, 2) read_only_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                            std::size_t n, float* __restrict__ result) {
  const std::size_t thread = blockIdx.x * std::size_t{Block} + threadIdx.x;
  const float sum = thread_dot_vec4<kUnroll12>(x, y, n, thread, std::size_t{gridDim.x} * Block);
  if ((blockIdx.x == 0 && threadIdx.x == 0) || __float_as_uint(sum) == 0x7fc0deadu) *result = sum;
}
// [read_only_kernel]

// ---------------------------------------------------------------------------------------------
// Launchers: grid arithmetic, launch, launch check. None of them waits for the GPU.
// ---------------------------------------------------------------------------------------------

/// Blocks to cover n elements at `per_block` elements per block (at least one, so that n = 0
/// still writes a result), checked against the workspace.
unsigned blocks_for(std::size_t n, std::size_t per_block, const Workspace& ws) {
  const std::size_t blocks = std::max<std::size_t>(1, ceil_div(n, per_block));
  ws.require(n, blocks);
  return static_cast<unsigned>(blocks);
}

/// Version 10's grid: 4·kUnroll elements per thread per trip, never more threads than one trip's
/// worth, and never more blocks than the SMs hold at once (ws.machine_grid). Version 11 sizes its
/// own grid, up to kWaves machine grids (see run_v11).
unsigned machine_blocks_for(std::size_t n, const Workspace& ws) {
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(n, std::size_t{kBlock} * 4 * kUnroll));
  const std::size_t blocks = std::min<std::size_t>(wanted, static_cast<std::size_t>(ws.machine_grid));
  ws.require(n, blocks);
  return static_cast<unsigned>(blocks);
}

// [finish]
void finish(Workspace& ws, unsigned blocks, float* d_result, cudaStream_t stream) {
  finish_kernel<<<1, kFinishBlock, 0, stream>>>(ws.partials(), blocks, d_result);
  CUDA_CHECK_LAUNCH("finish_kernel");
}
// [finish]

void run_v1(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, kBlock, ws);
  dot_kernel1<<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel1");
  finish(ws, blocks, d_result, stream);
}

void run_v2(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, kBlock, ws);
  dot_kernel2<<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel2");
  finish(ws, blocks, d_result, stream);
}

void run_v3(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, kBlock, ws);
  dot_kernel3<<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel3");
  finish(ws, blocks, d_result, stream);
}

void run_v4(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, 2 * std::size_t{kBlock}, ws);
  dot_kernel4<<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel4");
  finish(ws, blocks, d_result, stream);
}

void run_v5(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, 2 * std::size_t{kBlock}, ws);
  dot_kernel5<<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel5");
  finish(ws, blocks, d_result, stream);
}

// [v6_launch]
void run_v6(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, 2 * std::size_t{kBlock}, ws);
  // The block size is a compile-time constant here; with one chosen at run time, a switch over
  // the powers of two from 64 to 1024 would pick the matching instance of the template.
  dot_kernel6<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel6");
  finish(ws, blocks, d_result, stream);
}
// [v6_launch]

void run_v7(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, kBlock * kPerThread, ws);
  dot_kernel7<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel7");
  finish(ws, blocks, d_result, stream);
}

void run_v8(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, kBlock * kPerThread, ws);
  dot_kernel8<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel8");
  finish(ws, blocks, d_result, stream);
}

void run_v9(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = blocks_for(n, kBlock * kPerThread, ws);
  dot_kernel9<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel9");
  finish(ws, blocks, d_result, stream);
}

// [v10_launch]
// Version 10: the kernel of version 9 on a grid sized to the machine: as many blocks as the SMs
// hold at once (ws.machine_grid, from the occupancy API), each looping over the vectors: at most
// ws.machine_grid partials, whatever n is. Still slow: with exactly one wave, an SM whose blocks
// finish early idles while the slowest blocks finish (version 11 uses several waves).
void run_v10(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const unsigned blocks = machine_blocks_for(n, ws);
  dot_kernel9<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials());
  CUDA_CHECK_LAUNCH("dot_kernel9");
  finish(ws, blocks, d_result, stream);
}
// [v10_launch]

// [v11_launch]
// Version 11's grid: up to kWaves times the machine grid. Every block still loops (grid-stride),
// but with several waves of blocks the scheduler hands the last blocks to whichever SMs finish
// first, so the tail where a few slow blocks run alone shrinks (measured on the H100: about 1.4%
// faster than one wave at 2^28, the same below 2^22). The last block then adds up to
// kWaves × machine_grid partials, a few microseconds that only large n pays.
constexpr std::size_t kWaves = 8;

void run_v11(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(n, std::size_t{kBlock} * 4 * kUnroll));
  const unsigned blocks =
      static_cast<unsigned>(std::min<std::size_t>(wanted, kWaves * static_cast<std::size_t>(ws.machine_grid)));
  ws.require(n, blocks);
  dot_kernel11<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, ws.partials(), ws.counter(), d_result);
  CUDA_CHECK_LAUNCH("dot_kernel11");
}
// [v11_launch]

// [atomic_launch]
// The atomic baseline's grid: one float4 of x and of y per thread, as many blocks as that takes,
// at most as many as the SMs hold at once (each block then loops). The memset is part of the call.
void run_atomic(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                cudaStream_t stream) {
  ws.require(n, 0);
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(n, std::size_t{kBlock} * 4));
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(ws.atomic_grid)));
  CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), stream));
  dot_kernel_atomic<kBlock><<<blocks, kBlock, 0, stream>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_kernel_atomic");
}
// [atomic_launch]

// [v12_launch]
// Version 12's grid: one trip per thread (kBlock12 threads × kUnroll12 float4 × 4 floats = 8192
// elements per block) while that fits on the SMs at once, so every byte of a middle-sized input
// is in flight from the start; from 2^21 elements on, two blocks per SM (ws.grid12), each looping.
// One block up to 8192 elements: no other block to wait for. At most ws.grid12 slots (264 on an
// H100; never more than kBlock12, one per thread of the last block).
void run_v12(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t stream) {
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(n, std::size_t{kBlock12} * 4 * kUnroll12));
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(ws.grid12)));
  ws.require(n, 0);
  if (blocks > ws.tagged_capacity) throw course::UsageError("ch06::Workspace: too few tagged slots for version 12");
  const unsigned tag = ws.next_tag(stream);
  dot_kernel12<kBlock12><<<blocks, kBlock12, 0, stream>>>(d_x, d_y, n, ws.tagged(), tag, d_result);
  CUDA_CHECK_LAUNCH("dot_kernel12");
}
// [v12_launch]

__global__ void empty_kernel() {}

}  // namespace

void force_finish_order(FinishOrder order, unsigned block, unsigned ns) {
  const FinishDelay d{static_cast<unsigned>(order), block, ns};
  CUDA_CHECK(cudaMemcpyToSymbol(c_finish_delay, &d, sizeof d));
}

void run_read_only(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                   cudaStream_t stream) {
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(n, std::size_t{kBlock12} * 4 * kUnroll12));
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(ws.grid12)));
  ws.require(n, 0);
  read_only_kernel<kBlock12><<<blocks, kBlock12, 0, stream>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("read_only_kernel");
}

// [registry]
const std::vector<course::Version<Launcher>>& versions() {
  static const std::vector<course::Version<Launcher>> registry = {
      {"cublas", "cuBLAS: cublasSdot_64 (library baseline)", run_cublas},
      {"cub", "CUB: DeviceReduce::TransformReduce over x[i]*y[i] (library baseline)", run_cub},
      {"atomic_vec4", "float4 grid-stride, shuffles, one atomicAdd per block after a memset (baseline)", run_atomic},
      {"speed_of_light", "not a dot: the final version's 16-byte loads on its grid, no combine (the floor)",
       run_read_only},
      {"v1_divergent", "interleaved addressing, divergent branch (tid % 2s)", run_v1},
      {"v2_bank_conflicts", "interleaved addressing, no divergence, bank conflicts", run_v2},
      {"v3_sequential", "sequential addressing: conflict-free", run_v3, true},
      {"v4_first_add", "first add during load: half the blocks", run_v4, true},
      {"v5_unroll_warp", "last warp without block barriers (`__syncwarp()`)", run_v5},
      {"v6_unroll_all", "complete unrolling, block size as template", run_v6},
      {"v7_many_per_thread", "32 elements per thread, grid-stride loop", run_v7},
      {"v8_shuffle", "warp shuffles instead of shared memory", run_v8},
      {"v9_float4", "16-byte loads, scalar head/tail, misaligned fallback", run_v9},
      {"v10_machine_grid", "grid = SMs x resident blocks", run_v10},
      {"v11_single_pass", "single pass: the last block adds the partials", run_v11, true},
      {"v12_tagged_partials", "single pass, tagged partials: no counter, no fence; the last block reads them at once", run_v12},
  };
  return registry;
}
// [registry]

bool is_library(const course::Version<Launcher>& version) { return version.name == "cublas" || version.name == "cub"; }

bool is_speed_of_light(const course::Version<Launcher>& version) { return version.name == "speed_of_light"; }

bool is_baseline(const course::Version<Launcher>& version) {
  return is_library(version) || version.name == "atomic_vec4" || is_speed_of_light(version);
}

void run_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  CUDA_CHECK_LAUNCH("empty_kernel");
}

const course::Version<Launcher>& final_version() { return versions().back(); }

// ---------------------------------------------------------------------------------------------
// Workspace
// ---------------------------------------------------------------------------------------------

namespace {

/// Partial sums the largest call can write: one per block of version 1 (one element per thread),
/// or one per block of the machine-sized grid, rounded up to whole float4.
std::size_t partials_for(std::size_t max_n, std::size_t machine_grid) {
  const std::size_t count = std::max({std::size_t{1}, ceil_div(max_n, kBlock), machine_grid});
  return ceil_div(count, 4) * 4;
}

/// Resident blocks per SM of `kernel` at `block` threads (at least 1).
template <class Kernel>
int per_sm(Kernel kernel, unsigned block) {
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, static_cast<int>(block), 0));
  return std::max(1, blocks);
}

/// bytes_for() runs before any Workspace exists, without the SM count: it sizes the partials for
/// this many blocks in the machine grid, 32 resident blocks per SM (the most any CUDA card holds)
/// times 2048 SMs. The constructor refuses a card beyond it rather than overrun the estimate.
constexpr std::size_t kMaxMachineGrid = 32 * 2048;

/// The arena's regions, in order: the one layout behind both the constructor and bytes_for().
struct Regions {
  std::size_t partials = 0, tagged = 0, counter = 0, cub = 0, total = 0;
};
Regions layout(std::size_t partials_capacity, std::size_t tagged_capacity, std::size_t cub_temp_bytes) {
  course::ScratchLayout l;
  Regions r;
  r.partials = l.add(partials_capacity * sizeof(float));
  r.tagged = l.add(tagged_capacity * sizeof(unsigned long long));
  r.counter = l.add(sizeof(unsigned));
  r.cub = l.add(cub_temp_bytes);
  r.total = l.bytes();
  return r;
}

}  // namespace

std::size_t Workspace::bytes_for(std::size_t max_n) {
  // The constructor's layout with each region at its largest: the machine grid at its bound,
  // version 12's grid at kBlock12 slots (grid12 never exceeds it).
  return layout(partials_for(max_n, kMaxMachineGrid), kBlock12, std::max<std::size_t>(1, cub_temp_bytes_for(max_n))).total;
}

Workspace::Workspace(course::Context& context, std::size_t max_elements) : ctx(context), max_n(max_elements) {
  ctx.activate();
  sm_count = ctx.facts().sm_count;
  machine_grid = sm_count * std::min(per_sm(dot_kernel9<kBlock>, kBlock), per_sm(dot_kernel11<kBlock>, kBlock));
  atomic_grid = sm_count * per_sm(dot_kernel_atomic<kBlock>, kBlock);
  grid12 = std::min<int>(kBlock12, sm_count * std::min(2, per_sm(dot_kernel12<kBlock12>, kBlock12)));
  if (static_cast<std::size_t>(machine_grid) > kMaxMachineGrid)
    throw course::UsageError("ch06::Workspace: a machine grid of " + std::to_string(machine_grid) +
                             " blocks exceeds the bound bytes_for() assumes");
  partials_capacity = partials_for(max_n, static_cast<std::size_t>(machine_grid));
  tagged_capacity = static_cast<std::size_t>(grid12);
  cub_temp_bytes = std::max<std::size_t>(1, cub_temp_bytes_for(max_n));
  // Phase one: add up the regions; phase two: the context reserves the total once.
  const Regions r = layout(partials_capacity, tagged_capacity, cub_temp_bytes);
  off_partials_ = r.partials;
  off_tagged_ = r.tagged;
  off_counter_ = r.counter;
  off_cub_ = r.cub;
  scratch_bytes_ = r.total;
  ctx.reserve_scratch(scratch_bytes_);
  // Version 11's counter starts at zero; version 12's slots carry tag 0, which no call uses.
  CUDA_CHECK(cudaMemsetAsync(counter(), 0, sizeof(unsigned), ctx.stream()));
  CUDA_CHECK(cudaMemsetAsync(tagged(), 0, tagged_capacity * sizeof(unsigned long long), ctx.stream()));
  ctx.synchronize();  // in place before a call on any stream
}

char* Workspace::base() const { return static_cast<char*>(ctx.scratch(scratch_bytes_)); }
float* Workspace::partials() const { return reinterpret_cast<float*>(base() + off_partials_); }
unsigned* Workspace::counter() const { return reinterpret_cast<unsigned*>(base() + off_counter_); }
unsigned long long* Workspace::tagged() const { return reinterpret_cast<unsigned long long*>(base() + off_tagged_); }
void* Workspace::cub_temp() const { return base() + off_cub_; }

unsigned Workspace::next_tag(cudaStream_t stream) {
  if (++tag_ == 0xFFFFFFFFu || tag_ == 0) {
    CUDA_CHECK(cudaMemsetAsync(tagged(), 0, tagged_capacity * sizeof(unsigned long long), stream));
    tag_ = 1;
  }
  return tag_;
}

void Workspace::require(std::size_t n, std::size_t blocks) const {
  if (n > max_n || blocks > partials_capacity)
    throw course::UsageError("ch06::Workspace was made for n <= " + std::to_string(max_n) + " (" +
                             std::to_string(partials_capacity) + " partial sums); the call has n = " +
                             std::to_string(n) + " and " + std::to_string(blocks) + " blocks");
  if (blocks > 0x7fffffffu) throw course::UsageError("n = " + std::to_string(n) + " needs more blocks than a grid can have");
}

void Workspace::poison(cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(partials(), 0xFF, partials_capacity * sizeof(float), stream));
  // Tag 0xFFFFFFFF, which next_tag never hands out: a slot nobody wrote is never taken as written.
  CUDA_CHECK(cudaMemsetAsync(tagged(), 0xFF, tagged_capacity * sizeof(unsigned long long), stream));
}

// (The callables go in as host lambdas that refer to the std::functions: nothing of std::function is
// copied into, or destroyed in, a __host__ __device__ function.)
namespace on_host {
void sequential_tree(float* s_data, unsigned tid, unsigned count, const Barrier& barrier) {
  sequential_in_shared(s_data, tid, count, [&barrier] { barrier(); });
}

float first_add_share(const float* x, const float* y, std::size_t n, unsigned block, unsigned tid, unsigned block_dim) {
  return ch06::first_add_share(x, y, n, block, tid, block_dim);
}

void combine_if_last(unsigned block_threads, float sum, unsigned block, unsigned grid, unsigned tid, float* partials,
                     unsigned* counter, float* result, bool& s_is_last, const Barrier& barrier,
                     const BlockSum& block_sum, const Load& load_partial) {
  const auto sync = [&barrier] { barrier(); };
  const auto total = [&block_sum](float v) { return block_sum(v); };
  const auto load = [&load_partial](const float* p) { return load_partial(p); };
  switch (block_threads) {
    case 32:
      return ch06::combine_if_last<32>(sum, block, grid, tid, partials, counter, result, s_is_last, sync, total, load);
    case kBlock:
      return ch06::combine_if_last<kBlock>(sum, block, grid, tid, partials, counter, result, s_is_last, sync, total,
                                           load);
    default: throw course::UsageError("on_host::combine_if_last: blocks of 32 or 256 threads");
  }
}
}  // namespace on_host

// [wave_efficiency]
// Exercise 4 (think): why version 10 launches exactly the blocks the SMs hold at once, and version
// 11 several times that. Nothing below gives the formula away: picture the slots over time.
double wave_efficiency(std::size_t blocks, std::size_t slots) {
  if (blocks == 0 || slots == 0) throw course::UsageError("wave_efficiency: blocks and slots must be at least 1");
  // BEGIN SOLUTION
  // The run lasts ceil(blocks / slots) waves of the same length; the last one may be part-full.
  const std::size_t waves = ceil_div(blocks, slots);
  return static_cast<double>(blocks) / (static_cast<double>(waves) * static_cast<double>(slots));
  // STUB
  //> // TODO(student): how many waves does the run take, and how many slot-waves does it occupy?
  //> // Test: ch06 wave_efficiency: * (host only).
  //> (void)blocks, (void)slots;
  //> return -1.0;
  // END SOLUTION
}
// [wave_efficiency]

}  // namespace ch06
