// Chapter 03 grading tests: every version's kernel at awkward sizes on random signed data with
// planted spikes, within course::dot_error_bound of the fp64 reference; and the round trip
// (allocate, copy in, launch, copy back, free), which must give the same answer and leak nothing.
// The speed_of_light row is not a dot product (the floor): it has its own tests, outside grading.

#include <cmath>
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/device.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

using Version = course::Version<ch03::Launcher>;

// 256 is the block size of the later chapters: the same sizes everywhere make the chapters'
// failures comparable. The one-thread kernel has no block, so every size is just a loop length.
std::vector<std::size_t> sizes() { return course::test::awkward_sizes(256, 303); }

void sync() { course::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", __FILE__, __LINE__); }

std::string hint_for(const Version& v) {
  static const std::map<std::string, std::string> hints = {
      {"one_thread",
       "NaN means *result was never written: when the kernel ends, *result must hold the sum. A wrong value "
       "means products were skipped or added twice: every index in [0, n) once, in order, with an index that "
       "cannot wrap at the largest n. Run the host tests first (ch03 one_thread_sum: *). See one_thread_sum in "
       "dot.hpp, README §Exercise 1."},
  };
  const auto it = hints.find(std::string(v.name));
  return it != hints.end() ? it->second : "this version is given, not an exercise: report it";
}

void check_kernel(const Version& v, std::size_t n, course::Context& ctx) {
  const auto in = course::test::make_dot_inputs(n, 3000 + n);
  cudaStream_t stream = ctx.stream();
  // Guard zones: NaN read past the end of x or y poisons the sum; a write past the result shows.
  course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
  d_result.fill_bytes(0xFF, stream);  // NaN: a result that is never written cannot pass
  v.run(d_x.data(), d_y.data(), n, d_result.data(), ctx, stream);
  ctx.synchronize();
  const std::string damage = d_result.guard_damage();
  INFO(std::string(v.name) << " at n = " << n << ": " << damage);
  CHECK(damage.empty());
  const float got = d_result.download()[0];
  const course::Verdict verdict = course::check_dot(got, in.ref);
  INFO(course::test::explain(verdict, n, std::string(v.name), hint_for(v)));
  CHECK(verdict.ok);
}

const bool registered = [] {
  for (const Version& v : ch03::versions()) {
    if (ch03::is_speed_of_light(v)) continue;  // not a dot product: its own test cases below
    std::string tags = "[ch03][gpu]";
    if (v.exercise) tags += "[exercise]";
    course::test::add_case("ch03 " + std::string(v.name) + ": matches the fp64 reference at awkward sizes", tags,
                           [&v] {
                             COURSE_REQUIRE_GPU();
                             course::Context ctx;
                             for (std::size_t n : sizes()) check_kernel(v, n, ctx);
                           });
  }
  return true;
}();

// The round trip is checked with the library version, so that it is graded on its own: a
// student whose kernel is still empty can finish and pass this exercise first.
const Version& baseline() {
  const Version* v = course::find_version(ch03::versions(), "cublas");
  REQUIRE(v != nullptr);
  return *v;
}

const char* kRoundTripHint =
    "round_trip must return the version's answer for this call's x and y, and hold no device memory when it "
    "returns: device arrays for x and y (n floats each) and the result (one float), the inputs on the device "
    "before the version runs, the version run on the default stream, its result back on the host before it "
    "is returned, every device array released. A CUDA error naming cudaMemset(d_result, ...) means d_result "
    "was never allocated. See the holes of round_trip, README §Exercise 2.";

}  // namespace

TEST_CASE("ch03 round_trip: gives the right answer and times every step", "[ch03][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  for (std::size_t n : sizes()) {
    const auto in = course::test::make_dot_inputs(n, 4000 + n);
    ch03::Phases phases;
    float got = std::nanf("");
    try {
      got = ch03::round_trip(baseline().run, ctx, in.x.data(), in.y.data(), n, &phases);
    } catch (const std::exception& e) {
      FAIL("round_trip at n = " << n << " threw: " << e.what() << "\nHint: " << kRoundTripHint);
    }
    const course::Verdict verdict = course::check_dot(got, in.ref);
    INFO(course::test::explain(verdict, n, "round_trip (with cublas)", kRoundTripHint));
    CHECK(verdict.ok);
    // The chapter's instrumentation: every step timed, and the steps fit inside the whole call.
    const double steps[] = {phases.allocate_ms, phases.copy_x_ms, phases.copy_y_ms, phases.kernel_ms,
                            phases.copy_back_ms, phases.free_ms};
    double sum = 0;
    for (double ms : steps) {
      CHECK(std::isfinite(ms));
      CHECK(ms >= 0.0);
      sum += ms;
    }
    INFO("steps add up to " << sum << " ms, the whole call took " << phases.total_ms << " ms");
    CHECK(sum <= phases.total_ms + 0.1);
  }
}

TEST_CASE("ch03 round_trip: frees what it allocates", "[ch03][gpu][exercise][exclusive]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t n = (std::size_t{1} << 20) + 3;  // 4 MiB per input
  const auto in = course::test::make_dot_inputs(n, 5);
  try {
    ch03::round_trip(baseline().run, ctx, in.x.data(), in.y.data(), n);  // first call: cuBLAS sets itself up
    sync();
    const std::size_t before = course::free_device_bytes();
    for (int call = 0; call < 3; ++call) ch03::round_trip(baseline().run, ctx, in.x.data(), in.y.data(), n);
    sync();
    const std::size_t after = course::free_device_bytes();
    const double leaked_mib = (static_cast<double>(before) - static_cast<double>(after)) / (1 << 20);
    INFO("three round trips of 2 x 4 MiB left " << leaked_mib
                                                << " MiB less free device memory.\nHint: every device array "
                                                   "round_trip allocates must be released before it returns. See "
                                                   "README §Exercise 2.");
    CHECK(leaked_mib < 4.0);
  } catch (const std::exception& e) {
    FAIL("round_trip threw: " << e.what() << "\nHint: " << kRoundTripHint);
  }
}

// A result must follow the input: new values in the same device buffers give the new answer (a
// kernel or launcher that caches its result by pointer, or hard-codes the public one, fails).
namespace {
const bool registered_follow = [] {
  for (const Version& v : ch03::versions()) {
    if (!v.exercise) continue;
    course::test::add_case("ch03 " + std::string(v.name) + ": follows its input (new values in the same buffers)",
                           "[ch03][gpu][exercise]", [&v] {
                             COURSE_REQUIRE_GPU();
                             course::Context ctx;
                             const std::size_t n = 4099;
                             auto in = course::test::make_dot_inputs(n, 630);
                             course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
                             for (int round = 0; round < 2; ++round) {
                               d_result.fill_bytes(0xFF, ctx.stream());
                               v.run(d_x.data(), d_y.data(), n, d_result.data(), ctx, ctx.stream());
                               ctx.synchronize();
                               const course::Verdict verdict = course::check_dot(d_result.download()[0], in.ref);
                               INFO(course::test::explain(verdict, n, std::string(v.name) + " (round " +
                                                                          std::to_string(round + 1) + " of 2)",
                                                          "the second round has new values in the same buffers: "
                                                          "read x and y on every call, keep nothing between calls"));
                               CHECK(verdict.ok);
                               in = course::test::make_dot_inputs(n, 631);
                               d_x.upload(in.x);
                               d_y.upload(in.y);
                             }
                           });
  }
  return true;
}();
}  // namespace

// Exercise 3 (think): chunk_owner inverts chunk_begin. Host only (no GPU). Every element of every
// split of small n among 1..70 threads (more threads than elements included), then the elements
// at and around every chunk boundary for large n (past 2^32, where a 32-bit product wraps) and
// for sizes and thread counts drawn from the grading seed.
namespace {

void check_owner(std::size_t i, std::size_t threads, std::size_t n, std::size_t& wrong, std::string& first) {
  const std::size_t t = ch03::chunk_owner(i, threads, n);
  const bool ok = t < threads && ch03::chunk_begin(t, threads, n) <= i && i < ch03::chunk_begin(t + 1, threads, n);
  if (!ok && wrong++ == 0) {
    std::ostringstream msg;
    msg << "chunk_owner(i = " << i << ", threads = " << threads << ", n = " << n << ") returned " << t;
    if (t < threads)
      msg << ", whose chunk is [" << ch03::chunk_begin(t, threads, n) << ", " << ch03::chunk_begin(t + 1, threads, n)
          << ")";
    first = msg.str();
  }
}

void report(std::size_t wrong, const std::string& first) {
  INFO(wrong << " wrong answers; the first: " << first
             << ".\nHint: a result equal to `threads` is the unfilled stub. The answer t must satisfy "
                "chunk_begin(t) <= i < chunk_begin(t + 1) for every split: chunks of two lengths (the first "
                "n % threads are one longer), more threads than elements, and n past 2^32, where a 32-bit product "
                "wraps. See chunk_owner, README §Exercise 3.");
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("ch03 chunk_owner: every element of every small split", "[ch03][exercise][hole:dot.cu:7]") {
  std::size_t wrong = 0;
  std::string first;
  for (std::size_t n = 1; n <= 300; ++n)
    for (std::size_t threads = 1; threads <= 70; ++threads)
      for (std::size_t i = 0; i < n; ++i) check_owner(i, threads, n, wrong, first);
  report(wrong, first);
}

TEST_CASE("ch03 chunk_owner: the boundaries of large splits (past 2^32 elements)", "[ch03][exercise][hole:dot.cu:7]") {
  std::vector<std::pair<std::size_t, std::size_t>> splits = {
      {(std::size_t{1} << 32) + 7, 1024}, {(std::size_t{1} << 40) + 12345, 270336}, {std::size_t{1} << 33, 3},
      {1000003, 999999}, {(std::size_t{5} << 31) + 1, 132 * 2048}};
  std::mt19937_64 rng(course::test::seed(303));
  for (int k = 0; k < 20; ++k) splits.emplace_back(1 + rng() % (std::size_t{1} << 41), 1 + rng() % 100000);
  std::size_t wrong = 0;
  std::string first;
  for (const auto& [n, threads] : splits) {
    const std::size_t samples = std::min<std::size_t>(threads, 2000);
    for (std::size_t s = 0; s <= samples; ++s) {
      const std::size_t t = s * threads / samples;  // chunks spread over the whole range, both ends included
      const std::size_t b = ch03::chunk_begin(std::min(t, threads), threads, n);
      for (std::size_t i : {b - 1, b, b + 1})
        if (i < n) check_owner(i, threads, n, wrong, first);
    }
    check_owner(rng() % n, threads, n, wrong, first);
  }
  report(wrong, first);
}

// ---- exercise 1's loop on the host: one_thread_sum ------------------------------------------
// The kernel's one thread computes one_thread_sum(x, y, 0, n) (dot.hpp); these tests run the same
// function on the host, no GPU needed. Past 2^32 they use arrays that only pretend to be that long
// (ProbeArray: the range they cover starts near 2^32 and every read is checked and recorded), so an
// index narrowed to 32 bits reads the wrong element (or wraps to 0) and the test sees it at once.

namespace {

const char* kSumHint =
    "one_thread_sum must add x[i] * y[i] for every i with begin <= i < end, each once, in index order, in float "
    "(chapter 02's plain loop), with an index that cannot wrap: std::size_t, as chapter 02 indexes. A result of 0 "
    "everywhere is the unfilled stub. See one_thread_sum in dot.hpp, README §Exercise 1.";

// What a float loop in index order gives: the bits one_thread_sum must return.
float plain_loop(const std::vector<float>& x, const std::vector<float>& y, std::size_t begin, std::size_t end) {
  float sum = 0.0f;
  for (std::size_t i = begin; i < end; ++i) sum += x[i] * y[i];
  return sum;
}

// An array of `size` floats of which only [first, first + values.size()) exists: reading any other
// element throws (so a wrapped index ends the test instead of looping for 2^32 steps), and every
// read is recorded.
struct BadRead : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ProbeArray {
  std::size_t first;
  std::vector<float> values;
  std::vector<std::size_t>* reads;
  float operator[](std::size_t i) const {
    if (i < first || i - first >= values.size())
      throw BadRead("read element " + std::to_string(i) + ", outside [" + std::to_string(first) + ", " +
                    std::to_string(first + values.size()) + ") (the range asked for)");
    reads->push_back(i);
    return values[i - first];
  }
};

}  // namespace

TEST_CASE("ch03 one_thread_sum: the float loop's bits at awkward sizes and ranges (exercise 1, host)",
          "[ch03][exercise][hole:dot.hpp:1]") {
  for (std::size_t n : sizes()) {
    const auto in = course::test::make_dot_inputs(n, 5000 + n);
    const std::size_t mid = n / 3;
    for (const auto& [begin, end] : {std::pair<std::size_t, std::size_t>{0, n}, {mid, n}, {0, mid}, {mid, mid}}) {
      const float want = plain_loop(in.x, in.y, begin, end);
      const float got = ch03::one_thread_sum(in.x, in.y, begin, end);
      INFO("n = " << n << ", range [" << begin << ", " << end << "): got " << got << ", the float loop in index "
                  << "order gives " << want << "\nHint: " << kSumHint);
      CHECK(std::memcmp(&got, &want, sizeof got) == 0);  // the same bits: same products, same order, float
    }
  }
  // Also through raw pointers, as the kernel calls it.
  const auto in = course::test::make_dot_inputs(1000, 5999);
  const float* px = in.x.data();
  const float* py = in.y.data();
  const float want = plain_loop(in.x, in.y, 0, 1000);
  const float got = ch03::one_thread_sum(px, py, 0, 1000);
  INFO("through const float*, n = 1000: got " << got << ", want " << want << "\nHint: " << kSumHint);
  CHECK(std::memcmp(&got, &want, sizeof got) == 0);
}

TEST_CASE("ch03 one_thread_sum: ranges past 2^32 elements read each element once, in order (exercise 1, host)",
          "[ch03][exercise][hole:dot.hpp:1]") {
  const std::size_t two32 = std::size_t{1} << 32;
  const std::pair<std::size_t, std::size_t> ranges[] = {
      {two32 - 5, two32 + 6}, {two32, two32 + 9}, {two32 + 1000, two32 + 1003}, {(std::size_t{3} << 33) + 7,
      (std::size_t{3} << 33) + 20}, {(std::size_t{1} << 31) - 3, (std::size_t{1} << 31) + 4}};
  for (const auto& [begin, end] : ranges) {
    std::vector<std::size_t> x_reads, y_reads;
    std::vector<float> xs, ys;
    for (std::size_t i = begin; i < end; ++i) {
      xs.push_back(1.0f + static_cast<float>(i - begin) * 0.25f);
      ys.push_back(i % 2 == 0 ? 3.0f : -0.5f);
    }
    const ProbeArray x{begin, xs, &x_reads}, y{begin, ys, &y_reads};
    float want = 0.0f;
    for (std::size_t k = 0; k < xs.size(); ++k) want += xs[k] * ys[k];
    std::string problem;
    float got = 0.0f;
    try {
      got = ch03::one_thread_sum(x, y, begin, end);
    } catch (const BadRead& e) {
      problem = std::string("x or y: ") + e.what() + " (an index that wraps in 32 bits reads this)";
    }
    std::vector<std::size_t> order;
    for (std::size_t i = begin; i < end; ++i) order.push_back(i);
    if (problem.empty() && (x_reads != order || y_reads != order))
      problem = "the reads are not every element of the range once, in index order";
    if (problem.empty() && std::memcmp(&got, &want, sizeof got) != 0)
      problem = "got " + std::to_string(got) + ", the float loop gives " + std::to_string(want);
    INFO("range [" << begin << ", " << end << "): " << problem << "\nHint: " << kSumHint);
    CHECK(problem.empty());
  }
}

// ---- the speed-of-light row: the floor, not a dot ---------------------------------------------
// The registry's speed_of_light row has the whole GPU read x and y with the best access pattern (the
// kit's read-only kernel) and write one value. It has no result to check; what it must do is run at
// any size and alignment, write its one value over the NaN poison and nothing past it, and take
// that value from its loads: a NaN planted in x[0] shows in it (thread 0 of block 0 reads x[0] and
// writes its sum, whatever the alignment). It stays out of grading.

TEST_CASE("ch03 speed_of_light: one floor row in the registry, beside cublas, not a dot, not an exercise",
          "[ch03]") {
  const auto& reg = ch03::versions();
  int floors = 0;
  for (const Version& v : reg) floors += ch03::is_speed_of_light(v) ? 1 : 0;
  CHECK(floors == 1);
  REQUIRE(reg.size() >= 2);
  CHECK(std::string(reg.front().name) == "cublas");  // the library stays version 0 (STYLE.md)
  const Version* v = course::find_version(reg, "speed_of_light");
  REQUIRE(v != nullptr);
  CHECK(v == &reg[1]);  // the baselines first: cuBLAS, then the floor
  CHECK(ch03::is_speed_of_light(*v));
  CHECK(!v->exercise);
  CHECK(v->run != nullptr);
  CHECK_THAT(std::string(v->description), course::test::contains("not a dot"));
  for (const Version& other : reg)
    if (&other != v) CHECK_FALSE(ch03::is_speed_of_light(other));
}

TEST_CASE("ch03 speed_of_light: runs at n = 0, 1, 3, 1000003 and misaligned, writes its one value from its loads",
          "[ch03][gpu]") {
  COURSE_REQUIRE_GPU();
  const Version* v = course::find_version(ch03::versions(), "speed_of_light");
  REQUIRE(v != nullptr);
  course::Context ctx;
  cudaStream_t stream = ctx.stream();
  using Offsets = std::pair<std::size_t, std::size_t>;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000003}}) {
    auto in = course::test::make_dot_inputs(n + 3, 3300 + n);  // room for the offsets below
    course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
    for (const auto& [off_x, off_y] : {Offsets{0, 0}, Offsets{1, 2}, Offsets{3, 1}, Offsets{2, 2}}) {
      d_result.fill_bytes(0xFF, stream);  // NaN: a value that is never written cannot pass
      v->run(d_x.data() + off_x, d_y.data() + off_y, n, d_result.data(), ctx, stream);
      ctx.synchronize();
      const float got = d_result.download()[0];
      INFO("speed_of_light at n = " << n << ", x + " << off_x << ", y + " << off_y << ": wrote " << got << "; "
                                    << d_result.guard_damage());
      CHECK(std::isfinite(got));  // finite inputs: the NaN poison was overwritten
      CHECK(d_result.guard_damage().empty());
      if (n == 0) continue;
      // The value comes from the loads: a NaN at the first element it reads reaches it.
      const float kept = in.x[off_x];
      in.x[off_x] = std::nanf("");
      d_x.upload(in.x);
      d_result.fill_bytes(0, stream);
      v->run(d_x.data() + off_x, d_y.data() + off_y, n, d_result.data(), ctx, stream);
      ctx.synchronize();
      const float planted = d_result.download()[0];
      INFO("with a NaN in x[0] it wrote " << planted << " (expected NaN: the value must come from the loads)");
      CHECK(std::isnan(planted));
      in.x[off_x] = kept;
      d_x.upload(in.x);
    }
  }
}

// ---- issue 38: the version asked for must run, on the stream asked for --------------------------
// A round trip that answers from the host copies it already has (h_x, h_y), the version never
// launched, returns the right dot and passes the tests above. So here the version is a spy: it
// records its call and answers x·x (cuBLAS on d_x twice), a result only a launch of it can give,
// and only if d_x holds this call's x. The spy also records the stream it was given: the TODO asks
// for the default stream (the one the phase clock times), and work on another stream is neither
// timed nor ordered with the copies. tests/negative/03_exploit_*.
namespace {

struct SpyRecord {
  int calls = 0;
  std::size_t n = 0;
  cudaStream_t stream = nullptr;
  bool device_pointers = false;
};
SpyRecord g_spy;

void spy_version(const float* d_x, const float* d_y, std::size_t n, float* d_result, course::Context& ctx,
                 cudaStream_t stream) {
  ++g_spy.calls;
  g_spy.n = n;
  g_spy.stream = stream;
  auto on_device = [](const void* p) {
    cudaPointerAttributes a{};
    return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
  };
  g_spy.device_pointers = n == 0 || (on_device(d_x) && on_device(d_y) && on_device(d_result));
  (void)cudaGetLastError();  // cudaPointerGetAttributes on a host pointer may leave an error behind
  baseline().run(d_x, d_x, n, d_result, ctx, stream);  // x·x: not the dot round_trip was asked for
}

}  // namespace

TEST_CASE("ch03 round_trip: launches the version given, once, on the default stream, and returns its result",
          "[ch03][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  for (std::size_t n : {std::size_t{1000}, std::size_t{1} << 20}) {
    const auto in = course::test::make_dot_inputs(n, 3800 + n);
    g_spy = SpyRecord{};
    float got = 0.0f;
    try {
      got = ch03::round_trip(spy_version, ctx, in.x.data(), in.y.data(), n);
    } catch (const std::exception& e) {
      FAIL("round_trip at n = " << n << " threw: " << e.what() << "\nHint: " << kRoundTripHint);
    }
    INFO("round_trip at n = " << n << " called the version " << g_spy.calls << " time(s)"
         << (g_spy.calls ? " with n = " + std::to_string(g_spy.n) : std::string()) << ".\nHint: the version passed "
         "in is the only code that may compute the answer: launch it once, on the device copies, with the default "
         "stream (nullptr), and return what it wrote; an answer computed from h_x and h_y on the host is not the "
         "exercise. See round_trip, README §Exercise 2.");
    REQUIRE(g_spy.calls == 1);
    CHECK(g_spy.n == n);
    CHECK(g_spy.device_pointers);
    CHECK((g_spy.stream == nullptr || g_spy.stream == cudaStreamLegacy));
    const course::Verdict verdict = course::check_dot(got, course::reference_dot(in.x.data(), in.x.data(), n));
    INFO("the spy version writes x·x, not x·y: round_trip must return what the version wrote. "
         << course::test::explain(verdict, n, "round_trip (with the spy version)", kRoundTripHint));
    CHECK(verdict.ok);
  }
}
