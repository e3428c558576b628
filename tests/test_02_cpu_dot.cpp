// Chapter 02 grading tests: every version of the registry at awkward sizes, on random signed data
// with planted spikes, within course::dot_error_bound of the fp64 reference; the accuracy lesson
// of the text; and the two bugs, checked only where they are certain (never by losing a race).
// Host-only: no GPU needed.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "course/random.hpp"
#include "course/reference.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

using Version = course::Version<ch02::CpuVersion>;

// Sizes around every boundary of the chapter: the 8 lanes of `unrolled`, the 32-element leaves
// of `pairwise`, 64 (where make_dot_inputs starts planting spikes), 2^20+3 and a random size.
std::vector<std::size_t> sizes() {
  auto out = course::test::awkward_sizes(64, 202);
  for (std::size_t n : {7, 8, 9, 31, 32, 33}) out.push_back(n);
  return out;
}

// Where a student should look when a version is wrong.
std::string hint_for(const Version& v) {
  static const std::map<std::string, std::string> hints = {
      {"unrolled",
       "NaN means the loop over groups of kLanes never ran (acc[0] still holds the poison). Wrong only at "
       "sizes that are not a multiple of 8: when the hole ends, i must be the end of the last whole group "
       "(n - n % kLanes), so that the tail loop adds each remaining element once and nothing is read past n. "
       "See dot_unrolled, README §Exercise 1."},
      {"pairwise",
       "NaN means dot_pairwise still returns the poison. Wrong at n > 32 only: the two halves must cover "
       "[0, n) exactly once, odd n too, and each half must be summed the same pairwise way down to the "
       "leaves. See dot_pairwise, README §Exercise 2."},
      {"threads_partials",
       "NaN means a partial[t] was never written: each thread must leave the sum of its own chunk in its own "
       "slot. Wrong with several threads only: the chunks must cover [0, n) exactly once, as for_each_chunk "
       "splits it (n not a multiple of the thread count too). See dot_threads_partials, README §Exercise 3."},
  };
  const auto it = hints.find(std::string(v.name));
  return it != hints.end() ? it->second : "compare with dot_sequential, which is known to be right";
}

// Runs `v` at n on fresh inputs and checks it against the fp64 reference and its error bound.
void check_at(const Version& v, std::size_t n, const ch02::CpuConfig& config) {
  const auto in = course::test::make_dot_inputs(n, 1000 + n);
  const float got = v.run.dot(in.x.data(), in.y.data(), n, config);
  const course::Verdict verdict = course::check_dot(got, in.ref);
  std::string what = std::string(v.name);
  if (v.run.threaded) what += " on " + std::to_string(config.threads) + " threads";
  INFO(course::test::explain(verdict, n, what, hint_for(v)));
  CHECK(verdict.ok);
}

const bool registered = [] {
  for (const Version& v : ch02::versions()) {
    std::string tags = "[ch02]";
    if (v.exercise) tags += "[exercise]";
    const std::string name(v.name);
    if (name == "bug_int_accumulator") {
      // The bug is certain: every product of [0, 1) data is below 1, and (int)(0 + p) is 0.
      course::test::add_case("ch02 bug_int_accumulator: truncates at every step as the text says", tags, [&v] {
        const auto x = course::random_vector(4096, course::test::seed(7), 0.0f, 1.0f);
        const auto y = course::random_vector(4096, course::seed_y(course::test::seed(7)), 0.0f, 1.0f);
        INFO("an int accumulator that starts at 0 stays 0 when every product is below 1");
        CHECK(v.run.dot(x.data(), y.data(), x.size(), {}) == 0.0f);
        const auto in = course::test::make_dot_inputs(std::size_t{1} << 16, 9);
        const course::Verdict verdict = course::check_dot(v.run.dot(in.x.data(), in.y.data(), in.x.size(), {}), in.ref);
        INFO(verdict.message);
        CHECK_FALSE(verdict.ok);
      });
    } else if (name == "bug_shared_accumulator") {
      // Whether a race loses updates depends on timing; no test may depend on it. With one thread
      // there is no race, so the version must be right.
      course::test::add_case("ch02 bug_shared_accumulator: right on one thread where there is no race", tags, [&v] {
        for (std::size_t n : sizes()) check_at(v, n, ch02::CpuConfig{1});
      });
    } else if (v.run.wrong_on_purpose) {
      course::test::add_case("ch02 " + name + ": has a test of its bug", tags, [name] {
        FAIL("the registry has a new wrong-on-purpose version, " << name << ", and test_02_cpu_dot.cpp no test of it");
      });
    } else {
      course::test::add_case("ch02 " + name + ": matches the fp64 reference at awkward sizes", tags, [&v] {
        for (std::size_t n : sizes()) {
          if (!v.run.threaded) {
            check_at(v, n, {});
            continue;
          }
          for (unsigned threads : {1u, 2u, 3u, 7u}) check_at(v, n, ch02::CpuConfig{threads});
        }
      });
    }
  }
  return true;
}();

const Version& version(const char* name) {
  const Version* v = course::find_version(ch02::versions(), name);
  REQUIRE(v != nullptr);
  return *v;
}

// Positive data: the case of the text. The running float sum grows to about n/4 and each
// addition rounds it, always the same way.
struct Positive {
  std::vector<float> x, y;
  course::Reference ref;
};
const Positive& positive_2_24() {
  static const Positive p = [] {
    Positive q;
    const std::size_t n = std::size_t{1} << 24;
    q.x = course::random_vector(n, course::test::seed(2024 + 2), 0.0f, 1.0f);
    q.y = course::random_vector(n, course::seed_y(course::test::seed(2024 + 2)), 0.0f, 1.0f);
    q.ref = course::reference_dot(q.x.data(), q.y.data(), n);
    return q;
  }();
  return p;
}

}  // namespace

TEST_CASE("ch02 pairwise: accurate on 2^24 positive products where the sequential sum is not",
          "[ch02][exercise][slow][hole:dot.cpp:2]") {
  const Positive& p = positive_2_24();
  const float got = version("pairwise").run.dot(p.x.data(), p.y.data(), p.x.size(), {});
  const course::Verdict verdict = course::check_dot(got, p.ref);
  INFO(course::test::explain(verdict, p.x.size(), "pairwise",
                             "every product must pass through about log2(n) additions (the sum of each half "
                             "summed the same pairwise way); a loop that adds into one float does not. See "
                             "README §Exercise 2"));
  CHECK(verdict.ok);
  CHECK(verdict.rel_error < 1e-6);
}

TEST_CASE("ch02 sequential: off by about 2% on 2^24 positive products as the text says", "[ch02][slow]") {
  const Positive& p = positive_2_24();
  const float got = version("sequential").run.dot(p.x.data(), p.y.data(), p.x.size(), {});
  const course::Verdict verdict = course::check_dot(got, p.ref);
  INFO(verdict.message << " (relative error " << verdict.rel_error << ")");
  CHECK_FALSE(verdict.ok);
  CHECK(verdict.rel_error > 0.01);
  CHECK(verdict.rel_error < 0.05);
}

TEST_CASE("ch02 threads_partials: the same bits on every run", "[ch02][exercise][hole:dot.cpp:3]") {
  const Version& v = version("threads_partials");
  const auto in = course::test::make_dot_inputs((std::size_t{1} << 20) + 3, 77);
  const ch02::CpuConfig config{4};
  const float first = v.run.dot(in.x.data(), in.y.data(), in.x.size(), config);
  REQUIRE(course::check_dot(first, in.ref).ok);
  for (int run = 0; run < 5; ++run) {
    const float again = v.run.dot(in.x.data(), in.y.data(), in.x.size(), config);
    INFO("run " << run << ": " << again << " after " << first
                << ". Each thread's partial and the final sum must be added in a fixed order. See README "
                   "§Exercise 3.");
    CHECK(std::memcmp(&again, &first, sizeof(float)) == 0);
  }
}

TEST_CASE("ch02 thread_count: never zero and never more than n", "[ch02]") {
  CHECK(ch02::thread_count(ch02::CpuConfig{8}, 0) == 1);
  CHECK(ch02::thread_count(ch02::CpuConfig{8}, 3) == 3);
  CHECK(ch02::thread_count(ch02::CpuConfig{8}, 1000) == 8);
  CHECK(ch02::thread_count(ch02::CpuConfig{0}, 1000) >= 1);
}

// A result must follow the input: the same buffers with new values must give the new answer (a
// version that caches its result by pointer, or returns a value tuned to the public inputs, fails).
namespace {
const bool registered_follow = [] {
  for (const Version& v : ch02::versions()) {
    if (!v.exercise) continue;
    course::test::add_case("ch02 " + std::string(v.name) + ": follows its input (new values in the same buffers)",
                           "[ch02][exercise]", [&v] {
                             const std::size_t n = (std::size_t{1} << 16) + 5;
                             auto in = course::test::make_dot_inputs(n, 620);
                             std::vector<float> x = in.x, y = in.y;
                             const ch02::CpuConfig config{3};
                             for (int round = 0; round < 2; ++round) {
                               const float got = v.run.dot(x.data(), y.data(), n, config);
                               const course::Verdict verdict = course::check_dot(got, in.ref);
                               INFO(course::test::explain(verdict, n, std::string(v.name) + " (round " +
                                                                          std::to_string(round + 1) + " of 2)",
                                                          "the second round has new values in the same arrays: "
                                                          "compute from x and y every call, keep nothing between calls"));
                               CHECK(verdict.ok);
                               in = course::test::make_dot_inputs(n, 621);
                               std::copy(in.x.begin(), in.x.end(), x.begin());
                               std::copy(in.y.begin(), in.y.end(), y.begin());
                             }
                           });
  }
  return true;
}();
}  // namespace

TEST_CASE("ch02 bug_int_accumulator: stays defined past INT_MAX (saturates, never wraps)", "[ch02]") {
  // Products of 1.6e9: the second addition leaves int's range. Converting that float to int is
  // undefined behaviour, which on x86 gives INT_MIN: a large negative "sum" of positive products.
  const std::vector<float> x(4, 40000.0f), y(4, 40000.0f);
  const float got = version("bug_int_accumulator").run.dot(x.data(), y.data(), x.size(), {});
  INFO("bug_int_accumulator of four products of 1.6e9 gave " << got);
  CHECK(got == static_cast<float>(std::numeric_limits<int>::max()));
}

// Exercise 4 (think): compensated summation with the loss of each addition recovered exactly
// (Neumaier's form of Kahan's idea; Ogita, Rump and Oishi call the exact loss TwoSum). On products
// that are exact, every loss is recovered, and the only error left is the final rounding and the
// rounding of the losses' own sum. The tests build such inputs, where the plain loop, the pairwise
// sum and Kahan's original form (which fails when a term is larger than the running sum) are all far
// off, and then hold the result to a few roundings of the exact value.
namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24, the unit roundoff of float

// Runs of small positive integers between a large +B and its -B, where B is so large that each
// small term is under half the float step at B: a plain float loop drops all of them, the pairwise
// sum those that share a 32-element leaf with a +B. The products are exact (y = ±1, x = p·y),
// integers, and so is every rounding loss; the exact dot is the sum of the small terms.
struct Lopsided {
  std::vector<float> x, y;
  double exact = 0, sum_abs = 0;
};

Lopsided lopsided(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(course::test::seed(seed));
  Lopsided in;
  in.x.reserve(n);
  in.y.reserve(n);
  auto push = [&](double p) {
    const float sign = (rng() & 1) ? 1.0f : -1.0f;
    in.x.push_back(static_cast<float>(p) * sign);
    in.y.push_back(sign);
    in.sum_abs += std::fabs(p);
  };
  auto small = [&] {
    const double p = 1.0 + static_cast<double>(rng() % 3);  // 1, 2 or 3: under half the float step at big
    push(p);
    in.exact += p;
  };
  while (in.x.size() < n) {
    const double big = std::ldexp(1.0, 26 + static_cast<int>(rng() % 4));  // 2^26..2^29: a float step of 8..64
    const std::size_t run = 40 + rng() % 400;
    if (in.x.size() + run + 2 > n) {  // the tail: small terms alone
      while (in.x.size() < n) small();
      break;
    }
    push(big);
    for (std::size_t k = 0; k < run; ++k) small();
    push(-big);
  }
  return in;
}

// The allowed error: two roundings of the result, plus (random data) the products' own rounding.
double compensated_bound(double exact, double sum_abs, bool exact_products) {
  return 2.0 * kU * std::fabs(exact) + (exact_products ? 0.0 : 2.0 * kU * sum_abs) + 1e-30;
}

// Kahan's original compensated sum, written here only as a wrong answer the test must reject: its
// correction is exact only while the running sum is at least as large as the term.
float kahan_original(const std::vector<float>& x, const std::vector<float>& y) {
  float sum = 0.0f, c = 0.0f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float term = x[i] * y[i] - c;
    const float next = sum + term;
    c = (next - sum) - term;
    sum = next;
  }
  return sum;
}

// The pairwise sum as the chapter defines it (halves down to kPairwiseBase elements), written here so
// that the premise below does not depend on the student's own pairwise exercise.
float pairwise_here(const float* x, const float* y, std::size_t n) {
  if (n <= ch02::kPairwiseBase) return ch02::dot_sequential(x, y, n);
  const std::size_t half = n / 2;
  return pairwise_here(x, y, half) + pairwise_here(x + half, y + half, n - half);
}

void check_compensated(const std::vector<float>& x, const std::vector<float>& y, double exact, double bound,
                       const std::string& what) {
  const float got = ch02::dot_compensated(x.data(), y.data(), x.size());
  const double err = std::fabs(static_cast<double>(got) - exact);
  INFO("dot_compensated on " << what << " (n = " << x.size() << "): got " << got << ", exact " << exact
       << ", error " << err << ", allowed " << bound << ".\n"
       << "Hint: NaN means the function still returns the poison. An error like the plain loop's means the "
          "losses are not gathered, or not given back. Right on random data but wrong here: the loss of an "
          "addition must come out exact also when the term is larger than the running sum (Kahan's original "
          "form assumes the opposite). See dot_compensated, README §Exercise 4.");
  CHECK(err <= bound);
}

}  // namespace

TEST_CASE("ch02 compensated: exact to a rounding where the plain and pairwise sums and Kahan's are not",
          "[ch02][exercise][hole:dot.cpp:4]") {
  for (std::size_t n : {std::size_t{1000}, std::size_t{65536} + 3, std::size_t{1} << 20}) {
    const Lopsided in = lopsided(n, 4000 + n);
    const double bound = compensated_bound(in.exact, in.sum_abs, true);
    // The premise: the other sums miss this bound on these inputs by far (if they did not, the test
    // could not tell a compensated sum from them). At small n a few runs may, by luck, round
    // kindly for the pairwise sum or Kahan's; at 2^20 there are thousands.
    const double plain = ch02::dot_sequential(in.x.data(), in.y.data(), n);
    const double pairwise = pairwise_here(in.x.data(), in.y.data(), n);
    const double kahan = kahan_original(in.x, in.y);
    INFO("premise at n = " << n << ": errors of the plain loop " << std::fabs(plain - in.exact) << ", the pairwise sum "
                           << std::fabs(pairwise - in.exact) << ", Kahan's original " << std::fabs(kahan - in.exact)
                           << "; bound " << bound);
    REQUIRE(std::fabs(plain - in.exact) > 10 * bound);
    if (n >= (std::size_t{1} << 20)) {  // many runs: the other two are far off on every seed
      REQUIRE(std::fabs(pairwise - in.exact) > 10 * bound);
      REQUIRE(std::fabs(kahan - in.exact) > 10 * bound);
    }
    check_compensated(in.x, in.y, in.exact, bound, "runs of small terms between large ones");
  }
}

TEST_CASE("ch02 compensated: within its bound on random signed data at awkward sizes", "[ch02][exercise][hole:dot.cpp:4]") {
  for (std::size_t n : sizes()) {
    const auto in = course::test::make_dot_inputs(n, 4100 + n);
    check_compensated(in.x, in.y, in.ref.value, compensated_bound(in.ref.value, in.ref.sum_abs, false),
                      "random signed data with spikes");
  }
}

TEST_CASE("ch02 compensated: follows its input (new values in the same buffers)", "[ch02][exercise][hole:dot.cpp:4]") {
  const std::size_t n = 4096 + 7;
  Lopsided in = lopsided(n, 4200);
  check_compensated(in.x, in.y, in.exact, compensated_bound(in.exact, in.sum_abs, true), "round 1");
  const Lopsided next = lopsided(n, 4201);
  std::copy(next.x.begin(), next.x.end(), in.x.begin());
  std::copy(next.y.begin(), next.y.end(), in.y.begin());
  check_compensated(in.x, in.y, next.exact, compensated_bound(next.exact, next.sum_abs, true), "round 2, same buffers");
}

// Exercise 1 with its order of additions (issue 39: every hole has a host test with literal tags).
// The TODO states that order: acc[k] is the float sum, in index order, of x[j]·y[j] over the
// j < n - n % 8 with j % 8 == k; the tail loop and the pairwise combine are given. So the result
// is known to the bit, and one chain, a lane skipped or the tail added twice all change it.
TEST_CASE("ch02 unrolled: eight chains in the stated order, to the bit, at awkward sizes",
          "[ch02][exercise][hole:dot.cpp:1]") {
  const Version& v = version("unrolled");
  std::string first;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                        std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{1000}, std::size_t{4099},
                        (std::size_t{1} << 16) + 5}) {
    const auto in = course::test::make_dot_inputs(n, 2100 + n);
    float acc[8] = {};
    const std::size_t body = n - n % 8;
    for (std::size_t j = 0; j < body; ++j) acc[j % 8] += in.x[j] * in.y[j];
    float tail = 0.0f;
    for (std::size_t j = body; j < n; ++j) tail += in.x[j] * in.y[j];
    for (std::size_t width = 4; width > 0; width /= 2)
      for (std::size_t k = 0; k < width; ++k) acc[k] += acc[k + width];
    const float expected = acc[0] + tail;
    const float got = v.run.dot(in.x.data(), in.y.data(), n, ch02::CpuConfig{1});
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, &got, sizeof a);
    std::memcpy(&b, &expected, sizeof b);
    if (a != b && first.empty())
      first = "n = " + std::to_string(n) + ": got " + std::to_string(got) + ", the eight chains give " +
              std::to_string(expected);
  }
  INFO(first << "\nHint: acc[k] must collect x[j]·y[j] for j % 8 == k, j below n - n % 8, in index order "
                "(eight chains, not one); the loop leaves i at n - n % 8 for the tail loop. See dot_unrolled, "
                "README §Exercise 1.");
  CHECK(first.empty());
}
