#pragma once
/// \file table.hpp
/// \brief One table, two outputs: aligned text for people, CSV with named columns for plots/.

#include <iosfwd>
#include <string>
#include <variant>
#include <vector>

namespace course {

/// A table cell: text, a real number or a whole number.
using Cell = std::variant<std::string, double, long long>;

/// Rows of cells under named columns. print() shows numbers with 4 significant digits;
/// write_csv() keeps full precision. CSV is the only interface between executables and plots/.
///
/// The course's CSV conventions, which every chapter gets from here: column names are snake_case
/// (the constructor refuses others), a missing number (NaN) is an empty field, and a yes/no column
/// holds 1 or 0 (a whole number, never text such as "yes"/"NO" or "true").
class Table {
 public:
  /// Throws std::invalid_argument when a column name is not snake_case ([a-z][a-z0-9_]*).
  explicit Table(std::vector<std::string> columns);

  /// Appends a row; throws UsageError unless it has one cell per column.
  void add_row(std::vector<Cell> row);

  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const { return rows_; }

  /// Aligned text, a header line, a rule, one line per row; only the columns named in `only`
  /// (all when empty).
  void print(std::ostream& out, const std::vector<std::string>& only = {}) const;

  /// Writes header and rows to `path` (creating its folder), or throws UsageError naming the path.
  void write_csv(const std::string& path) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<Cell>> rows_;
};

/// The path of a chapter's secondary CSV beside its main one: ("out/05.csv", "sweep") gives
/// "out/05_sweep.csv" (chapters write their main table to --csv and the others beside it).
std::string csv_beside(const std::string& csv, const std::string& what);

/// How a cell is shown to people: numbers with 4 significant digits.
std::string format_cell(const Cell& cell);

}  // namespace course
