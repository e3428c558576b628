// Chapter 03 driver — one GPU thread, and the round trip around it.
//
//   03_one_thread                          every version at 2^16, 2^20 and 2^24
//   03_one_thread --n 2^22                 one size only
//   03_one_thread --sizes 2^10,2^20        these sizes
//   03_one_thread --kernel one_thread      one version
//   03_one_thread --csv results/local/03_one_thread.csv   also writes 03_one_thread_phases.csv
//
// Each version is measured twice: "kernel only" (inputs already on the GPU, CUDA events, what
// every later chapter reports) and "round trip" (round_trip(): allocate, copy in, launch, copy
// back, free, on every call, on the legacy default stream; host clock, what a caller waits). The
// phases table splits the round trip into its steps; everything else runs on the context's
// stream. One thread is slow: at 2^24 a call takes a good fraction of a second, so
// slow configurations get fewer timed runs (at least 3; see kBudgetMs), and sizes above 2^24
// take minutes. The speed_of_light row is not a dot product (the floor: the whole GPU reads the
// same bytes and does nothing else): it is timed kernel only, checked only for having written a
// value, and has no round trip.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/inputs.hpp"
#include "course/device.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch03::Launcher>;

// A configuration gets as many timed runs as fit in this budget, at least kMinReps, at most --reps.
constexpr double kBudgetMs = 3000.0;
constexpr int kMinReps = 3;

using Inputs = course::DeviceDotInputs;

course::Verdict require_valid(float got, const Inputs& in, const std::string& what) {
  const course::Verdict v = course::check_dot(got, in.ref);
  if (!v.ok) throw std::runtime_error(what + " at n = " + std::to_string(in.x.size()) + ": " + v.message);
  return v;
}

// The speed-of-light row computes no dot product: it passes when it wrote a finite value over the
// NaN poison, and its relative error is NaN (an empty cell).
course::Verdict require_ran(float got, const Inputs& in, const std::string& what) {
  const course::Verdict v = course::ran_verdict(got);
  if (!v.ok) throw std::runtime_error(what + " at n = " + std::to_string(in.x.size()) + ": " + v.message);
  return v;
}

int reps_for(double first_ms, const course::Options& opt) {
  return std::clamp(static_cast<int>(kBudgetMs / std::max(first_ms, 1e-3)), kMinReps, opt.reps);
}

// Kernel only: inputs resident on the GPU, timed with CUDA events on the context's stream,
// validated before and after.
course::Measurement measure_kernel(const Version& v, Inputs& in, course::Context& ctx, const course::Options& opt,
                                   double roofline_gbps) {
  const std::size_t n = in.x.size();
  cudaStream_t stream = ctx.stream();
  auto launch = [&] { v.run(in.d_x.data(), in.d_y.data(), n, in.d_result.data(), ctx, stream); };
  const bool is_floor = ch03::is_speed_of_light(v);
  auto validate = [&](const char* when) {
    in.d_result.fill_bytes(0xFF, stream);
    launch();
    const float got = in.d_result.download(stream)[0];
    const std::string what = std::string(v.name) + " (kernel only) " + when;
    return is_floor ? require_ran(got, in, what) : require_valid(got, in, what);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const course::Verdict before = validate("before timing");
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int reps = reps_for(first_ms, opt);
  const auto samples = course::time_gpu_ms(launch, std::min(opt.warmup, reps), reps, stream);
  const course::Verdict after = validate("after timing");

  return course::measured(v.name, "kernel only", n, 2.0 * n * sizeof(float), samples, roofline_gbps,
                          is_floor ? std::nan("") : std::max(before.rel_error, after.rel_error), true);
}

// Round trip: everything on every call, timed with the host clock (the call blocks until the
// result is back on the host); each call's steps are kept for the phases table.
course::Measurement measure_round_trip(const Version& v, const Inputs& in, course::Context& ctx,
                                       const course::Options& opt, double roofline_gbps,
                                       std::vector<ch03::Phases>& phases) {
  const std::size_t n = in.x.size();
  auto call = [&](ch03::Phases* p) { return ch03::round_trip(v.run, ctx, in.x.data(), in.y.data(), n, p); };
  const auto t0 = std::chrono::steady_clock::now();
  const course::Verdict before = require_valid(call(nullptr), in, std::string(v.name) + " (round trip) before timing");
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int reps = reps_for(first_ms, opt);
  const int warmup = std::min(opt.warmup, reps);
  std::vector<ch03::Phases> all;
  volatile float sink = 0.0f;
  const auto samples = course::time_cpu_ms(
      [&] {
        ch03::Phases p;
        sink = call(&p);
        all.push_back(p);
      },
      warmup, reps);
  (void)sink;
  phases.assign(all.begin() + warmup, all.end());  // the warm-up calls are not among the samples
  const course::Verdict after = require_valid(call(nullptr), in, std::string(v.name) + " (round trip) after timing");

  return course::measured(v.name, "round trip", n, 2.0 * n * sizeof(float), samples, roofline_gbps,
                          std::max(before.rel_error, after.rel_error), true);
}

// One row per step of the round trip: its median, its share of the whole call, and for the
// copies the bandwidth they reached. "other" is what the steps do not account for (the host
// side of launches and synchronizations).
void add_phase_rows(course::Table& table, const std::string& version, std::size_t n,
                    const std::vector<ch03::Phases>& phases) {
  struct Step {
    const char* name;
    double ch03::Phases::*field;
    double bytes;
  };
  const double input_bytes = static_cast<double>(n) * sizeof(float);
  const Step steps[] = {{"allocate", &ch03::Phases::allocate_ms, 0},
                        {"copy x", &ch03::Phases::copy_x_ms, input_bytes},
                        {"copy y", &ch03::Phases::copy_y_ms, input_bytes},
                        {"kernel", &ch03::Phases::kernel_ms, 2 * input_bytes},
                        {"copy back", &ch03::Phases::copy_back_ms, sizeof(float)},
                        {"free", &ch03::Phases::free_ms, 0}};
  auto column = [&](double ch03::Phases::*field) {
    std::vector<double> v;
    for (const auto& p : phases) v.push_back(p.*field);
    return course::summarize(v);
  };
  const course::Stats total = column(&ch03::Phases::total_ms);
  auto row = [&](const std::string& step, const course::Stats& s, double bytes) {
    table.add_row({version, static_cast<long long>(n), step, s.median, s.mean, s.sd, s.min,
                   total.median > 0 ? 100.0 * s.median / total.median : std::nan(""),
                   bytes > 0 ? course::gbps(bytes, s.median) : std::nan(""), static_cast<long long>(s.count)});
  };
  std::vector<double> other;
  for (const auto& p : phases)
    other.push_back(p.total_ms - (p.allocate_ms + p.copy_x_ms + p.copy_y_ms + p.kernel_ms + p.copy_back_ms + p.free_ms));
  for (const Step& s : steps) row(s.name, column(s.field), s.bytes);
  row("other", course::summarize(other), 0);
  row("total", total, 0);
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("03_one_thread", course::about(R"(
Chapter 03: one GPU thread computes the whole dot product, beside cuBLAS. Each version runs alone on
data already on the GPU, and inside the first program everyone writes: allocate, copy in, launch,
copy back, free, on every call, with each step timed.
)"),
                  std::size_t{1} << 20, 50, 3);
  std::string sizes_text;
  app.add_sizes_option(sizes_text, "Comma list of sizes (default: 2^16,2^20,2^24, or only --n when given)");
  app.set_versions(ch03::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    const std::vector<std::size_t> sizes = course::sweep_sizes(
        opt, sizes_text, {std::size_t{1} << 16, std::size_t{1} << 20, std::size_t{1} << 24}, course::SizesFirst::sizes);
    const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
    course::Context ctx(opt.device);
    cudaStream_t stream = ctx.stream();
    // The resident inputs and, during a round trip, a second copy of them.
    course::require_fits(4 * largest * sizeof(float) + 2 * sizeof(float), "two resident inputs and a round trip's copies");

    const auto& roof = ctx.roofline();
    course::print_gpu(ctx, "\n\n");

    const std::vector<const Version*> chosen = course::select_versions(ch03::versions(), opt);
    const std::size_t floors = static_cast<std::size_t>(
        std::count_if(chosen.begin(), chosen.end(), [](const Version* v) { return ch03::is_speed_of_light(*v); }));
    course::Progress progress(static_cast<int>(sizes.size() * (2 * chosen.size() - floors)), "03_one_thread",
                              !opt.quiet);

    course::Table table = course::measurement_table();
    course::Table phase_table({"version", "n", "phase", "median_ms", "mean_ms", "sd_ms", "min_ms", "pct_of_total",
                               "gbps", "reps"});
    for (const std::size_t n : sizes) {
      // Random signed inputs with planted spikes and their reference, copied on the context's
      // stream, which every kernel-only run uses: ordered, no wait needed.
      Inputs in(n, opt.seed, stream);
      for (const Version* v : chosen) {
        progress.step(std::string(v->name) + " kernel only, n=" + course::format_size(n));
        course::add_measurement(table, measure_kernel(*v, in, ctx, opt, roof.read_gbps));
        if (ch03::is_speed_of_light(*v)) continue;  // the floor of the kernel alone: no round trip
        progress.step(std::string(v->name) + " round trip, n=" + course::format_size(n));
        std::vector<ch03::Phases> phases;
        course::add_measurement(table, measure_round_trip(*v, in, ctx, opt, roof.read_gbps, phases));
        add_phase_rows(phase_table, std::string(v->name), n, phases);
      }
    }
    progress.done();

    std::cout << "Inputs: signed, uniform [-1, 1), planted spikes (course::plant_spikes). bytes = 2 n sizeof(float).\n"
                 "kernel only: CUDA events around the launch, inputs already on the GPU.\n"
                 "round trip: host clock around round_trip() (allocate, copy in, launch, copy back, free).\n"
                 "Every row validated against the fp64 reference before and after timing, except speed_of_light:\n"
                 "not a dot (the floor: the whole GPU reads x and y, nothing else), kernel only, checked for having\n"
                 "written a value; its rel_error is empty.\n\n";
    table.print(std::cout, course::measurement_screen_columns());
    std::cout << "\nWhere a round trip's time goes (medians; pct_of_total of the median call; gbps for the copies\n"
                 "and for the kernel's reads):\n\n";
    phase_table.print(std::cout, {"version", "n", "phase", "median_ms", "pct_of_total", "gbps"});
    course::write_csvs(opt.csv, table, {{"phases", &phase_table}});
    if (!opt.csv.empty()) std::cout << "\nCSV written to " << opt.csv << " and " << course::csv_beside(opt.csv, "phases") << "\n";
    return course::kExitOk;
  });
}
