// Chapter 04 grading tests: every version of the registry at awkward sizes, on random signed data
// with spikes, against the fp64 reference within the error bound.
//
// The racy version is held only to what it cannot get wrong — a size where a single thread does
// all the work — so no test depends on winning or losing the race. Its test is tagged [race], so
// a compute-sanitizer run can leave it out with the test spec "~[race]". The speed_of_light row is
// not a dot product (the floor): it has its own tests, outside grading.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/random.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"
#include "support/block_player.hpp"
#include "support/index_check.hpp"

namespace {

using Version = course::Version<ch04::GpuDot>;

// Runs `v` once on the inputs, on the context's stream, with the result poisoned to NaN first;
// returns what it wrote.
float run_once(const Version& v, const course::test::DotInputs& in, course::Context& ctx) {
  cudaStream_t stream = ctx.stream();
  // Guard zones: NaN read past the end of x or y poisons the sum; a write past the result shows.
  course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
  d_result.fill_bytes(0xFF, stream);  // NaN: a result that is never written cannot pass
  ch04::Workspace ws(ctx);
  v.run.launch(d_x.data(), d_y.data(), in.x.size(), d_result.data(), ws, stream);
  ctx.synchronize();
  const std::string damage = d_result.guard_damage();
  INFO(std::string(v.name) << " at n = " << in.x.size() << ": " << damage);
  CHECK(damage.empty());
  return d_result.download()[0];
}

// What a student should look at, from what the result looks like.
std::string hint(const Version& v, const course::Verdict& verdict) {
  if (std::isnan(verdict.got))
    return "NaN: the result was never written, or a NaN was read. Did the launcher run? Did a thread read "
           "past n?";
  if (verdict.got == 0.0 && verdict.expected != 0.0)
    return "0 is what the launcher's cudaMemsetAsync left: no product reached the result. Is the TODO in " +
           std::string(v.name) + " still empty?";
  if (v.name == "atomic_each")
    return "every product must reach *result, while every other thread of the block updates it too, without "
           "losing an update: a plain read-add-write loses the updates of other threads (a result far too small). "
           "See dot_atomic_each, README §The race and §atomicAdd on every product.";
  if (v.name == "atomic_once")
    return "each thread's products, over exactly the indices for_each_block_stride gives it, must reach "
           "*result once, as one private sum per thread, with no update lost. If the host tests `ch04 index: ...` "
           "(no GPU needed) fail too, fix for_each_block_stride first. A result far too large: a thread's running "
           "sum reached *result more than once. See dot_atomic_once, README §A register sum per thread.";
  return "compare with atomic_once: a strided loop over the whole vector, and one atomicAdd per thread.";
}

void check_at_awkward_sizes(const Version& v) {
  course::Context ctx;
  const int block = ch04::one_block_threads(ctx);
  for (std::size_t n : course::test::awkward_sizes(static_cast<std::size_t>(block), 4)) {
    const auto in = course::test::make_dot_inputs(n, 400 + n);
    const float got = run_once(v, in, ctx);
    const course::Verdict verdict = course::check_dot(got, in.ref);
    INFO(course::test::explain(verdict, n, std::string(v.name) + " (one block of " + std::to_string(block) + ")",
                               hint(v, verdict)));
    CHECK(verdict.ok);
  }
}

const bool registered = [] {
  for (const auto& v : ch04::versions()) {
    const std::string name(v.name);
    if (v.run.floor) continue;  // not a dot product: its own test cases below
    if (v.run.racy) {
      course::test::add_case("ch04 " + name + ": exact when a single thread does all the work (n = 0, 1)",
                             "[ch04][gpu][race]", [&v] {
                               COURSE_REQUIRE_GPU();
                               course::Context ctx;
                               // With n <= 1 only thread 0 touches the result: no race to lose.
                               for (std::size_t n : {std::size_t{0}, std::size_t{1}}) {
                                 const auto in = course::test::make_dot_inputs(n, 7);
                                 const course::Verdict verdict = course::check_dot(run_once(v, in, ctx), in.ref);
                                 INFO(course::test::explain(verdict, n, std::string(v.name),
                                                            "with one element only thread 0 adds; it must "
                                                            "load, add and store x[0] * y[0]."));
                                 CHECK(verdict.ok);
                               }
                             });
      continue;
    }
    const std::string tags = std::string("[ch04][gpu]") + (v.exercise ? "[exercise]" : "");
    course::test::add_case("ch04 " + name + ": matches the fp64 reference at awkward sizes", tags, [&v] {
      COURSE_REQUIRE_GPU();
      check_at_awkward_sizes(v);
    });
  }
  return true;
}();

}  // namespace

TEST_CASE("ch04 registry: unique names, one racy version, the exercises marked", "[ch04]") {
  const auto& reg = ch04::versions();
  std::set<std::string> names;
  int racy = 0, exercises = 0;
  for (const auto& v : reg) {
    INFO("version '" << v.name << "'");
    CHECK(!v.name.empty());
    CHECK(!v.description.empty());
    CHECK(v.run.launch != nullptr);
    CHECK(names.insert(std::string(v.name)).second);
    racy += v.run.racy ? 1 : 0;
    exercises += v.exercise ? 1 : 0;
    CHECK_FALSE((v.run.racy && v.exercise));  // a race is shown, never graded
    CHECK_FALSE((v.run.floor && (v.exercise || v.run.racy)));  // the floor is a baseline
  }
  CHECK(racy == 1);
  CHECK(exercises == 2);
  CHECK(course::find_version(reg, "atomic_once") != nullptr);
}

// ---- the speed-of-light row: the floor, not a dot ---------------------------------------------
// The registry's speed_of_light row has the whole GPU, not one block, read x and y with the best
// access pattern (the kit's read-only kernel) and write one value. It has no result to check; what
// it must do is run at any size and alignment, write its one value over the NaN poison and nothing
// past it, take that value from its loads (a NaN planted in x[0] shows in it: thread 0 of block 0
// reads x[0] and writes its sum, whatever the alignment), and launch more than one block once the
// vectors need them. It stays out of grading.

TEST_CASE("ch04 speed_of_light: one floor row in the registry, first, not a dot, not an exercise", "[ch04]") {
  const auto& reg = ch04::versions();
  int floors = 0;
  for (const auto& v : reg) floors += v.run.floor ? 1 : 0;
  CHECK(floors == 1);
  REQUIRE(!reg.empty());
  const Version& v = reg.front();  // the baseline first
  CHECK(std::string(v.name) == "speed_of_light");
  CHECK(v.run.floor);
  CHECK(!v.run.racy);
  CHECK(!v.exercise);
  CHECK(v.run.launch != nullptr);
  CHECK_THAT(std::string(v.description), course::test::contains("not a dot"));
  CHECK(course::find_version(reg, "speed_of_light") == &v);
}

TEST_CASE("ch04 speed_of_light: runs at n = 0, 1, 3, 1000003 and misaligned, writes its one value from its loads",
          "[ch04][gpu]") {
  COURSE_REQUIRE_GPU();
  const Version* v = course::find_version(ch04::versions(), "speed_of_light");
  REQUIRE(v != nullptr);
  course::Context ctx;
  ch04::Workspace ws(ctx);
  cudaStream_t stream = ctx.stream();
  using Offsets = std::pair<std::size_t, std::size_t>;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{1000003}}) {
    auto in = course::test::make_dot_inputs(n + 3, 4400 + n);  // room for the offsets below
    course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
    for (const auto& [off_x, off_y] : {Offsets{0, 0}, Offsets{1, 2}, Offsets{3, 1}, Offsets{2, 2}}) {
      d_result.fill_bytes(0xFF, stream);  // NaN: a value that is never written cannot pass
      v->run.launch(d_x.data() + off_x, d_y.data() + off_y, n, d_result.data(), ws, stream);
      ctx.synchronize();
      const float got = d_result.download()[0];
      INFO("speed_of_light at n = " << n << ", x + " << off_x << ", y + " << off_y << " (grid=" << ws.grid
                                    << " block=" << ws.block << "): wrote " << got << "; " << d_result.guard_damage());
      CHECK(std::isfinite(got));  // finite inputs: the NaN poison was overwritten
      CHECK(d_result.guard_damage().empty());
      CHECK(ws.block > 0);
      CHECK(ws.grid >= 1);
      if (n == 1000003) CHECK(ws.grid > 1);  // the whole GPU, not one block
      if (n == 0) continue;
      // The value comes from the loads: a NaN at the first element it reads reaches it.
      const float kept = in.x[off_x];
      in.x[off_x] = std::nanf("");
      d_x.upload(in.x);
      d_result.fill_bytes(0, stream);
      v->run.launch(d_x.data() + off_x, d_y.data() + off_y, n, d_result.data(), ws, stream);
      ctx.synchronize();
      const float planted = d_result.download()[0];
      INFO("with a NaN in x[0] it wrote " << planted << " (expected NaN: the value must come from the loads)");
      CHECK(std::isnan(planted));
      in.x[off_x] = kept;
      d_x.upload(in.x);
    }
  }
}

// A result must follow the input: new values in the same device buffers give the new answer (a
// launcher that caches its result by pointer, or hard-codes the public one, fails).
namespace {
const bool registered_follow = [] {
  for (const auto& v : ch04::versions()) {
    if (!v.exercise) continue;
    course::test::add_case("ch04 " + std::string(v.name) + ": follows its input (new values in the same buffers)",
                           "[ch04][gpu][exercise]", [&v] {
                             COURSE_REQUIRE_GPU();
                             const std::size_t n = 100003;
                             auto in = course::test::make_dot_inputs(n, 640);
                             course::test::Guarded<float> d_x(in.x), d_y(in.y), d_result(1);
                             course::Context ctx;
                             ch04::Workspace ws(ctx);
                             for (int round = 0; round < 2; ++round) {
                               d_result.fill_bytes(0xFF, ctx.stream());
                               v.run.launch(d_x.data(), d_y.data(), n, d_result.data(), ws, ctx.stream());
                               ctx.synchronize();
                               const course::Verdict verdict = course::check_dot(d_result.download()[0], in.ref);
                               INFO(course::test::explain(verdict, n, std::string(v.name) + " (round " +
                                                                          std::to_string(round + 1) + " of 2)",
                                                          "the second round has new values in the same buffers: "
                                                          "read x and y on every call, keep nothing between calls"));
                               CHECK(verdict.ok);
                               in = course::test::make_dot_inputs(n, 641);
                               d_x.upload(in.x);
                               d_y.upload(in.y);
                             }
                           });
  }
  return true;
}();
}  // namespace

// Exercise 3 (think): a float atomic maximum built from atomicCAS, used by one block of threads
// that all update the same address at the end. The expected value is the host's maximum of the
// same float products (a product is rounded the same way on both sides, so the match is exact).
namespace {

float host_max_product(const std::vector<float>& x, const std::vector<float>& y) {
  float best = -INFINITY;
  for (std::size_t i = 0; i < x.size(); ++i) best = std::fmax(best, x[i] * y[i]);
  return best;
}

void check_max_product(const std::vector<float>& x, const std::vector<float>& y, course::Context& ctx,
                       const std::string& what) {
  course::test::Guarded<float> d_x(x), d_y(y), d_result(1);
  d_result.fill_bytes(0xFF, ctx.stream());
  ch04::Workspace ws(ctx);
  ch04::max_product(d_x.data(), d_y.data(), x.size(), d_result.data(), ws, ctx.stream());
  ctx.synchronize();
  const std::string damage = d_result.guard_damage();
  INFO("max_product on " << what << " at n = " << x.size() << ": " << damage);
  CHECK(damage.empty());
  const float got = d_result.download()[0];
  const float expected = host_max_product(x, y);
  INFO("max_product on " << what << " at n = " << x.size() << " (one block of " << ws.block << " threads): got "
       << got << ", expected " << expected
       << ".\nHint: -inf means atomic_max_float never stored anything (is the TODO empty?). A value that is one of "
          "the products but not the largest means an update was lost: another thread may change *address between "
          "your read and your swap, and such a swap must not count as done. Wrong only when every product is "
          "negative: the bits of negative floats do not order like integers. See atomic_max_float, README "
          "§Exercise 3.");
  CHECK(((got == expected) || (std::isinf(got) && std::isinf(expected) && got < 0 && expected < 0)));
}

}  // namespace

TEST_CASE("ch04 max_product: the largest product at awkward sizes", "[ch04][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  for (std::size_t n : course::test::awkward_sizes(1024, 44)) {
    const auto in = course::test::make_dot_inputs(n, 4400 + n);
    check_max_product(in.x, in.y, ctx, "random signed data with spikes");
  }
}

TEST_CASE("ch04 max_product: every product negative", "[ch04][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{100000}}) {
    const auto a = course::random_vector(n, course::test::seed(4500 + n));
    const auto b = course::random_vector(n, course::test::seed(4600 + n));
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = std::fabs(a[i]) + 0.5f;     // in [0.5, 1.5)
      y[i] = -(std::fabs(b[i]) + 0.5f);  // in (-1.5, -0.5]
    }
    check_max_product(x, y, ctx, "products that are all negative");
  }
}

TEST_CASE("ch04 max_product: follows its input (new values in the same buffers)", "[ch04][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t n = 300000;
  course::test::Guarded<float> d_x(n), d_y(n), d_result(1);
  ch04::Workspace ws(ctx);
  for (int round = 0; round < 2; ++round) {
    const auto in = course::test::make_dot_inputs(n, 4700 + round);
    d_x.upload(in.x);
    d_y.upload(in.y);
    d_result.fill_bytes(0xFF, ctx.stream());
    ch04::max_product(d_x.data(), d_y.data(), n, d_result.data(), ws, ctx.stream());
    ctx.synchronize();
    const float got = d_result.download()[0];
    const float expected = host_max_product(in.x, in.y);
    INFO("round " << round + 1 << ": got " << got << ", expected " << expected
                  << ". Hint: the result must come from this call's inputs; nothing may be kept between calls.");
    CHECK(got == expected);
  }
}

// ---------------------------------------------------------------------------------------------
// The index arithmetic of exercise 2, host only (no GPU needed, never skipped): the block-stride
// loop of dot.hpp that dot_atomic_once calls, called here with a recorder. Every element of [0, n)
// must be visited exactly once, by thread i % threads, in increasing order; past 2^32 elements
// (where a 32-bit index wraps) each thread's count and last element are checked.
// ---------------------------------------------------------------------------------------------
namespace {

// Thread tid's visits: in order, tid + k * threads, below n, `expected` of them. Returns "" or
// the problem; adds each visit to `seen` when given (small n).
std::string check_stride_thread(unsigned tid, unsigned threads, std::size_t n, std::vector<int>* seen) {
  const std::size_t expected = n > tid ? (n - tid - 1) / threads + 1 : 0;
  std::ostringstream where;
  where << "for_each_block_stride(tid = " << tid << ", threads = " << threads << ", n = " << n << ")";
  std::string problem;
  std::size_t visits = 0;
  try {
    ch04::for_each_block_stride(tid, threads, n, [&](std::size_t i) {
      if (visits++ > expected) throw course::test::RunsAway{"more visits than elements"};
      if (!problem.empty()) return;
      const std::size_t want = tid + (visits - 1) * std::size_t{threads};
      if (i < n && i == want) {
        if (seen != nullptr) ++(*seen)[i];
        return;
      }
      std::ostringstream msg;  // only on a problem: this runs millions of times
      if (i >= n)
        msg << " visits element " << i << ", past the end: on the GPU a read outside x and y";
      else
        msg << " visits " << i << " as its visit number " << visits << "; the block-stride loop's is " << want
            << " (tid, tid + threads, tid + 2 * threads, ...)";
      problem = where.str() + msg.str();
    });
  } catch (const course::test::RunsAway&) {
    return where.str() + " visits more than its " + std::to_string(expected) +
           " elements: the loop does not end (a 32-bit index that wraps past 2^32?)";
  }
  if (!problem.empty()) return problem;
  if (visits != expected)
    return where.str() + " visits " + std::to_string(visits) + " elements, not " + std::to_string(expected) +
           (n > (std::size_t{1} << 31) ? " (an index that stops or wraps at 2^31 or 2^32?)" : "");
  return "";
}

const char* kStrideHint =
    "\nHint: (the stub visits nothing.) Thread tid must visit every i < n with i % threads == tid, each once, "
    "in increasing order, and nothing at or past n; the index must stay exact past 2^32 (an int or unsigned "
    "index wraps before the largest n). See for_each_block_stride (dot.hpp), README §One block, many threads "
    "and §A register sum per thread.";

}  // namespace

TEST_CASE("ch04 index: for_each_block_stride visits every element once at small sizes (exercise 2)",
          "[ch04][exercise][index][hole:dot.hpp:1]") {
  std::string first;
  std::vector<unsigned> thread_counts;
  for (unsigned t = 1; t <= 70; ++t) thread_counts.push_back(t);
  for (unsigned t : {127u, 128u, 256u, 640u, 1024u}) thread_counts.push_back(t);
  for (std::size_t n = 0; n <= 1100 && first.empty(); n += (n < 300 ? 1 : 97))
    for (unsigned threads : thread_counts) {
      std::vector<int> seen(n, 0);
      for (unsigned tid = 0; tid < threads && first.empty(); ++tid) first = check_stride_thread(tid, threads, n, &seen);
      for (std::size_t i = 0; i < n && first.empty(); ++i)
        if (seen[i] != 1)
          first = "with " + std::to_string(threads) + " threads and n = " + std::to_string(n) + ", element " +
                  std::to_string(i) + " is visited " + std::to_string(seen[i]) + " times (once is right)";
      if (!first.empty()) break;
    }
  INFO(first << kStrideHint);
  CHECK(first.empty());
}

TEST_CASE("ch04 index: for_each_block_stride past 2^31 and 2^32 elements (exercise 2)", "[ch04][exercise][index][hole:dot.hpp:1]") {
  std::string first;
  for (const std::size_t n : {(std::size_t{1} << 32) + 5, (std::size_t{1} << 32) - 1, (std::size_t{1} << 31) + 3})
    for (const unsigned threads : {1024u, 768u})
      for (const unsigned tid : {0u, threads - 1})
        if (first.empty()) first = check_stride_thread(tid, threads, n, nullptr);
  INFO(first << kStrideHint);
  CHECK(first.empty());
}

// ---------------------------------------------------------------------------------------------
// The kernels' atomics on a simulated block (host only, no GPU needed, never skipped). Each kernel
// calls a __host__ __device__ helper for what one thread does, with the GPU's atomic as an argument;
// here the same helpers run on the block player (tests/support/block_player.hpp), one fiber per
// thread, with the result in simulated global memory (ch04::on_host::Shared): a plain read of it lets
// the other threads run before its value arrives, and a simulated atomic does its read and write with
// nothing in between (it lets the others run first). So a plain `*result += v` loses updates here,
// as on a GPU, in every order of the threads the test tries. The values are small whole numbers:
// every sum is exact in float, in any order.
// ---------------------------------------------------------------------------------------------
namespace {

using Player = course::test::BlockPlayer;
using ch04::on_host::Shared;
constexpr Player::Order kOrders[] = {Player::Order::ascending, Player::Order::descending, Player::Order::shuffled};

float small_whole(std::uint64_t seed, std::size_t i) {  // -8 .. 8, never 0
  const auto u = course::mix64(seed, i);
  const float v = static_cast<float>(1 + u % 8);
  return (u >> 8) % 2 ? v : -v;
}

// Runs `share` (one thread's part of a dot: atomic_each or atomic_once) for every thread of a block
// of `threads` threads on n elements; "" or the first problem. `max_atomics_per_thread` < 0: any.
template <class Share>
std::string play_dot(Share share, unsigned threads, std::size_t n, long max_atomics_per_thread) {
  std::vector<float> x(n), y(n);
  double expected = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = small_whole(4000 + n, i);
    y[i] = small_whole(4001 + n, i);
    expected += static_cast<double>(x[i]) * y[i];
  }
  for (Player::Order order : kOrders) {
    Player player(threads, order, 4000 + n);
    Shared<float> result{0.0f, [&player] { player.pause(); }};
    std::vector<long> atomics(threads, 0);
    const std::string problem = player.run([&](unsigned tid) {
      share(x.data(), y.data(), n, &result, tid, threads, [&, tid](Shared<float>* r, float v) {
        player.pause();  // the others may go first; the add itself is indivisible
        ++atomics[tid];
        r->value += v;
      });
    });
    std::ostringstream where;
    where << "one block of " << threads << " threads, n = " << n << ", " << Player::name(order);
    if (!problem.empty()) return where.str() + ": " + problem;
    if (!(static_cast<double>(result.value) == expected)) {
      where << ": *result ends as " << result.value << ", x·y is " << expected;
      if (result.value == 0.0f && expected != 0.0) where << " (nothing reached *result)";
      else where << " (an update lost or counted twice: a plain read of *result lets other threads run before "
                    "it returns, as on a GPU, so a plain `+=` loses what they add in between)";
      return where.str();
    }
    const auto most = std::max_element(atomics.begin(), atomics.end());
    if (max_atomics_per_thread >= 0 && *most > max_atomics_per_thread) {
      where << ": thread " << (most - atomics.begin()) << " made " << *most << " atomic adds; one per thread is "
            << "the point (a private sum first)";
      return where.str();
    }
  }
  return "";
}

}  // namespace

TEST_CASE("ch04 atomic_each player: every product reaches *result, none lost, on a simulated block (exercise 1)",
          "[ch04][exercise][player][hole:dot.cu:1]") {
  std::string first;
  for (unsigned threads : {1u, 2u, 32u, 96u})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{1000}})
      if (first.empty()) first = play_dot(ch04::on_host::atomic_each, threads, n, -1);
  INFO(first << "\nHint: (the stub adds nothing.) Every product must reach *result while the other threads "
                "update it too: `*result += p` is a load, an add and a store, and another thread's store between "
                "them is lost. atomic_add(result, p) (atomicAdd on the GPU) does all three as one. See "
                "dot_atomic_each (dot.cu), README §The race and §atomicAdd on every product.");
  CHECK(first.empty());
}

TEST_CASE("ch04 atomic_once player: one atomic per thread, none lost, on a simulated block (exercise 2)",
          "[ch04][exercise][player][hole:dot.cu:2]") {
  std::string first;
  for (unsigned threads : {1u, 2u, 32u, 96u})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{1000}})
      if (first.empty()) first = play_dot(ch04::on_host::atomic_once, threads, n, 1);
  INFO(first << "\nHint: (the stub adds nothing.) Each thread sums its products over the indices "
                "for_each_block_stride gives it, in a private float, then adds that sum to *result once, with "
                "atomic_add (a plain `*result += sum` loses other threads' sums). If `ch04 index: *` fails too, "
                "fix for_each_block_stride first. See dot_atomic_once (dot.cu), README §A register sum per "
                "thread.");
  CHECK(first.empty());
}

TEST_CASE("ch04 max_product player: the largest value survives every thread's compare-and-swap (exercise 3)",
          "[ch04][exercise][player][hole:dot.cu:3]") {
  std::string first;
  for (unsigned threads : {1u, 2u, 3u, 32u, 100u})
    for (bool negative : {false, true})
      for (Player::Order order : kOrders) {
        if (!first.empty()) break;
        std::vector<float> value(threads);
        float expected = -std::numeric_limits<float>::infinity();
        for (unsigned t = 0; t < threads; ++t) {  // distinct, and all negative in the second round
          const float v = static_cast<float>(course::mix64(4300 + threads, t) % 4096) + 0.25f * t;
          value[t] = negative ? -1.0f - v : v - 2048.0f;
          expected = std::max(expected, value[t]);
        }
        Player player(threads, order, 4300 + threads);
        Shared<unsigned> bits{ch04::float_bits(-std::numeric_limits<float>::infinity()), [&player] { player.pause(); }};
        const std::string problem = player.run([&](unsigned tid) {
          ch04::on_host::atomic_max(&bits, value[tid], [&player](Shared<unsigned>* w, unsigned compare, unsigned val) {
            player.pause();  // the others may go first; the compare-and-swap itself is indivisible
            const unsigned old = w->value;
            if (old == compare) w->value = val;
            return old;
          });
        });
        std::ostringstream where;
        where << threads << " threads, " << (negative ? "every value negative" : "values of both signs") << ", "
              << Player::name(order);
        const float got = ch04::bits_float(bits.value);
        if (!problem.empty())
          first = where.str() + ": " + problem;
        else if (!(got == expected))
          first = where.str() + ": *address ends as " + std::to_string(got) + ", the largest value is " +
                  std::to_string(expected) +
                  (std::isinf(got) ? " (nothing was stored)"
                                   : " (another thread's swap came between a read and a swap, and that swap was not "
                                     "tried again: an update lost)");
      }
  INFO(first << "\nHint: (the stub stores nothing.) Read *bits, and while the float it holds is below value, try "
                "atomic_cas(bits, seen, float_bits(value)): it returns what *bits held. If that is not what you "
                "saw, another thread got in between and nothing was stored: compare again with what it returned, "
                "and try again. Compare floats, not their bits (negative floats order backwards as integers). See "
                "atomic_max_float (dot.cu), README §Exercise 3.");
  CHECK(first.empty());
}
