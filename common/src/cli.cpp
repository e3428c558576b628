#include "course/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <unistd.h>

#include "course/check.hpp"
#include "course/device.hpp"

namespace course {
namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& text) {
  if (a != 0 && b > kMax / a) throw UsageError("size '" + text + "' is too large");
  return a * b;
}

// term := digits [K|M|G|Ki|Mi|Gi] | digits e digits | base ^ exp | a << b
std::size_t parse_term(const std::string& t, const std::string& text) {
  auto whole = [&](const std::string& s) -> std::size_t {
    if (s.empty() || s.size() > 19) throw UsageError("'" + text + "' is not a size (try 1048576, 2^20, 1<<20, 1e6, 16Mi)");
    for (char c : s)
      if (!std::isdigit(static_cast<unsigned char>(c)))
        throw UsageError("'" + text + "' is not a size (try 1048576, 2^20, 1<<20, 1e6, 16Mi)");
    return std::stoull(s);
  };
  auto power = [&](std::size_t base, std::size_t exp) {
    // 0 and 1 never overflow, so the loop below would run `exp` times (up to 10^19): answer now.
    if (base == 0) return std::size_t{exp == 0 ? 1u : 0u};
    if (base == 1) return std::size_t{1};
    std::size_t v = 1;  // base >= 2: overflows, and throws, within 64 steps
    for (std::size_t k = 0; k < exp; ++k) v = checked_mul(v, base, text);
    return v;
  };
  if (auto p = t.find('^'); p != std::string::npos) return power(whole(t.substr(0, p)), whole(t.substr(p + 1)));
  if (auto p = t.find("<<"); p != std::string::npos) {
    const std::size_t shift = whole(t.substr(p + 2));
    if (shift >= 63) throw UsageError("size '" + text + "' is too large");
    return checked_mul(whole(t.substr(0, p)), std::size_t{1} << shift, text);
  }
  if (auto p = t.find_first_of("eE"); p != std::string::npos) return checked_mul(whole(t.substr(0, p)), power(10, whole(t.substr(p + 1))), text);
  static const std::pair<const char*, std::size_t> suffixes[] = {
      {"Ki", std::size_t{1} << 10}, {"Mi", std::size_t{1} << 20}, {"Gi", std::size_t{1} << 30},
      {"K", 1000}, {"M", 1000000}, {"G", 1000000000}};
  for (const auto& [suffix, scale] : suffixes) {
    const std::string s(suffix);
    if (t.size() > s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0)
      return checked_mul(whole(t.substr(0, t.size() - s.size())), scale, text);
  }
  return whole(t);
}

}  // namespace

std::string csv_path_problem(const std::string& path) {
  // Looks only: makes nothing, so a refused --csv leaves no folder behind.
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string named = "--csv '" + path + "': ";
  std::error_code ec;
  if (path.empty()) return named + "give a file name";
  if (fs::is_directory(p, ec)) return named + "is a folder; give a file name";
  if (fs::exists(p, ec)) {
    if (::access(p.c_str(), W_OK) != 0) return named + "the file exists and cannot be written";
    return "";
  }
  // The nearest folder that exists: the file goes in it, or in folders made inside it.
  fs::path parent = p.parent_path();
  if (parent.empty()) parent = ".";
  fs::path missing;  // the outermost folder that would have to be made
  fs::path at = parent;
  while (!fs::exists(at, ec)) {
    missing = at;
    const fs::path up = at.parent_path();
    if (up.empty() || up == at) {
      at = up.empty() ? fs::path(".") : up;  // "new/x.csv": made in the current folder
      break;
    }
    at = up;
  }
  if (!fs::is_directory(at, ec))
    return named + "'" + at.string() + "' is a file, not a folder";
  if (!missing.empty() && at == at.root_path())
    return named + "the folder '" + missing.string() + "' does not exist (a typo? a CSV makes folders inside an "
           "existing one, not at the top of the file system: mkdir -p " + parent.string() + " first)";
  if (::access(at.c_str(), W_OK | X_OK) != 0)
    return named + "cannot write in '" + at.string() + "'" +
           (missing.empty() ? std::string() : " (to make '" + missing.string() + "')");
  return "";
}

void check_csv_writable(const std::string& path) {
  // Refused before any work, not after minutes of it. Opened for append, so an existing file is
  // left as it is; one this check created is removed again. Parent folders are made, as
  // Table::write_csv would make them, once csv_path_problem has found nothing wrong.
  if (std::string problem = csv_path_problem(path); !problem.empty()) throw UsageError(problem);
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  const bool existed = fs::exists(p, ec);
  {
    std::ofstream probe(p, std::ios::app);
    if (!probe) throw UsageError("cannot write --csv '" + path + "' (check that its folder exists and is writable)");
  }
  if (!existed) fs::remove(p, ec);
}

std::string device_problem(const std::string& text) {
  std::size_t used = 0;
  long value = -1;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 0 || value > std::numeric_limits<int>::max())
    return "'" + text + "' is not a device number: give 0, 1, ... (nvidia-smi -L lists this machine's GPUs)";
  return "";
}

std::size_t parse_size(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  if (s.empty()) throw UsageError("empty size");
  // expr := term (('+' | '-') term)*, so "2^20+3" works.
  std::size_t value = 0;
  char op = '+';
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || ((s[i] == '+' || s[i] == '-') && i > start)) {
      const std::size_t term = parse_term(s.substr(start, i - start), text);
      if (op == '+') {
        if (term > kMax - value) throw UsageError("size '" + text + "' is too large");
        value += term;
      } else {
        if (term > value) throw UsageError("size '" + text + "' is negative");
        value -= term;
      }
      if (i < s.size()) op = s[i];
      start = i + 1;
    } else if (s[i] == '+' || s[i] == '-') {
      throw UsageError("'" + text + "' is not a size (try 1048576, 2^20, 1<<20, 1e6, 16Mi)");
    }
  }
  return value;
}

std::vector<std::size_t> parse_sizes(const std::string& text, const std::string& option) {
  const std::string named = option.empty() ? "" : option + ": ";
  std::vector<std::size_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      sizes.push_back(parse_size(item));
    } catch (const UsageError& e) {
      throw UsageError(named + e.what());
    }
    if (sizes.back() == 0) throw UsageError(named + "sizes must be at least 1");
  }
  if (sizes.empty()) throw UsageError(named + "give at least one size, e.g. 2^20,2^26");
  return sizes;
}

std::string format_size(std::size_t n) {
  if (n >= 1024 && (n & (n - 1)) == 0) {
    int k = 0;
    while ((std::size_t{1} << k) != n) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(n);
}

App::App(std::string name, std::string description, std::size_t default_n, int default_reps, int default_warmup)
    : name_(std::move(name)), app_(std::move(description), name_) {
  options_.n = default_n;
  options_.reps = default_reps;
  options_.warmup = default_warmup;
  n_text_ = format_size(default_n);
  app_.add_option("--n", n_text_, "Elements per input vector: 1048576, 2^20, 1<<20, 1e6, 16Mi, 2^20+3")
      ->capture_default_str();
  app_.add_option("--reps", options_.reps, "Timed repetitions (the median is reported)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app_.add_option("--warmup", options_.warmup, "Untimed warm-up runs before timing")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app_.add_option("--kernel", options_.kernel, "Run only this version (see --list)");
  app_.add_flag("--list", options_.list, "List the versions and exit");
  app_.add_option("--csv", options_.csv, "Write the results as CSV to this path");
  app_.add_option("--seed", options_.seed, "Seed of the random inputs")->capture_default_str();
  // Not CLI::NonNegativeNumber: its message prints the range [0 - DBL_MAX] in full (421 characters).
  app_.add_option("--device", options_.device, "The CUDA device to run on (0, 1, ...)")
      ->check(CLI::Validator([](std::string& value) { return device_problem(value); }, "DEVICE"))
      ->capture_default_str();
  app_.add_flag("--quiet", options_.quiet, "No progress line on stderr");
  app_.footer(
      "Exit codes: 0 ran and validated, 1 CUDA error or failed validation, 2 bad command line or input,\n"
      "3 no NVIDIA GPU or driver, 4 does not fit in memory (the device's free memory, or the host's).");
}

void App::set_versions(std::vector<std::pair<std::string, std::string>> versions) { versions_ = std::move(versions); }

CLI::Option* App::add_sizes_option(std::string& text, const std::string& help) {
  return app_.add_option("--sizes", text, help)
      ->check(CLI::Validator(
          [](std::string& value) {
            try {
              parse_sizes(value, "");  // no prefix: CLI11 names the option itself
            } catch (const std::exception& e) {
              return std::string(e.what());
            }
            return std::string();
          },
          "SIZES"));
}

int App::run(int argc, char** argv, const std::function<int(const Options&)>& body, bool needs_gpu) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app_.exit(e);  // --help
    std::cerr << name_ << ": error: " << e.what() << "\nRun '" << name_ << " --help' for the options.\n";
    return kExitUsage;
  }
  try {
    options_.n = parse_size(n_text_);
    options_.n_given = app_.get_option("--n")->count() > 0;
    options_.reps_given = static_cast<int>(app_.get_option("--reps")->count());
    if (options_.list) {
      std::size_t width = 0;
      for (const auto& v : versions_) width = std::max(width, v.first.size());
      for (const auto& [name, what] : versions_)
        std::printf("%-*s  %s\n", static_cast<int>(width), name.c_str(), what.c_str());
      return kExitOk;
    }
    if (!options_.kernel.empty()) {
      bool known = false;
      std::string names;
      for (const auto& v : versions_) {
        known = known || v.first == options_.kernel;
        names += (names.empty() ? "" : ", ") + v.first;
      }
      if (!known) throw UsageError("--kernel '" + options_.kernel + "' is not a version of this chapter; choose one of: " + names);
    }
    // --csv is checked before the GPU (a bad path is exit 2 on any machine) and its folders are made
    // only once the work is about to start, so a refused run leaves nothing behind.
    if (!options_.csv.empty())
      if (std::string problem = csv_path_problem(options_.csv); !problem.empty()) throw UsageError(problem);
    if (needs_gpu) require_gpu();
    if (!options_.csv.empty()) check_csv_writable(options_.csv);
    return body(options_);
  } catch (const UsageError& e) {
    std::cerr << name_ << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const NoGpuError& e) {
    // A caller that has said why already (tools/run_course.sh, once for every chapter) sets
    // COURSE_NO_GPU_SAID=1: the exit code alone tells it.
    const char* said = std::getenv("COURSE_NO_GPU_SAID");
    if (said == nullptr || std::string(said) != "1") std::cerr << name_ << ": " << e.what() << "\n";
    return kExitNoGpu;
  } catch (const DoesNotFitError& e) {
    std::cerr << name_ << ": does not fit: " << e.what() << "\n";
    return kExitDoesNotFit;
  } catch (const CudaError& e) {
    std::cerr << name_ << ": CUDA error: " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << name_ << ": error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace course
