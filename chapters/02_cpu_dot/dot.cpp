// Generated from solutions/02_cpu_dot/dot.cpp by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 02: the dot product on the CPU, and what "correct" means.
//
// Versions, in the order of the text (run one with `02_cpu_dot --kernel NAME`, all without):
//   sequential              one loop, one float accumulator: the baseline everyone writes
//   bug_int_accumulator     `auto sum = 0;` makes the accumulator an int: every step truncates
//   transform_reduce        the standard library's one-liner (and its own `0` trap)
//   unrolled                eight independent accumulators: vectorized without -ffast-math
//   pairwise                split in halves, sum each recursively: error grows with log n, not n
//   bug_shared_accumulator  threads add into one shared float: lost updates, and slow
//   threads_partials        one partial sum per thread, added at the end: right, and fast
//
// Exercises (holes in chapters/02_cpu_dot/dot.cpp): unrolled, pairwise, threads_partials.

#include "dot.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <vector>

namespace ch02 {
namespace {

// What an unfilled exercise returns: NaN, which no correct dot product of finite inputs is.
constexpr float kUnfilled = std::numeric_limits<float>::quiet_NaN();

// Splits [0, n) into `threads` contiguous chunks, runs body(t, begin, end) for chunk t on its own
// std::thread, and joins them all. Contiguous chunks keep each thread on its own cache lines.
template <class Body>
void for_each_chunk(unsigned threads, std::size_t n, Body body) {
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t begin = n * t / threads;
    const std::size_t end = n * (t + 1) / threads;
    pool.emplace_back([=, &body] { body(t, begin, end); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace

unsigned thread_count(const CpuConfig& config, std::size_t n) {
  unsigned t = config.threads != 0 ? config.threads : std::max(1u, std::thread::hardware_concurrency());
  if (n < t) t = static_cast<unsigned>(std::max<std::size_t>(n, 1));
  return t;
}

// The loop everyone writes first. One float accumulator, so every addition waits for the one
// before it (a chain of n dependent adds), and the compiler may not reorder them: float addition
// is not associative, and -O3 without -ffast-math keeps the order the source asks for.
// [sequential]
float dot_sequential(const float* x, const float* y, std::size_t n, const CpuConfig&) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}
// [sequential]

// The same loop with the accumulator's type left to `auto`: the literal 0 is an int, so sum is
// an int, and `sum += x[i] * y[i]` converts each float result back to int, truncating toward
// zero. It compiles without a warning under -Wall -Wextra (only -Wconversion catches it).
// Past int's range that conversion is undefined behaviour (on x86 it gives INT_MIN); the course's
// copy saturates there instead, so the version is wrong in the same defined way at every n.
static int truncate_to_int(float v) {
  if (!(v < 2147483648.0f)) return std::numeric_limits<int>::max();  // NaN too: no defined answer
  if (v < -2147483648.0f) return std::numeric_limits<int>::min();
  return static_cast<int>(v);  // toward zero: the bug the text shows
}
// [bug_int_accumulator]
float dot_bug_int_accumulator(const float* x, const float* y, std::size_t n, const CpuConfig&) {
  auto sum = 0;  // int, not float
  for (std::size_t i = 0; i < n; ++i) sum = truncate_to_int(sum + x[i] * y[i]);  // sum += x[i] * y[i]
  return sum;
}
// [bug_int_accumulator]

// The standard library's dot product. transform_reduce (C++17), unlike inner_product, may
// reorder the additions; libstdc++ uses that to add four products at a time into the running
// sum. The type of the result is the type of the initial value: `0.0f`, not `0`.
// [transform_reduce]
float dot_transform_reduce(const float* x, const float* y, std::size_t n, const CpuConfig&) {
  return std::transform_reduce(x, x + n, y, 0.0f);
}
// [transform_reduce]

// Eight independent accumulators, written out. The eight chains of additions do not wait for
// each other, and the compiler turns the inner loop into vector instructions (two 4-wide SSE
// adds) without -ffast-math, because the source itself states the order of every addition.
// Still one core: the other cores and most of the memory bandwidth are idle.
// [unrolled]
float dot_unrolled(const float* x, const float* y, std::size_t n, const CpuConfig&) {
  constexpr std::size_t kLanes = 8;
  float acc[kLanes] = {};
  std::size_t i = 0;
  // [hole 1 begin]
  // TODO(student): walk x and y kLanes elements at a time. Afterwards i == n - n % kLanes (the
  // tail loop adds the rest) and acc[k] is the sum of x[j] * y[j] over the j < i with
  // j % kLanes == k: kLanes independent float chains, no compiler flag or pragma.
  // Tests: ch02 unrolled: *, ch02 unrolled lanes: * (packed adds). See README §Exercise 1.
  acc[0] = kUnfilled;
  // [hole 1 end]
  float tail = 0.0f;
  for (; i < n; ++i) tail += x[i] * y[i];
  // Combine the lanes pairwise: (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then 0+1.
  for (std::size_t width = kLanes / 2; width > 0; width /= 2)
    for (std::size_t k = 0; k < width; ++k) acc[k] += acc[k + width];
  return acc[0] + tail;
}
// [unrolled]

// Pairwise (cascade) summation: sum each half recursively, then add the two halves. Each product
// passes through about log2(n) additions instead of up to n, so the rounding error grows with
// log n. Still one dependent chain per leaf and one core; the tree is the shape of every GPU
// reduction from chapter 05 on.
// [pairwise]
float dot_pairwise(const float* x, const float* y, std::size_t n, const CpuConfig& config) {
  // [hole 2 begin]
  // TODO(student): return the dot product of [0, n) summed as a binary tree whose leaves hold at
  // most kPairwiseBase elements, each summed by dot_sequential, so that every product meets about
  // log2(n) additions; any n, odd too. Tests: ch02 pairwise: * (2^24 positive products to 1e-6).
  // See README §Exercise 2.
  (void)x, (void)y, (void)n, (void)config;
  return kUnfilled;
  // [hole 2 end]
}
// [pairwise]

// Every thread adds its products straight into one shared accumulator. `sum += p` is a read, an
// add and a write; when another thread writes between our read and our write, its update is
// lost. With a plain float this is a data race, which C++ makes undefined behaviour (the compiler
// may keep `sum` in a register and write it once); relaxed atomic loads and stores spell out the
// read and the write, so the program is defined and still loses updates. It is also slow: the
// cache line holding `sum` bounces between cores on every addition.
// [bug_shared_accumulator]
float dot_bug_shared_accumulator(const float* x, const float* y, std::size_t n, const CpuConfig& config) {
  std::atomic<float> sum{0.0f};
  for_each_chunk(thread_count(config, n), n, [&](unsigned, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const float seen = sum.load(std::memory_order_relaxed);  // read ...
      sum.store(seen + x[i] * y[i], std::memory_order_relaxed);  // ... and write: not one step
    }
  });
  return sum.load();
}
// [bug_shared_accumulator]

// Each thread sums its own contiguous chunk in a local variable and writes it once, to its own
// slot; the main thread adds the partials after join(). Nothing is shared while the threads run,
// so nothing is lost, and the order of every addition is fixed: the same inputs give the same
// bits every run. Still slow for small n: starting a thread costs tens of microseconds.
// [threads_partials]
float dot_threads_partials(const float* x, const float* y, std::size_t n, const CpuConfig& config) {
  const unsigned threads = thread_count(config, n);
  std::vector<float> partial(threads, kUnfilled);
  // [hole 3 begin]
  // TODO(student): afterwards partial[t] holds the dot product of chunk t of [0, n) as
  // for_each_chunk splits it, summed by thread t itself. The threads share no accumulator, and
  // each writes its own slot once (false sharing). Same inputs and thread count: same bits.
  // Tests: ch02 threads_partials: * (1, 2, 3, 7 threads; 5 runs bitwise). See README §Exercise 3.
  // [hole 3 end]
  float sum = 0.0f;
  for (const float p : partial) sum += p;
  return sum;
}
// [threads_partials]

// [registry]
const std::vector<course::Version<CpuVersion>>& versions() {
  // name, description, {function, threaded, wrong on purpose}, exercise
  static const std::vector<course::Version<CpuVersion>> registry = {
      {"sequential", "one loop, one float accumulator", {dot_sequential, false, false}, false},
      {"bug_int_accumulator", "`auto sum = 0` makes the accumulator an int (wrong on purpose)",
       {dot_bug_int_accumulator, false, true}, false},
      {"transform_reduce", "std::transform_reduce(x, x + n, y, 0.0f)", {dot_transform_reduce, false, false}, false},
      {"unrolled", "8 independent accumulators, vectorized", {dot_unrolled, false, false}, true},
      {"pairwise", "recursive halves: the error grows with log n", {dot_pairwise, false, false}, true},
      {"bug_shared_accumulator", "threads add into one shared float (wrong on purpose, slow)",
       {dot_bug_shared_accumulator, true, true}, false},
      {"threads_partials", "one partial sum per thread, added at the end", {dot_threads_partials, true, false}, true},
  };
  return registry;
}
// [registry]

// [compensated]
// Exercise 4 (think): a float accumulator rounds every addition, and when the sum is large a small
// term loses most of its bits (or all of them). Compensated summation keeps, in a second float,
// what the additions lost, and adds it back at the end. The loss of one addition a + b can be
// recovered exactly in float arithmetic, but the formula depends on which of a and b is larger in
// magnitude: the tests add large terms to small sums and small terms to large sums. Exact arithmetic
// would make every loss 0: write it so that float arithmetic, rounded at each step, finds it. No
// wider type (double, long double): the point is to do it in float.
float dot_compensated(const float* x, const float* y, std::size_t n) {
  // [hole 4 begin]
  // TODO(student): return the dot product within two roundings of the exact result, in float
  // only: a running sum, and a second float to gather what each addition lost to rounding, given
  // back at the end. One addition's loss is yours to derive (two cases; exact arithmetic makes it
  // 0). Tests: ch02 compensated: * (lopsided and random data). See README §Exercise 4.
  (void)x, (void)y, (void)n;
  return kUnfilled;
  // [hole 4 end]
}
// [compensated]

}  // namespace ch02
