// Chapter 05 driver — many blocks, and the block reduction.
//
//   05_many_blocks                            every version at n = 2^20 and 2^24, the --per-thread
//                                             sweep of two_level, and the determinism check
//   05_many_blocks --kernel block_tree        one version
//   05_many_blocks --kernel two_level --per-thread 16   one knob value, no sweep
//   05_many_blocks --n 2^22 --reps 20         one size (given --n, only that size is measured)
//   05_many_blocks --csv results/local/05_many_blocks.csv
//       (and 05_many_blocks_per_thread.csv, 05_many_blocks_determinism.csv beside it)
//
// Every version is validated against the fp64 reference before timing, and every timed call after
// it (each call writes its own result, and one element of x changes between calls). Then each runs
// kRuns times on the same inputs: the versions without atomics must give the same bits every
// time; the ones with atomics may not, and the table shows how many different results they gave.
// The speed_of_light row is not a dot product (the floor: the same bytes, the best loads, nothing
// else): it is timed like the versions, checked only for having written a value, and left out of
// the determinism table.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/inputs.hpp"
#include "course/device.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/table.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch05::GpuDot>;

// The larger size of the default sweep: 2 × 64 MiB of inputs, well beyond the H100's 50 MB L2,
// so the timings measure memory, not cache.
constexpr std::size_t kLargeN = std::size_t{1} << 24;
// Runs of the determinism check.
constexpr int kRuns = 20;
// The --per-thread values of the default sweep of two_level.
const std::vector<int> kPerThreadSweep = {1, 2, 4, 8, 16, 32, 64};

// Random signed inputs with planted spikes on the device, their fp64 reference, and the result.
// Copied on the context's stream, which every run uses.
using Inputs = course::DeviceDotInputs;

/// One run of `v` on `in`, its result back on the host (waits for the stream).
float run_once(const Version& v, Inputs& in, ch05::Workspace& ws) {
  cudaStream_t stream = ws.ctx.stream();
  v.run.launch(in.d_x.data(), in.d_y.data(), in.n, in.d_result.data(), ws, stream);
  return in.d_result.download(stream)[0];
}

std::string shape_text(const Version& v, const ch05::Workspace& ws) {
  if (ws.grid == 0) return "library";
  std::string s = "grid=" + std::to_string(ws.grid) + " block=" + std::to_string(ws.block);
  if (v.name == "two_level") s += " per_thread=" + std::to_string(ws.per_thread);
  return s;
}

// What validation means for `v`: the fp64 reference, or for the speed-of-light row (not a dot
// product) only that it wrote a finite value over the NaN poison.
course::Verdict check(const Version& v, float got, const course::Reference& ref) {
  return v.run.floor ? course::ran_verdict(got) : course::check_dot(got, ref);
}

// Validate, time, check every timed call; one row of a table. Each call (warm-up too) writes its own
// result slot, and x[at] alternates between its value and a spike before every call, outside the
// events (course::TimedInputChange): a call that returns an earlier call's answer, from a cache kept
// by pointer or in the workspace, is wrong on the next call and seen. The calls stay back to back:
// the change is a device-to-device copy of one float on the same stream, and the host waits only
// once, after the last call.
course::Measurement measure(const Version& v, Inputs& in, ch05::Workspace& ws, const course::Options& opt,
                            int per_thread, const std::string& config = "") {
  ws.per_thread = per_thread;
  cudaStream_t stream = ws.ctx.stream();
  in.d_result.fill_bytes(0xFF, stream);  // NaN until a run writes it
  const course::Verdict before = check(v, run_once(v, in, ws), in.ref);

  const course::TimedInputChange change = course::timed_input_change(
      in.ref, in.n, [&](std::size_t i) { return std::make_pair(in.x[i], in.y[i]); });
  const std::size_t warmup = static_cast<std::size_t>(std::max(opt.warmup, 0));
  const std::size_t calls = warmup + static_cast<std::size_t>(std::max(opt.reps, 0));
  course::DeviceBuffer<float> d_slots(std::max<std::size_t>(calls, 1));
  d_slots.fill_bytes(0xFF, stream);  // NaN: a call that writes nothing cannot pass
  const course::DeviceBuffer<float> d_values(std::vector<float>{change.original, change.spike}, stream);
  auto set_x = [&](bool changed) {  // x[at] as made, or the spike; in order on the stream
    CUDA_CHECK(cudaMemcpyAsync(in.d_x.data() + change.at, d_values.data() + (changed ? 1 : 0), sizeof(float),
                               cudaMemcpyDeviceToDevice, stream));
  };
  std::size_t current = 0;
  auto between = [&](std::size_t i) {  // outside the events
    current = i;
    if (change.active && i > 0) set_x(course::changed_at(change, i));
  };
  auto run = [&] { v.run.launch(in.d_x.data(), in.d_y.data(), in.n, d_slots.data() + current, ws, stream); };
  const auto samples = course::time_gpu_ms(run, opt.warmup, opt.reps, stream, between);
  if (change.active) set_x(false);  // x as made again, for what comes next
  std::vector<float> got = d_slots.download(stream);
  got.resize(calls);
  const course::Verdict after = course::check_timed_calls(
      std::vector<double>(got.begin(), got.end()), warmup,
      [&](std::size_t i, double r) { return check(v, static_cast<float>(r), change.ref(course::changed_at(change, i))); },
      [&](std::size_t i) { return course::changed_at(change, i); });

  // bytes: x and y, read once
  const course::Measurement m =
      course::measured(v.name, config.empty() ? shape_text(v, ws) : config, in.n,
                       2.0 * static_cast<double>(in.n) * sizeof(float), samples, ws.ctx.roofline().read_gbps,
                       after.rel_error, before.ok && after.ok);
  if (!m.valid)
    std::fprintf(stderr, "05_many_blocks: %s at n = %zu FAILED validation: %s\n", m.version.c_str(), in.n,
                 (before.ok ? after : before).message.c_str());
  return m;
}

std::uint32_t bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// kRuns runs on the same inputs: how many different results, and their spread.
void determinism_row(const Version& v, Inputs& in, ch05::Workspace& ws, int per_thread, course::Table& table,
                     std::set<std::string>& failed) {
  ws.per_thread = per_thread;
  std::set<std::uint32_t> distinct;
  double lo = 0, hi = 0;
  bool all_ok = true;
  for (int r = 0; r < kRuns; ++r) {
    in.d_result.fill_bytes(0xFF, ws.ctx.stream());
    const float got = run_once(v, in, ws);
    all_ok = all_ok && course::check_dot(got, in.ref).ok;
    distinct.insert(bits(got));
    lo = r == 0 ? got : std::min<double>(lo, got);
    hi = r == 0 ? got : std::max<double>(hi, got);
  }
  if (!all_ok || (v.run.deterministic && distinct.size() != 1)) failed.insert(std::string(v.name));
  table.add_row({std::string(v.name), static_cast<long long>(in.n), static_cast<long long>(kRuns),
                 static_cast<long long>(distinct.size()), lo, hi, hi - lo, in.ref.value,
                 static_cast<long long>(v.run.deterministic ? 1 : 0)});
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("05_many_blocks", course::about(R"(
Chapter 05: many blocks compute a dot product. A grid-stride loop with one atomic per thread; a
block reduction in shared memory (serial, then a tree) with one atomic per block; per-block partials
summed on the host (deterministic); a warp-shuffle block reduction; cuBLAS as the baseline.
)"),
                  std::size_t{1} << 20);
  int per_thread = ch05::kDefaultPerThread;
  app.cli()
      .add_option("--per-thread", per_thread,
                  "Elements each thread of two_level sums before the block reduction (given: no sweep)")
      ->check(course::whole_number(1, 4096))
      ->capture_default_str();
  app.set_versions(ch05::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    const bool per_thread_given = app.cli().get_option("--per-thread")->count() > 0;
    std::vector<std::size_t> sizes = {opt.n};
    if (!opt.n_given && opt.n < kLargeN) sizes.push_back(kLargeN);
    const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
    const std::vector<const Version*> selected = course::select_versions(ch05::versions(), opt);
    const Version* two_level = nullptr;
    for (const Version* v : selected)
      if (v->name == "two_level") two_level = v;
    const std::vector<int> sweep = (two_level != nullptr && !per_thread_given) ? kPerThreadSweep : std::vector<int>{};

    course::Context ctx(opt.device);
    course::print_gpu(ctx, "\n\n");
    // Inputs, the result, and the largest scratch: one partial per block of two_level at per_thread 1.
    course::require_fits(2 * largest * sizeof(float) + largest / 32 * sizeof(float) + sizeof(float),
                         "two float vectors of n = " + course::format_size(largest));
    // One workspace for the whole run: its scratch is planned here for the largest n, once.
    ch05::Workspace ws(ctx, largest);

    const std::size_t floors = static_cast<std::size_t>(
        std::count_if(selected.begin(), selected.end(), [](const Version* v) { return v->run.floor; }));
    const int steps = static_cast<int>(selected.size() * (sizes.size() + 1) - floors + sweep.size());
    course::Progress progress(steps, "05_many_blocks", !opt.quiet);
    course::Table table = course::measurement_table();
    course::Table per_thread_table = course::measurement_table();
    course::Table determinism({"version", "n", "runs", "distinct", "min_result", "max_result", "spread",
                               "reference", "deterministic"});
    std::set<std::string> failed;
    for (std::size_t n : sizes) {
      Inputs in(n, opt.seed, ctx.stream());
      for (const Version* v : selected) {
        progress.step(std::string(v->name) + " n=" + course::format_size(n));
        const course::Measurement m = measure(*v, in, ws, opt, per_thread);
        if (!m.valid) failed.insert(m.version);
        course::add_measurement(table, m);
      }
      if (n == largest)
        for (int k : sweep) {
          progress.step("two_level per_thread=" + std::to_string(k) + " n=" + course::format_size(n));
          const course::Measurement m = measure(*two_level, in, ws, opt, k, "per_thread=" + std::to_string(k));
          if (!m.valid) failed.insert(m.version);
          course::add_measurement(per_thread_table, m);
        }
    }
    {
      Inputs in(opt.n, opt.seed, ctx.stream());
      for (const Version* v : selected) {
        if (v->run.floor) continue;  // not a dot product: nothing to be deterministic about
        progress.step(std::string(v->name) + " " + std::to_string(kRuns) + " runs, same input");
        determinism_row(*v, in, ws, per_thread, determinism, failed);
      }
    }
    progress.done();

    std::cout << "Random signed inputs; each version validated against the fp64 reference before timing, and "
                 "every timed call after it (x changes between calls).\nbytes = 2 n sizeof(float): x and y read once.\n\n";
    table.print(std::cout, course::measurement_screen_columns());
    if (!sweep.empty()) {
      std::cout << "\ntwo_level at n = " << course::format_size(largest) << ", elements per thread swept:\n\n";
      per_thread_table.print(std::cout, course::measurement_screen_columns());
    }
    std::cout << "\n" << kRuns << " runs of each version on the same " << course::format_size(opt.n)
              << " inputs (deterministic = 1: no atomics, a fixed order of additions):\n\n";
    determinism.print(std::cout);

    course::write_csvs(opt.csv, table,
                       {{"per_thread", sweep.empty() ? nullptr : &per_thread_table}, {"determinism", &determinism}});
    if (!opt.csv.empty())
      std::cout << "\nCSV written to " << opt.csv
                << (sweep.empty() ? std::string() : ", " + course::csv_beside(opt.csv, "per_thread")) << ", "
                << course::csv_beside(opt.csv, "determinism") << "\n";
    return course::exit_code("05_many_blocks", failed, "version(s) gave wrong or unsteady results");
  });
}
