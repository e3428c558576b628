#include "course/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "course/check.hpp"

namespace course {

Stats summarize(std::vector<double> samples) {
  if (samples.empty()) throw UsageError("summarize: no samples (was --reps 0?)");
  Stats s;
  s.count = static_cast<int>(samples.size());
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = samples.size() / 2;
  s.median = samples.size() % 2 == 1 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
  if (samples.size() > 1) {
    double ss = 0;
    for (double v : samples) ss += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(ss / (samples.size() - 1));
  }
  return s;
}

std::string format_stats(const Stats& s, const char* unit) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.4g ± %.2g %s (median %.4g, n=%d)", s.mean, s.sd, unit, s.median, s.count);
  return buf;
}

}  // namespace course
