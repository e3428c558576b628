// Generated from solutions/05_many_blocks/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 05 — many blocks, and the block reduction.
//
// Versions (ch05::versions(); one with `05_many_blocks --kernel NAME`, all with `05_many_blocks`):
//   cublas        cublasSdot, the library baseline                              05_many_blocks --kernel cublas
//   speed_of_light not a dot: 16-byte loads, a grid of resident blocks (floor)  05_many_blocks --kernel speed_of_light
//   grid_atomic   grid-stride loop over all SMs, one atomicAdd per thread       05_many_blocks --kernel grid_atomic
//   block_serial  shared-memory partials, thread 0 adds them; one atomic/block  05_many_blocks --kernel block_serial
//   block_tree    shared-memory tree with __syncthreads(); one atomic/block     05_many_blocks --kernel block_tree
//                 (exercise 1: block_sum_tree)
//   two_level     per_thread elements per thread, one partial per block, the    05_many_blocks --kernel two_level --per-thread 8
//                 host adds the partials (exercise 2: the tile loop)
//   warp_shuffle  __shfl_down_sync block reduction, one partial per block, a    05_many_blocks --kernel warp_shuffle
//                 second one-block pass (exercise 3: warp_sum)
//
// Launch shapes come from the occupancy API (asked once per kernel by the course::Context, which
// caches them): the block size that keeps the most warps resident, and for grid-stride kernels as
// many blocks as fit on the GPU at once.

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "course/check.hpp"
#include "course/context.hpp"
#include "course/cublas_check.hpp"
#include "course/kernels/vec4_dot.cuh"
#include "dot.hpp"

namespace ch05 {

// Every lane of the warp takes part in each shuffle (the block size is a multiple of 32; kWarp, the
// lanes per warp, is in dot.hpp with the index arithmetic).
constexpr unsigned kFullMask = 0xffffffffu;
// CUDA's limit on threads per block, on every card: at most 1024 / 32 = 32 warps per block.
constexpr int kMaxBlock = 1024;

// [grid_stride_sum]
// Thread t of the grid takes elements t, t + S, t + 2S, ... where S = gridDim.x * blockDim.x is
// the number of threads in the grid: neighbouring threads read neighbouring floats (coalesced),
// and any n works with any grid. Indices are 64-bit: n may exceed 2^31.
__device__ float grid_stride_sum(const float* __restrict__ x, const float* __restrict__ y, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  float sum = 0.0f;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    sum += x[i] * y[i];
  return sum;
}
// [grid_stride_sum]

// [grid_atomic_kernel]
// What changed from chapter 04: many blocks, enough to fill every SM, each thread summing its
// share with a grid-stride loop. Still slow: one atomicAdd per thread, hundreds of thousands of
// them on one address, performed one after another.
__global__ void dot_grid_atomic(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                float* result) {
  atomicAdd(result, grid_stride_sum(x, y, n));
}
// [grid_atomic_kernel]

// [block_serial_kernel]
// What changed: the threads of a block pool their sums in shared memory, so each block adds to
// the result once — one atomic per block, not per thread. Still slow: thread 0 adds blockDim.x
// partials one after another while the rest of the block waits.
__global__ void dot_block_serial(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                 float* result) {
  extern __shared__ float s_partial[];  // blockDim.x floats, sized at launch
  s_partial[threadIdx.x] = grid_stride_sum(x, y, n);
  __syncthreads();  // every partial is written before thread 0 reads them
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (unsigned t = 0; t < blockDim.x; ++t) sum += s_partial[t];
    atomicAdd(result, sum);
  }
}
// [block_serial_kernel]

// [block_sum_tree]
// The block's sum in log2(blockDim.x) steps: at each step the lower half of the active threads
// adds the upper half's values to its own, and a barrier separates the steps. Thread tid reads
// tid + stride: neighbouring threads touch neighbouring words, one per bank, no bank conflicts.
// Which thread adds what, and when, is tree_steps (dot.hpp, exercise 1); this function gives it
// the block's shared memory and barrier. blockDim.x must be a power of two, and every
// thread of the block must call this (the barriers). Returns the block's sum, in every thread.
// The tree itself is a __host__ __device__ helper (the block's barrier comes in as an argument), so
// that the host tests run it on a simulated block ("ch05 block_tree player: *", no GPU).
COURSE_HOST_DEVICE_TEMPLATE
template <class Barrier>
COURSE_HOST_DEVICE inline void block_tree_in_shared(float* s_partial, unsigned tid, unsigned count, Barrier barrier) {
  // [hole 1 begin]
  // TODO(student): run the tree of tree_steps (dot.hpp, its other hole) over s_partial[0, count)
  // so that s_partial[0] ends as the block's sum, safe for every thread to read on return: adds in
  // shared memory, each step separated from the next by barrier(), the block's real barrier (no
  // step reads a sum not yet written). Tests: `ch05 block_tree player: *` (host, no GPU),
  // `ch05 block_tree: *` (racecheck when graded). See README §The tree.
  (void)s_partial, (void)tid, (void)count, (void)barrier;
  // [hole 1 end]
}

__device__ float block_sum_tree(float value, float* s_partial) {
  const unsigned tid = threadIdx.x;
  s_partial[tid] = value;
  __syncthreads();  // every value is in place before anyone reads a neighbour's
  block_tree_in_shared(s_partial, tid, blockDim.x, [] { __syncthreads(); });
  return s_partial[0];
}
// [block_sum_tree]

// [block_tree_kernel]
// What changed: the block's partials are added by a tree, all threads working, in log2(blockDim.x)
// steps instead of blockDim.x. Still: one atomic per block makes the result's rounding depend on
// the order in which blocks finish — not the same bits on every run.
__global__ void dot_block_tree(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                               float* result) {
  extern __shared__ float s_partial[];  // blockDim.x floats, sized at launch
  const float sum = block_sum_tree(grid_stride_sum(x, y, n), s_partial);
  if (threadIdx.x == 0) atomicAdd(result, sum);
}
// [block_tree_kernel]

// [speed_of_light_kernel]
// Not a dot product: the floor every version here is held to. The same 8n bytes read with the best
// access pattern (chapter 06 teaches it; this is the kit's thread_dot_vec4): 16-byte loads, four of
// x and four of y in flight per thread, on a grid of the blocks the SMs hold at once; a scalar head
// and tail, and a scalar loop when x and y are misaligned differently. Nothing else: each thread sums its products only so that
// the compiler cannot drop the loads, and one value is written (thread 0 of block 0, or a thread
// whose sum has one unlikely bit pattern). Its time is the launch, the first trip to DRAM and the bytes.
__global__ void speed_of_light_kernel(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                      float* result) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const float sum = course::kernels::thread_dot_vec4<4>(x, y, n, thread, threads);
  if ((blockIdx.x == 0 && threadIdx.x == 0) || __float_as_uint(sum) == 0x7fc0deadu) *result = sum;
}
// [speed_of_light_kernel]

// [two_level_kernel]
// What changed: no atomics at all. Block b sums its own tile of blockDim.x * per_thread elements
// (thread t takes t, t + blockDim.x, ...: coalesced) and writes one partial, partials[b]; the host
// adds the partials in a fixed order, so every run gives the same bits. Still slow: the partials
// go to the host and the result comes back, and the GPU waits for the host in between.
// A thread's share of its tile is a __host__ __device__ helper: the host tests run it for every
// thread of every block on host arrays ("ch05 two_level on the host: *", no GPU).
COURSE_HOST_DEVICE inline float tile_share(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                           unsigned block, unsigned tid, unsigned block_dim, int per_thread) {
  float sum = 0.0f;
  // [hole 2 begin]
  // TODO(student): add this thread's per_thread products into sum: x[i] * y[i] for exactly the
  // indices for_each_in_tile (dot.hpp, its other hole) gives it, so that the tree yields the
  // tile's partial. Tests: `ch05 two_level on the host: *` (no GPU), `ch05 two_level: *`,
  // `ch05 beyond 2^32 elements: *`. See README §Two levels.
  (void)x, (void)y, (void)n, (void)block, (void)tid, (void)block_dim, (void)per_thread;
  // [hole 2 end]
  return sum;
}

__global__ void dot_two_level(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                              int per_thread, float* __restrict__ partials) {
  extern __shared__ float s_partial[];  // blockDim.x floats, sized at launch
  float sum = tile_share(x, y, n, blockIdx.x, threadIdx.x, blockDim.x, per_thread);
  sum = block_sum_tree(sum, s_partial);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}
// [two_level_kernel]

// [warp_sum]
// The 32 lanes of a warp add their values through registers, in five shuffle steps (warp_sum_steps,
// dot.hpp, exercise 3). No shared memory and no barrier: the _sync shuffle itself waits for the
// lanes named in the mask. Lane 0 ends with the warp's sum.
// The warp's shuffle comes in as an argument of a __host__ __device__ helper, so that the host tests
// run it on a simulated warp ("ch05 warp_sum player: *", no GPU).
COURSE_HOST_DEVICE_TEMPLATE
template <class ShflDown>
COURSE_HOST_DEVICE inline float warp_sum_with(float value, ShflDown shfl_down) {
  // [hole 3 begin]
  // TODO(student): lane 0's value becomes the sum of the 32 lanes' values, by warp_sum_steps
  // (dot.hpp, its other hole) given shfl_down, the GPU's shuffle down with every lane of the
  // warp in its mask (warp_sum, below, passes it); no shared memory, no barrier. Tests:
  // `ch05 warp_sum player: *` (host, no GPU), `ch05 warp_shuffle: *` (memcheck, racecheck
  // when graded). See README §Warp shuffles.
  (void)shfl_down;
  // [hole 3 end]
  return value;
}

__device__ float warp_sum(float value) {
  return warp_sum_with(value, [](float v, int offset) { return __shfl_down_sync(kFullMask, v, offset); });
}
// [warp_sum]

// [block_sum_shuffle]
// The block's sum in two warp-sized steps: every warp sums its 32 values with shuffles; lane 0 of
// each warp leaves the warp's sum in shared memory (32 floats at most); the first warp sums those.
// One __syncthreads() instead of one per tree level. blockDim.x must be a multiple of 32, and
// every thread of the block must call this. Returns the block's sum in thread 0.
__device__ float block_sum_shuffle(float value) {
  __shared__ float s_warp[kMaxBlock / kWarp];
  const unsigned lane = threadIdx.x % kWarp;
  const unsigned warp = threadIdx.x / kWarp;
  value = warp_sum(value);
  if (lane == 0) s_warp[warp] = value;
  __syncthreads();  // every warp's sum is written before the first warp reads them
  if (warp == 0) {  // the whole first warp enters: the shuffle's full mask holds
    const unsigned warps = blockDim.x / kWarp;
    value = warp_sum(lane < warps ? s_warp[lane] : 0.0f);
  }
  return value;
}
// [block_sum_shuffle]

// [warp_shuffle_kernel]
// What changed: the block reduction uses shuffles (one barrier, 32 floats of shared memory), and
// each block writes a partial that a second, one-block kernel adds up on the GPU: no atomics, no
// round trip to the host, the same bits on every run. Still: each thread loads one float of x and
// one of y at a time; chapter 06 widens the loads.
__global__ void dot_warp_shuffle(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                 float* __restrict__ partials) {
  const float sum = block_sum_shuffle(grid_stride_sum(x, y, n));
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// The second pass: one block adds the first pass's partials, always in the same order.
__global__ void sum_partials(const float* __restrict__ partials, int count, float* result) {
  float sum = 0.0f;
  for (int i = static_cast<int>(threadIdx.x); i < count; i += static_cast<int>(blockDim.x)) sum += partials[i];
  sum = block_sum_shuffle(sum);
  if (threadIdx.x == 0) *result = sum;
}
// [warp_shuffle_kernel]

// [block_sum_any]
// Exercise 4 (think): block_sum_tree needs blockDim.x to be a power of two; the occupancy API
// does not promise one (it may suggest 640 or 768 threads), and neither does a caller. Sum the
// block's values for ANY blockDim.x from 1 to 1024, in about log2(blockDim.x) steps with a barrier
// between them, touching nothing in s_partial beyond its blockDim.x floats. Every thread of the
// block calls this; it returns the block's sum in every thread.
COURSE_HOST_DEVICE_TEMPLATE
template <class Barrier>
COURSE_HOST_DEVICE inline void tree_any_in_shared(float* s_partial, unsigned tid, unsigned count, Barrier barrier) {
  // [hole 4 begin]
  // TODO(student): s_partial[0] ends as the sum of the block's `count` values for any count
  // from 1 to 1024, by tree_steps_any (dot.hpp, its other hole); nothing read or written at or past
  // s_partial[count] (the tests put NaN there), no race between steps (barrier() is the block's
  // barrier). Tests: `ch05 block_sum_any player: *` (host, no GPU), `ch05 block_sum_any: *`.
  // See README §Exercise 4.
  (void)s_partial, (void)tid, (void)count, (void)barrier;
  // [hole 4 end]
}

__device__ float block_sum_any(float value, float* s_partial) {
  const unsigned tid = threadIdx.x;
  s_partial[tid] = value;
  __syncthreads();  // every value is in place before anyone reads a neighbour's
  tree_any_in_shared(s_partial, tid, blockDim.x, [] { __syncthreads(); });
  return s_partial[0];
}
// [block_sum_any]

// Exercise 4's test harness: one block; shared memory holds the tree's blockDim.x floats and as many
// NaN after them, so a tree that reads past its values poisons the sum.
__global__ void block_sum_any_kernel(const float* __restrict__ values, float* __restrict__ result) {
  extern __shared__ float s_tree[];  // 2 * blockDim.x floats
  s_tree[blockDim.x + threadIdx.x] = __int_as_float(0x7fffffff);  // NaN
  __syncthreads();
  const float sum = block_sum_any(values[threadIdx.x], s_tree);
  if (threadIdx.x == 0) *result = sum;
}

float block_sum_any_on_gpu(const std::vector<float>& values, course::Context& ctx) {
  if (values.empty() || values.size() > static_cast<std::size_t>(kMaxBlock))
    throw course::UsageError("block_sum_any_on_gpu: 1 to 1024 values (one per thread of one block)");
  const unsigned block = static_cast<unsigned>(values.size());
  cudaStream_t s = ctx.stream();
  course::DeviceBuffer<float> d_values(values.size()), d_result(1);
  CUDA_CHECK(cudaMemcpyAsync(d_values.data(), values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  d_result.fill_bytes(0xFF, s);  // NaN unless thread 0 writes
  block_sum_any_kernel<<<1, block, 2 * block * sizeof(float), s>>>(d_values.data(), d_result.data());
  CUDA_CHECK_LAUNCH("block_sum_any_kernel");
  float got = 0.0f;
  CUDA_CHECK(cudaMemcpyAsync(&got, d_result.data(), sizeof(float), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return got;
}

namespace {

// [occupancy]
// Blocks for a grid-stride kernel: all that fit on the GPU at once (the shape's blocks per SM
// times the SMs), but no more than n needs. The shape is ctx.occupancy(kernel, shared_per_thread).
int grid_stride_blocks(const course::Context& ctx, const course::LaunchShape& s, std::size_t n) {
  const std::size_t resident = static_cast<std::size_t>(ctx.resident_blocks(s));
  const std::size_t needed = (n + s.block - 1) / s.block;
  return static_cast<int>(std::min(resident, needed));
}
// [occupancy]

void zero_result(float* d_result, cudaStream_t s) { CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), s)); }

void run_cublas(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t s) {
  ws.grid = 0;
  ws.block = 0;
  if (n == 0) {  // leave cuBLAS's conventions for n <= 0 out of it
    zero_result(d_result, s);
    return;
  }
  const course::CublasOn cublas(ws.ctx, s);  // the context's handle, made once, on stream s
  CUBLAS_CHECK(cublasSdot_64(cublas.get(), static_cast<std::int64_t>(n), d_x, 1, d_y, 1, d_result));
}

void run_grid_atomic(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                     cudaStream_t s) {
  const course::LaunchShape shape = ws.ctx.occupancy(dot_grid_atomic);  // asked once per context
  zero_result(d_result, s);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) return;  // a launch of zero blocks is an error, and the sum of nothing is 0
  const int grid = grid_stride_blocks(ws.ctx, shape, n);
  dot_grid_atomic<<<grid, shape.block, 0, s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_grid_atomic");
  ws.grid = grid;
}

void run_block_serial(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                      cudaStream_t s) {
  const course::LaunchShape shape = ws.ctx.occupancy(dot_block_serial, sizeof(float));
  zero_result(d_result, s);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) return;
  const int grid = grid_stride_blocks(ws.ctx, shape, n);
  dot_block_serial<<<grid, shape.block, shape.block * sizeof(float), s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_block_serial");
  ws.grid = grid;
}

void run_block_tree(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                    cudaStream_t s) {
  const course::LaunchShape shape = ws.ctx.occupancy(dot_block_tree, sizeof(float));
  zero_result(d_result, s);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) return;
  const int grid = grid_stride_blocks(ws.ctx, shape, n);
  dot_block_tree<<<grid, shape.block, shape.block * sizeof(float), s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_block_tree");
  ws.grid = grid;
}

// The speed-of-light row: one 16-byte load of x and of y per thread while that fits on the SMs at
// once, else exactly the resident blocks, each looping.
void run_speed_of_light(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                        cudaStream_t s) {
  const course::LaunchShape shape = ws.ctx.occupancy(speed_of_light_kernel);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) {  // a launch of zero blocks is an error
    zero_result(d_result, s);
    return;
  }
  const int grid = grid_stride_blocks(ws.ctx, shape, (n + 3) / 4);
  speed_of_light_kernel<<<grid, shape.block, 0, s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("speed_of_light_kernel");
  ws.grid = grid;
}

// [two_level_launch]
// One block per tile of block * per_thread elements; then the partials travel to the host, which
// must wait for them (cudaStreamSynchronize) before it adds them in order, in float, and sends the
// result back. The wait and the two copies are the price of the fixed order.
void run_two_level(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                   cudaStream_t s) {
  const course::LaunchShape shape = ws.ctx.occupancy(dot_two_level, sizeof(float));
  if (ws.per_thread < 1) throw course::UsageError("two_level: per_thread must be at least 1");
  if (n > ws.max_n())
    throw course::UsageError("two_level: n = " + std::to_string(n) + " is more than the workspace was planned for (" +
                             std::to_string(ws.max_n()) + "); construct ch05::Workspace(ctx, max_n) with the largest n");
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) {  // a launch of zero blocks is an error, and the sum of nothing is 0
    zero_result(d_result, s);
    return;
  }
  const std::size_t tile = static_cast<std::size_t>(shape.block) * static_cast<std::size_t>(ws.per_thread);
  const std::size_t blocks = (n + tile - 1) / tile;
  if (blocks > static_cast<std::size_t>(INT_MAX))
    throw course::UsageError("two_level: n = " + std::to_string(n) + " needs more blocks than a grid holds; "
                             "raise --per-thread");
  float* d_partials = ws.device_partials(blocks);  // planned at set-up: no call allocates
  float* h_partials = ws.host_partials(blocks);
  dot_two_level<<<static_cast<unsigned>(blocks), shape.block, shape.block * sizeof(float), s>>>(
      d_x, d_y, n, ws.per_thread, d_partials);
  CUDA_CHECK_LAUNCH("dot_two_level");
  CUDA_CHECK(cudaMemcpyAsync(h_partials, d_partials, blocks * sizeof(float), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));  // the host needs the partials now: the GPU goes idle
  float sum = 0.0f;
  for (std::size_t b = 0; b < blocks; ++b) sum += h_partials[b];
  float* h_result = ws.host_result();  // pinned, and not reused before this copy is done (see above)
  *h_result = sum;
  CUDA_CHECK(cudaMemcpyAsync(d_result, h_result, sizeof(float), cudaMemcpyHostToDevice, s));
  ws.grid = static_cast<int>(blocks);
}
// [two_level_launch]

void run_warp_shuffle(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                      cudaStream_t s) {
  const course::LaunchShape shape = ws.ctx.occupancy(dot_warp_shuffle);
  const course::LaunchShape final_shape = ws.ctx.occupancy(sum_partials);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) {  // a launch of zero blocks is an error, and the sum of nothing is 0
    zero_result(d_result, s);
    return;
  }
  const int grid = grid_stride_blocks(ws.ctx, shape, n);
  float* d_partials = ws.device_partials(static_cast<std::size_t>(grid));
  dot_warp_shuffle<<<grid, shape.block, 0, s>>>(d_x, d_y, n, d_partials);
  CUDA_CHECK_LAUNCH("dot_warp_shuffle");
  sum_partials<<<1, final_shape.block, 0, s>>>(d_partials, grid, d_result);  // same stream: runs after
  CUDA_CHECK_LAUNCH("sum_partials");
  ws.grid = grid;
}

}  // namespace

// Two-phase scratch (CUB's temp-storage pattern): the most partials any version needs for n up to
// max_n, laid out once and reserved in the context's arena, which grows here, at set-up, if it must.
// two_level needs one per block of at least 32 threads × per_thread >= 1; warp_shuffle one per
// resident block, whatever n.
Workspace::Workspace(course::Context& context, std::size_t max_n) : ctx(context), max_n_(max_n), h_result_(1) {
  const course::LaunchShape two_level = ctx.occupancy(dot_two_level, sizeof(float));
  const std::size_t two_level_blocks = (max_n + two_level.block - 1) / two_level.block;  // at per_thread 1
  const std::size_t shuffle_blocks = static_cast<std::size_t>(ctx.resident_blocks(ctx.occupancy(dot_warp_shuffle)));
  partials_ = std::max<std::size_t>({two_level_blocks, shuffle_blocks, 1});
  course::ScratchLayout layout;
  partials_offset_ = layout.add(partials_ * sizeof(float));
  scratch_bytes_ = layout.bytes();
  ctx.reserve_scratch(scratch_bytes_);
  h_partials_ = course::PinnedBuffer<float>(partials_);
}

float* Workspace::device_partials(std::size_t count) {
  if (count > partials_)
    throw course::UsageError("ch05::Workspace: " + std::to_string(count) + " partials asked for, " +
                             std::to_string(partials_) + " planned (max_n = " + std::to_string(max_n_) + ")");
  return reinterpret_cast<float*>(static_cast<char*>(ctx.scratch(scratch_bytes_)) + partials_offset_);
}

float* Workspace::host_partials(std::size_t count) {
  if (count > partials_)
    throw course::UsageError("ch05::Workspace: " + std::to_string(count) + " host partials asked for, " +
                             std::to_string(partials_) + " planned (max_n = " + std::to_string(max_n_) + ")");
  return h_partials_.data();
}

// [registry]
const std::vector<course::Version<GpuDot>>& versions() {
  static const std::vector<course::Version<GpuDot>> registry = {
      {"cublas", "cuBLAS cublasSdot: the library baseline", {run_cublas, true}, false},
      {"speed_of_light", "not a dot: 16-byte loads on a grid of resident blocks, one value written (the floor)",
       {run_speed_of_light, false, true}, false},
      {"grid_atomic", "grid-stride loop over every SM, one atomicAdd per thread", {run_grid_atomic}, false},
      {"block_serial", "partials in shared memory, thread 0 adds them, one atomicAdd per block", {run_block_serial},
       false},
      {"block_tree", "shared-memory tree with __syncthreads(), one atomicAdd per block", {run_block_tree}, true},
      {"two_level", "per_thread elements per thread, one partial per block, summed on the host", {run_two_level, true},
       true},
      {"warp_shuffle", "warp-shuffle block sums, one partial per block, a second one-block pass", {run_warp_shuffle, true},
       true},
  };
  return registry;
}
// [registry]

// (The callables go in as host lambdas that refer to the std::functions: nothing of std::function is
// copied into, or destroyed in, a __host__ __device__ function.)
namespace on_host {
void block_tree(float* s_partial, unsigned tid, unsigned count, const Barrier& barrier) {
  block_tree_in_shared(s_partial, tid, count, [&barrier] { barrier(); });
}
float tile_share(const float* x, const float* y, std::size_t n, unsigned block, unsigned tid, unsigned block_dim,
                 int per_thread) {
  return ch05::tile_share(x, y, n, block, tid, block_dim, per_thread);
}
float warp_sum(float value, const ShflDown& shfl_down) { return warp_sum_with(value, [&shfl_down](float v, int offset) { return shfl_down(v, offset); }); }
void tree_any(float* s_partial, unsigned tid, unsigned count, const Barrier& barrier) {
  tree_any_in_shared(s_partial, tid, count, [&barrier] { barrier(); });
}
}  // namespace on_host

}  // namespace ch05
