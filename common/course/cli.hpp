#pragma once
/// \file cli.hpp
/// \brief The command line every chapter shares, and main()'s error handling.
///
/// Every executable takes --n, --reps, --warmup, --kernel, --list, --csv, --seed and --help.
/// A chapter adds its own options through cli() before run(). run() turns every failure into one
/// clear line on stderr and a distinct exit code (course::ExitCode).

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "course/registry.hpp"

namespace course {

/// The options common to all chapters, after parsing.
struct Options {
  std::size_t n = 0;              ///< elements per input vector (--n)
  int reps = 0;                   ///< timed repetitions (--reps)
  int warmup = 0;                 ///< untimed warm-up runs (--warmup)
  std::string kernel;             ///< the versions to run, comma-separated, or empty for all (--kernel)
  /// Whether --kernel selects the version `name`: it is empty (all), or `name` is one of its
  /// comma-separated names.
  bool selects(std::string_view name) const;
  std::string csv;                ///< where to write the CSV, or empty (--csv)
  std::uint64_t seed = 2024;      ///< seed of the random inputs (--seed)
  int device = 0;                 ///< the CUDA device to run on (--device)
  bool list = false;              ///< print the versions and exit (--list)
  bool quiet = false;             ///< no progress line (--quiet)
  bool n_given = false;           ///< --n was on the command line (else n is the chapter's default)
  int reps_given = 0;             ///< how often --reps was on the command line (0: the default)
};

/// Parses "1048576", "2^20", "1<<20", "1e6", "16M", "4Ki" (K/M/G are powers of 1000, Ki/Mi/Gi of
/// 1024). Throws UsageError with the offending text otherwise.
std::size_t parse_size(const std::string& text);

/// A comma list of sizes, each as parse_size reads it ("2^20,2^26"). Throws UsageError, naming
/// `option` (nothing when it is empty), for an empty list, an item that is not a size, or a size of 0.
std::vector<std::size_t> parse_sizes(const std::string& text, const std::string& option = "--sizes");

/// "2^20" for powers of two, the plain number otherwise.
std::string format_size(std::size_t n);

/// Why no CSV can be written at `path`, as one line naming --csv; empty when it can. Leaves
/// nothing behind: a folder, an unwritable file or folder, a file in the way, and a missing folder at
/// the top of the file system ("/nonexistent/x.csv": a typo, not a folder to make) are refused.
/// Whether a folder takes a file is tried (a probe file made and removed at once), not guessed:
/// access() tells root yes where the file system says no ("/proc/x.csv").
std::string csv_path_problem(const std::string& path);

/// Throws UsageError when no CSV can be written at `path` (run() checks csv_path_problem before
/// the GPU check and this just before the work). Makes missing parent folders, as
/// Table::write_csv would; leaves an existing file untouched and removes one it had to create.
void check_csv_writable(const std::string& path);

/// Why `text` is not a --device number (0, 1, ...), as one short line; empty when it is.
std::string device_problem(const std::string& text);

/// The course's one wording for a value an option refuses: "'VALUE' is not WHAT". The command line
/// names the option in front ("--reps: '0' is not a whole number from 1 to 100000").
std::string not_a(const std::string& value, const std::string& what);

/// Why `text` is not a whole number from `lo` to `hi` (not_a's wording); empty when it is.
std::string whole_number_problem(const std::string& text, long long lo, long long hi);

/// Why `text` is not a size (parse_size) of at least `min`; empty when it is. Every size option,
/// --n and --sizes included, refuses 0 unless its `min` is 0 (then 0 means "none").
std::string size_problem(const std::string& text, std::size_t min = 1);

/// CLI11 checks with those words, for a chapter's own options, so that every option of every
/// chapter is refused while the command line is read, before the GPU check, in one wording.
CLI::Validator whole_number(long long lo, long long hi);
CLI::Validator size_at_least(std::size_t min = 1);

/// A chapter's command line and main().
class App {
 public:
  /// `name` is the executable ("05_many_blocks"), `description` one or two sentences for --help.
  App(std::string name, std::string description, std::size_t default_n, int default_reps = 50,
      int default_warmup = 5);

  /// The CLI11 application, to add chapter-specific options before run().
  CLI::App& cli() { return app_; }

  /// The versions --kernel accepts and --list prints: (name, description) pairs.
  void set_versions(std::vector<std::pair<std::string, std::string>> versions);
  /// The same, from a chapter's registry (the one list of its versions).
  template <class Fn>
  void set_versions(const std::vector<Version<Fn>>& registry) {
    std::vector<std::pair<std::string, std::string>> versions;
    for (const auto& v : registry) versions.emplace_back(v.name, v.description);
    set_versions(std::move(versions));
  }

  /// Adds `--sizes LIST` (checked with parse_sizes while parsing, so a bad list is refused before
  /// any work); the chapter reads it with parse_sizes(text) when text is not empty.
  CLI::Option* add_sizes_option(std::string& text, const std::string& help);

  /// A check of the parsed command line that one option's own check cannot make (two options
  /// together, a value the chapter reads itself): it throws UsageError. Every check runs after
  /// parsing and before --list, the GPU check and `body`, so bad input is exit 2 on any machine.
  void add_check(std::function<void(const Options&)> check);

  /// Parses, validates (every option's check, then add_check's), handles --help and --list, checks
  /// the --csv path, checks for a GPU when `needs_gpu`, then calls `body` and returns its exit code. Maps exceptions to exit codes: UsageError and parse errors → 2,
  /// NoGpuError → 3, DoesNotFitError → 4, CudaError and anything else → 1. With COURSE_NO_GPU_SAID=1
  /// in the environment, exit code 3 comes without its message (the caller said it once for all).
  int run(int argc, char** argv, const std::function<int(const Options&)>& body, bool needs_gpu = true);

 private:
  std::string name_;
  CLI::App app_;
  Options options_;
  std::string n_text_;
  std::vector<std::pair<std::string, std::string>> versions_;
  std::vector<std::function<void(const Options&)>> checks_;
};

/// Why a command line has arguments CLI11 could not place (the list `remaining`, in its order), as
/// one line naming the first: an unknown option by its name (`--streams`), or a value that follows
/// no option taking one (`0`). CLI11 2.1's own message listed them in reverse order. Empty when
/// the list is.
std::string extras_problem(const std::vector<std::string>& remaining);

/// The words run() prints for an error CLI11 raised while parsing (`args`: the command line without
/// the program's name): the option first, one wording per error, whatever CLI11's version says.
std::string parse_error_words(const CLI::ParseError& e, const std::vector<std::string>& args);

}  // namespace course
