// Generated from solutions/05_many_blocks/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 05 — many blocks, and the block reduction.
//
// Versions (ch05::versions(); one with `05_many_blocks --kernel NAME`, all with `05_many_blocks`):
//   cublas        cublasSdot, the library baseline                              05_many_blocks --kernel cublas
//   grid_atomic   grid-stride loop over all SMs, one atomicAdd per thread       05_many_blocks --kernel grid_atomic
//   block_serial  shared-memory partials, thread 0 adds them; one atomic/block  05_many_blocks --kernel block_serial
//   block_tree    shared-memory tree with __syncthreads(); one atomic/block     05_many_blocks --kernel block_tree
//                 (exercise 1: block_sum_tree)
//   two_level     per_thread elements per thread, one partial per block, the    05_many_blocks --kernel two_level --per-thread 8
//                 host adds the partials (exercise 2: the tile loop)
//   warp_shuffle  __shfl_down_sync block reduction, one partial per block, a    05_many_blocks --kernel warp_shuffle
//                 second one-block pass (exercise 3: warp_sum)
//
// Launch shapes come from the occupancy API: the block size that keeps the most warps resident,
// and for grid-stride kernels as many blocks as fit on the GPU at once.

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "course/check.hpp"
#include "course/cublas_check.hpp"
#include "course/device.hpp"
#include "dot.hpp"

namespace ch05 {

// Lanes per warp: 32 on every NVIDIA GPU so far; the shuffles and the mask below are written for 32.
constexpr int kWarp = 32;
// Every lane of the warp takes part in each shuffle (the block size is a multiple of 32).
// ([[maybe_unused]]: the student's file uses it only once the warp_sum hole is filled.)
[[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;
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
// blockDim.x must be a power of two, and every thread of the block must call this (the barriers).
// Returns the block's sum, in every thread.
__device__ float block_sum_tree(float value, float* s_partial) {
  const unsigned tid = threadIdx.x;
  s_partial[tid] = value;
  __syncthreads();  // every value is in place before anyone reads a neighbour's
  // [hole 1 begin]
  // TODO(student): reduce the block's partial sums in shared memory: for stride = blockDim.x / 2,
  // ..., 2, 1, thread tid < stride adds s_partial[tid + stride] into s_partial[tid]; every thread
  // calls __syncthreads() after every step (outside the if).
  // [hole 1 end]
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

// [two_level_kernel]
// What changed: no atomics at all. Block b sums its own tile of blockDim.x * per_thread elements
// (thread t takes t, t + blockDim.x, ...: coalesced) and writes one partial, partials[b]; the host
// adds the partials in a fixed order, so every run gives the same bits. Still slow: the partials
// go to the host and the result comes back, and the GPU waits for the host in between.
__global__ void dot_two_level(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                              int per_thread, float* __restrict__ partials) {
  extern __shared__ float s_partial[];  // blockDim.x floats, sized at launch
  float sum = 0.0f;
  // [hole 2 begin]
  // TODO(student): add this thread's per_thread products into sum. The block's tile starts at
  // blockIdx.x * blockDim.x * per_thread (compute it as std::size_t); the thread takes the elements
  // start + threadIdx.x + k * blockDim.x for k = 0, ..., per_thread - 1, skipping those >= n.
  // [hole 2 end]
  sum = block_sum_tree(sum, s_partial);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}
// [two_level_kernel]

// [warp_sum]
// The 32 lanes of a warp add their values through registers: at each step lane l adds the value
// held by lane l + offset, for offset = 16, 8, 4, 2, 1. No shared memory and no barrier: the _sync
// shuffle itself waits for the lanes named in the mask. Lane 0 ends with the warp's sum.
__device__ float warp_sum(float value) {
  // [hole 3 begin]
  // TODO(student): for offset = 16, 8, 4, 2, 1: value += __shfl_down_sync(kFullMask, value, offset).
  // [hole 3 end]
  return value;
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

namespace {

// [occupancy]
// A launch shape from the occupancy API, for a kernel with `shared_per_thread` bytes of dynamic
// shared memory per thread: the block size that keeps the most warps resident on an SM (rounded
// down to a power of two, which the tree needs and the others do not mind), and how many such
// blocks an SM holds at once. Grid-stride kernels launch exactly enough blocks to fill the GPU.
struct Shape {
  int block = 0;
  int blocks_per_sm = 0;
};

// The dynamic shared memory a block of `block` threads asks for (the API tries many block sizes).
struct SharedBytes {
  std::size_t per_thread;
  __host__ __device__ std::size_t operator()(int block) const { return static_cast<std::size_t>(block) * per_thread; }
};

template <class Kernel>
Shape occupancy_shape(Kernel kernel, std::size_t shared_per_thread) {
  int min_grid = 0, suggested = 0;
  CUDA_CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&min_grid, &suggested, kernel,
                                                            SharedBytes{shared_per_thread}));
  Shape s;
  s.block = 1;
  while (s.block * 2 <= suggested) s.block *= 2;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.blocks_per_sm, kernel, s.block,
                                                          s.block * shared_per_thread));
  if (s.block < kWarp || s.blocks_per_sm < 1)
    throw std::runtime_error("occupancy API suggests " + std::to_string(suggested) + " threads per block (" +
                             std::to_string(s.blocks_per_sm) + " per SM); the block reductions need 32 or more");
  return s;
}

// Blocks for a grid-stride kernel: all that fit on the GPU at once, but no more than n needs.
int grid_stride_blocks(const Shape& s, std::size_t n) {
  const std::size_t resident = static_cast<std::size_t>(s.blocks_per_sm) * course::device_facts().sm_count;
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
  cublasHandle_t handle = ws.cublas();
  CUBLAS_CHECK(cublasSetStream(handle, s));
  CUBLAS_CHECK(cublasSdot_64(handle, static_cast<std::int64_t>(n), d_x, 1, d_y, 1, d_result));
}

void run_grid_atomic(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                     cudaStream_t s) {
  static const Shape shape = occupancy_shape(dot_grid_atomic, 0);  // asked once per process
  zero_result(d_result, s);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) return;  // a launch of zero blocks is an error, and the sum of nothing is 0
  const int grid = grid_stride_blocks(shape, n);
  dot_grid_atomic<<<grid, shape.block, 0, s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_grid_atomic");
  ws.grid = grid;
}

void run_block_serial(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                      cudaStream_t s) {
  static const Shape shape = occupancy_shape(dot_block_serial, sizeof(float));
  zero_result(d_result, s);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) return;
  const int grid = grid_stride_blocks(shape, n);
  dot_block_serial<<<grid, shape.block, shape.block * sizeof(float), s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_block_serial");
  ws.grid = grid;
}

void run_block_tree(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                    cudaStream_t s) {
  static const Shape shape = occupancy_shape(dot_block_tree, sizeof(float));
  zero_result(d_result, s);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) return;
  const int grid = grid_stride_blocks(shape, n);
  dot_block_tree<<<grid, shape.block, shape.block * sizeof(float), s>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("dot_block_tree");
  ws.grid = grid;
}

// [two_level_launch]
// One block per tile of block * per_thread elements; then the partials travel to the host, which
// must wait for them (cudaStreamSynchronize) before it adds them in order, in float, and sends the
// result back. The wait and the two copies are the price of the fixed order.
void run_two_level(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                   cudaStream_t s) {
  static const Shape shape = occupancy_shape(dot_two_level, sizeof(float));
  if (ws.per_thread < 1) throw course::UsageError("two_level: per_thread must be at least 1");
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
  float* d_partials = ws.device_partials(blocks, s);
  float* h_partials = ws.host_partials(blocks, s);
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
  static const Shape shape = occupancy_shape(dot_warp_shuffle, 0);
  static const Shape final_shape = occupancy_shape(sum_partials, 0);
  ws.grid = 0;
  ws.block = shape.block;
  if (n == 0) {  // a launch of zero blocks is an error, and the sum of nothing is 0
    zero_result(d_result, s);
    return;
  }
  const int grid = grid_stride_blocks(shape, n);
  float* d_partials = ws.device_partials(static_cast<std::size_t>(grid), s);
  dot_warp_shuffle<<<grid, shape.block, 0, s>>>(d_x, d_y, n, d_partials);
  CUDA_CHECK_LAUNCH("dot_warp_shuffle");
  sum_partials<<<1, final_shape.block, 0, s>>>(d_partials, grid, d_result);  // same stream: runs after
  CUDA_CHECK_LAUNCH("sum_partials");
  ws.grid = grid;
}

}  // namespace

Workspace::~Workspace() {
  if (cublas_ != nullptr) cublasDestroy(cublas_);  // a destructor must not throw; a failure is ignored
}

float* Workspace::device_partials(std::size_t count, cudaStream_t stream) {
  if (d_partials_.size() < count) {
    CUDA_CHECK(cudaStreamSynchronize(stream));  // earlier work on the stream may still use the old buffer
    d_partials_ = course::DeviceBuffer<float>(count);
  }
  return d_partials_.data();
}

float* Workspace::host_partials(std::size_t count, cudaStream_t stream) {
  if (!h_partials_ || h_partials_->size() < count) {
    CUDA_CHECK(cudaStreamSynchronize(stream));  // a copy into the old buffer may still be in flight
    h_partials_ = std::make_unique<course::PinnedBuffer<float>>(count);
  }
  return h_partials_->data();
}

float* Workspace::host_result() {
  if (!h_result_) h_result_ = std::make_unique<course::PinnedBuffer<float>>(1);
  return h_result_->data();
}

cublasContext* Workspace::cublas() {
  if (cublas_ == nullptr) {
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasCreate(&handle));
    // The result is written to device memory, asynchronously, like every other version's.
    const cublasStatus_t mode = cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE);
    if (mode != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
    CUBLAS_CHECK(mode);
    cublas_ = handle;
  }
  return cublas_;
}

// [registry]
const std::vector<course::Version<GpuDot>>& versions() {
  static const std::vector<course::Version<GpuDot>> registry = {
      {"cublas", "cuBLAS cublasSdot: the library baseline", {run_cublas, true}, false},
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

}  // namespace ch05
