#pragma once
/// \file reference.hpp
/// \brief The fp64 reference dot product and the error bound that tests use as tolerance.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace course {

/// The exact-enough answer: the dot product accumulated in double precision, and Σ|x_i·y_i|,
/// which scales every rounding-error bound.
struct Reference {
  double value = 0;
  double sum_abs = 0;
  std::size_t n = 0;
};

/// Computes the reference in fp64. NaN and infinity propagate as IEEE arithmetic says.
Reference reference_dot(const float* x, const float* y, std::size_t n);

/// The fp64 reference of x·y where x and y are the streams course::random_at(seed, i, -1, 1) gives
/// (what fill_random_device and random_vector write), recomputed on the host element by element:
/// a dot product of 2^32 elements made on the device needs no 34 GB of host memory for its
/// reference, only time (about a second per 2^28 elements and core; up to 16 threads). Fixed
/// chunks, each summed in order and combined in order: the same value on every run.
Reference reference_dot_from_seeds(std::size_t n, std::uint64_t seed_x, std::uint64_t seed_y);

/// The tolerance for a float32 dot product of `ref.n` terms, summed in any order.
///
/// Each float operation rounds with relative error at most u = 2^-24. The worst-case bound for
/// n terms is γ_n·Σ|x_i·y_i| with γ_n = n·u/(1 − n·u); it grows with n and would accept a kernel
/// that skips elements. Rounding errors behave like independent random variables, so with
/// probability at least 1 − 2·n·exp(−λ²(1−u)²/2) the error stays under
/// (exp(λ·√n·u + n·u²/(1−u)) − 1)·Σ|x_i·y_i| (Higham & Mary, "A new approach to probabilistic
/// rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019). The course uses λ = 8: a false
/// alarm is rarer than 1 in 10^4 even at n = 2^31. On data uniform in [−1, 1) a single dropped
/// product of typical size (≈ 1/4) exceeds the bound up to n ≈ 2^14; beyond that, tests plant
/// large values ("spikes") at chosen indices, whose loss the bound cannot absorb.
double dot_error_bound(const Reference& ref);

/// Plants large products ("spikes") in x and y so that a kernel that skips or double-counts any
/// of them cannot pass dot_error_bound: at the first, middle and last index and at up to 61 more
/// pseudo-random indices (fewer at large n, where the bound grows). Each spike's product is 64
/// times the bound of the data without spikes, which stays far above the bound with them. All
/// spikes are positive, so they never cancel: a result of 0 (an empty hole) cannot pass either.
/// Assumes inputs in [−1, 1); does nothing for n < 64. Returns the spiked indices.
std::vector<std::size_t> plant_spikes(std::vector<float>& x, std::vector<float>& y);

/// The outcome of comparing a float result with the reference. `ok` is the only thing a test
/// needs to assert; `message` tells a student what went wrong.
struct Verdict {
  bool ok = false;
  double got = 0;
  double expected = 0;
  double error = 0;      ///< |got − expected|
  double bound = 0;      ///< the tolerance it was held to
  double rel_error = 0;  ///< |got − expected| / |expected| (error when expected is 0)
  std::string message;
};

/// Compares `got` with `ref` under dot_error_bound(ref). NaN passes only when the reference is
/// NaN; an infinity only when the reference is the same infinity.
Verdict check_dot(double got, const Reference& ref);

}  // namespace course
