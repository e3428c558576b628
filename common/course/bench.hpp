#pragma once
/// \file bench.hpp
/// \brief The measurement row every chapter's tables and CSVs share.
///
/// Every table reports time, GB/s and % of the card's measured read roofline, beside whether the
/// result was validated. One row type keeps the CSV columns identical across chapters, so the
/// plot scripts share one loader.

#include <cstddef>
#include <string>

#include "course/stats.hpp"
#include "course/table.hpp"

namespace course {

/// One measured configuration.
struct Measurement {
  std::string version;       ///< registry name
  std::string config;        ///< what else was fixed: "float, with copies", "block=256"; may be empty
  std::size_t n = 0;         ///< elements per input vector
  double bytes = 0;          ///< bytes the computation must move at least (inputs read once)
  Stats ms;                  ///< time per run, milliseconds
  double roofline_gbps = 0;  ///< measured read roofline of the card; 0 when there is no GPU
  double rel_error = 0;      ///< relative error against the fp64 reference
  bool valid = false;        ///< validated before and after timing
  std::string dtype;         ///< the element types, "float32*bool" (chapter 10); only in measurement_table_typed()
};

/// GB/s (1e9 bytes per second) for `bytes` moved in `ms` milliseconds.
double gbps(double bytes, double ms);

/// What a table's percentage column is a share of: the card's measured read roofline
/// (`pct_roofline`, every chapter whose data is on the device) or the host link's measured rate
/// (`pct_link`, chapters 08 and 09, where Measurement::roofline_gbps holds that rate). One name,
/// one meaning across the course.
enum class Share { roofline, link };

/// An empty table with the shared columns: version, config, n, bytes, reps, median_ms, mean_ms,
/// sd_ms, min_ms, gbps, pct_roofline (or pct_link), rel_error, valid.
Table measurement_table(Share share = Share::roofline);

/// measurement_table() plus a last column `dtype`: the element types of the inputs ("float32*int8"),
/// for tables whose rows differ in type (chapter 10).
Table measurement_table_typed();

/// Appends `m` to a table made by measurement_table() or measurement_table_typed() (the dtype cell
/// is written only when the table has that column).
void add_measurement(Table& table, const Measurement& m);

/// The columns a person wants on screen (the CSV keeps them all).
const std::vector<std::string>& measurement_screen_columns(Share share = Share::roofline);

}  // namespace course
