// Chapter 02 driver — the dot product on the CPU, and what "correct" means.
//
//   02_cpu_dot                          every version at 2^12, 2^16, 2^20 and 2^24, then the accuracy sweep
//   02_cpu_dot --n 2^22                 one size only
//   02_cpu_dot --sizes 2^10,2^20        these sizes
//   02_cpu_dot --kernel pairwise        one version
//   02_cpu_dot --threads 4              the threaded versions on 4 threads (default: one per hardware thread)
//   02_cpu_dot --csv results/local/02_cpu_dot.csv     also writes 02_cpu_dot_accuracy.csv beside it
//
// Runs without a GPU. With one, the "% of roofline" column compares the CPU with the GPU's
// measured read roofline, the ceiling of every later chapter; without one that column is empty.
// Every timed result is validated against the fp64 reference under course::dot_error_bound,
// before and after timing. The versions named bug_* are wrong on purpose and do not fail the run;
// whether a row of theirs shows valid = 0 depends on the size (and, for the race, on the run).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/bench.hpp"
#include "course/cli.hpp"
#include "course/inputs.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/device.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch02::CpuVersion>;

// A slow version (the shared accumulator at 2^24 takes seconds per call) gets fewer timed runs:
// as many as fit in this budget, at least kMinReps, at most --reps.
constexpr double kBudgetMs = 3000.0;
constexpr int kMinReps = 5;

struct Settings {
  std::vector<std::size_t> sizes;
  std::size_t accuracy_n = std::size_t{1} << 24;
  ch02::CpuConfig config;
};

std::string config_of(const Version& v, const ch02::CpuConfig& config, std::size_t n) {
  const unsigned threads = v.run.threaded ? ch02::thread_count(config, n) : 1u;
  return "threads=" + std::to_string(threads);
}

// 2^10, 2^12, ... below `largest`, then `largest`.
std::vector<std::size_t> accuracy_sizes(std::size_t largest) {
  std::vector<std::size_t> out;
  for (std::size_t n = 1024; n < largest; n *= 4) out.push_back(n);
  if (largest != 0) out.push_back(largest);
  return out;
}

// One row of the main table: validate, time (steady_clock, warm-up dropped), validate again.
course::Measurement measure(const Version& v, const std::vector<float>& x, const std::vector<float>& y,
                            const course::Reference& ref, const course::Options& opt, const Settings& set,
                            double roofline_gbps) {
  const std::size_t n = x.size();
  volatile float sink = 0.0f;  // the result is used, so no call can be optimized away
  auto run = [&] { sink = v.run.dot(x.data(), y.data(), n, set.config); };
  const bool expect_right = !v.run.wrong_on_purpose;
  auto validate = [&](const char* when) {
    const float got = v.run.dot(x.data(), y.data(), n, set.config);
    const course::Verdict verdict = course::check_dot(got, ref);
    if (expect_right && !verdict.ok)
      throw std::runtime_error(std::string(v.name) + " at n = " + std::to_string(n) + " " + when + ": " +
                               verdict.message);
    return verdict;
  };

  const auto t0 = std::chrono::steady_clock::now();
  const course::Verdict before = validate("before timing");
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int reps = std::clamp(static_cast<int>(kBudgetMs / std::max(first_ms, 1e-3)), kMinReps, opt.reps);
  const int warmup = std::min(opt.warmup, reps);
  const auto samples = course::time_cpu_ms(run, warmup, reps);
  const course::Verdict after = validate("after timing");  // a benchmark must not pass by not running
  (void)sink;

  // bytes: read x and y once, the least any dot product must move
  return course::measured(v.name, config_of(v, set.config, n), n, 2.0 * n * sizeof(float), samples, roofline_gbps,
                          std::max(before.rel_error, after.rel_error), before.ok && after.ok);
}

// The accuracy sweep: one call per version and size, on two kinds of data, against the fp64
// reference and the error bound. Uniform [0, 1) is where the sequential float sum goes wrong:
// every product is positive, the running sum grows to n/4, and each addition rounds it.
course::Table accuracy_sweep(const std::vector<const Version*>& chosen, const Settings& set, std::uint64_t seed,
                             course::Progress& progress) {
  course::Table table({"version", "data", "n", "result", "reference", "abs_error", "rel_error", "bound",
                       "rel_bound", "within_bound"});
  struct Data {
    const char* name;
    float lo, hi;
  };
  // Names without spaces or commas: the text selects rows by them.
  const Data kinds[] = {{"positive", 0.0f, 1.0f}, {"signed", -1.0f, 1.0f}};
  for (const Data& d : kinds) {
    const auto x_all = course::random_vector(set.accuracy_n, seed + 2, d.lo, d.hi);
    const auto y_all = course::random_vector(set.accuracy_n, course::seed_y(seed + 2), d.lo, d.hi);
    for (const std::size_t n : accuracy_sizes(set.accuracy_n)) {
      const course::Reference ref = course::reference_dot(x_all.data(), y_all.data(), n);
      progress.step(std::string("accuracy, ") + d.name + ", n=" + course::format_size(n));
      for (const Version* v : chosen) {
        const float got = v->run.dot(x_all.data(), y_all.data(), n, set.config);
        const course::Verdict verdict = course::check_dot(got, ref);
        table.add_row({std::string(v->name), std::string(d.name), static_cast<long long>(n), static_cast<double>(got),
                       ref.value, verdict.error, verdict.rel_error, verdict.bound,
                       ref.value != 0 ? verdict.bound / std::fabs(ref.value) : verdict.bound,
                       static_cast<long long>(verdict.ok ? 1 : 0)});
      }
    }
  }
  return table;
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("02_cpu_dot", course::about(R"(
Chapter 02: the dot product on the CPU. A plain loop, the accumulator-type bug, the standard
library, a vectorized loop, a pairwise sum, and threads (racing on one accumulator, then with
partial sums); how accurate each is against an fp64 reference. These are the CPU baselines of every
later chapter. Needs no GPU.
)"),
                  std::size_t{1} << 20, 50, 5);
  Settings set;
  std::string sizes_text;
  std::string accuracy_n_text = "2^24";
  app.add_sizes_option(sizes_text, "Comma list of sizes to time (default: 2^12,2^16,2^20,2^24, or only --n when given)");
  app.cli().add_option("--accuracy-n", accuracy_n_text,
                       "Largest size of the accuracy sweep (sizes 2^10, 2^12, ... up to it); 0 skips it")
      ->check(CLI::Validator(
          [](std::string& value) {
            if (std::string problem = course::size_problem(value, 0); !problem.empty()) return problem;
            const std::size_t n = course::parse_size(value);
            return n == 0 || n >= 1024 ? std::string() : course::not_a(value, "0 (skip) or a size of at least 2^10");
          },
          "SIZE"))
      ->capture_default_str();
  app.cli().add_option("--threads", set.config.threads, "Threads of the threaded versions (0: one per hardware thread)")
      ->check(course::whole_number(0, 1024))
      ->capture_default_str();
  app.set_versions(ch02::versions());

  return app.run(
      argc, argv,
      [&](const course::Options& opt) {
        set.sizes = course::sweep_sizes(opt, sizes_text,
                                        {std::size_t{1} << 12, std::size_t{1} << 16, std::size_t{1} << 20,
                                         std::size_t{1} << 24},
                                        course::SizesFirst::sizes, /*sorted=*/false);
        set.accuracy_n = course::parse_size(accuracy_n_text);
        // x and y of the largest size live at once (the accuracy sweep's pair, too): refuse a size
        // the machine cannot hold before allocating, instead of ending in a bare std::bad_alloc.
        const std::size_t largest = std::max(*std::max_element(set.sizes.begin(), set.sizes.end()), set.accuracy_n);
        if (largest > std::numeric_limits<std::size_t>::max() / (2 * sizeof(float)))
          throw course::UsageError("--n " + course::format_size(largest) + " is too large");
        course::require_host_fits(2 * largest * sizeof(float),
                                  "02_cpu_dot at n = " + course::format_size(largest) + " (x and y)");

        // The GPU only lends its roofline to the last column, for comparison with later chapters.
        double roofline_gbps = 0.0;
        std::string why;
        if (course::gpu_available(&why)) {
          course::Context ctx(opt.device);
          const auto& facts = ctx.facts();
          roofline_gbps = ctx.roofline().read_gbps;
          std::printf("GPU: %s; measured read roofline %.0f GB/s. %% of roofline = CPU GB/s / that.\n",
                      course::describe_device(facts).c_str(), roofline_gbps);
        } else {
          std::printf("%s: this chapter runs on the CPU alone; the %% of roofline column is empty.\n",
                      course::no_gpu_message(why).c_str());
        }
        std::printf("CPU: %u hardware threads; threaded versions use %u.\n\n", std::thread::hardware_concurrency(),
                    ch02::thread_count(set.config, std::size_t{1} << 30));

        const std::vector<const Version*> chosen = course::select_versions(ch02::versions(), opt);

        const int steps = static_cast<int>(set.sizes.size() * chosen.size()) +
                          static_cast<int>(2 * accuracy_sizes(set.accuracy_n).size());
        course::Progress progress(steps, "02_cpu_dot", !opt.quiet);

        course::Table table = course::measurement_table();
        for (const std::size_t n : set.sizes) {
          // Random signed inputs with planted spikes (course::HostDotInputs) and their reference.
          const course::HostDotInputs in(n, opt.seed);
          const std::vector<float>& x = in.x;
          const std::vector<float>& y = in.y;
          const course::Reference& ref = in.ref;
          for (const Version* v : chosen) {
            progress.step(std::string(v->name) + " n=" + course::format_size(n));
            course::add_measurement(table, measure(*v, x, y, ref, opt, set, roofline_gbps));
          }
        }
        course::Table accuracy({"version"});
        if (set.accuracy_n != 0) accuracy = accuracy_sweep(chosen, set, opt.seed, progress);
        progress.done();

        // The claims "COLUMN = VALUE in every row where ..." are checked on the rows by
        // tools/check_captions.py (run_course, and the reference CSVs in CI): write only what every run shows.
        std::cout << "Timed on signed data, uniform [-1, 1), with planted spikes (course::plant_spikes).\n"
                     "bytes = 2 n sizeof(float): x and y read once.\n"
                     "valid = within course::dot_error_bound of the fp64 reference, before and after timing; a\n"
                     "version that misses it stops the run, unless it is wrong on purpose (bug_*), so\n"
                     "valid = 1 in every row where version!=bug_*.\n"
                     "The int accumulator truncates every addition and loses the spikes: valid = 0 in every row\n"
                     "where version=bug_int_accumulator. The shared accumulator loses an update only when two\n"
                     "threads overlap; at small n each thread is done before the next one has started, nothing is\n"
                     "lost and its row can show valid 1. The race decides, not the code.\n\n";
        table.print(std::cout, course::measurement_screen_columns());
        if (set.accuracy_n != 0) {
          std::cout << "\nAccuracy at n = " << course::format_size(set.accuracy_n)
                    << " (the CSV has every size from 2^10): result against the fp64 reference.\n"
                       "positive: x and y uniform in [0, 1); signed: uniform in [-1, 1), no spikes.\n"
                       "rel_bound = the tolerance the tests allow, relative to the reference; within_bound: the\n"
                       "error is under it. A tolerance, not a verdict: it assumes rounding errors of random sign.\n"
                       "On positive data the plain loop's errors all go one way, and at large n they leave it\n"
                       "although the loop has no bug: within_bound = 0 in every row where version=sequential,\n"
                       "data=positive, n>=2^22. On signed data it grows with sum |x y| (about n/4) while the answer\n"
                       "is about sqrt(n)/3, so at 2^24 it admits even the int accumulator's 0: within_bound = 1 in\n"
                       "every row where version=bug_int_accumulator, data=signed, n>=2^24. The pairwise sum stays\n"
                       "within it: within_bound = 1 in every row where version=pairwise.\n\n";
          course::rows_where(accuracy, "n", static_cast<long long>(set.accuracy_n))
              .print(std::cout, {"version", "data", "result", "reference", "rel_error", "rel_bound", "within_bound"});
        }
        course::write_csvs(opt.csv, table, {{"accuracy", set.accuracy_n != 0 ? &accuracy : nullptr}});
        if (!opt.csv.empty())
          std::cout << "\nCSV written to " << opt.csv
                    << (set.accuracy_n != 0 ? " and " + course::csv_beside(opt.csv, "accuracy") : std::string()) << "\n";
        return course::kExitOk;
      },
      /*needs_gpu=*/false);
}
