#pragma once
/// \file random.hpp
/// \brief Seeded random inputs, the same on host and device.
///
/// Value i of a stream depends only on (seed, i), never on how many threads produced it, so a
/// vector filled on the GPU and one filled on the CPU are identical and a reference can be
/// computed without copying gigabytes back.

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define COURSE_HOST_DEVICE __host__ __device__
#else
#define COURSE_HOST_DEVICE
#endif

// Before a COURSE_HOST_DEVICE template that calls what it is given (an add, a barrier, a shuffle):
// the host tests instantiate it with host-only callables (std::function), and nvcc would warn that a
// __host__ __device__ function calls a __host__ one. With this, nvcc checks those calls only in the
// instantiations it compiles for the device.
#if defined(__CUDACC__)
#define COURSE_HOST_DEVICE_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define COURSE_HOST_DEVICE_TEMPLATE
#endif

namespace course {

/// SplitMix64 finalizer of seed and index: a counter-based generator.
COURSE_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Value i of stream `seed`, uniform in [lo, hi) with 24 random bits.
COURSE_HOST_DEVICE inline float random_at(std::uint64_t seed, std::uint64_t i, float lo, float hi) {
  const float unit = static_cast<float>(mix64(seed, i) >> 40) * (1.0f / 16777216.0f);  // [0, 1), exact
  // An explicit fused multiply-add: nvcc contracts a*b+c into an FMA on the device and g++ does not
  // on the host, which would make the two streams differ in the last bit.
  return fmaf(hi - lo, unit, lo);
}

/// The seed of the second input of a pair made from `seed`: x is stream `seed`, y is stream
/// seed_y(seed). The one rule every driver and test uses, so a chapter's inputs for --seed S are
/// the same pair wherever they are made (host or device), and no pair shares a stream with the
/// pair of a neighbouring seed (as seed + 1 would: y of S would be x of S + 1).
constexpr std::uint64_t seed_y(std::uint64_t seed) { return seed ^ 0x5DEECE66Dull; }

/// n values of stream `seed`, uniform in [lo, hi). Signed by default: a dot product of signed
/// data cancels, which is where summation errors and wrong indices show.
std::vector<float> random_vector(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

/// How many host threads random_vector uses for n values when the machine reports
/// `hardware_threads` (0 means unknown): at least 1, at most 8, 1 below 2^22 values.
std::size_t fill_threads(std::size_t n, unsigned hardware_threads);

/// Fills d_out[0, n) on the device with the same values random_vector would give, uniform in
/// [lo, hi), asynchronously on `stream` (a course::Context's: work on it sees the values).
void fill_random_device(float* d_out, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream);

}  // namespace course
