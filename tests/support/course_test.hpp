#pragma once
// Test support shared by every chapter's tests: one header for Catch2 2.13 and 3.x, the GPU
// guard, one test case per registry version, and the sizes and inputs every test uses.

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#define COURSE_CATCH_MAJOR 3
#else
#include <catch2/catch.hpp>
#define COURSE_CATCH_MAJOR 2
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.hpp"
#include "course/device.hpp"
#include "course/inputs.hpp"
#include "course/reference.hpp"

// The guard must be the first statement of a GPU test (never after an assertion, never inside a
// SECTION): without a GPU it prints COURSE-NO-GPU, which CTest's SKIP_REGULAR_EXPRESSION turns
// into "skipped", and leaves the test before anything is asserted.
#if COURSE_CATCH_MAJOR >= 3 && defined(SKIP)
#define COURSE_SKIP_TEST(msg) SKIP(msg)
#else
#define COURSE_SKIP_TEST(msg) \
  do {                        \
    WARN(msg);                \
    return;                   \
  } while (0)
#endif

// A test that needs more device memory than the card has free skips with its own marker, never
// with COURSE-NO-GPU: "this card is too small" is not "there is no GPU". Same rules as the guard.
#define COURSE_SKIP_NO_MEMORY(what) COURSE_SKIP_TEST(std::string("COURSE-NO-MEMORY: ") + (what))

#define COURSE_REQUIRE_GPU()                                                          \
  do {                                                                                \
    std::string course_why_;                                                          \
    if (!::course::gpu_available(&course_why_))                                       \
      COURSE_SKIP_TEST("COURSE-NO-GPU: " + ::course::no_gpu_message(course_why_));   \
  } while (0)

namespace course::test {

/// A substring matcher under both Catch2 names (v2 Contains, v3 ContainsSubstring).
#if COURSE_CATCH_MAJOR >= 3
inline auto contains(const std::string& s) { return Catch::Matchers::ContainsSubstring(s); }
#else
inline auto contains(const std::string& s) { return Catch::Matchers::Contains(s); }
#endif

/// Registers one Catch2 test case at static-initialization time, with a name built at run time
/// (one test case per registry version, so the grader can give points per version).
/// `tags` like "[ch05][gpu][exercise]". Returns true, so it can initialize a static.
bool add_case(const std::string& name, const std::string& tags, std::function<void()> body);

/// The seed a test uses for `base`: `base` itself, or, when the grader sets COURSE_GRADING_SEED
/// (tools/grade --seed N), a mix of both, so that every input of every test differs from the
/// public one and nothing tuned to the public inputs passes. awkward_sizes and make_dot_inputs
/// apply it themselves; a test that calls random_vector or a chapter's generator directly wraps
/// its seed in it.
std::uint64_t seed(std::uint64_t base);

/// Sizes every reduction is tested at: 0, 1, block−1, block, block+1, 2^20+3, and a random size
/// in [2, 2^22] drawn from `seed`. With COURSE_TEST_SMALL=1 (sanitizer runs) the last two shrink to
/// 2^16+3 and a random size in [2, 2^16].
std::vector<std::size_t> awkward_sizes(std::size_t block, std::uint64_t seed);

/// The drivers' inputs (course::HostDotInputs: random signed x and y, planted spikes, the fp64
/// reference) for the test seed `seed` (course::test::seed: the grading seed mixed in).
using DotInputs = HostDotInputs;
DotInputs make_dot_inputs(std::size_t n, std::uint64_t seed);

/// The address of a small kernel with dynamic shared memory, for tests of course::Context::occupancy.
const void* probe_kernel_address();
/// A device array with guard zones: kGuard poisoned elements (bytes 0xFF: NaN for floats) before
/// and after the n elements that data() points to. As an output, guard_damage() says whether
/// code wrote past either end; as an input, a read past the end reads NaN and poisons the result.
/// Every operation synchronizes the whole device before and after (it uses the legacy stream), so
/// a Guarded array may be used with any course::Context's stream.
template <class T>
class Guarded {
 public:
  static constexpr std::size_t kGuard = 1024;
  explicit Guarded(std::size_t n) : n_(n), buf_(n + 2 * kGuard) {
    buf_.fill_bytes(0xFF, cudaStreamLegacy);  // the legacy stream, then the whole device: see above
    device_sync();
  }
  explicit Guarded(const std::vector<T>& host) : Guarded(host.size()) {
    if (!host.empty())
      check_cuda(cudaMemcpy(data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy",
                 __FILE__, __LINE__);
    device_sync();
  }
  T* data() { return buf_.data() + kGuard; }
  const T* data() const { return buf_.data() + kGuard; }
  std::size_t size() const { return n_; }
  /// New contents for the n elements, in the same place (the guards keep their poison).
  void upload(const std::vector<T>& host) {
    if (host.size() != n_) throw UsageError("Guarded::upload: size differs from the array's");
    device_sync();
    if (n_ != 0)
      check_cuda(cudaMemcpy(data(), host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy", __FILE__,
                 __LINE__);
    device_sync();
  }
  /// Fills the n elements only (the guards keep their poison), then waits for the device.
  void fill_bytes(int byte, cudaStream_t stream) {
    device_sync();
    check_cuda(cudaMemsetAsync(data(), byte, n_ * sizeof(T), stream), "cudaMemsetAsync", __FILE__, __LINE__);
    device_sync();
  }
  /// The n elements, after waiting for the whole device (any stream's work).
  std::vector<T> download() const {
    device_sync();
    std::vector<T> all = buf_.download();
    return std::vector<T>(all.begin() + kGuard, all.begin() + kGuard + static_cast<std::ptrdiff_t>(n_));
  }
  /// "" when both guard zones still hold their poison; else which elements outside [0, n) changed.
  std::string guard_damage() const {
    device_sync();
    const std::vector<T> all = buf_.download();
    std::vector<unsigned char> bytes(all.size() * sizeof(T));
    std::memcpy(bytes.data(), all.data(), bytes.size());
    std::size_t changed = 0;
    long long first = 0;
    for (std::size_t e = 0; e < all.size(); ++e) {
      if (e >= kGuard && e < kGuard + n_) continue;
      bool intact = true;
      for (std::size_t b = 0; b < sizeof(T); ++b) intact = intact && bytes[e * sizeof(T) + b] == 0xFF;
      if (!intact && changed++ == 0) first = static_cast<long long>(e) - static_cast<long long>(kGuard);
    }
    if (changed == 0) return "";
    return std::to_string(changed) + " element(s) outside the " + std::to_string(n_) +
           " of the output were written, the first at index " + std::to_string(first) +
           ": a thread wrote past the end (every thread whose index is at or past n must write nothing, however "
           "far the grid overshoots n)";
  }

 private:
  static void device_sync() { check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", __FILE__, __LINE__); }
  std::size_t n_;
  DeviceBuffer<T> buf_;
};

/// Holds streams at a point, for the exploit gallery's tests (docs/grading.md): work enqueued on a
/// held stream after hold() waits until open(). Each hold is a host function (cudaLaunchHostFunc)
/// that spins on a flag, with a time limit so that a test that fails never hangs. A call that
/// returns, or whose output lands, while the stream it was given is held did its work around that
/// stream (another stream, the legacy stream, or the host), where a timer on the stream cannot see it.
class StreamGate {
 public:
  explicit StreamGate(double limit_s = 30.0);
  ~StreamGate();  // opens the gate; never throws
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void hold(cudaStream_t stream);
  void open() noexcept;
  /// Whether a hold reached its time limit and let its stream go on by itself.
  bool timed_out() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// Runs `call` on another thread and waits up to `wait_ms` for it to return: whether it returned
/// in that time. The thread is joined by finish() (or the destructor); what `call` threw is
/// rethrown by finish(). For a call that a StreamGate should hold.
class Caller {
 public:
  explicit Caller(std::function<void()> call);
  ~Caller();
  Caller(const Caller&) = delete;
  Caller& operator=(const Caller&) = delete;
  bool returned_within(int wait_ms) const;
  void finish();

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

/// The message a failing dot test shows a student: sizes, values, error and bound, and a hint.
std::string explain(const Verdict& v, std::size_t n, const std::string& version, const std::string& hint);

}  // namespace course::test
