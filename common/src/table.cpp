#include "course/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "course/check.hpp"

namespace course {
namespace {

std::string csv_cell(const Cell& cell) {
  if (const auto* d = std::get_if<double>(&cell)) {
    if (std::isnan(*d)) return "";  // missing: an empty field, as every CSV reader expects
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", *d);
    return buf;
  }
  if (const auto* i = std::get_if<long long>(&cell)) return std::to_string(*i);
  const std::string& s = std::get<std::string>(cell);
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::string format_cell(const Cell& cell) {
  if (const auto* d = std::get_if<double>(&cell)) {
    if (std::isnan(*d)) return "-";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.4g", *d);
    return buf;
  }
  if (const auto* i = std::get_if<long long>(&cell)) return std::to_string(*i);
  return std::get<std::string>(cell);
}

std::string csv_beside(const std::string& csv, const std::string& what) {
  std::string stem = csv;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".csv") == 0) stem.resize(stem.size() - 4);
  return stem + "_" + what + ".csv";
}

Table::Table(std::vector<std::string> columns) : columns_(std::move(columns)) {
  // A programming error, found by the first run of the writer: plots/ and the text's selectors
  // name columns, and a space or a capital in a name is one more way for them to disagree.
  for (const auto& name : columns_) {
    const bool snake = !name.empty() && name[0] >= 'a' && name[0] <= 'z' &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                       });
    if (!snake) throw std::invalid_argument("Table: column name '" + name + "' is not snake_case");
  }
}

void Table::add_row(std::vector<Cell> row) {
  if (row.size() != columns_.size())
    throw UsageError("Table::add_row: " + std::to_string(row.size()) + " cells for " +
                     std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out, const std::vector<std::string>& only) const {
  std::vector<std::size_t> shown;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (only.empty() || std::find(only.begin(), only.end(), columns_[c]) != only.end()) shown.push_back(c);
  std::vector<std::size_t> width(columns_.size(), 0);
  for (std::size_t c : shown) width[c] = columns_[c].size();
  for (const auto& row : rows_)
    for (std::size_t c : shown) width[c] = std::max(width[c], format_cell(row[c]).size());
  auto line = [&](auto cell_text) {
    std::string text;
    for (std::size_t k = 0; k < shown.size(); ++k) {
      const std::size_t c = shown[k];
      std::string cell = cell_text(c);
      const bool left = k == 0;  // names left, numbers right
      const std::string pad(width[c] - cell.size(), ' ');
      text += (k ? "  " : "") + (left ? cell + pad : pad + cell);
    }
    out << text << '\n';
  };
  line([&](std::size_t c) { return columns_[c]; });
  line([&](std::size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : rows_) line([&](std::size_t c) { return format_cell(row[c]); });
}

void Table::write_csv(const std::string& path) const {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(p);
  if (!out) throw UsageError("cannot write CSV to '" + path + "'");
  for (std::size_t c = 0; c < columns_.size(); ++c) out << (c ? "," : "") << columns_[c];
  out << '\n';
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) out << (c ? "," : "") << csv_cell(row[c]);
    out << '\n';
  }
  if (!out) throw UsageError("error while writing CSV '" + path + "'");
}

}  // namespace course
