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

#include <fcntl.h>
#include <unistd.h>

#include "course/check.hpp"
#include "course/device.hpp"

namespace course {

namespace {
/// --kernel's names: split at commas (an empty piece is a name too, and no version has it).
std::vector<std::string> split_kernels(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}
}  // namespace

bool Options::selects(std::string_view name) const {
  if (kernel.empty()) return true;
  for (const std::string& k : split_kernels(kernel))
    if (k == name) return true;
  return false;
}
namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

const char* const kSizeExamples = "a size (try 1048576, 2^20, 1<<20, 1e6, 16Mi)";

[[noreturn]] void too_large(const std::string& text) { throw UsageError(not_a(text, "a size below 2^64")); }

std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& text) {
  if (a != 0 && b > kMax / a) too_large(text);
  return a * b;
}

// term := digits [K|M|G|Ki|Mi|Gi] | digits e digits | base ^ exp | a << b
std::size_t parse_term(const std::string& t, const std::string& text) {
  auto whole = [&](const std::string& s) -> std::size_t {
    if (s.empty() || s.size() > 19) throw UsageError(not_a(text, kSizeExamples));
    for (char c : s)
      if (!std::isdigit(static_cast<unsigned char>(c))) throw UsageError(not_a(text, kSizeExamples));
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
    if (shift >= 63) too_large(text);
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

// Whether a file can be made in the existing folder `folder`: tried, not guessed from access(),
// which says yes to root where the file system refuses (/proc, for one). The probe, a new file of
// a unique name, is removed at once.
bool can_make_file_in(const std::filesystem::path& folder) {
  std::string probe = (folder / ".course-csv-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

// Whether the existing file `file` can be written: opened for appending (which changes nothing),
// not guessed from access() either.
bool can_append_to(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

std::string csv_path_problem(const std::string& path) {
  // Leaves nothing behind: a refused --csv makes no folder, and the probes are removed.
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string named = "--csv: '" + path + "' ";
  std::error_code ec;
  if (path.empty()) return "--csv: '' is not a file name";
  if (fs::is_directory(p, ec)) return named + "is a folder; give a file name";
  if (fs::exists(p, ec)) return can_append_to(p) ? "" : named + "cannot be written (the file exists)";
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
    return named + "cannot be made: '" + at.string() + "' is a file, not a folder";
  if (!missing.empty() && at == at.root_path())
    return named + "cannot be made: the folder '" + missing.string() + "' does not exist (a typo? a CSV makes "
           "folders inside an existing one, not at the top of the file system: mkdir -p " + parent.string() + " first)";
  if (!can_make_file_in(at))
    return named + "cannot be made: cannot write in '" + at.string() + "'" +
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
    if (!probe) throw UsageError("--csv: '" + path + "' cannot be written (check that its folder exists and is writable)");
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
    return not_a(text, "a device number: give 0, 1, ... (nvidia-smi -L lists this machine's GPUs)");
  return "";
}

std::string not_a(const std::string& value, const std::string& what) { return "'" + value + "' is not " + what; }

std::string whole_number_problem(const std::string& text, long long lo, long long hi) {
  const std::string what = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  // Digits, with a minus sign where negatives are allowed: no spaces, '+', fractions or exponents.
  const std::size_t first = (!text.empty() && text[0] == '-') ? 1 : 0;
  if (text.size() == first || text.size() > first + 18) return not_a(text, what);
  for (std::size_t i = first; i < text.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return not_a(text, what);
  const long long value = std::stoll(text);
  return value < lo || value > hi ? not_a(text, what) : std::string();
}

std::string size_problem(const std::string& text, std::size_t min) {
  std::size_t value = 0;
  try {
    value = parse_size(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return value < min ? not_a(text, "a size of at least " + format_size(min)) : std::string();
}

CLI::Validator whole_number(long long lo, long long hi) {
  return CLI::Validator([lo, hi](std::string& value) { return whole_number_problem(value, lo, hi); },
                        std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator size_at_least(std::size_t min) {
  return CLI::Validator([min](std::string& value) { return size_problem(value, min); }, "SIZE");
}

std::string extras_problem(const std::vector<std::string>& remaining) {
  if (remaining.empty()) return "";
  const std::string& first = remaining.front();
  if (first.size() > 1 && first[0] == '-' && !std::isdigit(static_cast<unsigned char>(first[1])))
    return "unknown option '" + first.substr(0, first.find('=')) + "'";
  return "'" + first + "' follows no option that takes a value (options are written --name VALUE; a flag takes none)";
}

std::string parse_error_words(const CLI::ParseError& e, const std::vector<std::string>& args) {
  std::string text = e.what();
  // CLI11 names the option first ("--reps: ..."); for a value's error the rest is the validator's
  // own words (not_a's). The errors of count, in CLI11's words per version, get the course's.
  const std::size_t colon = text.find(": ");
  const std::string option = colon != std::string::npos && text.rfind("-", 0) == 0 ? text.substr(0, colon) : "";
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && !option.empty()) {
    int given = 0;
    for (const auto& a : args)
      if (a == option || a.rfind(option + "=", 0) == 0) ++given;
    return given > 1 ? option + ": given " + std::to_string(given) + " times; give it once"
                     : option + ": give it a value (" + option + " VALUE)";
  }
  return text;
}

std::size_t parse_size(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  if (s.empty()) throw UsageError(not_a(text, kSizeExamples));
  // expr := term (('+' | '-') term)*, so "2^20+3" works.
  std::size_t value = 0;
  char op = '+';
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || ((s[i] == '+' || s[i] == '-') && i > start)) {
      const std::size_t term = parse_term(s.substr(start, i - start), text);
      if (op == '+') {
        if (term > kMax - value) too_large(text);
        value += term;
      } else {
        if (term > value) throw UsageError(not_a(text, "a size (it is negative)"));
        value -= term;
      }
      if (i < s.size()) op = s[i];
      start = i + 1;
    } else if (s[i] == '+' || s[i] == '-') {
      throw UsageError(not_a(text, kSizeExamples));
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
    if (std::string problem = size_problem(item); !problem.empty()) throw UsageError(named + problem);
    sizes.push_back(parse_size(item));
  }
  if (sizes.empty()) throw UsageError(named + not_a(text, "a list of sizes (try 2^20,2^26)"));
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
  // An option given twice is an error in every CLI11 version (parse_error_words says so).
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  // Every option is checked while the command line is read (the words: not_a), so bad input is
  // exit 2 before anything looks for a GPU.
  app_.add_option("--n", n_text_, "Elements per input vector: 1048576, 2^20, 1<<20, 1e6, 16Mi, 2^20+3")
      ->check(size_at_least(1))
      ->capture_default_str();
  app_.add_option("--reps", options_.reps, "Timed repetitions (the median is reported)")
      ->check(whole_number(1, 100000))
      ->capture_default_str();
  app_.add_option("--warmup", options_.warmup, "Untimed warm-up runs before timing")
      ->check(whole_number(0, 10000))
      ->capture_default_str();
  app_.add_option("--kernel", options_.kernel, "Run only these versions: one name, or several separated by commas (see --list)");
  app_.add_flag("--list", options_.list, "List the versions and exit");
  app_.add_option("--csv", options_.csv, "Write the results as CSV to this path");
  app_.add_option("--seed", options_.seed, "Seed of the random inputs")
      ->check(CLI::Validator(
          [](std::string& value) {
            // Digits only: CLI11 would read "-1" as 2^64 - 1 and "1e3" as 1000.
            const bool digits = !value.empty() && value.size() <= 19 &&
                                std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); });
            return digits ? std::string() : not_a(value, "a seed (a whole number from 0 to 10^19 - 1)");
          },
          "SEED"))
      ->capture_default_str();
  // Not CLI::NonNegativeNumber: its message prints the range [0 - DBL_MAX] in full (421 characters).
  app_.add_option("--device", options_.device, "The CUDA device to run on (0, 1, ...)")
      ->check(CLI::Validator([](std::string& value) { return device_problem(value); }, "DEVICE"))
      ->capture_default_str();
  app_.add_flag("--quiet", options_.quiet, "No progress line on stderr");
  // What CLI11 cannot place is kept and refused by run() in the course's words (extras_problem).
  app_.allow_extras(true);
  app_.footer(
      "Exit codes: 0 ran and validated, 1 CUDA error or failed validation, 2 bad command line or input,\n"
      "3 no NVIDIA GPU or driver, 4 does not fit in memory (the device's free memory, or the host's).");
}

void App::set_versions(std::vector<std::pair<std::string, std::string>> versions) { versions_ = std::move(versions); }

void App::add_check(std::function<void(const Options&)> check) { checks_.push_back(std::move(check)); }

CLI::Option* App::add_sizes_option(std::string& text, const std::string& help) {
  return app_.add_option("--sizes", text, help)
      ->check(CLI::Validator(
          [](std::string& value) {
            try {
              parse_sizes(value, "");  // no prefix: CLI11 names the option itself
            } catch (const UsageError& e) {
              return std::string(e.what());
            }
            return std::string();
          },
          "SIZES"));
}

int App::run(int argc, char** argv, const std::function<int(const Options&)>& body, bool needs_gpu) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + std::max(argc, 1));
  auto refuse = [&](const std::string& why) {
    std::cerr << name_ << ": error: " << why << "\nRun '" << name_ << " --help' for the options.\n";
    return kExitUsage;
  };
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app_.exit(e);  // --help
    return refuse(parse_error_words(e, args));
  }
  if (std::string problem = extras_problem(app_.remaining()); !problem.empty()) return refuse(problem);
  // CLI11 2.1 gives an option whose value is missing the next option as its value ("--csv --quiet"
  // would write a file named --quiet): an option's value is never one of the program's options.
  for (const CLI::Option* option : app_.get_options()) {
    for (const std::string& value : option->results()) {
      const CLI::Option* other = value.rfind("--", 0) == 0 ? app_.get_option_no_throw(value.substr(0, value.find('='))) : nullptr;
      if (other != nullptr) return refuse(option->get_name() + ": give it a value (" + value + " is an option)");
    }
  }
  try {
    // Everything the command line says is checked here, before --list, --csv's folders and the GPU.
    options_.n = parse_size(n_text_);
    options_.n_given = app_.get_option("--n")->count() > 0;
    options_.reps_given = static_cast<int>(app_.get_option("--reps")->count());
    for (const auto& check : checks_) check(options_);
    if (options_.list) {
      std::size_t width = 0;
      for (const auto& v : versions_) width = std::max(width, v.first.size());
      for (const auto& [name, what] : versions_)
        std::printf("%-*s  %s\n", static_cast<int>(width), name.c_str(), what.c_str());
      return kExitOk;
    }
    if (!options_.kernel.empty()) {
      std::string names;
      for (const auto& v : versions_) names += (names.empty() ? "" : ", ") + v.first;
      for (const std::string& asked : split_kernels(options_.kernel)) {
        bool known = false;
        for (const auto& v : versions_) known = known || v.first == asked;
        if (!known)
          throw UsageError("--kernel: " + not_a(asked, "a version of this chapter (choose one of: " + names + ")"));
      }
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
