// Chapter 01 driver — timing, and when the GPU wins.
//
//   01_timing                       everything: the add (float, double), timing methods, intensity sweep
//   01_timing --kernel add_gpu      one version
//   01_timing --precision float     float only (double, both: the default)
//   01_timing --n 1e7 --iters 1,16  smaller and faster
//   01_timing --csv results/local/01_timing.csv
//
// Every result is validated (bitwise: an add and a square root are correctly rounded on both
// sides): a GPU version before and after timing, a CPU version on what its timed calls wrote; the
// CPU is timed with a host clock, the GPU with CUDA events.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/bench.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/device.hpp"
#include "course/progress.hpp"
#include "course/stats.hpp"
#include "course/thread_pool.hpp"
#include "course/timer.hpp"
#include "add.hpp"

namespace {

struct Settings {
  int cpu_reps = 5;
  std::size_t intensity_n = std::size_t{1} << 24;
  std::vector<int> iters = {1, 4, 16, 64};
};

template <class T>
const char* precision_name() {
  return sizeof(T) == 4 ? "float" : "double";
}

// The host's reference outputs of a problem, computed once per (problem, iters) on every core and
// kept: a square-root loop of 64 iterations on 2^24 elements takes seconds on one core, and every
// version is validated twice against it.
template <class T>
class Reference {
 public:
  const std::vector<T>& of(const ch01::Problem<T>& p, bool intensity) {
    const int iters = intensity ? p.iters : -1;
    if (&p != problem_ || iters != iters_ || out_.size() != p.n) {
      out_.assign(p.n, T(0));
      const unsigned parts = pool_.size();
      pool_.run([&](unsigned part) {
        const std::size_t begin = p.n * part / parts, end = p.n * (part + 1) / parts;
        for (std::size_t i = begin; i < end; ++i)
          out_[i] = intensity ? ch01::sqrt_loop(p.h_a[i], p.h_b[i], p.iters) : p.h_a[i] + p.h_b[i];
      });
      problem_ = &p;
      iters_ = iters;
    }
    return out_;
  }

 private:
  course::ThreadPool pool_{std::max(1u, std::thread::hardware_concurrency())};
  const ch01::Problem<T>* problem_ = nullptr;
  int iters_ = -2;
  std::vector<T> out_;
};

// Counts the outputs that differ from the host's reference computation (bitwise).
template <class T>
std::size_t count_wrong(const ch01::Problem<T>& p, const std::vector<T>& expected) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < p.n; ++i) wrong += !(p.h_out[i] == expected[i]);
  return wrong;
}

template <class T>
void fetch_output(ch01::Problem<T>& p, const ch01::Runner& r) {
  if (r.on_gpu) p.h_out = p.d_out.download(p.ctx->stream());
}

// Runs one version on one problem: validate, time, validate again; returns the row.
template <class T>
course::Measurement measure(const course::Version<ch01::Runner>& v, ch01::Problem<T>& p, course::Context& ctx,
                            const course::Options& opt, const Settings& set, const std::string& config,
                            Reference<T>& reference) {
  cudaStream_t stream = ctx.stream();
  auto run = [&] {
    if constexpr (sizeof(T) == 4) v.run.f32(p, stream); else v.run.f64(p, stream);
  };
  auto validate = [&](const char* when) {
    p.poison();  // on the context's stream: the run enqueued after it sees the poison
    run();
    CUDA_CHECK(cudaStreamSynchronize(stream));
    fetch_output(p, v.run);
    const std::size_t wrong = count_wrong(p, reference.of(p, v.run.intensity));
    if (wrong != 0) {
      std::ostringstream msg;
      msg << v.name << " (" << config << ", n=" << p.n << ") gave " << wrong << " wrong elements " << when;
      throw std::runtime_error(msg.str());
    }
  };
  std::vector<double> samples;
  if (v.run.on_gpu) {
    validate("before timing");
    samples = course::time_gpu_ms(run, opt.warmup, opt.reps, stream);
    validate("after timing");  // a benchmark must not be able to pass by not running
  } else {
    // A CPU row (seconds a call at 64 iterations) is checked on what its timed calls wrote: the
    // outputs are poisoned first, so a call that did not run or wrote wrong values fails the row,
    // and no untimed call is spent on a validation of its own. No warm-up: the first call's page
    // faults are in the poisoning, and a call of seconds needs no warming.
    p.poison();
    samples = course::time_cpu_ms(run, 0, set.cpu_reps);
    const std::size_t wrong = count_wrong(p, reference.of(p, v.run.intensity));
    if (wrong != 0) {
      std::ostringstream msg;
      msg << v.name << " (" << config << ", n=" << p.n << ") gave " << wrong << " wrong elements in its timed calls";
      throw std::runtime_error(msg.str());
    }
  }

  // bytes: read a and b, write out
  return course::measured(v.name, config, p.n, 3.0 * p.n * sizeof(T), samples, ctx.roofline().read_gbps, 0.0, true);
}

// Exercise 2 in context: three ways to time the same launch.
template <class T>
void timing_methods(ch01::Problem<T>& p, course::Context& ctx, course::Table& table) {
  using clock = std::chrono::steady_clock;
  cudaStream_t stream = ctx.stream();
  auto launch = [&] { ch01::launch_add(p.d_a.data(), p.d_b.data(), p.d_out.data(), p.n, stream); };
  launch();  // warm-up: module load, first-touch
  CUDA_CHECK(cudaStreamSynchronize(stream));

  auto t0 = clock::now();
  launch();
  auto t1 = clock::now();
  const double host_no_sync = std::chrono::duration<double, std::milli>(t1 - t0).count();
  CUDA_CHECK(cudaStreamSynchronize(stream));

  t0 = clock::now();
  launch();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  t1 = clock::now();
  const double host_sync = std::chrono::duration<double, std::milli>(t1 - t0).count();

  const double events = ch01::time_with_events_ms(launch, stream);
  table.add_row({std::string("host clock, no sync"), std::string("measures the launch only"), host_no_sync});
  table.add_row({std::string("host clock + sync"), std::string("launch + kernel + wake-up"), host_sync});
  table.add_row({std::string("CUDA events"), std::string("GPU time of the kernel (exercise 2)"), events});
}

// --iters' list; the command line has checked it (iters_problem) before anything runs.
std::vector<int> parse_iters(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

// Why `text` is not a list of square-root counts (each a whole number from 0 to 100000); empty when
// it is.
std::string iters_problem(const std::string& text) {
  std::stringstream in(text);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    if (std::string problem = course::whole_number_problem(item, 0, 100000); !problem.empty()) return problem;
    any = true;
  }
  return any ? std::string() : course::not_a(text, "a list of counts (try 1,4,16)");
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("01_timing", course::about(R"(
Chapter 01: add two vectors on the CPU and on the GPU, in float and double, with and without the
host<->device copies; then raise the arithmetic intensity with a loop of square roots and watch the
GPU's advantage grow.
)"),
                  100000000, 20, 3);
  Settings set;
  std::string iters_text = "1,4,16,64";
  std::string intensity_n_text = "2^24";
  std::string precision = "both";
  app.cli().add_option("--cpu-reps", set.cpu_reps, "Timed repetitions of the CPU versions")
      ->check(course::whole_number(1, 1000))
      ->capture_default_str();
  app.cli().add_option("--iters", iters_text, "Square roots per element in the intensity sweep (comma list)")
      ->check(CLI::Validator([](std::string& value) { return iters_problem(value); }, "LIST"))
      ->capture_default_str();
  app.cli().add_option("--intensity-n", intensity_n_text, "Elements in the intensity sweep")
      ->check(course::size_at_least(1))
      ->capture_default_str();
  app.cli().add_option("--precision", precision, "Which element types to run: float, double or both")
      ->check(CLI::IsMember({"float", "double", "both"}))
      ->capture_default_str();
  app.set_versions(ch01::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    set.iters = parse_iters(iters_text);
    set.intensity_n = course::parse_size(intensity_n_text);
    course::Context ctx(opt.device);
    const auto& roof = ctx.roofline();
    char copy_line[64];
    std::snprintf(copy_line, sizeof copy_line, ", device copy %.0f GB/s\n\n", roof.copy_gbps);
    course::print_gpu(ctx, copy_line);
    course::require_fits(3 * std::max(opt.n, set.intensity_n) * sizeof(double), "three double vectors");

    auto selected = [&](const course::Version<ch01::Runner>& v) { return opt.selects(v.name); };
    const bool run_float = precision != "double", run_double = precision != "float";
    const bool any_intensity = std::any_of(ch01::versions().begin(), ch01::versions().end(),
                                           [&](const auto& v) { return selected(v) && v.run.intensity; });
    int steps = 0;
    for (const auto& v : ch01::versions())
      if (selected(v))
        steps += (int{run_float} + int{run_double}) * (v.run.intensity ? static_cast<int>(set.iters.size()) : 1);
    course::Progress progress(steps, "01_timing", !opt.quiet);
    course::Table table = course::measurement_table();
    std::string predictions;  // exercise 3's lines, printed after the table

    auto sweep = [&](auto tag) {
      using T = decltype(tag);
      Reference<T> reference;
      {
        ch01::Problem<T> p(opt.n, 0, opt.seed, &ctx);
        for (const auto& v : ch01::versions())
          if (selected(v) && !v.run.intensity) {
            progress.step(std::string(v.name) + " " + precision_name<T>());
            const course::Measurement m = measure(v, p, ctx, opt, set, precision_name<T>(), reference);
            if (v.name == "add_gpu") {  // exercise 3: the prediction, printed beside the measurement
              const double predicted = ch01::predicted_add_ms(opt.n, sizeof(T), roof.read_gbps);
              char line[256];
              std::snprintf(line, sizeof line,
                            "add_gpu (%s, n = %s): predicted from the measured roofline: %.4f ms; measured: %.4f ms "
                            "(%.0f%% of the prediction's speed)\n",
                            precision_name<T>(), course::format_size(opt.n).c_str(), predicted, m.ms.median,
                            m.ms.median > 0 ? 100.0 * predicted / m.ms.median : 0.0);
              predictions += line;
            }
            course::add_measurement(table, m);
          }
      }
      if (!any_intensity) return;  // no version of the sweep selected: nothing to allocate for it
      ch01::Problem<T> q(set.intensity_n, 0, opt.seed, &ctx);
      for (int iters : set.iters) {
        q.iters = iters;
        for (const auto& v : ch01::versions())
          if (selected(v) && v.run.intensity) {
            progress.step(std::string(v.name) + " " + precision_name<T>() + " iters=" + std::to_string(iters));
            course::add_measurement(table, measure(v, q, ctx, opt, set,
                                                   std::string(precision_name<T>()) + ", iters=" + std::to_string(iters),
                                                   reference));
          }
      }
    };
    if (run_float) sweep(float{});
    if (run_double) sweep(double{});
    progress.done();

    std::cout << "Every row validated bitwise against the host (GPU rows before and after timing, CPU rows\n"
                 "on the output of their timed calls).\n"
                 "bytes = 3 n sizeof(T): the minimum traffic (read a, b; write out).\n\n";
    table.print(std::cout, course::measurement_screen_columns());
    if (!predictions.empty()) std::cout << "\nPredict, then measure (exercise 3, ch01::predicted_add_ms):\n" << predictions;

    course::Table methods({"method", "what_it_measures", "ms"});
    if (opt.selects("add_gpu") && run_float) {
      ch01::Problem<float> p(opt.n, 0, opt.seed, &ctx);
      timing_methods(p, ctx, methods);
      std::cout << "\nThree ways to time one float add kernel, n = " << course::format_size(opt.n) << ":\n";
      methods.print(std::cout);
    }
    course::write_csvs(opt.csv, table, {{"methods", methods.rows().empty() ? nullptr : &methods}});
    if (!opt.csv.empty()) std::cout << "\nCSV written to " << opt.csv << "\n";
    return course::kExitOk;
  });
}
