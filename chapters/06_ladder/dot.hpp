// Generated from solutions/06_ladder/dot.hpp by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
#pragma once
/// \file
/// \brief Chapter 06 — the reduction ladder: declarations shared by the driver and the tests.
///
/// Every version computes the dot product of two float vectors that already live on the device,
/// writes the result to one float on the device, and returns without waiting: one call is one
/// piece of work enqueued on a stream. Everything a version needs besides its inputs (partial
/// sums, a counter, CUB's scratch memory, the cuBLAS handle) comes from a course::Context through a
/// Workspace, set up once, so that a timed call never allocates.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "course/context.hpp"
#include "course/random.hpp"  // COURSE_HOST_DEVICE: __host__ __device__ under nvcc, nothing under g++
#include "course/reference.hpp"
#include "course/registry.hpp"

namespace ch06 {

/// Threads per block of the course kernels up to version 11 and of the atomic baseline (a power of
/// two, at least 64: the last-warp code of versions 5–7 reads s_data[tid + 32]).
constexpr unsigned kBlock = 256;

/// Everything the versions need besides their inputs, for inputs of up to `max_n` elements: the
/// partial sums, the single pass's counter, version 12's tagged partials and CUB's scratch memory
/// live in the Context's scratch arena (one ScratchLayout, reserved once); the cuBLAS handle and the
/// device's facts are the Context's. One Workspace serves one stream at a time (the single-pass
/// versions keep state in it between calls), and one Workspace per Context at a time (they would
/// share the arena).
struct Workspace {
  Workspace(course::Context& context, std::size_t max_n);
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  /// Device bytes a Workspace for `max_n` elements reserves, at most, on any card (for
  /// course::require_fits, before the Workspace exists): the constructor's own layout with every
  /// region at its bound.
  static std::size_t bytes_for(std::size_t max_n);

  /// Throws course::UsageError when a call with n elements and `blocks` blocks does not fit.
  void require(std::size_t n, std::size_t blocks) const;

  /// Fills the partial sums (and version 12's tagged partials) with NaN, so that a version that
  /// forgets to write one cannot reuse what an earlier version left there (tests call it before
  /// every run).
  void poison(cudaStream_t stream);

  // The regions of the context's arena; found again on every call (the arena may have grown).
  float* partials() const;            ///< one partial sum per block of the first pass
  unsigned* counter() const;          ///< blocks finished (version 11); zero between calls
  unsigned long long* tagged() const; ///< version 12: (tag << 32 | partial bits) per block
  void* cub_temp() const;             ///< CUB's scratch memory

  /// Version 12's tag for the next call: never 0 (the arena's first fill) nor 0xFFFFFFFF (the
  /// poison). When the 32-bit tag wraps, the tagged partials are cleared first, on `stream`, so
  /// that no partial from four billion calls ago can carry the new tag.
  unsigned next_tag(cudaStream_t stream);

  course::Context& ctx;
  std::size_t max_n = 0;
  std::size_t partials_capacity = 0;  ///< floats in partials()
  std::size_t tagged_capacity = 0;    ///< slots in tagged(): version 12's largest grid
  std::size_t cub_temp_bytes = 0;
  int sm_count = 0;
  int machine_grid = 0;  ///< SMs × resident blocks of versions 9 and 11 (the fewer): version 10's grid, version 11's unit
  int atomic_grid = 0;   ///< SMs × resident blocks of the atomic baseline
  int grid12 = 0;        ///< SMs × resident blocks of version 12 (its largest grid)

 private:
  char* base() const;
  std::size_t scratch_bytes_ = 0;
  std::size_t off_partials_ = 0, off_counter_ = 0, off_tagged_ = 0, off_cub_ = 0;
  unsigned tag_ = 0;
};

/// One version: d_result = Σ d_x[i]·d_y[i] for i < n, enqueued on `stream`, no host wait.
/// Pointers may have any 4-byte alignment, and x and y need not be aligned alike.
using Launcher = void (*)(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                          cudaStream_t stream);

/// The chapter's versions in the order the text climbs them: the baselines (cuBLAS, CUB, and the
/// atomic kernel most engineers would write first), the seven classic steps, then what a modern
/// GPU adds.
const std::vector<course::Version<Launcher>>& versions();

/// True for the library baselines (cuBLAS, CUB).
bool is_library(const course::Version<Launcher>& version);

/// True for every baseline (the libraries, atomic_vec4 and speed_of_light): tables and plots mark
/// them apart, the driver runs them beside any --kernel, and none of them promises the same bits on
/// every run.
bool is_baseline(const course::Version<Launcher>& version);

/// True for the speed-of-light row (run_read_only): not a dot product but the floor every version is
/// held to, timed in the same run. Its result is a value the compiler cannot drop, not Σ x·y: the
/// driver and the tests check only that it ran (a finite value written), never that it is right.
bool is_speed_of_light(const course::Version<Launcher>& version);

/// An empty kernel, <<<1, 1>>>: its time per call is the launch-latency part of the floor.
void run_empty(cudaStream_t stream);

/// For the tests only (issue 38, class 6): the order in which version 11's blocks finish, forced
/// instead of hoped for. A block waits before it stores its partial: `one_late`, block `block`
/// waits `ns` nanoseconds, so it draws the last ticket; `reversed`, block b waits (grid − 1 − b) ·
/// `ns`, so the blocks finish in roughly the reverse of their order. `none` (the default, what the
/// benchmark runs) waits nowhere. Applies to the current device's later launches; synchronous.
enum class FinishOrder : unsigned { none = 0, one_late = 1, reversed = 2 };
void force_finish_order(FinishOrder order, unsigned block = 0, unsigned ns = 0);

/// The wait of block `block` of a grid of `grid` under a forced order, in nanoseconds: the one
/// definition of the orders, used by the kernel on the GPU and by the host player of version 11
/// (`ch06 v11 player: *`), which runs the blocks in the order of their waits.
COURSE_HOST_DEVICE inline unsigned long long finish_delay_ns(FinishOrder order, unsigned late_block, unsigned ns,
                                                             unsigned block, unsigned grid) {
  if (order == FinishOrder::none) return 0;
  return order == FinishOrder::one_late ? (block == late_block ? ns : 0u)
                                        : static_cast<unsigned long long>(grid - 1 - block) * ns;  // reversed
}

/// Not a dot product: the final version's loads on the final version's grid, each thread's sum,
/// no reduction and no combine, one value written to d_result. Its time per call is the floor with
/// memory latency (the launch, the first trip to DRAM, the bytes): the registry's speed_of_light row.
void run_read_only(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                   cudaStream_t stream);

/// The chapter's answer to "how fast can a dot product be": the last registry entry.
const course::Version<Launcher>& final_version();

/// The fp64 reference of Σ x[i]·y[i] for x = course::random_vector(n, seed_x) and
/// y = course::random_vector(n, seed_y), i.e. for inputs made on the device by
/// course::fill_random_device, computed from the generator itself (course::random_at) without
/// ever holding the vectors: for sizes whose copy to the host would cost gigabytes (inputs.cpp).
course::Reference streamed_reference(std::size_t n, std::uint64_t seed_x, std::uint64_t seed_y);

// The library baselines (baselines.cu).
void run_cublas(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                cudaStream_t stream);
void run_cub(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
             cudaStream_t stream);
/// Bytes of scratch memory CUB asks for at n elements.
std::size_t cub_temp_bytes_for(std::size_t n);

// ---------------------------------------------------------------------------------------------
// The index arithmetic of exercises 1 and 2, on the host and on the device. Versions 3 to 7 call
// these functions for their indices, and the host tests (`ch06 index: ...`, no GPU needed) call
// the same functions with recorders, so a student without a GPU learns whether the indexing is
// right. What they do with an index comes in as an argument (add, barrier, visit): they are
// compiled for the host too, where __syncthreads(), threadIdx and blockDim do not exist, so write
// them with their arguments only.
// ---------------------------------------------------------------------------------------------

/// Lanes per warp: 32 on every NVIDIA GPU so far.
constexpr unsigned kWarp = 32;

// [sequential_steps]
/// Exercise 1: version 3's tree over `count` values (a power of two, at most 1024), as thread
/// `tid` takes part in it. add(to, from) adds value `from` into value `to`; barrier() is the
/// block's barrier (__syncthreads() on the GPU, a step counter in the host tests).
COURSE_HOST_DEVICE_TEMPLATE
template <class Add, class Barrier>
COURSE_HOST_DEVICE inline void sequential_steps(unsigned tid, unsigned count, Add add, Barrier barrier) {
  // [hole 1 begin]
  // TODO(student): once every thread has returned, value 0 holds the sum of all `count` values,
  // in log2(count) steps of sequential addressing as README §Steps 1–3 describes it (the test
  // records which thread adds which value in which step); no add reads a value still being
  // written, and every thread passes the same barriers. Tests: `ch06 index: sequential_steps *`
  // (host), then `ch06 v3_sequential: *`.
  (void)tid, (void)count, (void)add, (void)barrier;
  // [hole 1 end]
}
// [sequential_steps]

// [first_add_elements]
/// Exercise 2: the elements thread `tid` of block `block` adds during the load in version 4. Block
/// b covers the 2 · block_dim elements from 2 · b · block_dim on; each of its threads owns two of
/// them, block_dim apart. n may exceed 2^32.
template <class Visit>
COURSE_HOST_DEVICE inline void first_add_elements(unsigned block, unsigned tid, unsigned block_dim, std::size_t n,
                                                  Visit visit) {
  // [hole 2 begin]
  // TODO(student): visit is called exactly once for each of this thread's two elements (the
  // layout above) that lie below n, and for no other index, also past 2^32: no intermediate may
  // wrap in 32 bits. Tests: `ch06 index: first_add_elements *` (host), then
  // `ch06 v4_first_add: *`. See README §Steps 4–6.
  (void)block, (void)tid, (void)block_dim, (void)n, (void)visit;
  // [hole 2 end]
}
// [first_add_elements]

/// The kernels' exercise code (versions 3, 4 and 11) runs on the host, without a GPU: the kernels
/// call __host__ __device__ helpers for what their holes do, and these call the same helpers with
/// the host tests' block player's barrier and block sum (tests/support/block_player.hpp). One call
/// is one thread's part.
namespace on_host {
using Barrier = std::function<void()>;             ///< __syncthreads()
using BlockSum = std::function<float(float)>;      ///< the kit's block_sum: the total in thread 0
using Load = std::function<float(const float*)>;  ///< __ldcg(p): a partial, read from L2
/// Version 3's tree: s_data[0] ends as the sum of s_data[0, count), count a power of two.
void sequential_tree(float* s_data, unsigned tid, unsigned count, const Barrier& barrier);
/// Version 4's load: thread tid of block `block` returns the sum of its two products (those below n).
float first_add_share(const float* x, const float* y, std::size_t n, unsigned block, unsigned tid, unsigned block_dim);
/// Version 11 after the block's sum, for blocks of block_threads (32 or 256) threads: block `block`
/// of `grid` stores its partial, takes its ticket, and the last block writes *result.
void combine_if_last(unsigned block_threads, float sum, unsigned block, unsigned grid, unsigned tid, float* partials,
                     unsigned* counter, float* result, bool& s_is_last, const Barrier& barrier,
                     const BlockSum& block_sum, const Load& load_partial);
}  // namespace on_host

/// Exercise 4 (think): a GPU holds at most `slots` blocks at once (SMs × resident blocks per SM,
/// from the occupancy API); a grid of `blocks` blocks runs in *waves*, the next block starting when
/// a slot frees up. If every block takes the same time, what fraction of the slot-time of the whole
/// run holds a block? 1 means no slot ever idles. Throws course::UsageError when blocks or slots is 0.
double wave_efficiency(std::size_t blocks, std::size_t slots);

}  // namespace ch06
