#pragma once
/// \file ladder.hpp
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
#include <vector>

#include "course/context.hpp"
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

/// Exercise 5 (think): a GPU holds at most `slots` blocks at once (SMs × resident blocks per SM,
/// from the occupancy API); a grid of `blocks` blocks runs in *waves*, the next block starting when
/// a slot frees up. If every block takes the same time, what fraction of the slot-time of the whole
/// run holds a block? 1 means no slot ever idles. Throws course::UsageError when blocks or slots is 0.
double wave_efficiency(std::size_t blocks, std::size_t slots);

}  // namespace ch06
