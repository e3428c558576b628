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

// Exercise 2 (think): the predicted time of a staged copy. Host only (no GPU). Checked against a
// simulation of the Stager chunk by chunk: the host fills a buffer once it is free (the link has
// sent the chunk that was in it) and the host has handed over the previous chunk; the link sends a
// chunk once it is filled and the previous one is sent. Two buffers, the fewest the Stager
// allows, and the staged path's four, must give the same answer.
namespace {

double simulate_staged_ms(std::size_t bytes, std::size_t chunk, double host_gbps, double link_gbps, double per_chunk_us,
                          int buffers) {
  std::vector<double> buffer_free(static_cast<std::size_t>(buffers), 0.0);  // when the link last sent out of it
  double host_done = 0.0, link_done = 0.0;
  std::size_t sent = 0, i = 0;
  while (sent < bytes) {
    const std::size_t len = std::min(chunk, bytes - sent);
    double& buffer = buffer_free[i % buffer_free.size()];
    const double fill_start = std::max(host_done, buffer);
    host_done = fill_start + per_chunk_us / 1000.0 + static_cast<double>(len) / (host_gbps * 1e6);
    link_done = std::max(host_done, link_done) + static_cast<double>(len) / (link_gbps * 1e6);
    buffer = link_done;
    sent += len;
    ++i;
  }
  return link_done;
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
  INFO(first << "\nHint: stage_chunks walks chunk k = 0, 1, ... with staged_chunk; for each: wait for its buffer's "
                "event, fill the buffer from h_src, send the buffer to d_dst on the stream given, then record the "
                "buffer's event after that copy. The stub does nothing, so no byte arrives. See the TODO in dot.cu "
                "and README §Exercise 1 — the staged copy.");
  CHECK(first.empty());
}

TEST_CASE("ch08 staged_copy_ms: matches a chunk-by-chunk simulation", "[ch08][exercise][think][hole:dot.cu:3]") {
  struct Case {
    std::size_t bytes, chunk;
    double host, link, per_chunk_us;
  };
  std::vector<Case> cases;
  const std::size_t MiB = std::size_t{1} << 20;
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{4096}, 2 * MiB, 8 * MiB, 32 * MiB})
    for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk, 50 * chunk + 7})
      for (double host : {5.0, 50.8, 200.0})        // the host slower and faster than the link
        for (double link : {10.0, 54.5})
          for (double per_chunk_us : {0.0, 3.0, 40.0})
            cases.push_back({bytes, chunk, host, link, per_chunk_us});
  cases.push_back({512 * MiB, 2 * MiB, 23.9, 54.5, 4.0});  // the knobs table's shapes
  cases.push_back({512 * MiB, 32 * MiB, 50.8, 54.5, 4.0});
  std::mt19937_64 rng(course::test::seed(808));
  for (int k = 0; k < 300; ++k) {
    const std::size_t chunk = 1 + rng() % (std::size_t{1} << (rng() % 26));
    const std::size_t bytes = rng() % (chunk * (1 + rng() % 200) + 1);
    const double host = 0.5 + static_cast<double>(rng() % 4000) / 10.0;
    const double link = 0.5 + static_cast<double>(rng() % 1000) / 10.0;
    const double per_chunk_us = (rng() % 3 == 0) ? 0.0 : static_cast<double>(rng() % 10000) / 100.0;
    cases.push_back({bytes, chunk, host, link, per_chunk_us});
  }
  std::size_t wrong = 0;
  std::string first;
  for (const Case& c : cases) {
    const double two = simulate_staged_ms(c.bytes, c.chunk, c.host, c.link, c.per_chunk_us, 2);
    const double four = simulate_staged_ms(c.bytes, c.chunk, c.host, c.link, c.per_chunk_us, 4);
    REQUIRE(std::fabs(two - four) <= 1e-12 * two);  // the simulation itself: buffers beyond two change nothing
    const double got = ch08::staged_copy_ms(c.bytes, c.chunk, c.host, c.link, c.per_chunk_us);
    const bool ok = c.bytes == 0 ? got == 0.0 : std::fabs(got - two) <= 1e-9 * two;
    if (!ok && wrong++ == 0) {
      std::ostringstream s;
      s << "staged_copy_ms(bytes = " << c.bytes << ", chunk_bytes = " << c.chunk << ", host_gbps = " << c.host
        << ", link_gbps = " << c.link << ", per_chunk_us = " << c.per_chunk_us << ") returned " << got
        << " ms; the simulation finishes at " << two << " ms";
      first = s.str();
    }
  }
  INFO(wrong << " of " << cases.size() << " predictions wrong; the first: " << first
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
