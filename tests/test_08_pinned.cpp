// Chapter 08 grading tests: every path of the registry moves bytes intact at awkward sizes (around
// the staging chunk too) and computes the dot of host data within the fp64 bound, the same bits on
// every run; the staged copy (the exercise) reuses its pinned buffers safely and loses nothing when
// destroyed with copies in flight; the errors of pinning are clear and harmless: a range
// registered twice, a pointer never registered, a failed registration, a destroyed pinned buffer;
// and (host only: these run without a GPU) the staged copy's chunks cover every byte once, and its
// predicted time matches a chunk-by-chunk simulation.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/pinned.hpp"
#include "course/random.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

using Version = course::Version<ch08::PathFactory>;
constexpr std::size_t kChunkFloats = std::size_t{8} << 20 >> 2;  // the staged path's chunk, in floats

std::uint32_t bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::string hint(const Version& v) {
  if (v.name == "staged")
    return "Stager::h2d (its TODO states what must hold). Nothing arrives: is the hole still empty? Bytes wrong "
           "at the end only: the last, shorter chunk. Wrong in the middle: a pinned buffer refilled while a copy out "
           "of it could still be reading it. See README §Exercise 1 — the staged copy.";
  return "this path is not an exercise: if it fails, the kit or the GPU is at fault; please report it.";
}

std::vector<std::size_t> dot_sizes(std::uint64_t seed) {
  auto sizes = course::test::awkward_sizes(256, seed);
  if (std::getenv("COURSE_TEST_SMALL") == nullptr)
    sizes.insert(sizes.end(), {kChunkFloats - 1, kChunkFloats, kChunkFloats + 1});
  return sizes;
}

void check_dot_at_sizes(const Version& v, std::uint64_t seed) {
  course::Context ctx;
  const auto sizes = dot_sizes(seed);
  const std::size_t n_max = *std::max_element(sizes.begin(), sizes.end());
  auto path = v.run(ctx);
  const std::size_t max_bytes = 2 * ((n_max * sizeof(float) + 15) / 16 * 16);
  path->prepare(max_bytes);
  for (std::size_t n : sizes) {
    const auto in = course::test::make_dot_inputs(n, seed + n);
    path->reset(true, ctx.stream());
    if (n > 0) {
      std::memcpy(path->src(), in.x.data(), n * sizeof(float));
      std::memcpy(path->src() + max_bytes / 2, in.y.data(), n * sizeof(float));
    }
    CUDA_CHECK(cudaMemsetAsync(path->device(), 0xFF, max_bytes, ctx.stream()));  // NaN until a copy lands (on the path's stream: ordered)
    const course::Verdict verdict = course::check_dot(path->dot(n), in.ref);
    INFO(course::test::explain(verdict, n, std::string(v.name), hint(v)));
    CHECK(verdict.ok);
  }
}

// Bytes through h2d (and d2h where the path has one) at awkward sizes.
void check_bytes(const Version& v) {
  course::Context ctx;
  const std::size_t chunk = kChunkFloats * sizeof(float);
  std::vector<std::size_t> sizes = {0, 1, 15, 16, 17, 4096 + 3, chunk - 1, chunk, chunk + 1};
  if (std::getenv("COURSE_TEST_SMALL") == nullptr) sizes.push_back(3 * chunk + 5);
  const std::size_t max_bytes = *std::max_element(sizes.begin(), sizes.end());
  auto path = v.run(ctx);
  path->prepare(max_bytes);
  std::vector<unsigned char> back(max_bytes);
  for (std::size_t bytes : sizes) {
    path->reset(true, ctx.stream());
    for (std::size_t i = 0; i < bytes; ++i) path->src()[i] = static_cast<unsigned char>(course::mix64(bytes, i));
    CUDA_CHECK(cudaMemsetAsync(path->device(), 0xA5, max_bytes, ctx.stream()));
    path->h2d(bytes, ctx.stream());
    ctx.synchronize();
    if (v.name != "managed_prefetch") {  // it moves the pages themselves; there is no device copy to read
      CUDA_CHECK(cudaMemcpy(back.data(), path->device(), bytes, cudaMemcpyDeviceToHost));
      std::size_t first_bad = bytes;
      for (std::size_t i = 0; i < bytes && first_bad == bytes; ++i)
        if (back[i] != path->src()[i]) first_bad = i;
      INFO(v.name << " h2d of " << bytes << " bytes: first wrong byte at " << first_bad << ". " << hint(v));
      CHECK(first_bad == bytes);
    }
    if (path->has_d2h() && v.name != "managed_prefetch") {
      std::vector<unsigned char> pattern(bytes);
      for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>(course::mix64(bytes + 1, i));
      if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(path->device(), pattern.data(), bytes, cudaMemcpyHostToDevice, ctx.stream()));
      path->d2h(bytes, ctx.stream());
      ctx.synchronize();
      INFO(v.name << " d2h of " << bytes << " bytes");
      CHECK((bytes == 0 || std::memcmp(path->dst(), pattern.data(), bytes) == 0));
    }
  }
}

const bool registered = [] {
  for (const auto& v : ch08::versions()) {
    const std::string name(v.name);
    const std::string tags = std::string("[ch08][gpu]") + (v.exercise ? "[exercise]" : "");
    course::test::add_case("ch08 " + name + ": moves every byte at awkward sizes", tags, [&v] {
      COURSE_REQUIRE_GPU();
      check_bytes(v);
    });
    if (ch08::is_speed_of_light(v)) continue;  // not a dot product: its own test cases below
    course::test::add_case("ch08 " + name + ": dot of host data matches the fp64 reference at awkward sizes", tags, [&v] {
      COURSE_REQUIRE_GPU();
      check_dot_at_sizes(v, 8);
    });
    course::test::add_case("ch08 " + name + ": the same bits on every run", tags + "[determinism]", [&v] {
      COURSE_REQUIRE_GPU();
      const auto awkward = course::test::awkward_sizes(1024, 88);
      const std::size_t n = *std::max_element(awkward.begin(), awkward.end());
      const auto in = course::test::make_dot_inputs(n, 88);
      course::Context ctx;
      auto path = v.run(ctx);
      const std::size_t max_bytes = 2 * ((n * sizeof(float) + 15) / 16 * 16);
      path->prepare(max_bytes);
      std::memcpy(path->src(), in.x.data(), n * sizeof(float));
      std::memcpy(path->src() + max_bytes / 2, in.y.data(), n * sizeof(float));
      std::set<std::uint32_t> distinct;
      for (int r = 0; r < 20; ++r) {
        path->reset(true, ctx.stream());
        const float got = path->dot(n);
        const course::Verdict verdict = course::check_dot(got, in.ref);
        INFO("run " << r << ": " << course::test::explain(verdict, n, std::string(v.name), hint(v)));
        CHECK(verdict.ok);
        distinct.insert(bits(got));
      }
      INFO(v.name << ": 20 runs gave " << distinct.size() << " distinct results; the dot adds in a fixed order");
      CHECK(distinct.size() == 1);
    });
    if (v.exercise) {
      // A result must follow the input: new values in the same host buffer give the new answer (a
      // path that caches what it copied by pointer, or hard-codes the public result, fails).
      course::test::add_case("ch08 " + name + ": follows its input (new values in the same buffers)", tags, [&v] {
        COURSE_REQUIRE_GPU();
        const std::size_t n = kChunkFloats + 77;
        course::Context ctx;
        auto path = v.run(ctx);
        const std::size_t max_bytes = 2 * ((n * sizeof(float) + 15) / 16 * 16);
        path->prepare(max_bytes);
        for (int round = 0; round < 2; ++round) {
          const auto in = course::test::make_dot_inputs(n, 880 + static_cast<std::uint64_t>(round));
          path->reset(true, ctx.stream());
          std::memcpy(path->src(), in.x.data(), n * sizeof(float));
          std::memcpy(path->src() + max_bytes / 2, in.y.data(), n * sizeof(float));
          const course::Verdict verdict = course::check_dot(path->dot(n), in.ref);
          INFO(course::test::explain(verdict, n, std::string(v.name) + " (round " + std::to_string(round + 1) + " of 2)",
                                     "the second round has new values in the same buffers: copy them on every run, "
                                     "keep nothing between runs. " + hint(v)));
          CHECK(verdict.ok);
        }
      });
    }
  }
  return true;
}();

}  // namespace

TEST_CASE("ch08 stager: reuses two small pinned buffers over many chunks without a race", "[ch08][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t chunk = 4096;
  ch08::Stager stager(ctx, 3, chunk, 2);
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk, 50 * chunk + 7}) {
    std::vector<unsigned char> src(bytes);
    for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(course::mix64(7, i));
    course::DeviceBuffer<unsigned char> d(std::max<std::size_t>(bytes, 1));
    d.fill_bytes(0xA5, ctx.stream());
    stager.h2d(d.data(), src.data(), bytes, ctx.stream());
    std::fill(src.begin(), src.end(), 0);  // h2d returned: the source is the caller's again
    ctx.synchronize();
    std::vector<unsigned char> back(bytes);
    if (bytes > 0) CUDA_CHECK(cudaMemcpy(back.data(), d.data(), bytes, cudaMemcpyDeviceToHost));
    std::size_t first_bad = bytes;
    for (std::size_t i = 0; i < bytes && first_bad == bytes; ++i)
      if (back[i] != static_cast<unsigned char>(course::mix64(7, i))) first_bad = i;
    INFO("Stager::h2d of " << bytes << " bytes in chunks of " << chunk << " through 2 buffers: first wrong byte at "
                           << first_bad << " (chunk " << first_bad / chunk << "). A wrong middle chunk: a buffer was "
                           "refilled before the copy out of it had finished. Nothing copied: is the TODO still empty?");
    CHECK(first_bad == bytes);
  }
}

TEST_CASE("ch08 stager: destroyed with copies in flight loses nothing", "[ch08][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t bytes = std::getenv("COURSE_TEST_SMALL") ? (std::size_t{1} << 20) : (std::size_t{64} << 20);
  std::vector<unsigned char> src(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 31 + 1);
  course::DeviceBuffer<unsigned char> d(bytes);
  d.fill_bytes(0, ctx.stream());
  {
    ch08::Stager stager(ctx, 2, std::size_t{1} << 20, 2);
    stager.h2d(d.data(), src.data(), bytes, ctx.stream());
  }  // the destructor waits for the copies still reading its buffers, then frees them
  ctx.synchronize();
  std::vector<unsigned char> back(bytes);
  CUDA_CHECK(cudaMemcpy(back.data(), d.data(), bytes, cudaMemcpyDeviceToHost));
  INFO("after the Stager was destroyed, the device holds what was sent (a freed staging buffer would corrupt it)");
  CHECK(std::memcmp(back.data(), src.data(), bytes) == 0);
}

TEST_CASE("ch08 registration: the same range twice fails clearly and loses nothing", "[ch08][gpu][api_error]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  std::vector<float> v(1 << 18, 1.5f);
  ch08::Registration first(v.data(), v.size() * sizeof(float));
  CHECK(course::is_pinned(v.data()));
  try {
    ch08::Registration second(v.data(), v.size() * sizeof(float));
    FAIL("registering a registered range must throw");
  } catch (const course::CudaError& e) {
    CHECK_THAT(std::string(e.what()), course::test::contains("cudaHostRegister"));
    CHECK(e.code() == cudaErrorHostMemoryAlreadyRegistered);
  }
  CHECK(cudaGetLastError() == cudaSuccess);  // nothing left for an unrelated check to trip over
  CHECK(course::is_pinned(v.data()));        // the first registration still stands
  course::DeviceBuffer<float> d(v.size());
  d.upload_async(v.data(), v.size(), ctx.stream());
  ctx.synchronize();
  CHECK(d.download()[v.size() - 1] == 1.5f);
}

TEST_CASE("ch08 registration: a failed registration throws and leaves CUDA usable", "[ch08][gpu][api_error]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  CHECK_THROWS_AS(ch08::Registration(nullptr, 4096), course::CudaError);
  CHECK(cudaGetLastError() == cudaSuccess);
  course::DeviceBuffer<float> d(16);
  d.fill_bytes(0, ctx.stream());
  ctx.synchronize();
  CHECK(d.download()[0] == 0.0f);
}

TEST_CASE("ch08 pinned check: an unregistered pointer and a destroyed pinned buffer are refused by name", "[ch08][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  std::vector<float> pageable(1024);
  CHECK_FALSE(course::is_pinned(pageable.data()));
  CHECK_THROWS_WITH(course::require_pinned(pageable.data(), "input x"), course::test::contains("not page-locked"));
  course::PinnedBuffer<float> pinned(1024);
  CHECK(course::is_pinned(pinned.data()));
  const float* old = pinned.data();
  { course::PinnedBuffer<float> taken = std::move(pinned); }  // freed with `taken`
  CHECK_THROWS_AS(course::require_pinned(pinned.data(), "moved-from buffer"), course::UsageError);
  CHECK_THROWS_AS(course::require_pinned(old, "freed buffer"), course::UsageError);
  {
    ch08::Registration reg(pageable.data(), pageable.size() * sizeof(float));
    CHECK(course::is_pinned(pageable.data()));
  }
  CHECK_FALSE(course::is_pinned(pageable.data()));  // released with the Registration
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("ch08 paths: a size beyond prepare() is refused", "[ch08][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  for (const auto& v : ch08::versions()) {
    auto path = v.run(ctx);
    path->prepare(4096);
    INFO(v.name);
    CHECK_THROWS_AS(path->h2d(8192, ctx.stream()), course::UsageError);
    CHECK_THROWS_AS(path->dot(1024), course::UsageError);
  }
}

TEST_CASE("ch08 registry: unique names, the floor then pageable first, the staged path is the exercise", "[ch08]") {
  const auto& reg = ch08::versions();
  std::set<std::string> names;
  for (const auto& v : reg) {
    CHECK(names.insert(std::string(v.name)).second);
    CHECK(!v.description.empty());
    CHECK(v.run != nullptr);
    CHECK(v.exercise == (v.name == "staged"));
  }
  REQUIRE(reg.size() >= 2);
  CHECK(reg[0].name == "speed_of_light");
  CHECK(reg[1].name == "pageable");
}

// ---- the speed-of-light row: the floor, not a dot ---------------------------------------------
// The registry's speed_of_light row moves the same bytes as every path's dot (x and y, from pinned
// memory, one copy each) and nothing else. It has no result to check; what it must do is move every
// byte before its dot returns, at any size, with y wherever the layout puts it. It stays out of
// grading.

TEST_CASE("ch08 speed_of_light: one floor row in the registry, first, not a dot and not an exercise", "[ch08]") {
  const auto& reg = ch08::versions();
  int floors = 0;
  for (const auto& v : reg) floors += ch08::is_speed_of_light(v) ? 1 : 0;
  CHECK(floors == 1);
  REQUIRE(!reg.empty());
  CHECK(ch08::is_speed_of_light(reg.front()));
  CHECK(std::string(reg.front().name) == "speed_of_light");
  CHECK(!reg.front().exercise);
  CHECK_THAT(std::string(reg.front().description), course::test::contains("not a dot"));
}

TEST_CASE("ch08 speed_of_light: its dot moves x and y at awkward sizes and offsets, and returns no result",
          "[ch08][gpu]") {
  COURSE_REQUIRE_GPU();
  const auto* v = course::find_version(ch08::versions(), "speed_of_light");
  REQUIRE(v != nullptr);
  course::Context ctx;
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1000003}}) {
    const auto in = course::test::make_dot_inputs(n, 8080 + n);
    // y at a multiple of 16 bytes from src(), and 4 bytes past one (the layout puts y at max_bytes / 2).
    for (std::size_t max_bytes : {2 * ((n * sizeof(float) + 15) / 16 * 16), 2 * n * sizeof(float) + 8}) {
      auto path = v->run(ctx);
      path->prepare(max_bytes);
      std::memcpy(path->src(), in.x.data(), n * sizeof(float));
      std::memcpy(path->src() + max_bytes / 2, in.y.data(), n * sizeof(float));
      const course::Verdict verdict = ch08::check_link_floor(ctx, *path, n);
      INFO("speed_of_light at n = " << n << ", y at src() + " << max_bytes / 2 << " bytes: " << verdict.message);
      CHECK(verdict.ok);
      CHECK(std::isnan(verdict.rel_error));  // no result, no error to report
      CHECK(std::isnan(path->dot(n)));         // not a dot: no result
      // Too many floats for what prepare() was given: refused by name, and nothing written.
      CHECK_THROWS_AS(ch08::check_link_floor(ctx, *path, n + max_bytes), course::UsageError);
      CHECK_THROWS_AS(path->dot(max_bytes / 8 + 1), course::UsageError);
    }
  }
}

TEST_CASE("ch08 link: the rate is computed from generation and width", "[ch08]") {
  // No GPU needed: without one, link_info reports "unknown" and zero.
  const ch08::LinkInfo info = ch08::link_info(0);
  if (info.generation == 5 && info.width == 16) CHECK(info.gbps > 62.9);
  CHECK(!info.text.empty());
}

// Exercise 2 (think): the predicted time of a staged copy. Host only (no GPU). Checked three ways,
// none of them the formula the exercise asks for: examples worked out by hand (the arithmetic is in
// the comment above the table), properties every right answer has, and a simulation of the Stager
// on a grid of ticks, for copies whose every step lasts a whole number of ticks: one tick is 1 ns, a
// rate of 1/p GB/s moves a byte in p ticks, a per-chunk cost of c ns is c ticks.
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

/// The tick at which the last byte lands, the Stager played tick by tick: at the start of a tick,
/// the host starts filling the next chunk if it is idle and that chunk's buffer holds nothing the
/// link has still to send, and the link starts sending the oldest chunk the host has handed over if
/// it is idle; then both work one tick. A buffer is free again the tick after its chunk's last byte
/// left. `buffers` (at least 1) is how many buffers the host fills in turn.
std::size_t staged_ticks(std::size_t bytes, std::size_t chunk, std::size_t host_ticks_per_byte,
                         std::size_t link_ticks_per_byte, std::size_t per_chunk_ticks, int buffers) {
  std::vector<std::size_t> lengths;
  for (std::size_t offset = 0; offset < bytes; offset += chunk) lengths.push_back(std::min(chunk, bytes - offset));
  if (lengths.empty()) return 0;
  std::vector<bool> holds(static_cast<std::size_t>(buffers), false);  // a chunk the link has not sent yet
  std::size_t host_chunk = kNone, host_left = 0, next_fill = 0, handed_over = 0;
  std::size_t link_chunk = kNone, link_left = 0, sent = 0;
  for (std::size_t tick = 0;; ++tick) {
    if (host_chunk == kNone && next_fill < lengths.size() && !holds[next_fill % holds.size()]) {
      host_chunk = next_fill++;
      holds[host_chunk % holds.size()] = true;
      host_left = per_chunk_ticks + lengths[host_chunk] * host_ticks_per_byte;
    }
    if (link_chunk == kNone && sent < handed_over) {
      link_chunk = sent;
      link_left = lengths[link_chunk] * link_ticks_per_byte;
    }
    if (host_chunk != kNone && --host_left == 0) {
      host_chunk = kNone;
      ++handed_over;
    }
    if (link_chunk != kNone && --link_left == 0) {
      holds[link_chunk % holds.size()] = false;
      link_chunk = kNone;
      if (++sent == lengths.size()) return tick + 1;
    }
  }
}

struct TickCase {
  std::size_t bytes, chunk, host_p, link_p, per_chunk_ticks;
};

std::string staged_call(std::size_t bytes, std::size_t chunk, double host, double link, double per_chunk_us) {
  std::ostringstream s;
  s.precision(17);
  s << "staged_copy_ms(bytes = " << bytes << ", chunk_bytes = " << chunk << ", host_gbps = " << host
    << ", link_gbps = " << link << ", per_chunk_us = " << per_chunk_us << ")";
  return s.str();
}

}  // namespace

// Exercise 1's arithmetic without a GPU: Stager::h2d walks its chunks with staged_chunk.
TEST_CASE("ch08 staged_chunk: every byte in one chunk, in order, the last one short, the buffers in turn",
          "[ch08][exercise][hole:dot.cu:1]") {
  const std::size_t kMax = std::numeric_limits<std::size_t>::max();
  struct Shape {
    std::size_t bytes, chunk;
  };
  std::vector<Shape> shapes;
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{4096}, std::size_t{8} << 20})
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk, 7 * chunk + 3})
      shapes.push_back({bytes, chunk});
  // Near 2^64: k * chunk_bytes past the last chunk wraps around to an offset inside the copy.
  shapes.push_back({kMax - 5, std::size_t{1} << 62});
  shapes.push_back({kMax, (std::size_t{1} << 63) + 1});
  shapes.push_back({kMax, kMax});
  shapes.push_back({kMax - 1, kMax});
  std::mt19937_64 rng(course::test::seed(809));
  for (int i = 0; i < 200; ++i) {
    const std::size_t chunk = 1 + rng() % 5000;
    shapes.push_back({rng() % (chunk * 40), chunk});
  }
  const char* kHint =
      " staged_chunk (exercise 1): the chunks must follow each other from offset 0 with no gap or overlap, each "
      "chunk_bytes long but the last (what is left), the buffers in turn (chunk k through buffer k % buffers), and "
      "len 0 for every k past the last chunk, also near 2^64, where a product with chunk_bytes wraps around. See "
      "the contract above staged_chunk in dot.hpp, README §Exercise 1 — the staged copy.";
  for (const Shape& sh : shapes)
    for (int buffers : {1, 2, 4}) {
      const std::size_t chunks = sh.bytes / sh.chunk + (sh.bytes % sh.chunk != 0 ? 1 : 0);
      std::size_t next = 0;
      for (std::size_t k = 0; k < chunks; ++k) {
        const ch08::StagedChunk c = ch08::staged_chunk(sh.bytes, sh.chunk, buffers, k);
        INFO("staged_chunk(bytes = " << sh.bytes << ", chunk_bytes = " << sh.chunk << ", buffers = " << buffers
                                     << ", k = " << k << ") = {offset " << c.offset << ", len " << c.len << ", slot "
                                     << c.slot << "}; the copy has " << chunks << " chunks." << kHint);
        REQUIRE(c.offset == next);                                      // in order, from 0, no gap, no overlap
        REQUIRE(c.len == std::min(sh.chunk, sh.bytes - c.offset));      // full, or what is left
        REQUIRE(c.len > 0);
        REQUIRE(c.slot == static_cast<int>(k % static_cast<std::size_t>(buffers)));
        next = c.offset + c.len;
      }
      INFO("bytes = " << sh.bytes << ", chunk_bytes = " << sh.chunk << ": the chunks end at " << next << "." << kHint);
      REQUIRE(next == sh.bytes);
      for (std::size_t k : {chunks, chunks + 1, chunks + 2, kMax / sh.chunk + 1, kMax}) {
        if (k < chunks) continue;
        const ch08::StagedChunk c = ch08::staged_chunk(sh.bytes, sh.chunk, buffers, k);
        INFO("staged_chunk(bytes = " << sh.bytes << ", chunk_bytes = " << sh.chunk << ", buffers = " << buffers
                                     << ", k = " << k << ") = {offset " << c.offset << ", len " << c.len
                                     << "}: k is past the copy's " << chunks << " chunks, so len must be 0." << kHint);
        REQUIRE(c.len == 0);
      }
    }
  CHECK_THROWS_AS(ch08::staged_chunk(10, 0, 2, 0), course::UsageError);
  CHECK_THROWS_AS(ch08::staged_chunk(10, 4, 0, 0), course::UsageError);
}

// Exercise 1's schedule without a GPU: stage_chunks (the hole Stager::h2d runs) with a recorder
// for its steps. Host memory stands for the pinned buffers and the device; the recorder's stream
// runs as late as CUDA allows (a copy happens only when an event after it is waited for, or when
// the stream is drained), so a buffer refilled before its copy was waited for shows, and is named.
namespace {

class StagingRecorder : public ch08::StagingSteps {
 public:
  StagingRecorder(std::size_t chunk, int buffers, std::size_t max_bytes)
      : chunk_(chunk), buffers_(static_cast<std::size_t>(buffers), std::vector<unsigned char>(chunk)),
        events_(static_cast<std::size_t>(buffers), kNever), device_(max_bytes), src_(max_bytes) {}

  // One call of the schedule: `bytes` of src() to device(), on stream().
  void stage(std::size_t bytes) {
    bytes_ = bytes;
    next_fill_ = 0;
    chunk_no_ = 0;
    log("-- stage_chunks of " + std::to_string(bytes) + " bytes");
    ch08::on_host::stage_chunks(*this, device_.data(), src_.data(), bytes, chunk_, static_cast<int>(buffers_.size()), stream());
    if (next_fill_ != bytes) problem("stage_chunks returned with bytes [" + std::to_string(next_fill_) + ", " +
                                     std::to_string(bytes) + ") never filled into a buffer (a chunk missing: the last one?)");
  }
  // The stream reaches the point where stage_chunks returned: every copy enqueued happens.
  void drain() { run_until(ops_.size()); }

  unsigned char* buffer(int slot) override {
    if (!valid(slot, "buffer")) return buffers_[0].data();
    return buffers_[static_cast<std::size_t>(slot)].data();
  }
  void wait(int slot) override {
    log("wait event " + std::to_string(slot));
    if (!valid(slot, "wait")) return;
    const std::size_t at = events_[static_cast<std::size_t>(slot)];
    if (at != kNever) run_until(at);  // a never recorded event is complete
  }
  void fill(unsigned char* to, const unsigned char* from, std::size_t len) override {
    const int b = buffer_of(to, len);
    const std::size_t offset = static_cast<std::size_t>(from - src_.data());
    log("fill chunk " + std::to_string(chunk_no_) + " (bytes " + std::to_string(offset) + " to " +
        std::to_string(offset + len) + ") into buffer " + std::to_string(b));
    if (b < 0) return problem("a fill into memory that is not a staging buffer (or past its chunk_bytes)");
    if (from < src_.data() || offset > bytes_ || len > bytes_ - offset)
      return problem("a fill reads outside h_src[0, " + std::to_string(bytes_) + ")");
    for (const Op& op : ops_)
      if (!op.done && op.buffer == b)
        return problem("buffer " + std::to_string(b) + " refilled while the copy of chunk " + std::to_string(op.chunk) +
                       " out of it may still be reading it: its event was not waited for since that copy");
    if (offset != next_fill_)
      return problem("chunks out of order: a fill of h_src from byte " + std::to_string(offset) + ", where the next in "
                     "order starts at byte " + std::to_string(next_fill_));
    if (len == 0) return problem("an empty chunk filled");
    const int expected = static_cast<int>(chunk_no_ % buffers_.size());
    if (b != expected)
      return problem("chunk " + std::to_string(chunk_no_) + " through buffer " + std::to_string(b) + "; staged_chunk gives buffer " +
                     std::to_string(expected) + " (the buffers in turn)");
    if (!ops_.empty() && ops_.back().done && chunk_no_ > 0)
      return problem("the copy of chunk " + std::to_string(chunk_no_ - 1) + " was waited for before chunk " + std::to_string(chunk_no_) +
                     " was filled: the host and the link take turns instead of overlapping (wait for the event of the "
                     "buffer about to be refilled, no other)");
    std::memcpy(to, from, len);
    filled_[b] = {offset, len};
    next_fill_ = offset + len;
    ++chunk_no_;
  }
  void send(unsigned char* to, const unsigned char* from, std::size_t len, cudaStream_t on) override {
    const int b = buffer_of(from, len);
    const std::size_t at = static_cast<std::size_t>(to - device_.data());
    log("send " + std::to_string(len) + " bytes from buffer " + std::to_string(b) + " to d_dst + " + std::to_string(at) +
        (on == stream() ? "" : " on another stream"));
    if (on != stream()) return problem("a copy on a stream other than the one given (" + std::to_string(reinterpret_cast<std::uintptr_t>(on)) + ")");
    if (b < 0) return problem("a copy from memory that is not a staging buffer (pageable memory: the copy engine "
                              "cannot read it asynchronously; every byte goes through a pinned buffer)");
    if (to < device_.data() || at > bytes_ || len > bytes_ - at)
      return problem("a copy writes outside d_dst[0, " + std::to_string(bytes_) + ")");
    const auto it = filled_.find(b);
    if (it == filled_.end() || it->second.first != at || it->second.second != len)
      return problem("buffer " + std::to_string(b) + " sent to d_dst + " + std::to_string(at) + " (" + std::to_string(len) +
                     " bytes), but it holds the last fill's bytes from h_src + " +
                     (it == filled_.end() ? std::string("(none)") : std::to_string(it->second.first)));
    ops_.push_back({b, chunk_no_ - 1, to, from, len, false});
  }
  void record(int slot, cudaStream_t on) override {
    log("record event " + std::to_string(slot) + (on == stream() ? "" : " on another stream"));
    if (on != stream()) return problem("an event recorded on a stream other than the one given");
    if (!valid(slot, "record")) return;
    events_[static_cast<std::size_t>(slot)] = ops_.size();  // complete once the ops before it are
  }

  static cudaStream_t stream() { return reinterpret_cast<cudaStream_t>(std::uintptr_t{0x5157}); }
  std::vector<unsigned char>& src() { return src_; }
  const std::vector<unsigned char>& device() const { return device_; }
  const std::string& first_problem() const { return problem_; }
  std::string trace() const {
    std::string out;
    const std::size_t from = log_.size() > 24 ? log_.size() - 24 : 0;
    if (from > 0) out += "  ...\n";
    for (std::size_t i = from; i < log_.size(); ++i) out += "  " + log_[i] + "\n";
    return out;
  }

 private:
  static constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();
  struct Op {
    int buffer;
    std::size_t chunk;
    unsigned char* to;
    const unsigned char* from;
    std::size_t len;
    bool done;
  };
  void run_until(std::size_t end) {
    for (std::size_t i = 0; i < end && i < ops_.size(); ++i)
      if (!ops_[i].done) {
        std::memcpy(ops_[i].to, ops_[i].from, ops_[i].len);  // the buffer as it is now
        ops_[i].done = true;
      }
  }
  bool valid(int slot, const char* what) {
    if (slot >= 0 && static_cast<std::size_t>(slot) < buffers_.size()) return true;
    problem(std::string(what) + "(" + std::to_string(slot) + "): there are " + std::to_string(buffers_.size()) + " buffers");
    return false;
  }
  int buffer_of(const unsigned char* p, std::size_t len) const {
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      const unsigned char* base = buffers_[b].data();
      if (p >= base && p <= base + chunk_ && len <= chunk_ - static_cast<std::size_t>(p - base)) return static_cast<int>(b);
    }
    return -1;
  }
  void problem(const std::string& what) {
    log("   ^ " + what);
    if (problem_.empty()) problem_ = what;
  }
  void log(const std::string& line) {
    if (log_.size() < 4000) log_.push_back(line);
  }

  std::size_t chunk_;
  std::vector<std::vector<unsigned char>> buffers_;
  std::vector<std::size_t> events_;  // per buffer: the ops before its last record (kNever: never recorded)
  std::vector<unsigned char> device_, src_;
  std::vector<Op> ops_;
  std::map<int, std::pair<std::size_t, std::size_t>> filled_;  // buffer: (offset, len) of its last fill
  std::vector<std::string> log_;
  std::string problem_;
  std::size_t bytes_ = 0, next_fill_ = 0, chunk_no_ = 0;
};

// Runs the schedule on the recorder: two calls into the same buffers (the second with one byte
// changed, h_src overwritten as soon as each returns). "" or what went wrong, with the trace.
std::string play_staged(std::size_t bytes, std::size_t chunk, int buffers) {
  StagingRecorder rec(chunk, buffers, std::max<std::size_t>(bytes, 1));
  std::vector<unsigned char> want(bytes);
  for (std::size_t i = 0; i < bytes; ++i) want[i] = static_cast<unsigned char>(course::mix64(bytes * 31 + chunk, i) | 1);
  const std::string shape = "bytes = " + std::to_string(bytes) + ", chunk_bytes = " + std::to_string(chunk) +
                            ", buffers = " + std::to_string(buffers);
  for (int call = 0; call < 2; ++call) {
    if (call == 1 && bytes > 0) want[bytes / 2] = static_cast<unsigned char>(want[bytes / 2] ^ 0x5A);
    std::copy(want.begin(), want.end(), rec.src().begin());
    rec.stage(bytes);
    std::fill(rec.src().begin(), rec.src().end(), 0);  // returned: h_src is the caller's again
    rec.drain();
    if (!rec.first_problem().empty())
      return shape + ", call " + std::to_string(call + 1) + ": " + rec.first_problem() + "\nThe steps (last ones):\n" + rec.trace();
    std::size_t bad = bytes;
    for (std::size_t i = 0; i < bytes && bad == bytes; ++i)
      if (rec.device()[i] != want[i]) bad = i;
    if (bad != bytes)
      return shape + ", call " + std::to_string(call + 1) + ": once the stream has run every copy, d_dst's byte " +
             std::to_string(bad) + " (chunk " + std::to_string(bad / chunk) + ") differs from h_src's\nThe steps (last ones):\n" +
             rec.trace();
  }
  return "";
}

}  // namespace

TEST_CASE("ch08 staged schedule: every chunk through its buffer in order, each buffer waited for before it is refilled",
          "[ch08][exercise][hole:dot.cu:2]") {
  std::string first;
  for (std::size_t chunk : {std::size_t{1}, std::size_t{16}, std::size_t{4096}})
    for (int buffers : {2, 3, 4})
      for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk, 3 * chunk + 1,
                                7 * chunk + 3, 50 * chunk + 7}) {
        if (!first.empty()) break;
        if (bytes > 0 || chunk == 1) first = play_staged(bytes, chunk, buffers);
      }
  INFO(first << "\nHint: (the stub does nothing, so no byte arrives.) Every chunk staged_chunk names must reach "
                "d_dst through its buffer, on the stream given, and a buffer may be written again only once the "
                "host knows the copy out of it is done: the steps above end at the first one that broke this. "
                "See the TODO in dot.cu and README §Exercise 1 — the staged copy.");
  CHECK(first.empty());
}

TEST_CASE("ch08 staged_copy_ms: matches a chunk-by-chunk simulation", "[ch08][exercise][think][hole:dot.cu:3]") {
  std::size_t wrong = 0, total = 0;
  std::string first;
  auto judge = [&](bool ok, const std::string& what) {
    ++total;
    if (!ok && wrong++ == 0) first = what;
  };
  const std::size_t MiB = std::size_t{1} << 20;
  // Worked by hand (1 GB/s is 10^6 bytes per ms; 1 µs is 10^-3 ms). Call a chunk's host step
  // (per-chunk cost, then its bytes at host_gbps) A and its send at link_gbps B.
  //  - 1000 bytes in one chunk of up to 4096, host 1 GB/s, link 0.5 GB/s, 3 µs per chunk: nothing to
  //    overlap, 3 + 1 + 2 = 6 µs.
  //  - 5·10^6 bytes in five chunks of 10^6, host 50 GB/s, link 25 GB/s, 10 µs per chunk: A = 0.01 +
  //    0.02 = 0.03 ms, B = 0.04 ms. The link is the slower: it starts after the first A and then
  //    never waits, 0.03 + 5 × 0.04 = 0.23 ms.
  //  - 10^7 bytes in chunks of 4·10^6 (the last 2·10^6), host 100 GB/s, link 10 GB/s, no per-chunk
  //    cost: the first fill 0.04 ms, then the link sends 10^7 bytes back to back, 1.0 ms: 1.04 ms.
  //  - 3 001 000 bytes in chunks of 10^6 (three full, the last 1000 bytes), host 8 GB/s, link
  //    10 GB/s, no per-chunk cost: A = 0.125 ms, B = 0.1 ms. The host ends its third fill at 0.375;
  //    the link, behind it, sends the third chunk from 0.375 to 0.475, and the short last chunk,
  //    filled by 0.375125, waits for it: 0.475 + 0.0001 = 0.4751 ms.
  //  - The knobs table's shapes, 512 MiB at 4 µs per chunk, host slower than the link (every chunk
  //    full): in 2 MiB chunks at 23.9 / 54.5 GB/s, A = 0.004 + 2097152 / 23.9e6 = 0.0917469 ms and
  //    B = 0.0384799 ms; the link keeps up with the host, so 256 × A and the last B: 23.5257 ms. In
  //    32 MiB chunks at 50.8 / 54.5 GB/s, A = 0.664520 and B = 0.615678: 16 × A + B = 11.2480 ms.
  const struct {
    std::size_t bytes, chunk;
    double host, link, per_chunk_us, expected_ms;
  } worked[] = {
      {0, 4096, 1.0, 0.5, 3.0, 0.0},
      {1000, 4096, 1.0, 0.5, 3.0, 0.006},
      {5000000, 1000000, 50.0, 25.0, 10.0, 0.23},
      {10000000, 4000000, 100.0, 10.0, 0.0, 1.04},
      {3001000, 1000000, 8.0, 10.0, 0.0, 0.4751},
      {512 * MiB, 2 * MiB, 23.9, 54.5, 4.0, 23.525697928524817},
      {512 * MiB, 32 * MiB, 50.8, 54.5, 4.0, 11.248002690746226},
  };
  for (const auto& w : worked) {
    const double got = ch08::staged_copy_ms(w.bytes, w.chunk, w.host, w.link, w.per_chunk_us);
    std::ostringstream s;
    s << staged_call(w.bytes, w.chunk, w.host, w.link, w.per_chunk_us) << " returned " << got << " ms; worked by hand: "
      << w.expected_ms << " ms";
    judge(w.bytes == 0 ? got == 0.0 : std::fabs(got - w.expected_ms) <= 1e-9 * w.expected_ms, s.str());
  }

  // The Stager on a grid of ticks: small copies, every step a whole number of ticks; two buffers and
  // the staged path's four must land the last byte on the same tick.
  std::vector<TickCase> cases;
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{16}, std::size_t{100}})
    for (std::size_t bytes : {std::size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk, 7 * chunk + 3, 30 * chunk + 7})
      for (std::size_t host_p : {1, 2, 5})  // the host faster and slower than the link
        for (std::size_t link_p : {1, 3})
          for (std::size_t per_chunk : {0, 4, 150})
            if (bytes > 0) cases.push_back({bytes, chunk, host_p, link_p, per_chunk});
  std::mt19937_64 rng(course::test::seed(808));
  for (int k = 0; k < 200; ++k) {
    const std::size_t chunk = 1 + rng() % 400;
    cases.push_back({1 + rng() % (chunk * (1 + rng() % 40)), chunk, 1 + rng() % 8, 1 + rng() % 8,
                     (rng() % 3 == 0) ? 0 : rng() % 300});
  }
  for (const TickCase& c : cases) {
    const std::size_t two = staged_ticks(c.bytes, c.chunk, c.host_p, c.link_p, c.per_chunk_ticks, 2);
    const std::size_t four = staged_ticks(c.bytes, c.chunk, c.host_p, c.link_p, c.per_chunk_ticks, 4);
    REQUIRE(two == four);  // the simulation itself: buffers beyond two change nothing
    const double host = 1.0 / static_cast<double>(c.host_p), link = 1.0 / static_cast<double>(c.link_p);
    const double per_chunk_us = static_cast<double>(c.per_chunk_ticks) / 1000.0;
    const double expected = static_cast<double>(two) * 1e-6;
    const double got = ch08::staged_copy_ms(c.bytes, c.chunk, host, link, per_chunk_us);
    std::ostringstream s;
    s << staged_call(c.bytes, c.chunk, host, link, per_chunk_us) << " returned " << got
      << " ms; the simulation lands the last byte at tick " << two << " (" << expected << " ms)";
    judge(std::fabs(got - expected) <= 1e-9 * expected, s.str());
  }

  // Properties, on larger copies: never faster than the busier engine's own work, never slower than
  // both engines one after the other; one chunk is exactly that sum; more bytes never take less
  // time, nor a faster host or link more, nor a dearer chunk less.
  for (int k = 0; k < 300; ++k) {
    const std::size_t chunk = 1 + rng() % (std::size_t{1} << (rng() % 26));
    const std::size_t bytes = 1 + rng() % (chunk * (1 + rng() % 200));
    const double host = 0.5 + static_cast<double>(rng() % 4000) / 10.0;
    const double link = 0.5 + static_cast<double>(rng() % 1000) / 10.0;
    const double per_chunk_us = (rng() % 3 == 0) ? 0.0 : static_cast<double>(rng() % 10000) / 100.0;
    const double chunks = static_cast<double>((bytes + chunk - 1) / chunk);
    const double host_work = chunks * per_chunk_us * 1e-3 + static_cast<double>(bytes) / (host * 1e6);
    const double link_work = static_cast<double>(bytes) / (link * 1e6);
    const double got = ch08::staged_copy_ms(bytes, chunk, host, link, per_chunk_us);
    const std::string call = staged_call(bytes, chunk, host, link, per_chunk_us);
    const double slack = 1e-9 * (host_work + link_work);
    judge(got >= std::max(host_work, link_work) - slack && got <= host_work + link_work + slack,
          call + " returned " + std::to_string(got) + " ms, outside [" + std::to_string(std::max(host_work, link_work)) +
              ", " + std::to_string(host_work + link_work) + "]: the busier engine's work alone, and both engines' one "
              "after the other");
    const double whole = ch08::staged_copy_ms(bytes, bytes, host, link, per_chunk_us);
    const double alone = per_chunk_us * 1e-3 + static_cast<double>(bytes) / (host * 1e6) + link_work;
    judge(std::fabs(whole - alone) <= 1e-9 * alone,
          staged_call(bytes, bytes, host, link, per_chunk_us) + " (one chunk) returned " + std::to_string(whole) +
              " ms; one chunk overlaps nothing: " + std::to_string(alone) + " ms");
    const double more = ch08::staged_copy_ms(bytes + 1 + rng() % chunk, chunk, host, link, per_chunk_us);
    const double faster_host = ch08::staged_copy_ms(bytes, chunk, 2 * host, link, per_chunk_us);
    const double faster_link = ch08::staged_copy_ms(bytes, chunk, host, 2 * link, per_chunk_us);
    const double dearer = ch08::staged_copy_ms(bytes, chunk, host, link, per_chunk_us + 1.0);
    judge(more >= got * (1 - 1e-12) && faster_host <= got * (1 + 1e-12) && faster_link <= got * (1 + 1e-12) &&
              dearer >= got * (1 - 1e-12),
          call + " returned " + std::to_string(got) + " ms; with more bytes " + std::to_string(more) +
              ", with the host twice as fast " + std::to_string(faster_host) + ", with the link twice as fast " +
              std::to_string(faster_link) + ", with 1 µs more per chunk " + std::to_string(dearer));
  }
  INFO(wrong << " of " << total << " checks wrong; the first: " << first
             << ".\nHint: -1 is the unfilled stub. Draw the host's and the link's timelines for three chunks, with "
                "the host faster, then slower, than the link: what does nothing overlap at the start and at the end? "
                "Is the last chunk as long as the others? 1 GB/s is 10^6 bytes per millisecond. See README "
                "§Exercise 2 — how long does a staged copy take?");
  CHECK(wrong == 0);

  // Impossible arguments are refused by name (kit code, outside the hole).
  CHECK_THROWS_AS(ch08::staged_copy_ms(100, 0, 50.0, 50.0, 1.0), course::UsageError);
  CHECK_THROWS_AS(ch08::staged_copy_ms(100, 10, 0.0, 50.0, 1.0), course::UsageError);
  CHECK_THROWS_AS(ch08::staged_copy_ms(100, 10, 50.0, -1.0, 1.0), course::UsageError);
  CHECK_THROWS_AS(ch08::staged_copy_ms(100, 10, std::nan(""), 50.0, 1.0), course::UsageError);
  CHECK_THROWS_AS(ch08::staged_copy_ms(100, 10, 50.0, 50.0, -1.0), course::UsageError);
}

// ---- the exploit gallery (docs/grading.md): the staged copy on its stream, every call ----------
// A staged copy that passes the tests above could still skip a copy it has "seen" (a cache keyed
// by pointer, size and a few sampled bytes: the benchmark copies one buffer again and again), or
// put its copies on a stream other than the one it was given, where the timer does not wait for
// them. Each test below sees one of these; tests/negative/08_exploit_* prove it.

namespace {

std::size_t first_difference(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return i;
  return a.size() == b.size() ? a.size() : n;
}

std::vector<unsigned char> read_device(const unsigned char* d, std::size_t bytes, cudaStream_t stream) {
  std::vector<unsigned char> out(bytes);
  if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(out.data(), d, bytes, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace

TEST_CASE("ch08 stager: one byte changed between copies reaches the device", "[ch08][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  const std::size_t chunk = 4096, bytes = 5 * chunk + 11;
  ch08::Stager stager(ctx, 2, chunk, 2);
  std::vector<unsigned char> src(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(course::mix64(course::test::seed(808), i));
  course::DeviceBuffer<unsigned char> d(bytes);
  for (int round = 0; round < 3; ++round) {
    // Round 1 copies the buffer; rounds 2 and 3 change one byte away from both ends, in place.
    const std::size_t at = round == 0 ? 0 : (round == 1 ? bytes / 3 + 5 : 2 * chunk + 17);
    if (round > 0) src[at] = static_cast<unsigned char>(src[at] ^ 0x5A);
    stager.h2d(d.data(), src.data(), bytes, ctx.stream());
    const auto back = read_device(d.data(), bytes, ctx.stream());
    const std::size_t bad = first_difference(back, src);
    INFO("copy " << round + 1 << " of the same " << bytes << " bytes" << (round > 0 ? " with only byte " : "")
                 << (round > 0 ? std::to_string(at) : std::string()) << (round > 0 ? " changed" : "")
                 << ": first wrong byte on the device at " << bad << " (" << bytes << " means none). Every call "
                 "copies all its bytes: a copy skipped because the pointer, the size or a few sampled bytes match an "
                 "earlier call is wrong.");
    CHECK(bad == bytes);
  }
}

TEST_CASE("ch08 stager: the copies are ordered on the stream given (nothing lands while it is held)",
          "[ch08][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  course::Stream given, probe;  // neither is the context's stream
  const std::size_t chunk = 4096, bytes = 3 * chunk + 5;  // fewer chunks than buffers: no buffer to wait for
  ch08::Stager stager(ctx, 2, chunk, 4);
  std::vector<unsigned char> src(bytes);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(course::mix64(course::test::seed(809), i) | 1);
  course::DeviceBuffer<unsigned char> d(bytes);
  d.fill_bytes(0, given);
  given.synchronize();
  course::test::StreamGate gate;
  gate.hold(given);
  course::test::Caller caller([&] { stager.h2d(d.data(), src.data(), bytes, given); });
  (void)caller.returned_within(500);  // h2d may return at once (it should) or wait; either way:
  const auto held = read_device(d.data(), bytes, probe);  // what is on the device while `given` is held
  const std::size_t landed = static_cast<std::size_t>(std::count_if(held.begin(), held.end(), [](unsigned char b) { return b != 0; }));
  gate.open();
  caller.finish();
  given.synchronize();
  INFO(landed << " of " << bytes << " bytes reached the device while the stream given to h2d was held. Every copy of "
       "h2d goes on `stream` (not the context's stream, not the legacy default stream, not a stream of its own): "
       "the caller's timer and the next kernel wait on `stream` only.");
  CHECK(landed == 0);
  CHECK_FALSE(gate.timed_out());
  const std::size_t bad = first_difference(read_device(d.data(), bytes, given), src);
  INFO("after the stream went on: first wrong byte at " << bad << " (" << bytes << " means none)");
  CHECK(bad == bytes);
}
