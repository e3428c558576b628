#include "course/bench.hpp"

#include <cmath>
#include <utility>

namespace course {

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : std::nan(""); }

namespace {
const char* share_column(Share share) { return share == Share::link ? "pct_link" : "pct_roofline"; }
}  // namespace

Table measurement_table(Share share) {
  return Table({"version", "config", "n", "bytes", "reps", "median_ms", "mean_ms", "sd_ms", "min_ms", "gbps",
                share_column(share), "rel_error", "valid"});
}

Table measurement_table_typed() {
  Table t = measurement_table();
  std::vector<std::string> cols = t.columns();
  cols.push_back("dtype");
  return Table(cols);
}

void add_measurement(Table& table, const Measurement& m) {
  const double rate = gbps(m.bytes, m.ms.median);
  const double pct = m.roofline_gbps > 0 ? 100.0 * rate / m.roofline_gbps : std::nan("");
  std::vector<Cell> row = {m.version, m.config, static_cast<long long>(m.n), m.bytes, static_cast<long long>(m.ms.count),
                           m.ms.median, m.ms.mean, m.ms.sd, m.ms.min, rate, pct, m.rel_error,
                           static_cast<long long>(m.valid ? 1 : 0)};
  if (table.columns().size() == row.size() + 1 && table.columns().back() == "dtype") row.emplace_back(m.dtype);
  table.add_row(std::move(row));
}

const std::vector<std::string>& measurement_screen_columns(Share share) {
  static const std::vector<std::string> roofline = {"version", "config",       "n",         "median_ms", "sd_ms",
                                                    "gbps",    "pct_roofline", "rel_error", "valid"};
  static const std::vector<std::string> link = {"version", "config",   "n",         "median_ms", "sd_ms",
                                                "gbps",    "pct_link", "rel_error", "valid"};
  return share == Share::link ? link : roofline;
}

}  // namespace course
