#pragma once
/// \file ladder.hpp
/// \brief Chapter 06 — the reduction ladder: declarations shared by the driver and the tests.
///
/// Every version computes the dot product of two float vectors that already live on the device,
/// writes the result to one float on the device, and returns without waiting: one call is one
/// piece of work enqueued on a stream. Everything a version needs besides its inputs (partial
/// sums, a counter, CUB's scratch memory, the cuBLAS handle) is allocated once in a Workspace, so
/// that a timed call never allocates.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "course/reference.hpp"
#include "course/registry.hpp"

namespace ch06 {

/// Threads per block of every course kernel (a power of two, at least 64: the last-warp code of
/// versions 5–7 reads s_data[tid + 32]).
constexpr unsigned kBlock = 256;

/// Memory that the versions need besides their inputs, allocated once for inputs of up to `max_n`
/// elements. One Workspace serves one stream at a time: the single-pass version keeps a counter in
/// it that two concurrent calls would share.
struct Workspace {
  explicit Workspace(std::size_t max_n);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  /// Device bytes a Workspace for `max_n` elements allocates (for course::require_fits).
  static std::size_t bytes_for(std::size_t max_n);

  /// Throws course::UsageError when a call with n elements and `blocks` blocks does not fit.
  void require(std::size_t n, std::size_t blocks) const;

  /// Fills the partial sums with NaN, so that a version that forgets to write one cannot reuse
  /// what an earlier version left there (tests call it before every run).
  void poison(cudaStream_t stream);

  std::size_t max_n = 0;
  float* d_partials = nullptr;        ///< one partial sum per block of the first pass
  std::size_t partials_capacity = 0;  ///< how many floats d_partials holds
  unsigned* d_counter = nullptr;      ///< blocks finished (single pass); zero between calls
  void* d_cub_temp = nullptr;         ///< CUB's scratch memory
  std::size_t cub_temp_bytes = 0;
  cublasHandle_t cublas = nullptr;    ///< pointer mode device: the result stays on the GPU
  cudaStream_t cublas_stream = nullptr;
  int sm_count = 0;
  int machine_grid = 0;  ///< SMs × resident blocks of the grid-stride kernels (occupancy API)

 private:
  void release() noexcept;
};

/// One version: d_result = Σ d_x[i]·d_y[i] for i < n, enqueued on `stream`, no host wait.
/// Pointers may have any 4-byte alignment, and x and y need not be aligned alike.
using Launcher = void (*)(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                          cudaStream_t stream);

/// The chapter's versions in the order the text climbs them: the two library baselines, the
/// seven classic steps, then what a modern GPU adds.
const std::vector<course::Version<Launcher>>& versions();

/// True for the library baselines (cuBLAS, CUB), which tables and plots mark apart.
bool is_library(const course::Version<Launcher>& version);

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
/// A cuBLAS handle in pointer mode device (results stay on the GPU), on the default stream.
cublasHandle_t create_cublas_handle();

}  // namespace ch06
