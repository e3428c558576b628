// The kit's threaded CPU dot (course/cpu_dot.hpp): chapter 02's threads_partials on a thread pool,
// accumulated in double.

#include "course/cpu_dot.hpp"

#include <vector>

namespace course {
namespace {

// Parts start on a 16-float boundary (64 bytes): no two threads share a cache line of x or y.
std::size_t part_begin(std::size_t n, unsigned part, unsigned parts) {
  if (part == 0) return 0;
  if (part >= parts) return n;
  const std::size_t b = static_cast<std::size_t>(static_cast<long double>(n) * part / parts);
  return b & ~std::size_t{15};
}

// Sums [0, n) in `parts` parts, part p (of `parts`) on pool part first + p; the partials in order.
double run_parts(ThreadPool& pool, const float* x, const float* y, std::size_t n, unsigned first,
                 const std::function<void()>* alongside) {
  const unsigned parts = pool.size() - first;
  std::vector<double> partial(parts, 0.0);
  pool.run([&](unsigned part) {
    if (part < first) {
      if (alongside != nullptr) (*alongside)();
      return;
    }
    const unsigned p = part - first;
    const std::size_t begin = part_begin(n, p, parts), end = part_begin(n, p + 1, parts);
    partial[p] = cpu_dot_serial(x + begin, y + begin, end - begin);  // one write per thread
  });
  double sum = 0.0;
  for (const double s : partial) sum += s;  // fixed order: deterministic
  return sum;
}

}  // namespace

// [cpu_dot_serial]
double cpu_dot_serial(const float* x, const float* y, std::size_t n) noexcept {
  constexpr std::size_t kLanes = 8;
  double acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t k = 0; k < kLanes; ++k) acc[k] += static_cast<double>(x[i + k]) * static_cast<double>(y[i + k]);
  double tail = 0.0;
  for (; i < n; ++i) tail += static_cast<double>(x[i]) * static_cast<double>(y[i]);
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)
    for (std::size_t k = 0; k < width; ++k) acc[k] += acc[k + width];
  return acc[0] + tail;
}
// [cpu_dot_serial]

double cpu_dot(ThreadPool& pool, const float* x, const float* y, std::size_t n, std::size_t serial_max) {
  if (n < serial_max || pool.size() == 1) return cpu_dot_serial(x, y, n);
  return run_parts(pool, x, y, n, 0, nullptr);
}

double cpu_dot_alongside(ThreadPool& pool, const float* x, const float* y, std::size_t n,
                         const std::function<void()>& alongside) {
  if (pool.size() == 1) {
    alongside();
    return cpu_dot_serial(x, y, n);
  }
  return run_parts(pool, x, y, n, 1, &alongside);
}

}  // namespace course
