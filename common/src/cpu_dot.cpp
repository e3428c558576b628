// The kit's threaded CPU dot (course/cpu_dot.hpp): chapter 02's threads_partials on a thread pool,
// accumulated in double.

#include "course/cpu_dot.hpp"

#include <atomic>
#include <vector>

// Several instruction-set levels where GCC can compile one function for each (x86-64, ELF).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define COURSE_CPU_DOT_LEVELS 1
#else
#define COURSE_CPU_DOT_LEVELS 0
#endif

namespace course {
namespace {

// Parts start on a 16-float boundary (64 bytes): no two threads share a cache line of x or y.
std::size_t part_begin(std::size_t n, unsigned part, unsigned parts) {
  if (part == 0) return 0;
  if (part >= parts) return n;
  const std::size_t b = static_cast<std::size_t>(static_cast<long double>(n) * part / parts);
  return b & ~std::size_t{15};
}

// Sums [0, n) in `chunks` chunks on `parts` pool parts (pool parts [0, first) run alongside()
// instead): each part takes the next unclaimed chunk until none is left, so a thread that the host
// slows down takes fewer chunks instead of holding up the others (a static split waits for its
// slowest part). Which thread sums a chunk changes from call to call; the chunks' bounds and the
// order their partials are added in do not: the same bits on every call.
double run_chunks(ThreadPool& pool, const float* x, const float* y, std::size_t n, unsigned first, unsigned parts,
                  unsigned chunks, const std::function<void()>* alongside) {
  std::vector<double> partial(chunks, 0.0);
  std::atomic<unsigned> next{0};
  pool.run(first + parts, [&](unsigned part) {
    if (part < first) {
      if (alongside != nullptr) (*alongside)();
      return;
    }
    for (unsigned c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      const std::size_t begin = part_begin(n, c, chunks), end = part_begin(n, c + 1, chunks);
      partial[c] = cpu_dot_serial(x + begin, y + begin, end - begin);  // one write per chunk
    }
  });
  double sum = 0.0;
  for (const double s : partial) sum += s;  // fixed order: deterministic
  return sum;
}

}  // namespace

// [cpu_dot_serial]
// One body, compiled once per instruction-set level below. Its lanes are independent and combined
// in a fixed order, and a product of two floats is exact in double (so a fused multiply-add rounds
// it no differently): every level gives the same bits; only how many lanes one instruction holds
// changes.
#define COURSE_CPU_DOT_SERIAL_BODY                                                                  \
  constexpr std::size_t kLanes = 16;                                                                \
  double acc[kLanes] = {};                                                                          \
  std::size_t i = 0;                                                                                \
  for (; i + kLanes <= n; i += kLanes)                                                              \
    for (std::size_t k = 0; k < kLanes; ++k)                                                        \
      acc[k] += static_cast<double>(x[i + k]) * static_cast<double>(y[i + k]);                      \
  double tail = 0.0;                                                                                \
  for (; i < n; ++i) tail += static_cast<double>(x[i]) * static_cast<double>(y[i]);                 \
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)                                       \
    for (std::size_t k = 0; k < width; ++k) acc[k] += acc[k + width];                               \
  return acc[0] + tail;

namespace {
double serial_baseline(const float* x, const float* y, std::size_t n) noexcept { COURSE_CPU_DOT_SERIAL_BODY }

#if COURSE_CPU_DOT_LEVELS
// The build targets the oldest x86-64 (SSE2: two doubles per instruction); NumPy picks AVX2 or
// AVX-512 at run time, and so does this: 4 or 8 doubles per instruction, chosen once per process.
__attribute__((target("avx2,fma"))) double serial_avx2(const float* x, const float* y, std::size_t n) noexcept {
  COURSE_CPU_DOT_SERIAL_BODY
}
// GCC's tuning keeps AVX-512 code at 256 bits unless asked: the conversions to double are what
// limits this loop, and 512-bit ones convert twice as many floats per instruction.
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,prefer-vector-width=512"))) double serial_avx512(
    const float* x, const float* y, std::size_t n) noexcept {
  COURSE_CPU_DOT_SERIAL_BODY
}
#endif
#undef COURSE_CPU_DOT_SERIAL_BODY

using SerialFn = double (*)(const float*, const float*, std::size_t) noexcept;

SerialFn serial_at(CpuLevel level) noexcept {
  switch (level) {
#if COURSE_CPU_DOT_LEVELS
    case CpuLevel::avx2: return serial_avx2;
    case CpuLevel::avx512: return serial_avx512;
#endif
    default: return serial_baseline;
  }
}

SerialFn serial_chosen() noexcept {
  static const SerialFn fn = serial_at(cpu_dot_level());
  return fn;
}
}  // namespace

std::vector<CpuLevel> cpu_dot_levels() {
  std::vector<CpuLevel> levels = {CpuLevel::baseline};
#if COURSE_CPU_DOT_LEVELS
  __builtin_cpu_init();  // may run before the constructors that would otherwise do it
  // __builtin_cpu_supports also asks whether the OS saves the wide registers (XGETBV).
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    levels.push_back(CpuLevel::avx2);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
      levels.push_back(CpuLevel::avx512);
  }
#endif
  return levels;
}

const char* cpu_level_name(CpuLevel level) noexcept {
  switch (level) {
    case CpuLevel::avx2: return "avx2";
    case CpuLevel::avx512: return "avx512";
    default: return "baseline";
  }
}

CpuLevel cpu_dot_level() noexcept {
  static const CpuLevel level = cpu_dot_levels().back();
  return level;
}

double cpu_dot_serial_at(CpuLevel level, const float* x, const float* y, std::size_t n) noexcept {
  return serial_at(level)(x, y, n);
}

double cpu_dot_serial(const float* x, const float* y, std::size_t n) noexcept { return serial_chosen()(x, y, n); }
// [cpu_dot_serial]

double cpu_dot(ThreadPool& pool, const float* x, const float* y, std::size_t n, std::size_t min_per_part) {
  const unsigned parts = cpu_dot_parts(n, pool.size(), min_per_part);
  if (parts == 1) return cpu_dot_serial(x, y, n);
  return run_chunks(pool, x, y, n, 0, parts, cpu_dot_chunks(n, parts), nullptr);
}

double cpu_dot_alongside(ThreadPool& pool, const float* x, const float* y, std::size_t n,
                         const std::function<void()>& alongside) {
  if (pool.size() == 1) {
    alongside();
    return cpu_dot_serial(x, y, n);
  }
  const unsigned parts = pool.size() - 1;
  return run_chunks(pool, x, y, n, 1, parts, cpu_dot_chunks(n, parts), &alongside);
}

}  // namespace course
