#pragma once
/// \file stats.hpp
/// \brief Summary statistics of timing samples.

#include <string>
#include <vector>

namespace course {

/// Median, mean ± sample standard deviation, min and max of a set of samples.
struct Stats {
  double median = 0;
  double mean = 0;
  double sd = 0;  ///< sample standard deviation (n − 1); 0 for fewer than two samples
  double min = 0;
  double max = 0;
  int count = 0;  ///< samples summarized (warm-up runs are never among them)
};

/// Summarizes `samples`. Throws UsageError when there are none.
Stats summarize(std::vector<double> samples);

/// "1.234 ± 0.010 ms (median 1.230, n=50)".
std::string format_stats(const Stats& s, const char* unit = "ms");

}  // namespace course
