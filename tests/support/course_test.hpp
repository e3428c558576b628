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
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "course/device.hpp"
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

/// Sizes every reduction is tested at: 0, 1, block−1, block, block+1, 2^20+3, and a random size
/// in [2, 2^22] drawn from `seed`. With COURSE_TEST_SMALL=1 (sanitizer runs) the last two shrink to
/// 2^16+3 and a random size in [2, 2^16].
std::vector<std::size_t> awkward_sizes(std::size_t block, std::uint64_t seed);

/// Random signed inputs in [−1, 1) for a dot product of n elements (distinct streams for x and
/// y), with spikes planted by course::plant_spikes (first, middle, last and many pseudo-random
/// indices): products far larger than the tolerance, so a kernel that drops any cannot pass.
struct DotInputs {
  std::vector<float> x;
  std::vector<float> y;
  Reference ref;
};
DotInputs make_dot_inputs(std::size_t n, std::uint64_t seed);

/// The address of a small kernel with dynamic shared memory, for tests of course::Context::occupancy.
const void* probe_kernel_address();

/// The message a failing dot test shows a student: sizes, values, error and bound, and a hint.
std::string explain(const Verdict& v, std::size_t n, const std::string& version, const std::string& hint);

}  // namespace course::test
