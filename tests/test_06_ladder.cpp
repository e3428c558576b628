// Chapter 06 grading tests: every version of the ladder, registered from the registry.
//
// Per version: the fp64 reference at awkward sizes, at misaligned pointers (x and y misaligned
// alike and differently), with NaN and infinity in the inputs; the same bits on every run (the
// course's versions); and one size beyond 2^31 elements ([huge]), so that no kernel may index with
// int. Host-only: the registry's shape and the streamed reference.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "dot.hpp"
#include "support/block_player.hpp"
#include "support/course_test.hpp"
#include "support/index_check.hpp"

namespace {

using Version = course::Version<ch06::Launcher>;

constexpr std::size_t kMaxTestN = (std::size_t{1} << 22) + 64;  // the awkward sizes stay below 2^22 + 1

std::string hint_for(const Version& v) {
  static const std::map<std::string, std::string> hints = {
      {"v3_sequential",
       "s_data[0] must end as the sum of the block's products by sequential addressing, and every thread of "
       "the block (not only the adders) must pass every barrier: a barrier inside an if that some threads skip "
       "hangs or races. A result equal to one product per block means the tree never ran. The steps are "
       "sequential_steps's (dot.hpp): its host test, `ch06 index: sequential_steps ...`, needs no GPU. See "
       "dot_kernel3, README §Steps 1–3 and §Exercise 1."},
      {"v4_first_add",
       "block b covers elements [2·b·blockDim.x, 2·(b+1)·blockDim.x): each thread must add the products of "
       "its two elements there, each only if it is below n (NaN: a read past the end), with indices that stay "
       "exact past 2^32. The indices are first_add_elements's (dot.hpp; host tests `ch06 index: "
       "first_add_elements ...`, no GPU). See dot_kernel4, README §Steps 4–6 and §Exercise 2."},
      {"v11_single_pass",
       "NaN means nobody wrote *result: exactly one block, the last to finish, must add every block's partial "
       "and write *result. Right on the first call and NaN on the next means the counter was not left ready for "
       "the next call. A sum that is off on some runs only means the last block read a partial before it was "
       "visible to it: that must follow from the memory model, not from timing, and the whole block must agree "
       "on whether it is last. See dot_kernel11, README §One launch: the last block's ticket and §Exercise 3."},
  };
  const auto it = hints.find(std::string(v.name));
  if (it != hints.end()) return it->second;
  return "this version is not an exercise: if it fails, the kit, the driver or the card is at fault (report it).";
}

/// x and y on the device, `off_x` and `off_y` elements past a 256-byte boundary, with NaN
/// before and after them: a read outside [0, n) poisons the result. Filled on `stream` (the
/// context's stream is non-blocking: work on the legacy default stream would not be ordered
/// before the kernels), and complete when the constructor returns.
struct OnDevice {
  course::DeviceBuffer<float> d_x, d_y;
  const float* x = nullptr;
  const float* y = nullptr;
  OnDevice(const std::vector<float>& hx, const std::vector<float>& hy, std::size_t off_x, std::size_t off_y,
           cudaStream_t stream)
      : d_x(hx.size() + 8), d_y(hy.size() + 8) {
    d_x.fill_bytes(0xFF, stream);
    d_y.fill_bytes(0xFF, stream);
    if (!hx.empty()) {
      CUDA_CHECK(cudaMemcpyAsync(d_x.data() + off_x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
      CUDA_CHECK(cudaMemcpyAsync(d_y.data() + off_y, hy.data(), hy.size() * sizeof(float), cudaMemcpyHostToDevice, stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vectors may go away after this
    x = d_x.data() + off_x;
    y = d_y.data() + off_y;
  }
};

/// How a test leaves the workspace between calls: poisoned (NaN partials: a version that forgets to
/// write a partial cannot pass on what an earlier call left there), or as the benchmark leaves it
/// (nothing reset between calls: a hole that keeps a cache in the workspace, a partial or a slot no
/// call uses, and checks it only when no test has wiped it, is seen; issue 38, class 4).
enum class Reset { poison, as_benchmark };

/// One call on the workspace's context stream with a poisoned result (and, by default, poisoned
/// partial sums), waited for; returns the result.
float run_once(const Version& v, const float* d_x, const float* d_y, std::size_t n, ch06::Workspace& ws,
               Reset reset = Reset::poison) {
  cudaStream_t stream = ws.ctx.stream();
  course::test::Guarded<float> d_result(1);  // a write past the result lands in a guard zone
  d_result.fill_bytes(0xFF, stream);
  if (reset == Reset::poison) ws.poison(stream);
  v.run(d_x, d_y, n, d_result.data(), ws, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::string damage = d_result.guard_damage();
  INFO(v.name << " at n = " << n << ": " << damage);
  CHECK(damage.empty());
  return d_result.download()[0];
}

void expect_match(const Version& v, float got, const course::Reference& ref, std::size_t n, const std::string& what) {
  const course::Verdict verdict = course::check_dot(got, ref);
  INFO(course::test::explain(verdict, n, std::string(v.name) + " (" + what + ")", hint_for(v)));
  CHECK(verdict.ok);
}

std::string offsets_text(std::size_t off_x, std::size_t off_y) {
  return "x at +" + std::to_string(off_x) + ", y at +" + std::to_string(off_y) + " elements";
}

/// The large size of the awkward ones: 2^20 + 3, or 2^16 + 3 under compute-sanitizer
/// (COURSE_TEST_SMALL=1), which is slow. Hundreds of blocks (tens when small) either way.
std::size_t large_size() {
  const auto sizes = course::test::awkward_sizes(ch06::kBlock, 606);
  return sizes[sizes.size() - 2];
}

// -------------------------------------------------------------------------------------------
void test_reference(const Version& v) {
  course::Context ctx;  // each test owns its GPU state: a stream, the cuBLAS handle, the scratch arena
  ch06::Workspace ws(ctx, kMaxTestN);
  // 1. Awkward sizes, aligned pointers.
  for (std::size_t n : course::test::awkward_sizes(ch06::kBlock, 606)) {
    const auto in = course::test::make_dot_inputs(n, 6000 + n);
    const OnDevice d(in.x, in.y, 0, 0, ctx.stream());
    expect_match(v, run_once(v, d.x, d.y, n, ws), in.ref, n, "aligned");
  }
  // 2. Misaligned pointers: alike (one common head aligns both) and differently (no common head).
  const std::pair<std::size_t, std::size_t> offsets[] = {{1, 1}, {2, 2}, {3, 3}, {1, 2}, {0, 3}, {3, 0}};
  for (std::size_t n : {std::size_t{3}, std::size_t{1000}, large_size()}) {
    const auto in = course::test::make_dot_inputs(n, 7000 + n);
    for (const auto& [off_x, off_y] : offsets) {
      const OnDevice d(in.x, in.y, off_x, off_y, ctx.stream());
      expect_match(v, run_once(v, d.x, d.y, n, ws), in.ref, n, offsets_text(off_x, off_y));
    }
  }
  // 3. NaN and infinity propagate as IEEE arithmetic says.
  const std::size_t n = large_size();
  const auto base = course::test::make_dot_inputs(n, 8000);
  struct Planted {
    const char* what;
    std::vector<std::pair<std::size_t, float>> x_values;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Planted cases[] = {
      {"a NaN in x near the end", {{n - 2, std::numeric_limits<float>::quiet_NaN()}}},
      {"+inf in x", {{n / 3, inf}}},
      {"+inf and -inf in x: inf - inf is NaN", {{n / 3, inf}, {n / 3 + 1000, -inf}}},
  };
  for (const auto& c : cases) {
    auto x = base.x, y = base.y;
    for (const auto& [at, value] : c.x_values) {
      x[at] = value;
      y[at] = 0.5f;
    }
    const course::Reference ref = course::reference_dot(x.data(), y.data(), n);
    for (std::size_t off : {std::size_t{0}, std::size_t{1}}) {
      const OnDevice d(x, y, off, off, ctx.stream());
      expect_match(v, run_once(v, d.x, d.y, n, ws), ref, n, std::string(c.what) + ", " + offsets_text(off, off));
    }
  }
}

// -------------------------------------------------------------------------------------------
void test_deterministic(const Version& v) {
  course::Context ctx;
  ch06::Workspace ws(ctx, kMaxTestN);
  const std::size_t n = 3 * large_size();  // 3 145 737 (196 617 when small): hundreds of blocks in every version
  const auto in = course::test::make_dot_inputs(n, 9000);
  for (std::size_t off : {std::size_t{0}, std::size_t{1}}) {
    const OnDevice d(in.x, in.y, off, off, ctx.stream());
    const float first = run_once(v, d.x, d.y, n, ws);
    expect_match(v, first, in.ref, n, "first of 20 runs, " + offsets_text(off, off));
    std::uint32_t first_bits = 0;
    std::memcpy(&first_bits, &first, sizeof first);
    int differ = 0;
    for (int run = 1; run < 20; ++run) {
      const float again = run_once(v, d.x, d.y, n, ws);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &again, sizeof again);
      differ += bits != first_bits;
    }
    INFO(v.name << " at n = " << n << " (" << offsets_text(off, off) << "): " << differ
                << " of 19 repeated runs differ from the first bit for bit (first = " << first
                << ").\nHint: the order of the additions must depend only on n, the grid and the thread "
                   "indices, never on which block finishes first; a NaN after the first run means "
                   "state (a counter) left behind by the previous call. See README §The same bits on every run.");
    CHECK(differ == 0);
  }
}

// -------------------------------------------------------------------------------------------
// Beyond 2^31 (and 2^32 where the card has the memory): inputs made on the device, the reference
// recomputed from the generator on the host, large products ("spikes") planted at indices past
// 2^31 and 2^32, which the error bound cannot absorb if an element there is lost.

// Every version's case draws the same inputs: their reference (seconds of host work at 2^32) is
// computed once per process, for the first case the grader's batch runs, and copied after that.
course::Reference huge_reference(std::size_t n, std::uint64_t seed_x, std::uint64_t seed_y) {
  static std::map<std::tuple<std::size_t, std::uint64_t, std::uint64_t>, course::Reference> made;
  const auto key = std::make_tuple(n, seed_x, seed_y);
  auto it = made.find(key);
  if (it == made.end()) it = made.emplace(key, ch06::streamed_reference(n, seed_x, seed_y)).first;
  return it->second;
}

void test_huge(const Version& v) {
  const std::size_t big = (std::size_t{1} << 32) + (std::size_t{1} << 20) + 3;
  const std::size_t small = (std::size_t{1} << 31) + (std::size_t{1} << 20) + 3;
  const std::size_t free_bytes = course::free_device_bytes();
  auto need = [](std::size_t n) { return 2 * n * sizeof(float) + ch06::Workspace::bytes_for(n) + (std::size_t{1} << 30); };
  const std::size_t n = free_bytes >= need(big) ? big : small;
  if (free_bytes < need(n))
    COURSE_SKIP_NO_MEMORY("this test needs " + course::format_bytes(need(n)) +
                          " of free device memory and the card has " + course::format_bytes(free_bytes) +
                          ": skipped, not passed");

  course::Context ctx;
  cudaStream_t stream = ctx.stream();
  const std::uint64_t seed_x = course::test::seed(31), seed_y = course::seed_y(seed_x);
  course::DeviceBuffer<float> d_x(n), d_y(n);
  course::fill_random_device(d_x.data(), n, seed_x, -1.0f, 1.0f, stream);
  course::fill_random_device(d_y.data(), n, seed_y, -1.0f, 1.0f, stream);
  course::Reference ref = huge_reference(n, seed_x, seed_y);  // on the host, while the GPU fills

  // Spikes of 1e9 (y = 1 there): far above the error bound of ~3e-2·Σ|x·y| ≈ 1.6e8 at n = 2^32.
  // All positive: spikes that cancel would let a kernel that returns 0 pass.
  const std::size_t at[] = {0, (std::size_t{1} << 31) + 5, n - (std::size_t{1} << 20), n - 1};
  const float spike[] = {1e9f, 1e9f, 1e9f, 1e9f};
  for (int k = 0; k < 4; ++k) {
    const double old_p = static_cast<double>(course::random_at(seed_x, at[k], -1.0f, 1.0f)) *
                         static_cast<double>(course::random_at(seed_y, at[k], -1.0f, 1.0f));
    ref.value += static_cast<double>(spike[k]) - old_p;
    ref.sum_abs += std::fabs(static_cast<double>(spike[k])) - std::fabs(old_p);
    const float one = 1.0f;
    CUDA_CHECK(cudaMemcpyAsync(d_x.data() + at[k], &spike[k], sizeof(float), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(d_y.data() + at[k], &one, sizeof(float), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));  // `one` lives in this loop's scope
  }
  ch06::Workspace ws(ctx, n);
  expect_match(v, run_once(v, d_x.data(), d_y.data(), n, ws), ref, n,
               "n beyond 2^31; indices must be 64-bit (std::size_t), never int or unsigned");
}

// One test case per version and property; the names are what tools/grading/06_ladder.json awards.
const bool registered = [] {
  for (const auto& v : ch06::versions()) {
    if (ch06::is_speed_of_light(v)) continue;  // not a dot product: its own test case below
    std::string tags = "[ch06][gpu]";
    if (v.exercise) tags += "[exercise]";
    const std::string name(v.name);
    course::test::add_case("ch06 " + name + ": matches the fp64 reference (awkward sizes, misaligned, NaN, inf)",
                           tags, [&v] {
                             COURSE_REQUIRE_GPU();
                             test_reference(v);
                           });
    if (!ch06::is_baseline(v))  // the atomic baseline adds in the order blocks finish: not deterministic
      course::test::add_case("ch06 " + name + ": the same bits on every run", tags, [&v] {
        COURSE_REQUIRE_GPU();
        test_deterministic(v);
      });
    course::test::add_case("ch06 " + name + ": beyond 2^31 elements", tags + "[huge]", [&v] {
      COURSE_REQUIRE_GPU();
      test_huge(v);
    });
  }
  return true;
}();

}  // namespace

TEST_CASE("ch06 registry: baselines first, the classic seven, three exercises, the tagged single pass last", "[ch06]") {
  const auto& vs = ch06::versions();
  REQUIRE(vs.size() == 16);
  CHECK(ch06::is_library(vs[0]));
  CHECK(ch06::is_library(vs[1]));
  CHECK(!ch06::is_library(vs[2]));
  CHECK(ch06::is_baseline(vs[2]));
  CHECK(std::string(vs[2].name) == "atomic_vec4");
  CHECK(ch06::is_baseline(vs[3]));
  CHECK(ch06::is_speed_of_light(vs[3]));
  CHECK(std::string(vs[3].name) == "speed_of_light");
  CHECK(!vs[3].exercise);
  CHECK(vs[3].run == &ch06::run_read_only);
  for (std::size_t i = 4; i < vs.size(); ++i) CHECK(!ch06::is_baseline(vs[i]));
  for (std::size_t i = 0; i < vs.size(); ++i) CHECK(ch06::is_speed_of_light(vs[i]) == (i == 3));
  std::vector<std::string> exercises;
  for (std::size_t i = 0; i < vs.size(); ++i) {
    CHECK(vs[i].run != nullptr);
    for (std::size_t j = 0; j < i; ++j) CHECK(std::string(vs[i].name) != std::string(vs[j].name));
    if (vs[i].exercise) exercises.emplace_back(vs[i].name);
  }
  CHECK(exercises == std::vector<std::string>{"v3_sequential", "v4_first_add", "v11_single_pass"});
  CHECK(std::string(ch06::final_version().name) == "v12_tagged_partials");
}

TEST_CASE("ch06 streamed_reference: equals the reference of the materialized vectors", "[ch06]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 21) + 7}) {
    const auto x = course::random_vector(n, 5);
    const auto y = course::random_vector(n, course::seed_y(5));
    const course::Reference a = course::reference_dot(x.data(), y.data(), n);
    const course::Reference b = ch06::streamed_reference(n, 5, course::seed_y(5));
    INFO("n = " << n << ": materialized " << a.value << " (sum |x y| " << a.sum_abs << "), streamed " << b.value
                << " (" << b.sum_abs << ")");
    CHECK(b.n == n);
    CHECK(std::fabs(a.value - b.value) <= 1e-12 * a.sum_abs);
    CHECK(std::fabs(a.sum_abs - b.sum_abs) <= 1e-12 * a.sum_abs);
  }
}

TEST_CASE("ch06 Workspace: refuses a call larger than it was made for", "[ch06][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  ch06::Workspace ws(ctx, 1000);
  course::DeviceBuffer<float> d(2000), d_result(1);
  for (const auto& v : ch06::versions()) {
    INFO(v.name << " was called with n = 2000 on a workspace for n <= 1000");
    CHECK_THROWS_AS(v.run(d.data(), d.data(), 2000, d_result.data(), ws, ctx.stream()), course::UsageError);
  }
}

// The read-only kernel is the registry's speed_of_light row, not a dot product: it must run at any size
// and alignment, write its one value (a finite one, from finite inputs) and nothing past it, and
// read no element outside the inputs (NaN lies around them; the sanitizer run checks the rest).
TEST_CASE("ch06 read-only kernel: runs at awkward sizes and alignments, writes its one value", "[ch06][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  ch06::Workspace ws(ctx, kMaxTestN);
  cudaStream_t stream = ctx.stream();
  for (std::size_t n : course::test::awkward_sizes(ch06::kBlock, 607)) {
    const auto in = course::test::make_dot_inputs(n, 8000 + n);
    for (const auto& [off_x, off_y] : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 1}, {1, 2}}) {
      const OnDevice d(in.x, in.y, off_x, off_y, stream);
      course::test::Guarded<float> d_result(1);
      d_result.fill_bytes(0xFF, stream);
      ch06::run_read_only(d.x, d.y, n, d_result.data(), ws, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const float got = d_result.download()[0];
      INFO("run_read_only at n = " << n << ", " << offsets_text(off_x, off_y) << ": wrote " << got << "; "
                                   << d_result.guard_damage());
      CHECK(std::isfinite(got));
      CHECK(d_result.guard_damage().empty());
    }
  }
  course::DeviceBuffer<float> d_result(1);
  CHECK_THROWS_AS(ch06::run_read_only(d_result.data(), d_result.data(), kMaxTestN + 1, d_result.data(), ws, stream),
                  course::UsageError);
}

TEST_CASE("ch06 Workspace: bytes_for bounds what the constructor reserves", "[ch06][gpu]") {
  COURSE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{1} << 20, (std::size_t{1} << 28) + 3}) {
    course::Context ctx;  // a fresh arena: what it holds is what this Workspace reserved
    ch06::Workspace ws(ctx, n);
    INFO("n = " << n << ": the Workspace reserved " << ctx.scratch_bytes() << " bytes, bytes_for says "
                << ch06::Workspace::bytes_for(n));
    CHECK(ctx.scratch_bytes() <= ch06::Workspace::bytes_for(n));
    CHECK(ctx.scratch_bytes() > 0);
  }
}

namespace {
/// Version 11's forced finishing orders, one list for the GPU test below and the host player (`ch06
/// v11 player: *`): no delay, then one block made to finish last (the first, the second, one in the
/// middle, ...), then every block delayed by its distance from the end, so that block 0 finishes
/// last. `ns` is the wait on the GPU; ch06::finish_delay_ns gives each block's, on both sides.
struct ForcedOrder {
  ch06::FinishOrder order;
  unsigned block, ns;
  std::string what;
};
std::vector<ForcedOrder> forced_orders() {
  std::vector<ForcedOrder> orders = {{ch06::FinishOrder::none, 0, 0, "no delay"}};
  for (unsigned b : {0u, 1u, 2u, 7u, 31u, 100u, 257u})
    orders.push_back({ch06::FinishOrder::one_late, b, 30000, "block " + std::to_string(b) + " finishes last"});
  orders.push_back({ch06::FinishOrder::reversed, 0, 400, "block b waits (grid - 1 - b) x 400 ns: block 0 last"});
  return orders;
}
}  // namespace

// The single pass's combine must not follow the order in which its blocks finish (issue 38, class
// 6). Twenty runs that happen to finish alike prove nothing; here the order is forced
// (forced_orders()). The same bits, every time. (force_finish_order is the chapter's test switch;
// the benchmark never sets it.)
TEST_CASE("ch06 v11_single_pass: the same bits whichever block finishes last (forced orders)",
          "[ch06][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  const Version* v = course::find_version(ch06::versions(), "v11_single_pass");
  REQUIRE(v != nullptr);
  course::Context ctx;
  ch06::Workspace ws(ctx, kMaxTestN);
  const std::size_t n = 3 * large_size();  // hundreds of blocks
  const auto in = course::test::make_dot_inputs(n, 9100);
  const OnDevice d(in.x, in.y, 0, 0, ctx.stream());
  struct Restore {  // the next test, and a failed REQUIRE, get the default order back
    ~Restore() { ch06::force_finish_order(ch06::FinishOrder::none); }
  } restore;
  std::vector<std::pair<std::string, std::uint32_t>> seen;
  for (const ForcedOrder& o : forced_orders()) {
    ch06::force_finish_order(o.order, o.block, o.ns);
    const float got = run_once(*v, d.x, d.y, n, ws);
    expect_match(*v, got, in.ref, n, o.what);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &got, sizeof got);
    seen.emplace_back(o.what, bits);
  }
  std::string differ;
  for (const auto& [what, bits] : seen)
    if (bits != seen.front().second) differ += (differ.empty() ? "" : "; ") + what;
  INFO("n = " << n << ": the result's bits changed when the blocks finished in another order (" << differ
              << ").\nHint: the last block must add every partial in an order fixed by the block indices (partials[b] "
                 "for b = 0, 1, ...), never in the order the blocks arrive; no float atomics on the result or on a "
                 "sum of partials. See README §One launch.");
  CHECK(differ.empty());
}

// A result must follow the input: new values in the same device buffers give the new answer (a
// launcher that caches its result by pointer, or hard-codes the public one, fails). The calls are
// made as the benchmark makes them: one workspace, nothing reset between calls, so that a cache
// kept in the workspace (the partial a block left there last time, a slot no call uses) and used
// only when it was not wiped shows here too (issue 38, class 4).
namespace {
const bool registered_follow = [] {
  for (const auto& v : ch06::versions()) {
    if (!v.exercise) continue;
    course::test::add_case("ch06 " + std::string(v.name) + ": follows its input (new values in the same buffers)",
                           "[ch06][gpu][exercise]", [&v] {
                             COURSE_REQUIRE_GPU();
                             const std::size_t n = large_size();
                             course::Context ctx;
                             ch06::Workspace ws(ctx, kMaxTestN);
                             auto in = course::test::make_dot_inputs(n, 660);
                             course::test::Guarded<float> d_x(in.x), d_y(in.y);
                             for (int round = 0; round < 3; ++round) {
                               expect_match(v, run_once(v, d_x.data(), d_y.data(), n, ws, Reset::as_benchmark),
                                            in.ref, n,
                                            "round " + std::to_string(round + 1) +
                                                " of 3, each with new values in the same buffers and the workspace "
                                                "as the last call left it (the benchmark does not reset it): keep "
                                                "nothing between calls, not even in the workspace");
                               in = course::test::make_dot_inputs(n, 661 + static_cast<std::uint64_t>(round));
                               d_x.upload(in.x);
                               d_y.upload(in.y);
                             }
                           });
  }
  return true;
}();
}  // namespace

// Exercise 4 (think): the waves of a grid. Host only (no GPU). Three kinds of check, none of which
// computes the answer the way the exercise asks for: examples worked out by hand (the arithmetic is
// in the comment above the table), a simulation of the slots one block at a time for small grids
// (it cannot reach the table's grids past 2^31 blocks), and properties any right answer has.
namespace {

// Slot by slot: every block takes one unit of time on the slot that frees first (a min-heap of the
// slots' free times). Returns the time the last block ends; the slot-time of the run is that times
// `slots`, and `blocks` units of it hold a block.
std::size_t slots_simulated_end(std::size_t blocks, std::size_t slots) {
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> free_at;
  for (std::size_t s = 0; s < slots; ++s) free_at.push(0);
  std::size_t end = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t start = free_at.top();
    free_at.pop();
    free_at.push(start + 1);
    end = std::max(end, start + 1);
  }
  return end;
}

}  // namespace

TEST_CASE("ch06 wave_efficiency: the share of slot-time that holds a block", "[ch06][exercise][hole:dot.cu:2]") {
  std::size_t wrong = 0;
  std::string first;
  auto note = [&](std::size_t blocks, std::size_t slots, double got, const std::string& why) {
    if (wrong++ == 0)
      first = "wave_efficiency(blocks = " + std::to_string(blocks) + ", slots = " + std::to_string(slots) +
              ") returned " + std::to_string(got) + ": " + why;
  };
  auto expect = [&](std::size_t blocks, std::size_t slots, double expected) {
    const double got = ch06::wave_efficiency(blocks, slots);
    if (!(std::fabs(got - expected) <= 1e-12 * expected))
      note(blocks, slots, got, "expected " + std::to_string(expected));
  };
  // Worked by hand. 5 blocks on 4 slots: 4 run, then 1 runs while 3 slots idle; 2 units of time x 4
  // slots = 8 slot-units, 5 of them busy: 5/8. 7 on 3: 3, 3, then 1: 9 slot-units, 7 busy. 8449
  // blocks on 1056 slots (132 SMs x 8): 8 x 1056 = 8448, so 8 full rounds and one with 1 block:
  // 9 x 1056 = 9504 slot-units. 2^31 - 1 = 2147483647 blocks on 1056: 1056 x 2033601 = 2147482656
  // leaves 991 blocks for round 2033602, so 2033602 x 1056 = 2147483712 slot-units. 2^32 + 1 blocks
  // on 2^32 slots: two rounds, 2^33 slot-units (in 32 bits, 2^32 is 0). 2^33 blocks on 3 slots:
  // 3 x 2863311530 = 8589934590 leaves 2, so 2863311531 rounds, 8589934593 slot-units. 2^40 =
  // 1099511627776 blocks on 1000003 slots: 1000003 x 1099508 = 1099511298524 leaves 329252, so
  // 1099509 rounds, 1099512298527 slot-units.
  const struct {
    std::size_t blocks, slots;
    double expected;
  } worked[] = {
      {1, 1, 1.0},
      {4, 4, 1.0},
      {3, 8, 3.0 / 8.0},
      {5, 4, 5.0 / 8.0},
      {7, 3, 7.0 / 9.0},
      {8449, 1056, 8449.0 / 9504.0},
      {2147483647, 1056, 2147483647.0 / 2147483712.0},
      {(std::size_t{1} << 32) + 1, std::size_t{1} << 32, 4294967297.0 / 8589934592.0},
      {std::size_t{1} << 33, 3, 8589934592.0 / 8589934593.0},
      {std::size_t{1} << 40, 1000003, 1099511627776.0 / 1099512298527.0},
  };
  for (const auto& w : worked) expect(w.blocks, w.slots, w.expected);
  // Small grids: the slot-by-slot simulation.
  for (std::size_t slots = 1; slots <= 40; ++slots)
    for (std::size_t blocks = 1; blocks <= 300; ++blocks)
      expect(blocks, slots,
             static_cast<double>(blocks) / (static_cast<double>(slots_simulated_end(blocks, slots)) * static_cast<double>(slots)));
  // Properties, on grids from the grading seed up to 2^40 blocks. Whatever the grid: a share in
  // (0, 1]; the slot-time it implies, blocks / share, is a whole number of rounds of `slots`, enough
  // for every block and with less than one round to spare; the same share when blocks and slots
  // are both scaled by k; and one block more never lowers it unless it opens a round.
  std::mt19937_64 rng(course::test::seed(606));
  for (int k = 0; k < 200; ++k) {
    const std::size_t slots = 1 + rng() % 100000;
    const std::size_t blocks = 1 + rng() % ((k % 2 == 0) ? 5 * slots : (std::size_t{1} << 40));
    const double got = ch06::wave_efficiency(blocks, slots);
    if (!(got > 0.0 && got <= 1.0)) {
      note(blocks, slots, got, "a share of the slot-time must lie in (0, 1]");
      continue;
    }
    const double slot_time = std::round(static_cast<double>(blocks) / got);
    const double rounds = slot_time / static_cast<double>(slots);
    if (std::fabs(static_cast<double>(blocks) / got - slot_time) > 1e-6 * slot_time || rounds != std::floor(rounds) ||
        slot_time < static_cast<double>(blocks) || slot_time >= static_cast<double>(blocks) + static_cast<double>(slots))
      note(blocks, slots, got,
           "blocks / share = " + std::to_string(static_cast<double>(blocks) / got) +
               " slot-units, which is not a whole number of rounds of every slot that holds the blocks with less "
               "than one round to spare");
    const std::size_t scale = 1 + rng() % 7;
    const double scaled = ch06::wave_efficiency(scale * blocks, scale * slots);
    if (!(std::fabs(scaled - got) <= 1e-12 * got))
      note(blocks, slots, got, "but " + std::to_string(scale) + " times the blocks on " + std::to_string(scale) +
                                   " times the slots gives " + std::to_string(scaled) + " (the same picture, scaled)");
    const double one_more = ch06::wave_efficiency(blocks + 1, slots);
    if (blocks % slots != 0 && !(one_more > got))
      note(blocks, slots, got, "but one block more gives " + std::to_string(one_more) +
                                   ", no higher, though it fills a slot that idled");
  }
  INFO(wrong << " wrong answers; the first: " << first
             << ".\nHint: -1 is the unfilled stub. Picture the slots over time, as README §Exercise 4 asks: "
                "which slots idle, and for how long? Grids past 2^32 blocks must not wrap: std::size_t or "
                "double, never int. See wave_efficiency.");
  CHECK(wrong == 0);
}

// ---------------------------------------------------------------------------------------------
// The index arithmetic of exercises 1 and 2, host only (no GPU needed, never skipped): the functions
// of dot.hpp that versions 3 to 7 call for their indices, called here with recorders
// (tests/support/index_check.hpp). Exercise 3 (the single pass) is a protocol, not
// index arithmetic: its host test is the grid player below (`ch06 v11 player: *`), and the hole scan
// (`ch06 integrity`, no GPU) checks its ticket's memory order, which no run can be relied on to show.
// ---------------------------------------------------------------------------------------------
namespace {

// Version 3's addressing: every add of thread tid at step k is add(tid, tid + count / 2^(k+1)).
std::string check_sequential_addressing(unsigned count) {
  std::ostringstream problem;
  for (unsigned tid = 0; tid < count && problem.str().empty(); ++tid) {
    unsigned step = 0;
    ch06::sequential_steps(
        tid, count,
        [&](unsigned to, unsigned from) {
          const unsigned s = count >> (step + 1);
          if ((to != tid || from != tid + s) && problem.str().empty())
            problem << "count = " << count << ", step " << step << ": thread " << tid << " calls add(" << to << ", "
                    << from << "); sequential addressing has it add value tid + s into value tid, add(" << tid
                    << ", " << tid + s << ") with s = " << s
                    << ": neighbouring threads, neighbouring words, no bank conflicts (an add into 2 * s * tid is "
                       "version 2's interleaved addressing)";
        },
        [&] { ++step; });
  }
  return problem.str();
}

// Thread tid of block `block` in version 4's split of [0, n): its two elements, each once, below n.
std::string check_first_add_thread(unsigned block, unsigned tid, unsigned block_dim, std::size_t n,
                                   std::vector<int>* seen, std::size_t base) {
  const std::size_t span = 2 * std::size_t{block_dim};
  const std::size_t i = block * span + tid;
  const std::size_t expected = (i < n ? 1 : 0) + (i + block_dim < n ? 1 : 0);
  std::ostringstream where;
  where << "first_add_elements(block = " << block << ", tid = " << tid << ", block_dim = " << block_dim
        << ", n = " << n << ")";
  std::string problem;
  std::size_t visits = 0;
  ch06::first_add_elements(block, tid, block_dim, n, [&](std::size_t e) {
    ++visits;
    if (!problem.empty()) return;
    if (e < n && e / span == block && (e - block * span) % block_dim == tid) {
      if (seen != nullptr) ++(*seen)[e - base];
      return;
    }
    std::ostringstream msg;  // only on a problem
    if (e >= n)
      msg << " visits element " << e << ", past the end: on the GPU a read outside x and y";
    else if (e / span != block)
      msg << " visits element " << e << ", which block " << e / span << " covers (" << span
          << " elements per block): is the index computed in 32 bits?";
    else
      msg << " visits element " << e << ", which is thread " << (e - block * span) % block_dim
          << "'s: within a block's span, element e belongs to thread (e - span start) % block_dim";
    problem = where.str() + msg.str();
  });
  if (!problem.empty()) return problem;
  if (visits != expected)
    return where.str() + " visits " + std::to_string(visits) + " elements; its own below n are " +
           std::to_string(expected);
  return "";
}

const char* kFirstAddHint =
    "\nHint: (the stub visits nothing.) Thread tid of block b must visit exactly its two elements of the "
    "layout the comment above first_add_elements (dot.hpp) states, each once and only if it is below n, with "
    "no intermediate that wraps in 32 bits. See README §Steps 4–6 and §Exercise 2.";

}  // namespace

TEST_CASE("ch06 index: sequential_steps reduces every power-of-two count by sequential addressing (exercise 1)",
          "[ch06][exercise][index][hole:dot.hpp:1]") {
  for (unsigned count = 1; count <= 1024; count *= 2) {
    std::string problem = course::test::check_tree(
        [](unsigned tid, unsigned c, auto add, auto barrier) { ch06::sequential_steps(tid, c, add, barrier); }, count,
        course::test::ceil_log2(count), course::test::seed(6100) + count);
    if (problem.empty()) problem = check_sequential_addressing(count);
    INFO("sequential_steps: " << problem
                              << "\nHint: (the stub does nothing, so value 0 keeps its own value.) Value 0 must "
                                 "end with every value once after log2(count) steps of sequential addressing, no "
                                 "value touched by two threads in one step, and every thread calling barrier() "
                                 "after every step, adding or not. See sequential_steps (dot.hpp), README §Steps "
                                 "1–3 and §Exercise 1.");
    CHECK(problem.empty());
    if (!problem.empty()) break;
  }
}

TEST_CASE("ch06 index: first_add_elements visits every element once at small sizes (exercise 2)",
          "[ch06][exercise][index][hole:dot.hpp:2]") {
  std::string first;
  for (unsigned block_dim : {1u, 2u, 3u, 32u, 64u, 256u})
    for (std::size_t n = 0; n <= 1100 && first.empty(); n += (n < 300 ? 1 : 41)) {
      const std::size_t span = 2 * std::size_t{block_dim};
      const std::size_t blocks = (n + span - 1) / span + 1;  // and one block past the end: it visits nothing
      std::vector<int> seen(n, 0);
      for (std::size_t b = 0; b < blocks && first.empty(); ++b)
        for (unsigned t = 0; t < block_dim && first.empty(); ++t)
          first = check_first_add_thread(static_cast<unsigned>(b), t, block_dim, n, &seen, 0);
      for (std::size_t e = 0; e < n && first.empty(); ++e)
        if (seen[e] != 1)
          first = "with blocks of " + std::to_string(block_dim) + " threads and n = " + std::to_string(n) +
                  ", element " + std::to_string(e) + " is visited " + std::to_string(seen[e]) + " times (once is right)";
    }
  INFO(first << kFirstAddHint);
  CHECK(first.empty());
}

TEST_CASE("ch06 index: first_add_elements around 2^31 and 2^32 elements (exercise 2)", "[ch06][exercise][index][hole:dot.hpp:2]") {
  // The blocks whose elements straddle 2^31 and 2^32 (a 32-bit index wraps there) and the last ones,
  // every thread of each, at sizes past 2^32 and at 2^32 itself.
  std::string first;
  for (const std::size_t n : {(std::size_t{1} << 32) + 5, std::size_t{1} << 32, (std::size_t{1} << 32) - 1,
                              (std::size_t{1} << 31) + 3})
    for (const unsigned block_dim : {256u, 1024u, 96u}) {
      const std::size_t span = 2 * std::size_t{block_dim};
      const std::size_t blocks = (n + span - 1) / span;
      std::vector<std::size_t> picks = {0, blocks - 2, blocks - 1, blocks};
      for (const std::size_t edge : {std::size_t{1} << 31, std::size_t{1} << 32})
        for (std::size_t b = edge / span; b <= (edge + span - 1) / span + 1; ++b)
          if (b >= 1) picks.push_back(b - 1), picks.push_back(b);
      for (const std::size_t b : picks) {
        if (b > blocks || !first.empty()) continue;
        std::vector<int> seen(span, 0);
        for (unsigned t = 0; t < block_dim && first.empty(); ++t)
          first = check_first_add_thread(static_cast<unsigned>(b), t, block_dim, n, &seen, b * span);
        for (std::size_t j = 0; j < span && first.empty() && b * span + j < n; ++j)
          if (seen[j] != 1)
            first = "n = " + std::to_string(n) + ": element " + std::to_string(b * span + j) + " is visited " +
                    std::to_string(seen[j]) + " times (once is right)";
      }
    }
  INFO(first << kFirstAddHint);
  CHECK(first.empty());
}

// ---- the kernels' holes without a GPU (issue 39: a host check for every hole) -----------------
// Versions 3, 4 and 11 do what their holes do in __host__ __device__ helpers; ch06::on_host runs
// them, and a block player (tests/support/block_player.hpp) runs every thread of a simulated block,
// one at a time between barriers, in several orders a GPU may take. Whole-number values: exact in
// float, so a value lost or added twice shows exactly.
namespace {

using Player = course::test::BlockPlayer;
constexpr Player::Order kOrders[] = {Player::Order::ascending, Player::Order::descending, Player::Order::shuffled};
const float kNaN = std::numeric_limits<float>::quiet_NaN();

float whole(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(static_cast<int>(course::mix64(seed, i) % 1999) - 999);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string show(float v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

TEST_CASE("ch06 v3 player: the sequential tree on a simulated block, threads in any order (exercise 1)",
          "[ch06][exercise][player][hole:dot.hpp:1]") {
  std::string first;
  for (unsigned count : {1u, 2u, 32u, 64u, 256u, 1024u})
    for (Player::Order order : kOrders) {
      if (!first.empty()) break;
      const std::uint64_t seed = course::test::seed(6150) + count;
      std::vector<float> s(count + 64, kNaN);  // NaN past the block's values
      float expected = 0.0f;
      for (unsigned i = 0; i < count; ++i) expected += (s[i] = whole(seed, i));
      Player player(count, order, seed);
      const std::string problem = player.run(
          [&](unsigned tid) { ch06::on_host::sequential_tree(s.data(), tid, count, [&] { player.sync_block(); }); });
      const std::string where = "a block of " + std::to_string(count) + " threads, " + Player::name(order) + ": ";
      if (!problem.empty())
        first = where + problem;
      else if (!same_bits(s[0], expected))
        first = where + "s_data[0] = " + show(s[0]) + ", the block's sum is " + show(expected) +
                (std::isnan(s[0]) ? " (NaN: a value at or past s_data[count] was read)" : "");
    }
  INFO(first << "\nHint: (the stub leaves s_data[0] as it was.) s_data[0] must end with every value once, "
                "whatever order the threads run in between barriers: sequential_steps's adds in shared memory, "
                "barrier() after every step, reached by every thread. See dot_kernel3, README §Steps 1–3.");
  CHECK(first.empty());
}

TEST_CASE("ch06 v4 on the host: every thread's two products, nothing read past n (exercise 2)",
          "[ch06][exercise][player][hole:dot.hpp:2]") {
  std::string first;
  for (unsigned block_dim : {1u, 32u, 256u})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{511},
                          std::size_t{512}, std::size_t{513}, std::size_t{1000}, std::size_t{4099}}) {
      if (!first.empty()) break;
      const std::uint64_t seed = course::test::seed(6250) + n;
      std::vector<float> x(n + 1100, kNaN), y(n + 1100, kNaN);  // NaN before and after [0, n)
      double expected = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        x[64 + i] = whole(seed, i);
        y[64 + i] = whole(seed + 1, i);
        expected += static_cast<double>(x[64 + i]) * y[64 + i];
      }
      const std::size_t span = 2 * std::size_t{block_dim};
      const std::size_t blocks = std::max<std::size_t>(1, (n + span - 1) / span);  // run_v4's grid
      double total = 0.0;
      for (std::size_t b = 0; b < blocks; ++b)
        for (unsigned t = 0; t < block_dim; ++t)
          total += ch06::on_host::first_add_share(x.data() + 64, y.data() + 64, n, static_cast<unsigned>(b), t,
                                                  block_dim);
      if (!(total == expected))
        first = "blocks of " + std::to_string(block_dim) + " threads, n = " + std::to_string(n) + ": the threads' " +
                "sums add to " + show(static_cast<float>(total)) + ", the dot product is " +
                show(static_cast<float>(expected)) +
                (std::isnan(total) ? " (NaN: an element outside [0, n) was read)" : "");
    }
  INFO(first << "\nHint: (the stub adds nothing.) Each thread adds x[i]·y[i] for exactly the indices "
                "first_add_elements gives it: its two elements of its block's 2·block_dim, each below n. See "
                "dot_kernel4, README §Steps 4–6.");
  CHECK(first.empty());
}

namespace {

/// One call of version 11 after its blocks' sums, played on the host: a grid of sums.size() blocks
/// of `threads` threads, block b's total sums[b] (in thread 0; NaN in the others, which the kit's
/// block_sum leaves unspecified). The blocks run one after another in `order`, each to its end: the
/// order in which they finish. The partials start as NaN (as Workspace::poison leaves them), *result
/// as a marked NaN, and `counter` as the last call left it. Returns "" or the first problem; no block
/// but the last to finish may write *result.
std::string play_single_pass(Player& player, unsigned threads, const std::vector<float>& sums,
                             const std::vector<unsigned>& order, unsigned& counter, float& result) {
  const unsigned grid = static_cast<unsigned>(sums.size());
  std::vector<float> partials(grid + 64, kNaN);
  float marker = 0.0f;
  const std::uint32_t marker_bits = 0x7fc0beefu;
  std::memcpy(&marker, &marker_bits, sizeof marker);
  result = marker;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const unsigned b = order[k];
    bool s_is_last = k % 2 == 0;  // shared memory holds what it held: either value
    const std::string problem = player.run([&](unsigned tid) {
      ch06::on_host::combine_if_last(
          threads, tid == 0 ? sums[b] : kNaN, b, grid, tid, partials.data(), &counter, &result, s_is_last,
          [&] { player.sync_block(); }, [&](float v) { return player.block_sum(v); },
          [&](const float* p) {
            if (p < partials.data() || p >= partials.data() + grid)
              throw std::runtime_error("a load of partials[" + std::to_string(p - partials.data()) +
                                       "], outside the grid's " + std::to_string(grid) + " partials");
            return *p;
          });
    });
    const std::string where = "block " + std::to_string(b) + " (number " + std::to_string(k + 1) + " of " +
                              std::to_string(grid) + " to finish): ";
    if (!problem.empty()) return where + problem;
    if (k + 1 < order.size() && !same_bits(result, marker))
      return where + "wrote *result = " + show(result) + " while " + std::to_string(grid - 1 - k) +
             " block(s) had not finished: only the block that draws the last ticket may";
  }
  if (counter != 0)
    return "after the call, *counter = " + std::to_string(counter) + ": the next call would start from it";
  return "";
}

/// The blocks of a grid in the order the GPU test's forced order makes them finish (by their waits,
/// ch06::finish_delay_ns; equal waits in index order).
std::vector<unsigned> forced_finish_order(const ForcedOrder& o, unsigned grid) {
  std::vector<unsigned> order(grid);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    return ch06::finish_delay_ns(o.order, o.block, o.ns, a, grid) < ch06::finish_delay_ns(o.order, o.block, o.ns, b, grid);
  });
  return order;
}

}  // namespace

TEST_CASE("ch06 v11 player: exactly the last block adds every partial, blocks finishing in any order (exercise 3)",
          "[ch06][exercise][player][hole:dot.cu:1]") {
  // Grids and the orders their blocks finish in: every order of 2 to 5 blocks; the GPU test's forced
  // orders and random ones on 300 blocks of 32 threads (the last block's loop runs its four-way part
  // and its tail); one random order on 1100 blocks of 256, the GPU's block size.
  struct Grid {
    unsigned blocks, threads;
    std::vector<std::pair<std::string, std::vector<unsigned>>> orders;
  };
  std::vector<Grid> grids;
  std::mt19937_64 rng(course::test::seed(6450));
  for (unsigned blocks = 2; blocks <= 5; ++blocks) {
    Grid g{blocks, 32, {}};
    std::vector<unsigned> order(blocks);
    std::iota(order.begin(), order.end(), 0u);
    do {
      std::string what = "blocks finishing in the order";
      for (unsigned b : order) what += " " + std::to_string(b);
      g.orders.emplace_back(what, order);
    } while (std::next_permutation(order.begin(), order.end()));
    grids.push_back(g);
  }
  Grid mid{300, 32, {}};
  for (const ForcedOrder& o : forced_orders()) mid.orders.emplace_back(o.what, forced_finish_order(o, mid.blocks));
  for (int r = 0; r < 4; ++r) {
    std::vector<unsigned> order(mid.blocks);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), rng);
    mid.orders.emplace_back("a random order (" + std::to_string(r + 1) + ")", order);
  }
  grids.push_back(mid);
  Grid big{1100, ch06::kBlock, {}};
  {
    std::vector<unsigned> order(big.blocks);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), rng);
    big.orders.emplace_back("a random order", order);
  }
  grids.push_back(big);

  std::string first;
  for (const Grid& g : grids) {
    if (!first.empty()) break;
    const std::uint64_t seed = course::test::seed(6460) + g.blocks;
    // Whole numbers: the sum is exact in any order. Mixed magnitudes: rounding shows the order.
    std::vector<float> exact(g.blocks), mixed(g.blocks);
    float expected = 0.0f;
    double reference = 0.0, magnitude = 0.0;
    for (unsigned b = 0; b < g.blocks; ++b) {
      expected += (exact[b] = whole(seed, b));
      mixed[b] = std::ldexp(whole(seed + 1, b) + 0.3f, static_cast<int>(course::mix64(seed + 2, b) % 40) - 20);
      reference += mixed[b];
      magnitude += std::fabs(mixed[b]);
    }
    Player player(g.threads, Player::Order::shuffled, seed);
    unsigned counter = 0;  // the Workspace's counter, zero before the first call
    bool have_bits = false;
    float mixed_bits = 0.0f;
    std::string mixed_first;
    for (const auto& [what, order] : g.orders) {
      const std::string where = std::to_string(g.blocks) + " blocks of " + std::to_string(g.threads) + " threads, " +
                                what + ": ";
      float result = 0.0f;
      std::string problem = play_single_pass(player, g.threads, exact, order, counter, result);
      if (problem.empty() && !same_bits(result, expected))
        problem = "*result = " + show(result) + ", the partials add to " + show(expected) +
                  (std::isnan(result) ? " (NaN: a partial read before it was written, or none written)" : "");
      if (problem.empty()) problem = play_single_pass(player, g.threads, mixed, order, counter, result);
      if (problem.empty() && !(std::fabs(result - reference) <= 1e-5 * magnitude))
        problem = "*result = " + show(result) + " on partials of mixed magnitudes, whose sum is " +
                  show(static_cast<float>(reference));
      if (problem.empty() && have_bits && !same_bits(result, mixed_bits))
        problem = "*result = " + show(result) + ", and " + show(mixed_bits) + " when " + mixed_first +
                  ": the partials must be added in an order fixed by the block indices, not by their finishing";
      if (!problem.empty()) {
        first = where + problem;
        break;
      }
      if (!have_bits) mixed_first = what, mixed_bits = result, have_bits = true;
    }
  }
  INFO(first << "\nHint: (the stub writes nothing.) Exactly one block, the last to finish, may write *result: "
                "the sum of every block's partial, in an order the block indices fix, whatever order the blocks "
                "finish in; and the next call must find *counter as this one did. The memory order of the ticket "
                "is the hole scan's (`ch06 integrity`). See the TODO of combine_if_last, README §One launch.");
  CHECK(first.empty());
}
