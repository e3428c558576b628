// Chapter 04 driver — one block: the race, and atomics.
//
//   04_one_block                          every version at n = 2^20 and 2^24, then the race shown
//   04_one_block --kernel atomic_once     one version
//   04_one_block --n 2^22 --reps 20       one size (given --n, only that size is measured)
//   04_one_block --csv results/local/04_one_block.csv   (and 04_one_block_race.csv beside it)
//
// Every version is validated against the fp64 reference before and after timing; the racy one
// fails, as it must, and is reported but does not fail the run. Then every version adds n ones
// several times: the exact answer is n, so the racy result counts the additions that survived.
// The speed_of_light row is not a dot product (the floor: the whole GPU reads the same bytes and
// does nothing else): it is timed like the versions, checked only for having written a value, and
// left out of the race demonstration.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <set>
#include <string>
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

using Version = course::Version<ch04::GpuDot>;

// The larger size of the default sweep: 2 × 64 MiB of inputs, well beyond the H100's 50 MB L2,
// so the timings measure memory, not cache.
constexpr std::size_t kLargeN = std::size_t{1} << 24;
// Runs of the race demonstration.
constexpr int kRaceRuns = 10;

// Random signed inputs with planted spikes on the device, their fp64 reference, and the result.
// Copied on the context's stream, which every run uses.
using Inputs = course::DeviceDotInputs;

std::string shape_text(const ch04::Workspace& ws) {
  return "grid=" + std::to_string(ws.grid) + " block=" + std::to_string(ws.block);
}

// What validation means for `v`: the fp64 reference, or for the speed-of-light row (not a dot
// product) only that it wrote a finite value over the NaN poison (its rel_error stays empty).
course::Verdict check(const Version& v, double got, const course::Reference& ref) {
  return v.run.floor ? course::ran_verdict(got) : course::check_dot(got, ref);
}

// Validate, time, validate the last timed run's result again; one row of the table.
course::Measurement measure(const Version& v, Inputs& in, course::Context& ctx, const course::Options& opt) {
  ch04::Workspace ws(ctx);
  cudaStream_t stream = ctx.stream();
  auto run = [&] { v.run.launch(in.d_x.data(), in.d_y.data(), in.n, in.d_result.data(), ws, stream); };
  auto result = [&] { return static_cast<double>(in.d_result.download(stream)[0]); };  // waits for the stream
  in.d_result.fill_bytes(0xFF, stream);  // NaN until a run writes it
  run();
  const course::Verdict before = check(v, result(), in.ref);
  in.d_result.fill_bytes(0xFF, stream);  // the timed runs must write it again
  const auto samples = course::time_gpu_ms(run, opt.warmup, opt.reps, stream);
  const course::Verdict after = check(v, result(), in.ref);

  // bytes: x and y, read once
  const course::Measurement m = course::measured(v.name, shape_text(ws), in.n, 2.0 * static_cast<double>(in.n) * sizeof(float),
                                                 samples, ctx.roofline().read_gbps, after.rel_error, before.ok && after.ok);
  if (!m.valid && !v.run.racy)
    std::fprintf(stderr, "04_one_block: %s at n = %zu FAILED validation: %s\n", m.version.c_str(), in.n,
                 (before.ok ? after : before).message.c_str());
  return m;
}

// Adds n ones, kRaceRuns times per version: the exact answer is n, and what a version loses shows.
void race_demo(const std::vector<const Version*>& selected, std::size_t n, course::Context& ctx,
               course::Table& table, course::Progress& progress) {
  cudaStream_t stream = ctx.stream();
  const std::vector<float> ones(n, 1.0f);
  course::DeviceBuffer<float> d_ones(ones, stream), d_result(1);
  for (const Version* v : selected) {
    if (v->run.floor) continue;  // not a dot product: it adds nothing up
    progress.step(std::string(v->name) + " adds " + course::format_size(n) + " ones");
    ch04::Workspace ws(ctx);
    for (int r = 0; r < kRaceRuns; ++r) {
      d_result.fill_bytes(0xFF, stream);
      v->run.launch(d_ones.data(), d_ones.data(), n, d_result.data(), ws, stream);
      const double got = d_result.download(stream)[0];  // waits for the stream
      const double expected = static_cast<double>(n);
      table.add_row({std::string(v->name), static_cast<long long>(r), static_cast<long long>(n), got, expected,
                     expected - got, n > 0 ? 100.0 * (expected - got) / expected : 0.0});
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("04_one_block", course::about(R"(
Chapter 04: one block of threads computes a dot product. Adding into one result without atomics
races and loses updates; atomicAdd on every product is right but serialized; a register sum per
thread with one atomicAdd each is right and much faster.
)"),
                  std::size_t{1} << 20);
  app.set_versions(ch04::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    std::vector<std::size_t> sizes = {opt.n};
    if (!opt.n_given && opt.n < kLargeN) sizes.push_back(kLargeN);
    const std::vector<const Version*> selected = course::select_versions(ch04::versions(), opt);

    course::Context ctx(opt.device);
    const auto& facts = ctx.facts();
    course::print_gpu(ctx);
    std::printf("One block of %d threads (the occupancy API's suggestion) on one of the %d SMs\n\n",
                ch04::one_block_threads(ctx), facts.sm_count);

    std::size_t largest = 0;
    for (std::size_t n : sizes) largest = std::max(largest, n);
    course::require_fits(2 * largest * sizeof(float) + sizeof(float), "two float vectors of n = " +
                                                                          course::format_size(largest));

    const std::size_t floors = static_cast<std::size_t>(
        std::count_if(selected.begin(), selected.end(), [](const Version* v) { return v->run.floor; }));
    course::Progress progress(static_cast<int>(selected.size() * (sizes.size() + 1) - floors), "04_one_block",
                              !opt.quiet);
    course::Table table = course::measurement_table();
    std::set<std::string> failed;
    for (std::size_t n : sizes) {
      Inputs in(n, opt.seed, ctx.stream());
      for (const Version* v : selected) {
        progress.step(std::string(v->name) + " n=" + course::format_size(n));
        const course::Measurement m = measure(*v, in, ctx, opt);
        if (!m.valid && !v->run.racy) failed.insert(m.version);
        course::add_measurement(table, m);
      }
    }

    course::Table race({"version", "run", "n", "result", "expected", "lost", "lost_pct"});
    race_demo(selected, opt.n, ctx, race, progress);
    progress.done();

    std::cout << "Random signed inputs; each version validated against the fp64 reference before and after "
                 "timing.\nbytes = 2 n sizeof(float): x and y read once. The racy version loses updates, the lesson, not a "
                 "bug:\nvalid = 0 in every row where version=race, n>=2^16.\nspeed_of_light is not a dot (the floor: the whole GPU reads x and y, "
                 "nothing else): checked for having written a value, its rel_error empty.\n\n";
    table.print(std::cout, course::measurement_screen_columns());
    std::cout << "\nEvery version adds " << course::format_size(opt.n) << " ones " << kRaceRuns
              << " times (the exact answer is n; 'lost' counts the additions that vanished):\n\n";
    race.print(std::cout);

    course::write_csvs(opt.csv, table, {{"race", &race}});
    if (!opt.csv.empty()) std::cout << "\nCSV written to " << opt.csv << " and " << course::csv_beside(opt.csv, "race") << "\n";
    return course::exit_code("04_one_block", failed);
  });
}
