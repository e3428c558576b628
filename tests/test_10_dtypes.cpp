// Chapter 10 grading tests: every pair of the registry matches the fp64 reference within the bound
// of the accumulator the course's rule gives (integer pairs exactly) at awkward sizes and with x and
// y misaligned alike and differently, gives the same bits on every run, and follows its input; the
// promotion rule gives each pair its accumulator; int8 · int8 stays exact where an int32 would wrap,
// in the whole grid and in one thread; float16 accumulation fails where float32 passes. Host only
// (these run without a GPU): the promotion rule, and split_packs, the thread loops' index arithmetic
// (the scalar head, the whole packs, the tail).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "course/check.hpp"
#include "course/context.hpp"
#include "course/device.hpp"
#include "course/dtype.hpp"
#include "course/random.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

using course::Dtype;

// The rule, as the course states it (the student's Promote is checked against it): two integer
// inputs -> int64 (exact); a float64 input -> float64; anything else -> float32.
Dtype expected_acc(const ch10::Pair& p) {
  if (course::dtype_is_integer(p.x) && course::dtype_is_integer(p.y)) return Dtype::i64;
  if (p.x == Dtype::f64 || p.y == Dtype::f64) return Dtype::f64;
  return Dtype::f32;
}

std::string hint(const ch10::Pair& p) {
  std::string h = "thread_dot (exercise 1): every element exactly once, in the accumulator's type before the "
                  "multiply, whatever n and however x and y are aligned (the stub's contract; README §Exercise 1). "
                  "Promote (exercise 2) picks the accumulator. ";
  if (p.name == "i8_i8")
    h += "int8 . int8 (exercise 3): exact for every n; no 32-bit sum may ever hold more than it can (README "
         "§Exercise 3).";
  return h;
}

/// Typed inputs of a pair: random values, plus (when x is a floating type) spikes planted at the
/// indices course::plant_spikes chooses: x large, y one, so no kernel can drop one and pass.
struct TypedInputs {
  std::vector<unsigned char> x, y;
  course::TypedReference ref;
};

void put_double(Dtype t, std::vector<unsigned char>& bytes, std::size_t i, double v) {
  switch (t) {
    case Dtype::f64: { std::memcpy(bytes.data() + 8 * i, &v, 8); break; }
    case Dtype::f32: { const float f = static_cast<float>(v); std::memcpy(bytes.data() + 4 * i, &f, 4); break; }
    case Dtype::f16: { const __half h = __float2half_rn(static_cast<float>(std::min(v, 60000.0))); std::memcpy(bytes.data() + 2 * i, &h, 2); break; }
    case Dtype::bf16: { const __nv_bfloat16 b = __float2bfloat16_rn(static_cast<float>(v)); std::memcpy(bytes.data() + 2 * i, &b, 2); break; }
    case Dtype::i8: { const std::int8_t c = static_cast<std::int8_t>(v); std::memcpy(bytes.data() + i, &c, 1); break; }
    case Dtype::boolean: { bytes[i] = v != 0 ? 1 : 0; break; }
    default: break;
  }
}

TypedInputs make_inputs(const ch10::Pair& p, std::size_t n, std::uint64_t base) {
  const std::uint64_t seed = course::test::seed(base);
  TypedInputs in;
  in.x = course::random_bytes(p.x, n, seed);
  in.y = course::random_bytes(p.y, n, seed ^ 0x5DEECE66Dull);
  if (!course::dtype_is_integer(p.x) && n >= 64) {
    std::vector<float> fx(n, 0.5f), fy(n, 0.5f);
    const auto at = course::plant_spikes(fx, fy);
    for (std::size_t i : at) {
      put_double(p.x, in.x, i, fx[i]);
      put_double(p.y, in.y, i, 1.0);
    }
  }
  in.ref = course::reference_dot_typed(p.x, in.x.data(), p.y, in.y.data(), n);
  return in;
}

/// A device copy of typed bytes at an element offset inside a guarded buffer (guards: 0xFF).
struct DeviceTyped {
  DeviceTyped(const std::vector<unsigned char>& bytes, std::size_t size, std::size_t offset)
      : size_(size), offset_(offset), buf_(bytes.size() + 8 * size) {
    std::vector<unsigned char> all(bytes.size() + 8 * size, 0xFF);
    std::copy(bytes.begin(), bytes.end(), all.begin() + static_cast<std::ptrdiff_t>(offset * size));
    buf_.upload(all);
  }
  void upload(const std::vector<unsigned char>& bytes) {
    std::vector<unsigned char> all(buf_.size(), 0xFF);
    std::copy(bytes.begin(), bytes.end(), all.begin() + static_cast<std::ptrdiff_t>(offset_ * size_));
    buf_.upload(all);
  }
  const void* data() { return buf_.data() + offset_ * size_; }
  std::size_t size_, offset_;
  course::test::Guarded<unsigned char> buf_;
};

/// Runs the pair's course kernel once on a poisoned result and workspace; returns the result.
double run_once(const ch10::Pair& p, ch10::Workspace& ws, const void* x, const void* y, std::size_t n,
                course::test::Guarded<double>& result, std::string* damage = nullptr) {
  course::Context& ctx = ws.ctx;
  result.fill_bytes(0xFF, ctx.stream());
  ws.poison(ctx.stream());
  p.run(x, y, n, result.data(), ws, ctx.stream());
  ctx.synchronize();
  if (damage) *damage = result.guard_damage();
  return result.download()[0];
}

std::uint32_t low_bits(double d) {
  std::uint64_t u = 0;
  std::memcpy(&u, &d, 8);
  return static_cast<std::uint32_t>(u ^ (u >> 32));
}

const bool registered = [] {
  // Host only: the packs. split_packs is __host__ __device__: the kernels' thread loops call it on
  // the GPU, this test on the host.
  course::test::add_case(
      "ch10 split_packs: the scalar head, the whole packs and the tail cover 0 to n-1 once, for any n, head and width",
      "[ch10][exercise][hole:dot.cu:1]", [] {
        const std::size_t kMax = std::numeric_limits<std::size_t>::max();
        std::vector<std::size_t> sizes;
        for (std::size_t n = 0; n <= 70; ++n) sizes.push_back(n);
        for (std::size_t n : {std::size_t{1} << 20, (std::size_t{1} << 31) + 3, (std::size_t{1} << 32) + 5, kMax - 17, kMax})
          sizes.push_back(n);
        for (int V : {2, 4, 8, 16})
          for (std::size_t n : sizes) {
            std::vector<long long> heads = {-1};
            for (long long h = 0; h < V; ++h) heads.push_back(static_cast<long long>(std::min<std::size_t>(h, n)));
            for (long long head : heads) {
              const ch10::PackSplit s = ch10::split_packs(n, head, V);
              const std::size_t v = static_cast<std::size_t>(V);
              INFO("split_packs(n = " << n << ", head = " << head << ", V = " << V << ") = {head_end " << s.head_end
                                      << ", packs " << s.packs << ", tail " << s.tail
                                      << "}. split_packs (exercise 1): the elements before head one by one, then as "
                                         "many whole packs of V as fit in [0, n), then the rest one by one; head -1: "
                                         "no pack, every element in the head (head_end == tail == n). See the "
                                         "contract above split_packs in dot.hpp, README §Exercise 1.");
              if (head < 0) {
                REQUIRE(s.head_end == n);  // everything one by one
                REQUIRE(s.packs == 0);
                REQUIRE(s.tail == n);
                continue;
              }
              REQUIRE(s.head_end == static_cast<std::size_t>(head));  // the packs start where both inputs do
              REQUIRE(s.packs <= (n - s.head_end) / v);               // never a pack past n
              REQUIRE(s.tail == s.head_end + s.packs * v);            // the tail starts after the last pack
              REQUIRE(n - s.tail < v);                                 // every whole pack that fits is one
            }
          }
      });

  // Host only: the rule.
  course::test::add_case("ch10 promotion: every pair accumulates in the type the rule gives", "[ch10][exercise][promote][hole:dot.cu:3]", [] {
    for (const auto& p : ch10::versions()) {
      INFO(p.name << ": Promote gives " << course::dtype_name(p.acc) << ", the rule says "
                  << course::dtype_name(expected_acc(p))
                  << ". Two integer inputs -> long long; a float64 input -> double; otherwise float (float16, "
                     "bfloat16, int8 and bool count as float32). See README §The promotion rule and §Exercise 2.");
      CHECK(p.acc == expected_acc(p));
    }
  });

  for (const auto& pr : ch10::versions()) {
    const ch10::Pair* p = &pr;
    const std::string tags = std::string("[ch10][gpu]") + (p->exercise ? "[exercise]" : "");
    course::test::add_case("ch10 " + p->name + ": matches the reference at awkward sizes and alignments", tags, [p] {
      COURSE_REQUIRE_GPU();
      auto sizes = course::test::awkward_sizes(ch10::kBlock, 10);
      sizes.insert(sizes.end(), {15, 16, 17, 33, 8191, 8192, 8193, 16 * 1024 * 2 + 5});
      const std::size_t n_max = *std::max_element(sizes.begin(), sizes.end());
      course::Context ctx;
      ch10::Workspace ws(ctx, n_max);
      course::test::Guarded<double> result(1);
      const double u = course::unit_roundoff(expected_acc(*p));
      const std::vector<std::pair<std::size_t, std::size_t>> offsets = {{0, 0}, {1, 1}, {1, 0}, {0, 3}, {5, 2}};
      for (std::size_t n : sizes) {
        const TypedInputs in = make_inputs(*p, n, 100 + n);
        for (const auto& [ox, oy] : offsets) {
          if (n > (std::size_t{1} << 20) && ox + oy != 0 && ox != 1) continue;  // keep the large sizes quick
          DeviceTyped dx(in.x, course::dtype_size(p->x), ox), dy(in.y, course::dtype_size(p->y), oy);
          std::string damage;
          const double got = run_once(*p, ws, dx.data(), dy.data(), n, result, &damage);
          const course::Verdict v = course::check_dot_typed(got, in.ref, u);
          INFO(course::test::explain(v, n, p->name + " (x + " + std::to_string(ox) + ", y + " + std::to_string(oy) + " elements)", hint(*p)));
          CHECK(v.ok);
          INFO(damage);
          CHECK(damage.empty());
        }
      }
    });
    course::test::add_case("ch10 " + p->name + ": the same bits on every run", tags + "[determinism]", [p] {
      COURSE_REQUIRE_GPU();
      const auto awkward = course::test::awkward_sizes(ch10::kBlock, 11);
      const std::size_t n = *std::max_element(awkward.begin(), awkward.end());
      course::Context ctx;
      ch10::Workspace ws(ctx, n);
      course::test::Guarded<double> result(1);
      const TypedInputs in = make_inputs(*p, n, 11);
      DeviceTyped dx(in.x, course::dtype_size(p->x), 0), dy(in.y, course::dtype_size(p->y), 0);
      std::set<std::uint32_t> distinct;
      for (int r = 0; r < 12; ++r) {
        const double got = run_once(*p, ws, dx.data(), dy.data(), n, result);
        const course::Verdict v = course::check_dot_typed(got, in.ref, course::unit_roundoff(expected_acc(*p)));
        INFO("run " << r << ": " << course::test::explain(v, n, p->name, hint(*p)));
        CHECK(v.ok);
        distinct.insert(low_bits(got));
      }
      INFO(p->name << ": 12 runs gave " << distinct.size() << " distinct results; the order of the additions must not depend on timing.");
      CHECK(distinct.size() == 1);
    });
    course::test::add_case("ch10 " + p->name + ": follows its input (new values in the same buffers)", tags, [p] {
      COURSE_REQUIRE_GPU();
      const std::size_t n = 3 * 8192 + 77;
      course::Context ctx;
      ch10::Workspace ws(ctx, n);
      course::test::Guarded<double> result(1);
      TypedInputs in = make_inputs(*p, n, 20);
      DeviceTyped dx(in.x, course::dtype_size(p->x), 0), dy(in.y, course::dtype_size(p->y), 0);
      for (int round = 0; round < 2; ++round) {
        if (round == 1) {
          in = make_inputs(*p, n, 21);
          dx.upload(in.x);
          dy.upload(in.y);
        }
        const double got = run_once(*p, ws, dx.data(), dy.data(), n, result);
        const course::Verdict v = course::check_dot_typed(got, in.ref, course::unit_roundoff(expected_acc(*p)));
        INFO(course::test::explain(v, n, p->name + " (round " + std::to_string(round + 1) + " of 2)",
                                   "the second round has new values in the same buffers: read x and y on every call. " + hint(*p)));
        CHECK(v.ok);
      }
    });
  }

  // int8 · int8 where int32 wraps: the whole sum past 2^31 (a full grid), then one thread's share
  // past 2^31 (a grid of one block, so each thread has n / 1024 elements).
  course::test::add_case("ch10 i8_i8: exact where the sum leaves int32 (worst case)", "[ch10][gpu][exercise][int8]", [] {
    COURSE_REQUIRE_GPU();
    const ch10::Pair* p = ch10::find_pair("i8_i8");
    REQUIRE(p != nullptr);
    course::Context ctx;
    const std::vector<std::size_t> sizes = {(std::size_t{1} << 17) + 1, (std::size_t{1} << 18) + 77, (std::size_t{1} << 20) + 3};
    ch10::Workspace ws(ctx, sizes.back());
    course::test::Guarded<double> result(1);
    for (int sign : {+1, -1}) {
      for (std::size_t n : sizes) {
        std::vector<unsigned char> x(n, 0x80), y(n, sign > 0 ? 0x80 : 0x7F);  // −128·−128 = 2^14; −128·127
        DeviceTyped dx(x, 1, 0), dy(y, 1, 3);
        DeviceTyped dx2(x, 1, 0), dy2(y, 1, 0);
        course::TypedReference ref;
        ref.exact = true;
        ref.exact_value = static_cast<long long>(n) * (sign > 0 ? 16384 : -128 * 127);
        for (auto* d : {&dy, &dy2}) {
          const double got = run_once(*p, ws, (d == &dy ? dx : dx2).data(), d->data(), n, result);
          const course::Verdict v = course::check_dot_typed(got, ref, 0);
          INFO(course::test::explain(v, n, "i8_i8 (every x = -128)", "the sum is past 2^31: the total must be 64-bit. " + hint(*p)));
          CHECK(v.ok);
        }
      }
    }
  });
  course::test::add_case("ch10 i8_i8: exact when one thread's share leaves int32 (one block)", "[ch10][gpu][exercise][int8][slow]", [] {
    COURSE_REQUIRE_GPU();
    const ch10::Pair* p = ch10::find_pair("i8_i8");
    REQUIRE(p != nullptr);
    const std::size_t n = (std::size_t{1} << 27) + (std::size_t{1} << 20) + 9;  // > 1024 threads × 2^17 products of 2^14
    if (course::free_device_bytes() < 3 * n) COURSE_SKIP_NO_MEMORY("needs " + std::to_string(3 * n) + " bytes");
    course::Context ctx;
    ch10::Workspace ws(ctx, n);
    ws.grid_limit = 1;
    course::DeviceBuffer<std::int8_t> d_x(n);
    d_x.fill_bytes(0x80, ctx.stream());
    course::test::Guarded<double> result(1);
    const double got = run_once(*p, ws, d_x.data(), d_x.data(), n, result);
    course::TypedReference ref;
    ref.exact = true;
    ref.exact_value = static_cast<long long>(n) * 16384;
    const course::Verdict v = course::check_dot_typed(got, ref, 0);
    INFO(course::test::explain(v, n, "i8_i8 on one block (each thread ~2^17 elements of -128 . -128)",
                               "one thread's own share passes 2^31 here: no 32-bit sum may hold a whole share. " + hint(*p)));
    CHECK(v.ok);
  });

  // The text's claim: float16 accumulation fails the bound float32 accumulation meets.
  course::test::add_case("ch10 f16_f16: float16 accumulation fails where float32 passes", "[ch10][gpu]", [] {
    COURSE_REQUIRE_GPU();
    const ch10::Pair* p = ch10::find_pair("f16_f16");
    REQUIRE(p != nullptr);
    const std::size_t n = std::size_t{1} << 20;
    course::Context ctx;
    ch10::Workspace ws(ctx, n);
    course::test::Guarded<double> result(1);
    const TypedInputs in = make_inputs(*p, n, 16);
    DeviceTyped dx(in.x, 2, 0), dy(in.y, 2, 0);
    const double in_float = run_once(*p, ws, dx.data(), dy.data(), n, result);
    result.fill_bytes(0xFF, ctx.stream());
    ch10::run_f16_in_f16(dx.data(), dy.data(), n, result.data(), ws, ctx.stream());
    ctx.synchronize();
    const double in_half = result.download()[0];
    const double u32 = course::unit_roundoff(Dtype::f32);
    INFO("float32 accumulation: " << course::check_dot_typed(in_float, in.ref, u32).message);
    CHECK(course::check_dot_typed(in_float, in.ref, u32).ok);
    INFO("float16 accumulation: " << course::check_dot_typed(in_half, in.ref, u32).message);
    CHECK_FALSE(course::check_dot_typed(in_half, in.ref, u32).ok);
  });
  return true;
}();

}  // namespace

// The last block of the single pass waits for every other block, so the whole grid must be resident
// at once: the grid comes from the occupancy API for the kernel launched, never from a fixed
// "two blocks per SM" (__launch_bounds__ caps registers; it promises no residency).
TEST_CASE("ch10 workspace: the grid never exceeds the blocks the occupancy API says are resident", "[ch10][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  ch10::Workspace ws(ctx, 1 << 20);
  const void* kernel = course::test::probe_kernel_address();
  int per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(ch10::kBlock), 0));
  REQUIRE(per_sm >= 1);
  const int resident = std::min(per_sm, 2) * ctx.facts().sm_count;
  INFO("occupancy API: " << per_sm << " blocks of " << ch10::kBlock << " per SM, " << ctx.facts().sm_count
                         << " SMs; grid_max " << ws.grid_max);
  CHECK(ws.resident_grid(kernel) == std::min(resident, ws.grid_max));
  CHECK(ws.resident_grid(kernel) == ws.resident_grid(kernel));  // asked once, kept
  // However large n is, the grid stays resident; small n still gets one trip per thread.
  CHECK(ws.grid_for(std::size_t{1} << 34, 1024, kernel) <= static_cast<unsigned>(resident));
  CHECK(ws.grid_for(1, 1024, kernel) == 1u);
}

// The speed-of-light row of every pair is the floor, not a dot product: it must run at any size and
// alignment of its types, write its one value (finite) and nothing past it. It stays out of grading.
TEST_CASE("ch10 speed_of_light: every pair's floor runs at awkward sizes and alignments", "[ch10][gpu]") {
  COURSE_REQUIRE_GPU();
  auto sizes = course::test::awkward_sizes(ch10::kBlock, 12);
  sizes.insert(sizes.end(), {15, 16, 17, 33, 8191, 8193});
  const std::size_t n_max = *std::max_element(sizes.begin(), sizes.end());
  course::Context ctx;
  ch10::Workspace ws(ctx, n_max);
  course::test::Guarded<double> result(1);
  for (const auto& p : ch10::versions()) {
    REQUIRE(p.speed_of_light != nullptr);
    for (std::size_t n : sizes) {
      const TypedInputs in = make_inputs(p, n, 300 + n);
      for (const auto& [ox, oy] : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 0}, {5, 2}}) {
        DeviceTyped dx(in.x, course::dtype_size(p.x), ox), dy(in.y, course::dtype_size(p.y), oy);
        result.fill_bytes(0xFF, ctx.stream());
        p.speed_of_light(dx.data(), dy.data(), n, result.data(), ws, ctx.stream());
        ctx.synchronize();
        const double got = result.download()[0];
        INFO(p.name << " speed_of_light at n = " << n << " (x + " << ox << ", y + " << oy << "): wrote " << got
                    << "; " << result.guard_damage());
        CHECK(std::isfinite(got));
        CHECK(result.guard_damage().empty());
      }
    }
  }
  CHECK_THROWS_AS(ch10::versions().front().speed_of_light(nullptr, nullptr, n_max + 1, result.data(), ws, ctx.stream()),
                  course::UsageError);
}

// ---- exercises 1 and 3 without a GPU (issue 39: a host check for every hole) -------------------
// The thread loops are __host__ __device__: Pair::host_loops runs the kernel's own thread_dot (or
// thread_dot_i8) on the host, every thread's share in turn, on host arrays inside guard bytes (0xFF:
// NaN for the floating types), so a loop that skips an index, reads one twice or reads past either
// end is seen without a GPU.
namespace {

/// Typed bytes at an element offset inside a guarded host buffer whose start is 64-byte aligned, so
/// that the offsets give the same alignments as on the GPU.
struct HostTyped {
  HostTyped(const std::vector<unsigned char>& bytes, std::size_t size, std::size_t offset)
      : all(bytes.size() + 2 * kGuard + 64 + offset * size, 0xFF) {
    const auto base = reinterpret_cast<std::uintptr_t>(all.data());
    start = (64 - base % 64) % 64 + kGuard + offset * size;
    std::copy(bytes.begin(), bytes.end(), all.begin() + static_cast<std::ptrdiff_t>(start));
  }
  const void* data() const { return all.data() + start; }
  static constexpr std::size_t kGuard = 256;
  std::vector<unsigned char> all;
  std::size_t start = 0;
};

}  // namespace

TEST_CASE("ch10 thread loops on the host: every pair, every index once, at awkward sizes and alignments",
          "[ch10][exercise][hole:dot.cu:2][hole:dot.cu:4]") {
  const std::vector<std::size_t> sizes = {0, 1, 2, 15, 16, 17, 33, 100, 1023, 4099, (std::size_t{1} << 16) + 3};
  const std::vector<std::pair<std::size_t, std::size_t>> offsets = {{0, 0}, {1, 1}, {1, 0}, {0, 3}, {5, 2}};
  for (const auto& p : ch10::versions()) {
    REQUIRE(p.host_loops != nullptr);  // kit code (the registry), outside the holes
    const double u = course::unit_roundoff(expected_acc(p));
    for (std::size_t n : sizes) {
      const TypedInputs in = make_inputs(p, n, 500 + n);
      for (const auto& [ox, oy] : offsets) {
        const HostTyped hx(in.x, course::dtype_size(p.x), ox), hy(in.y, course::dtype_size(p.y), oy);
        for (std::size_t threads : {std::size_t{1}, std::size_t{3}, std::size_t{256}}) {
          const double got = p.host_loops(hx.data(), hy.data(), n, threads);
          const course::Verdict v = course::check_dot_typed(got, in.ref, u);
          if (v.ok) continue;
          INFO(course::test::explain(v, n, p.name + " on the host (x + " + std::to_string(ox) + ", y + " +
                                               std::to_string(oy) + " elements, " + std::to_string(threads) + " threads)",
                                     hint(p) + " NaN: an element outside [0, n) was read (the guard bytes)."));
          CHECK(v.ok);
          return;  // the first failure says enough
        }
      }
    }
  }
}

TEST_CASE("ch10 thread loops on the host: int8 exact where one thread's share leaves int32",
          "[ch10][exercise][int8][hole:dot.cu:4]") {
  const ch10::Pair* p = ch10::find_pair("i8_i8");
  REQUIRE(p != nullptr);
  for (int sign : {+1, -1})
    for (std::size_t n : {(std::size_t{1} << 17) + 1, (std::size_t{1} << 18) + 77})
      for (std::size_t oy : {std::size_t{0}, std::size_t{3}})
        for (std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
          const std::vector<unsigned char> x(n, 0x80), y(n, sign > 0 ? 0x80 : 0x7F);  // −128·−128 = 2^14; −128·127
          const HostTyped hx(x, 1, 0), hy(y, 1, oy);
          course::TypedReference ref;
          ref.exact = true;
          ref.exact_value = static_cast<long long>(n) * (sign > 0 ? 16384 : -128 * 127);
          const double got = p->host_loops(hx.data(), hy.data(), n, threads);
          const course::Verdict v = course::check_dot_typed(got, ref, 0);
          INFO(course::test::explain(v, n, "i8_i8 on the host, every x = -128, " + std::to_string(threads) +
                                               " thread(s) (y + " + std::to_string(oy) + ")",
                                     "one thread's share passes 2^31 here: no 32-bit sum may hold it. " + hint(*p)));
          CHECK(v.ok);
        }
}
