// Generated from solutions/05_many_blocks/dot.hpp by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
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
#include <functional>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/random.hpp"  // COURSE_HOST_DEVICE: __host__ __device__ under nvcc, nothing under g++
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

// ---------------------------------------------------------------------------------------------
// The index arithmetic of the exercises, on the host and on the device. The kernels in dot.cu call
// these functions for every index they use, and the host tests (`ch05 index: ...`, no GPU needed)
// call the same functions, so a student without a GPU learns whether the indexing is right. They
// take what they must do with an index as an argument (add, barrier, visit, shfl_down): the kernels
// pass shared memory, __syncthreads() and the loads; the tests pass a recorder or a simulated warp.
// Write them with those arguments only: they are compiled for the host too, where __syncthreads()
// and the shuffles do not exist.
// ---------------------------------------------------------------------------------------------

/// Lanes per warp: 32 on every NVIDIA GPU so far; the shuffles are written for 32.
constexpr int kWarp = 32;

// [tree_steps]
/// Exercise 1: the tree of block_sum_tree over `count` values (count a power of two), as thread
/// `tid` takes part in it. add(to, from) adds value `from` into value `to`; barrier() is the
/// block's barrier (on the GPU __syncthreads(), in the host test a recorder that plays every thread).
COURSE_HOST_DEVICE_TEMPLATE
template <class Add, class Barrier>
COURSE_HOST_DEVICE inline void tree_steps(unsigned tid, unsigned count, Add add, Barrier barrier) {
  // [hole 1 begin]
  // TODO(student): once all count threads have run this, value 0 holds the sum of all count values,
  // each once, after log2(count) steps. In a step: at most one add per thread, the adders contiguous
  // from thread 0, no value written by one thread and touched by another; every thread calls
  // barrier() after every step, the same number of times. Tests: `ch05 index: tree_steps *` (host),
  // then `ch05 block_tree: *`. See README §The tree.
  (void)tid, (void)count, (void)add, (void)barrier;
  // [hole 1 end]
}
// [tree_steps]

// [for_each_in_tile]
/// Exercise 2: the elements thread `tid` of block `block` takes in two_level, where each block of
/// `block_dim` threads sums its own tile of block_dim * per_thread consecutive elements.
template <class Visit>
COURSE_HOST_DEVICE inline void for_each_in_tile(unsigned block, unsigned tid, unsigned block_dim, int per_thread,
                                                std::size_t n, Visit visit) {
  // [hole 2 begin]
  // TODO(student): call visit(i) for this thread's per_thread elements, each once: exactly the i < n
  // with i / tile == block and (i - block * tile) % block_dim == tid, tile = block_dim * per_thread.
  // n and the tiles' starts pass 2^32: no product may wrap. Tests: `ch05 index: for_each_in_tile *`
  // (host), `ch05 two_level: *`. See README §Two levels.
  (void)block, (void)tid, (void)block_dim, (void)per_thread, (void)n, (void)visit;
  // [hole 2 end]
}
// [for_each_in_tile]

// [warp_sum_steps]
/// Exercise 3: the sum of a warp's 32 values by shuffles. shfl_down(value, offset) gives every lane
/// the value held by lane + offset (a lane past the warp's end gets its own back): on the GPU the
/// warp's shuffle down (warp_sum passes it), in the host tests a simulated warp, whose values are
/// all 32 lanes' at once.
COURSE_HOST_DEVICE_TEMPLATE
template <class T, class ShflDown>
COURSE_HOST_DEVICE inline T warp_sum_steps(T value, ShflDown shfl_down) {
  // [hole 3 begin]
  // TODO(student): lane 0 returns the sum of the 32 lanes' values, each counted once, after at most
  // five shfl_down calls (log2 of the warp); other lanes may return partial sums. Combine values
  // with + only, exchange them with shfl_down only (this runs on the host too). Tests: `ch05 index:
  // warp_sum_steps *` (host), `ch05 warp_shuffle: *`. See README §Warp shuffles.
  (void)shfl_down;
  // [hole 3 end]
  return value;
}
// [warp_sum_steps]

// [tree_steps_any]
/// Exercise 4 (think): a tree for ANY count of values from 1 to 1024 (block_sum_any's), as thread
/// `tid` takes part in it: about log2(count) steps; add(to, from) adds value `from` into value
/// `to`; every thread calls barrier() between steps, the same number of times; no index reaches
/// count; value 0 ends with the sum of all.
COURSE_HOST_DEVICE_TEMPLATE
template <class Add, class Barrier>
COURSE_HOST_DEVICE inline void tree_steps_any(unsigned tid, unsigned count, Add add, Barrier barrier) {
  // [hole 4 begin]
  // TODO(student): reduce values [0, count) into value 0 for any count from 1 to 1024, in about
  // log2(count) steps; no index >= count, no value touched by two threads in one step, barrier()
  // between steps, EVERY thread the same number of times. Tests: `ch05 index: tree_steps_any *`
  // (host), `ch05 block_sum_any: *`. See README §Exercise 4.
  (void)tid, (void)count, (void)add, (void)barrier;
  // [hole 4 end]
}
// [tree_steps_any]

/// Exercise 4 (think): the sum of `values` (1 to 1024 of them) by one block of values.size()
/// threads, thread t holding values[t], through the device function block_sum_any (a tree for any
/// block size). Waits for the result. For the tests.
float block_sum_any_on_gpu(const std::vector<float>& values, course::Context& ctx);

/// The kernels' exercise code (dot.cu's holes 1–4) run on the host, without a GPU: the device
/// functions call __host__ __device__ helpers for what their holes do, and these call the same
/// helpers with the host tests' block player's barrier and shuffle (tests/support/block_player.hpp).
/// One call is one thread's part.
namespace on_host {
using Barrier = std::function<void()>;              ///< __syncthreads()
using ShflDown = std::function<float(float, int)>;  ///< __shfl_down_sync(0xffffffff, v, offset)
/// block_sum_tree's tree: s_partial[0] ends as the sum of s_partial[0, count), count a power of two.
void block_tree(float* s_partial, unsigned tid, unsigned count, const Barrier& barrier);
/// two_level's loop: thread tid of block `block` returns the sum of its per_thread products.
float tile_share(const float* x, const float* y, std::size_t n, unsigned block, unsigned tid, unsigned block_dim,
                 int per_thread);
/// warp_sum: lane 0 returns the sum of the warp's 32 values.
float warp_sum(float value, const ShflDown& shfl_down);
/// block_sum_any's tree: s_partial[0] ends as the sum of s_partial[0, count), any count 1..1024.
void tree_any(float* s_partial, unsigned tid, unsigned count, const Barrier& barrier);
}  // namespace on_host

}  // namespace ch05
