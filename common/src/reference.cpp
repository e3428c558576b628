#include "course/reference.hpp"

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <limits>
#include <thread>
#include <vector>

#include "course/random.hpp"

namespace course {

Reference reference_dot(const float* x, const float* y, std::size_t n) {
  // Four fp64 accumulators: the same answer to ~1e-16 relative, and four times the speed of one
  // dependent chain on a CPU (the reference runs on up to 2^31 elements).
  double s[4] = {0, 0, 0, 0};
  double a[4] = {0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) {
      const double p = static_cast<double>(x[i + k]) * static_cast<double>(y[i + k]);
      s[k] += p;
      a[k] += std::fabs(p);
    }
  for (; i < n; ++i) {
    const double p = static_cast<double>(x[i]) * static_cast<double>(y[i]);
    s[0] += p;
    a[0] += std::fabs(p);
  }
  return {(s[0] + s[1]) + (s[2] + s[3]), (a[0] + a[1]) + (a[2] + a[3]), n};
}

double dot_error_bound(const Reference& ref) {
  constexpr double u = 1.0 / 16777216.0;  // 2^-24: unit roundoff of float32
  constexpr double lambda = 8.0;
  const double n = static_cast<double>(ref.n) + 1.0;  // n products and sums, plus the final rounding
  const double gamma = std::expm1(lambda * std::sqrt(n) * u + n * u * u / (1.0 - u));
  return gamma * ref.sum_abs;
}

std::vector<std::size_t> plant_spikes(std::vector<float>& x, std::vector<float>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  std::vector<std::size_t> at;
  if (n < 64) return at;
  // The bound of the unspiked data, with Σ|x·y| ≈ n/4 for uniform [−1, 1), as a fraction g of Σ.
  const Reference plain{0.0, 0.25 * static_cast<double>(n), n};
  const double g = dot_error_bound(plain) / plain.sum_abs;
  const double spike = 64.0 * g * plain.sum_abs;
  // k spikes raise Σ|x·y| by k·spike; with k ≤ 1/(16 g) the bound stays under 40 g Σ < spike.
  const std::size_t k = std::clamp<std::size_t>(static_cast<std::size_t>(1.0 / (16.0 * g)), 3, 64);
  at = {0, n / 2, n - 1};
  for (std::size_t j = 0; at.size() < k && j < 4 * k; ++j) {
    const std::size_t i = static_cast<std::size_t>(mix64(0x5B1CE5ull, j) % n);
    if (std::find(at.begin(), at.end(), i) == at.end()) at.push_back(i);
  }
  // All positive: spikes of alternating sign would cancel, and a kernel returning exactly 0 (an
  // empty exercise hole) would then sit inside the bound that the spikes themselves inflate.
  for (std::size_t i : at) {
    x[i] = static_cast<float>(spike);
    y[i] = 1.0f;
  }
  return at;
}

Verdict check_dot(double got, const Reference& ref) {
  Verdict v;
  v.got = got;
  v.expected = ref.value;
  v.bound = dot_error_bound(ref);
  v.error = std::fabs(got - ref.value);
  v.rel_error = ref.value != 0 ? v.error / std::fabs(ref.value) : v.error;
  char buf[256];
  if (std::isnan(ref.value)) {
    v.ok = std::isnan(got);
    std::snprintf(buf, sizeof buf, "got %.9g, expected NaN (an input is NaN, and NaN must propagate)", got);
  } else if (std::isinf(ref.value)) {
    v.ok = got == ref.value;
    std::snprintf(buf, sizeof buf, "got %.9g, expected %.9g (an input is infinite)", got, ref.value);
  } else {
    v.ok = std::isfinite(got) && v.error <= v.bound;
    if (std::isnan(got))
      std::snprintf(buf, sizeof buf,
                    "got NaN, expected %.9g: the result was never written (it starts as NaN), or a NaN "
                    "was read from outside the inputs",
                    ref.value);
    else
      std::snprintf(buf, sizeof buf, "got %.9g, expected %.9g (fp64): error %.3g %s the allowed %.3g", got,
                    ref.value, v.error, v.ok ? "within" : "exceeds", v.bound);
  }
  v.message = buf;
  return v;
}

Reference reference_dot_from_seeds(std::size_t n, std::uint64_t seed_x, std::uint64_t seed_y) {
  // Fixed chunks, each summed in order and combined in order: the same value on every run.
  const std::size_t chunks = n < (std::size_t{1} << 20) ? 1 : 16;
  const unsigned workers = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<double> value(chunks, 0.0), sum_abs(chunks, 0.0);
  auto work = [&](unsigned first) {
    for (std::size_t c = first; c < chunks; c += workers) {
      const std::size_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      double s = 0.0, a = 0.0;
      for (std::size_t i = begin; i < end; ++i) {
        const double p = static_cast<double>(random_at(seed_x, i, -1.0f, 1.0f)) *
                         static_cast<double>(random_at(seed_y, i, -1.0f, 1.0f));
        s += p;
        a += std::fabs(p);
      }
      value[c] = s;
      sum_abs[c] = a;
    }
  };
  if (chunks == 1) {
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers; ++w) threads.emplace_back(work, w);
    for (auto& t : threads) t.join();
  }
  Reference ref;
  ref.n = n;
  for (std::size_t c = 0; c < chunks; ++c) {
    ref.value += value[c];
    ref.sum_abs += sum_abs[c];
  }
  return ref;
}

}  // namespace course
