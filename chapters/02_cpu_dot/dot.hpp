#pragma once
/// \file
/// \brief Chapter 02: the dot product on the CPU, and what "correct" means.
///
/// Every version has the same shape: it reads x[0, n) and y[0, n) and returns the float result.
/// The registry, versions(), is the only list of them: the command line, the tests, the benchmark
/// and the text all iterate it.

#include <cstddef>
#include <vector>

#include "course/registry.hpp"

namespace ch02 {

/// What a CPU version may be told besides its inputs.
struct CpuConfig {
  unsigned threads = 0;  ///< worker threads of the threaded versions; 0: one per hardware thread
};

/// A CPU dot product: returns x·y over n elements.
using CpuDot = float (*)(const float* x, const float* y, std::size_t n, const CpuConfig& config);

/// One entry of the registry: the function and what the driver and the tests need to know.
struct CpuVersion {
  CpuDot dot;
  bool threaded = false;          ///< runs on CpuConfig::threads threads
  bool wrong_on_purpose = false;  ///< shows a bug (named bug_*): reported, never graded as right
};

/// The chapter's registry, in the order the text tells the story.
const std::vector<course::Version<CpuVersion>>& versions();

/// The threads a threaded version uses for n elements: config.threads (or one per hardware
/// thread), never more than n, never fewer than one.
unsigned thread_count(const CpuConfig& config, std::size_t n);

/// The sum of x[i]*y[i] in a float, in order. Shared by several versions.
float dot_sequential(const float* x, const float* y, std::size_t n, const CpuConfig& config = {});

/// Exercise 4 (think): x·y in float only, with compensated summation: gather what every addition
/// lost to rounding, and give it back at the end. When the products are exact, its error is about
/// one rounding of the result, however many terms and however large they are. Not in the
/// registry: it is graded on accuracy, not speed.
float dot_compensated(const float* x, const float* y, std::size_t n);

/// Below this many elements the pairwise version sums in a plain loop.
constexpr std::size_t kPairwiseBase = 32;

}  // namespace ch02
