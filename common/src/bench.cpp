#include "course/bench.hpp"

#include <cmath>

namespace course {

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : std::nan(""); }

Table measurement_table() {
  return Table({"version", "config", "n", "bytes", "reps", "median_ms", "mean_ms", "sd_ms", "min_ms", "gbps",
                "pct_roofline", "rel_error", "valid"});
}

void add_measurement(Table& table, const Measurement& m) {
  const double rate = gbps(m.bytes, m.ms.median);
  const double pct = m.roofline_gbps > 0 ? 100.0 * rate / m.roofline_gbps : std::nan("");
  table.add_row({m.version, m.config, static_cast<long long>(m.n), m.bytes, static_cast<long long>(m.ms.count),
                 m.ms.median, m.ms.mean, m.ms.sd, m.ms.min, rate, pct, m.rel_error,
                 static_cast<long long>(m.valid ? 1 : 0)});
}

const std::vector<std::string>& measurement_screen_columns() {
  static const std::vector<std::string> cols = {"version", "config",       "n",         "median_ms", "sd_ms",
                                                "gbps",    "pct_roofline", "rel_error", "valid"};
  return cols;
}

}  // namespace course
