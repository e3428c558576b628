// Chapter 01 grading tests: every GPU version of the registry, at awkward sizes, in both
// precisions, bitwise against the host; the event-timing exercise against physics; and, on the
// host only, exercise 1's index arithmetic and exercise 3's prediction.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/check.hpp"
#include "course/context.hpp"
#include "course/device.hpp"
#include "course/random.hpp"
#include "support/course_test.hpp"
#include "add.hpp"

namespace {

template <class T>
void check_version(const course::Version<ch01::Runner>& v, std::size_t n, int iters, course::Context* ctx) {
  // Uploads and poisons on the context's stream and waits for it; host versions have no context
  // (host arrays only, and a stream they never use).
  ch01::Problem<T> p(n, iters, course::test::seed(1234 + n), ctx);
  cudaStream_t stream = ctx ? ctx->stream() : nullptr;
  if constexpr (sizeof(T) == 4) v.run.f32(p, stream); else v.run.f64(p, stream);
  if (v.run.on_gpu) {
    CHECK_NOTHROW(course::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", __FILE__, __LINE__));
    p.h_out = p.d_out.download(stream);
  }
  std::size_t wrong = 0, first = n;
  for (std::size_t i = 0; i < n; ++i) {
    const T expected = v.run.intensity ? ch01::sqrt_loop(p.h_a[i], p.h_b[i], iters) : p.h_a[i] + p.h_b[i];
    if (!(p.h_out[i] == expected)) {
      if (wrong == 0) first = i;
      ++wrong;
    }
  }
  std::ostringstream msg;
  msg << v.name << " (" << (sizeof(T) == 4 ? "float" : "double") << ") at n = " << n << ": " << wrong
      << " of " << n << " elements wrong";
  if (wrong) {
    msg << "; the first at index " << first << " (got " << p.h_out[first] << ")."
        << "\nHint: NaN means the element was never written: every element below n needs a thread of its"
           " own (the grid must cover n, also when n is not a multiple of the block), and each thread must"
           " add the element at its global index, no other. The host tests `ch01 index: *` check the index"
           " and the launch shape without a GPU; if they pass, look at add_kernel. See README §Exercise 1.";
  }
  INFO(msg.str());
  CHECK(wrong == 0);
}

const bool registered = [] {
  for (const auto& v : ch01::versions()) {
    // The CPU versions (add_cpu, sqrt_cpu) need no GPU and never skip for want of one.
    std::string tags = v.run.on_gpu ? "[ch01][gpu]" : "[ch01]";
    if (v.exercise) tags += "[exercise]";
    const std::string name = "ch01 " + std::string(v.name) + ": matches the host bitwise at awkward sizes";
    course::test::add_case(name, tags, [&v] {
      std::unique_ptr<course::Context> ctx;
      if (v.run.on_gpu) {
        COURSE_REQUIRE_GPU();
        ctx = std::make_unique<course::Context>();
      }
      for (std::size_t n : course::test::awkward_sizes(256, 11)) {
        check_version<float>(v, n, 5, ctx.get());
        check_version<double>(v, n, 5, ctx.get());
      }
    });
  }
  return true;
}();

}  // namespace

TEST_CASE("ch01 time_with_events_ms: measures GPU time, not the launch", "[ch01][gpu][exercise][exclusive]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  cudaStream_t stream = ctx.stream();
  // Filling 1.5 GiB takes a known minimum time at the card's peak bandwidth, thousands of times
  // longer than enqueuing it. A host clock without a wait would see only the enqueue. (The work is
  // a memset, not the student's add kernel, so this test grades exercise 2 alone.)
  course::DeviceBuffer<float> d(std::size_t{3} << 27);
  auto launch = [&] { d.fill_bytes(0, stream); };
  launch();
  course::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", __FILE__, __LINE__);
  const float ms = ch01::time_with_events_ms(launch, stream);
  const double floor_ms = d.bytes() / (ctx.facts().peak_gbps * 1e9) * 1e3;
  INFO("time_with_events_ms reported " << ms << " ms; writing " << d.bytes() << " bytes takes at least "
       << floor_ms << " ms on this card.\nHint: a time far below that is the enqueue, not the work: the "
          "interval must be measured on the GPU's clock around exactly the work launch() puts on `stream`, "
          "and be final before it is read. 0 or NaN: nothing was measured. See time_with_events_ms, README "
          "§Exercise 2.");
  CHECK(std::isfinite(ms));
  CHECK(ms >= 0.9 * floor_ms);
  CHECK(ms < 1000.0 * floor_ms);
}

// Issue 38, class 1: a host clock around the launch and a wait (clock_gettime, launch, synchronise,
// clock_gettime) also passes the test above: the fill is long, and the host clock's extra is
// short. Here the stream is held (a StreamGate: a host function that waits) when the timer is
// called, and launch() enqueues the fill, then spends a known host delay before it lets the
// stream go on. Events recorded on the stream time-stamp only what the stream did after the hold:
// the fill. A host clock counts the delay too, however fast the card: the delay is 20 times the
// fill's floor at least, and the bound is half of it. A timer that waits for the stream before it
// starts waits for the gate's time limit, then counts the delay as well. tests/negative/01_timing_*.
TEST_CASE("ch01 time_with_events_ms: counts what the stream runs, not what the host waits for",
          "[ch01][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  cudaStream_t stream = ctx.stream();
  course::DeviceBuffer<float> d(std::size_t{3} << 27);
  d.fill_bytes(0, stream);  // the first fill pays for the pages
  course::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", __FILE__, __LINE__);
  const double floor_ms = d.bytes() / (ctx.facts().peak_gbps * 1e9) * 1e3;
  const double delay_ms = std::max(200.0, 20.0 * floor_ms);
  course::test::StreamGate gate(10.0);
  gate.hold(stream);
  auto launch = [&] {
    d.fill_bytes(0, stream);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms));
    gate.open();
  };
  const float ms = ch01::time_with_events_ms(launch, stream);
  course::check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize", __FILE__, __LINE__);
  INFO("time_with_events_ms reported " << ms << " ms for a fill whose floor is " << floor_ms << " ms on this card, "
       "enqueued while the stream waited for the host (" << delay_ms << " ms)"
       << (gate.timed_out() ? "; the timer waited for the held stream before launch() ran" : "")
       << ".\nHint: the GPU's clock starts when the stream reaches the start marker, after what was queued "
          "before it; a host clock read around launch() and a wait also counts the host's time and whatever the "
          "stream waited for. See time_with_events_ms, README §Exercise 2.");
  CHECK_FALSE(gate.timed_out());
  CHECK(std::isfinite(ms));
  CHECK(ms >= 0.9 * floor_ms);
  CHECK(ms < 0.5 * delay_ms);
}

// Writes past the end: the output sits between two guard zones of poison, checked after the launch
// (a missing bounds test, or a grid rounded up without one, writes into them).
TEST_CASE("ch01 add_gpu: writes nothing past the end of the output", "[ch01][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  for (std::size_t n : course::test::awkward_sizes(256, 12)) {
    const auto a = course::random_vector(n, course::test::seed(21 + n));
    const auto b = course::random_vector(n, course::seed_y(course::test::seed(21 + n)));
    course::test::Guarded<float> d_a(a), d_b(b), d_out(n);
    ch01::launch_add(d_a.data(), d_b.data(), d_out.data(), n, ctx.stream());
    ctx.synchronize();
    const std::string damage = d_out.guard_damage();
    INFO("launch_add at n = " << n << ": " << damage);
    CHECK(damage.empty());
    const auto out = d_out.download();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += !(out[i] == a[i] + b[i]);
    INFO("launch_add at n = " << n << ": " << wrong << " elements wrong");
    CHECK(wrong == 0);
  }
}

// 64-bit indexing: n past 2^32, inputs made on the device. A 32-bit index wraps, so the threads
// past 2^32 write (correct values) over the first elements and the elements past 2^32 keep their
// poison. Checked: the last 2^20 + 3 elements, those around 2^31 and 2^32, and a sample between.
TEST_CASE("ch01 add_gpu: beyond 2^32 elements", "[ch01][gpu][exercise][huge]") {
  COURSE_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 32) + (std::size_t{1} << 20) + 3;
  const std::size_t need = 3 * n * sizeof(float) + (std::size_t{1} << 30);
  const std::size_t free_bytes = course::free_device_bytes();
  if (free_bytes < need)
    COURSE_SKIP_NO_MEMORY("this test needs " + course::format_bytes(need) + " of free device memory and the card has " +
                          course::format_bytes(free_bytes) + ": skipped, not passed");
  const std::uint64_t seed_a = course::test::seed(101), seed_b = course::seed_y(seed_a);
  course::Context ctx;
  cudaStream_t stream = ctx.stream();
  course::DeviceBuffer<float> d_a(n), d_b(n), d_out(n);
  course::fill_random_device(d_a.data(), n, seed_a, -1.0f, 1.0f, stream);
  course::fill_random_device(d_b.data(), n, seed_b, -1.0f, 1.0f, stream);
  d_out.fill_bytes(0xFF, stream);
  ch01::launch_add(d_a.data(), d_b.data(), d_out.data(), n, stream);
  ctx.synchronize();
  auto check_range = [&](std::size_t begin, std::size_t count) {
    std::vector<float> got(count);
    course::check_cuda(cudaMemcpy(got.data(), d_out.data() + begin, count * sizeof(float), cudaMemcpyDeviceToHost),
                       "cudaMemcpy", __FILE__, __LINE__);
    std::size_t wrong = 0, first = 0;
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = begin + k;
      const float expected = course::random_at(seed_a, i, -1.0f, 1.0f) + course::random_at(seed_b, i, -1.0f, 1.0f);
      if (!(got[k] == expected) && wrong++ == 0) first = i;
    }
    INFO("launch_add at n = " << n << ": " << wrong << " of the " << count << " elements from index " << begin
                              << " are wrong, the first at " << first
                              << ".\nHint: NaN past index 2^32 means the index wrapped: the global index must "
                                 "stay exact past 2^32, so no part of its computation may happen in 32 bits (int "
                                 "or unsigned). See add_kernel, README §Exercise 1.");
    CHECK(wrong == 0);
  };
  const std::size_t tail = (std::size_t{1} << 20) + 3;
  check_range(n - tail, tail);
  check_range((std::size_t{1} << 31) - 4096, 8192);
  check_range((std::size_t{1} << 32) - 4096, 8192);
  for (std::size_t k = 1; k < 16; ++k) check_range(k * (n / 16), 4096);
}

// Exercise 3 (think): the prediction is arithmetic, so it is checked to rounding, on the host (no
// GPU): in both precisions, at n = 0, past 2^32 elements (a 32-bit byte count wraps there), and at
// sizes and bandwidths drawn from the grading seed, so a table of the public answers cannot pass.
TEST_CASE("ch01 predicted_add_ms: the time to move the add's bytes at the given bandwidth", "[ch01][exercise][hole:add.cu:2]") {
  struct Case {
    std::size_t n, elem_bytes;
    double gbps;
  };
  std::vector<Case> cases = {{0, 4, 3000.0},
                             {1, 4, 1.0},
                             {100000000, 4, 3000.0},
                             {100000000, 8, 2759.5},
                             {(std::size_t{3} << 31) + 5, 4, 3352.0},
                             {std::size_t{1} << 40, 8, 900.0}};
  std::mt19937_64 rng(course::test::seed(31));
  for (int k = 0; k < 20; ++k) {
    const std::size_t n = rng() % (std::size_t{1} << 36);
    const std::size_t elem = (rng() % 2) ? 4 : 8;
    const double gbps = 50.0 + static_cast<double>(rng() % 8000);
    cases.push_back({n, elem, gbps});
  }
  for (const Case& c : cases) {
    // Three arrays of n elements cross the bus: a and b read, out written.
    const double expected_ms = 3.0 * static_cast<double>(c.n) * static_cast<double>(c.elem_bytes) / (c.gbps * 1e6);
    const double got = ch01::predicted_add_ms(c.n, c.elem_bytes, c.gbps);
    INFO("predicted_add_ms(n = " << c.n << ", elem_bytes = " << c.elem_bytes << ", gbps = " << c.gbps << ") returned "
         << got << " ms; the kernel's traffic at that bandwidth takes " << expected_ms << " ms."
         << "\nHint: count every array the kernel touches, read or written; 1 GB/s is 10^9 bytes per second; "
            "the answer is in milliseconds; compute in double (a product of integers wraps past 2^32 in 32 bits). "
            "See README §Exercise 3.");
    CHECK(std::fabs(got - expected_ms) <= 1e-9 * expected_ms + 1e-300);
  }
}

// ---------------------------------------------------------------------------------------------
// The index arithmetic of exercise 1, host only (no GPU needed, never skipped): the functions of
// add.hpp that add_kernel and launch_add call for a thread's element and for the launch's shape.
// A student without a GPU learns from these whether exercise 1's arithmetic is right; the GPU
// tests above then check the kernel around it.
// ---------------------------------------------------------------------------------------------
namespace {

// The most blocks a launch can have (gridDim.x at most 2^31 - 1): launch_add refuses more.
constexpr std::size_t kMaxGrid = static_cast<std::size_t>(std::numeric_limits<int>::max());

// The sizes the launch shape is checked at: around one warp and one block (the shape's own block
// too), 2^31 and 2^32, past 2^40, random sizes up to 2^36 from the grading seed, and every n from
// 1 to 4096.
std::vector<std::size_t> shape_sizes() {
  const std::size_t k31 = std::size_t{1} << 31, k32 = std::size_t{1} << 32;
  std::vector<std::size_t> ns = {1, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, (std::size_t{1} << 20) + 3,
                                 k31 - 1, k31, k31 + 1, k32 - 1, k32, k32 + 1, (std::size_t{1} << 40) + 3};
  const unsigned block = ch01::launch_shape(std::size_t{1} << 20).block;
  for (std::size_t m : {std::size_t{1}, std::size_t{2}, std::size_t{1} << 20})
    for (std::size_t n : {m * block - 1, m * block, m * block + 1})
      if (block > 0 && n >= 1) ns.push_back(n);
  std::mt19937_64 rng(course::test::seed(41));
  for (int k = 0; k < 50; ++k) ns.push_back(1 + rng() % (std::size_t{1} << 36));
  for (std::size_t n = 1; n <= 4096; ++n) ns.push_back(n);
  return ns;
}

std::string shape_text(std::size_t n, const ch01::LaunchShape& s) {
  std::ostringstream out;
  out << "launch_shape(n = " << n << ") gives " << s.grid << " blocks of " << s.block << " threads";
  return out.str();
}

}  // namespace

TEST_CASE("ch01 index: global_index numbers every thread of the grid, past 2^32 too (exercise 1)",
          "[ch01][exercise][index][hole:add.hpp:1]") {
  struct Pick {
    unsigned block, block_dim, tid;
  };
  std::vector<Pick> picks;
  // Every thread of the first blocks of small grids, in blocks of several sizes.
  for (unsigned block_dim : {1u, 3u, 32u, 96u, 256u, 1024u})
    for (unsigned b = 0; b < 4; ++b)
      for (unsigned t = 0; t < block_dim; ++t) picks.push_back({b, block_dim, t});
  // Where a 32-bit product wraps: blocks of 1024 threads around thread 2^32 of the grid (block
  // 2^22 starts there), block 2^22 + 5, and the largest grid's last block (its threads near 2^41).
  for (unsigned t : {0u, 1u, 7u, 511u, 1023u})
    for (unsigned b : {(1u << 22) - 1, 1u << 22, (1u << 22) + 5, static_cast<unsigned>(kMaxGrid) - 1})
      picks.push_back({b, 1024, t});
  picks.push_back({(1u << 24) + 3, 256, 255});  // 256-thread blocks past 2^32
  // And random threads of random launches (blocks of whole warps), from the grading seed.
  std::mt19937_64 rng(course::test::seed(11));
  for (int k = 0; k < 1000; ++k) {
    const unsigned block_dim = 32u * static_cast<unsigned>(1 + rng() % 32);
    picks.push_back({static_cast<unsigned>(rng() % kMaxGrid), block_dim, static_cast<unsigned>(rng() % block_dim)});
  }
  std::string first;
  for (const Pick& p : picks) {
    const std::size_t expected = static_cast<std::size_t>(p.block) * p.block_dim + p.tid;
    const std::size_t got = ch01::global_index(p.block, p.block_dim, p.tid);
    if (got == expected) continue;
    std::ostringstream msg;
    msg << "global_index(block = " << p.block << ", block_dim = " << p.block_dim << ", tid = " << p.tid
        << ") returned " << got << "; that thread is thread " << expected << " of the grid (" << p.block
        << " blocks of " << p.block_dim << " threads come before its block, and " << p.tid
        << " threads before it in its own)";
    if (expected > 0xFFFFFFFFu && got == (expected & 0xFFFFFFFFu))
      msg << ". That is the right index modulo 2^32: part of the computation happens in 32 bits, where "
             "a product wraps past 2^32";
    first = msg.str();
    break;
  }
  INFO(first << "\nHint: (the stub returns 0.) A thread's global index is its place among all the threads of "
                "the grid, counted from 0: every thread of the blocks before its own, then the threads before it "
                "in its block. It must be exact for any block, block size and thread a launch can have, past "
                "2^32 threads too, so no part of it may be computed in 32 bits (int or unsigned). See "
                "global_index (add.hpp), README §Exercise 1.");
  CHECK(first.empty());
}

TEST_CASE("ch01 index: launch_shape gives every element a thread, less than one block to spare (exercise 1)",
          "[ch01][exercise][index][hole:add.hpp:2]") {
  std::string first;
  for (const std::size_t n : shape_sizes()) {
    const ch01::LaunchShape s = ch01::launch_shape(n);
    std::ostringstream msg;
    if (s.block == 0) {
      msg << shape_text(n, s) << ": a block of 0 threads holds no thread at all";
    } else {
      const std::size_t needed = n / s.block + (n % s.block != 0 ? 1 : 0);  // the fewest blocks that cover n
      if (s.grid < needed)
        msg << shape_text(n, s) << ", " << s.grid * s.block << " threads for " << n << " elements: from element "
            << s.grid * s.block << " on, no thread adds anything. Every element needs a thread of its own, "
            << "also when n is not a multiple of the block: " << needed << " blocks of " << s.block
            << " threads are the fewest that cover n";
      else if (s.grid > needed)
        msg << shape_text(n, s) << ": " << needed << " blocks of " << s.block << " threads already cover n, so "
            << "at least one whole block has no element at all (its threads only fail the bounds check). The "
            << "last block may be partly idle, never a whole one: less than one block of threads to spare";
    }
    first = msg.str();
    if (!first.empty()) break;
  }
  INFO(first << "\nHint: (the stub gives one block of one thread.) For every n >= 1, small, not a multiple of "
                "the block, past 2^32: the grid's threads (blocks times threads per block) must reach every "
                "element, and fall short of n + one block. Compute in std::size_t: n does not fit 32 bits. See "
                "launch_shape (add.hpp), README §Exercise 1.");
  CHECK(first.empty());
}

TEST_CASE("ch01 index: launch_shape makes blocks of whole warps, 32 to 1024 threads (exercise 1)",
          "[ch01][exercise][index][hole:add.hpp:2]") {
  std::string first;
  for (const std::size_t n : shape_sizes()) {
    const ch01::LaunchShape s = ch01::launch_shape(n);
    if (s.block >= 32 && s.block <= 1024 && s.block % 32 == 0) continue;
    first = shape_text(n, s) + ": " + std::to_string(s.block) + " threads per block is " +
            (s.block > 1024 ? "more than a block can hold (1024 at most)"
                            : "not a whole number of warps (a multiple of 32, at least 32)");
    break;
  }
  INFO(first << "\nHint: (the stub gives blocks of 1 thread.) The GPU runs a block's threads 32 at a time, in "
                "warps: a block of a size that is not a multiple of 32 leaves lanes of its last warp idle on "
                "every launch, and a block holds at most 1024 threads. See launch_shape (add.hpp), README "
                "§Exercise 1.");
  CHECK(first.empty());
}

TEST_CASE("ch01 index: launch_shape past what a grid can hold, which launch_add refuses (exercise 1)",
          "[ch01][exercise][index][hole:add.hpp:2]") {
  // 2^41 + 1 elements need more than 2^31 - 1 blocks even of 1024 threads, the largest block. The
  // shape must still say so (its grid is a std::size_t for that), and launch_add must refuse it
  // before it touches a GPU, so this test needs none.
  const std::size_t n = (std::size_t{1} << 41) + 1;
  const ch01::LaunchShape s = ch01::launch_shape(n);
  INFO(shape_text(n, s) << ": " << n << " elements need more than " << kMaxGrid << " blocks (the most a launch "
       << "can have) whatever the block, and launch_add reports that as a course::UsageError, but only if the "
       << "shape covers n.\nHint: the shape is the fewest blocks that give every element a thread, even when "
          "that is more than one launch can have: never a smaller grid that quietly leaves elements out. See "
          "launch_shape (add.hpp), README §Exercise 1.");
  // Checked before the call: a shape that fits a grid would make launch_add launch on null pointers.
  REQUIRE(s.block >= 1);
  REQUIRE(s.block <= 1024);
  REQUIRE(s.grid > kMaxGrid);
  CHECK_THROWS_AS(ch01::launch_add<float>(nullptr, nullptr, nullptr, n, nullptr), course::UsageError);
}

// ---------------------------------------------------------------------------------------------
// add_kernel's body on the host (no GPU needed, never skipped): the kernel calls add_thread, a
// __host__ __device__ helper, for its thread; here the same helper runs for every thread of grids
// that overshoot n (by a part of a block, and by a whole spare block), on host arrays with room past
// n: inputs NaN there, the output a marker that must survive.
// ---------------------------------------------------------------------------------------------
namespace {

template <class T>
std::string play_add_grid(std::size_t n, unsigned block_dim, std::size_t spare_blocks) {
  const std::size_t grid = (n + block_dim - 1) / block_dim + spare_blocks;
  const std::size_t room = grid * block_dim + 64;  // every thread's element, and more
  const T nan = std::numeric_limits<T>::quiet_NaN(), marker = static_cast<T>(-7.25);
  std::vector<T> a(room, nan), b(room, nan), out(room, marker);
  for (std::size_t i = 0; i < n; ++i) {  // whole numbers: every sum exact, in either precision
    a[i] = static_cast<T>(static_cast<int>(i % 1000) - 500);
    b[i] = static_cast<T>(3 * static_cast<int>(i % 97) + 1);
  }
  for (std::size_t blk = 0; blk < grid; ++blk)
    for (unsigned t = 0; t < block_dim; ++t)
      ch01::on_host::add_thread(a.data(), b.data(), out.data(), n, static_cast<unsigned>(blk), block_dim, t);
  std::ostringstream where;
  where << (sizeof(T) == 4 ? "float" : "double") << ", n = " << n << ", " << grid << " blocks of " << block_dim
        << " threads (" << grid * block_dim - n << " threads past n)";
  for (std::size_t i = 0; i < n; ++i)
    if (!(out[i] == a[i] + b[i])) {
      std::ostringstream msg;
      msg << where.str() << ": out[" << i << "] is " << out[i] << ", a[i] + b[i] is " << a[i] + b[i]
          << (out[i] == marker ? " (never written: no thread added element " + std::to_string(i) + ")" : "");
      return msg.str();
    }
  for (std::size_t i = n; i < room; ++i)
    if (std::memcmp(&out[i], &marker, sizeof(T)) != 0) {
      std::ostringstream msg;
      msg << where.str() << ": out[" << i << "] was written (it holds " << out[i] << "), at or past n: on the GPU "
          << "a write outside the output (is the bounds check i < n?)";
      return msg.str();
    }
  return "";
}

}  // namespace

TEST_CASE("ch01 add on the host: every thread of an overshooting grid, nothing written at or past n (exercise 1)",
          "[ch01][exercise][player][hole:add.cu:1]") {
  std::string first;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32}, std::size_t{255},
                        std::size_t{256}, std::size_t{257}, std::size_t{1000}, std::size_t{4099}})
    for (unsigned block_dim : {32u, 256u, 1024u})
      for (std::size_t spare : {std::size_t{0}, std::size_t{1}}) {
        if (first.empty()) first = play_add_grid<float>(n, block_dim, spare);
        if (first.empty()) first = play_add_grid<double>(n, block_dim, spare);
      }
  INFO(first << "\nHint: (the stub writes nothing.) Every thread of the grid runs add_thread; the one whose global "
                "index i is below n writes out[i] = a[i] + b[i], and a thread at or past n writes nothing (the "
                "grid overshoots n by up to a block, more if the caller rounds up further). If `ch01 index: "
                "global_index *` fails too, fix global_index first. See add_kernel (add.cu), README §Exercise 1.");
  CHECK(first.empty());
}
