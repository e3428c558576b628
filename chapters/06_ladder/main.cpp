// Chapter 06 driver — the reduction ladder.
//
//   06_ladder                                   the report: every version at N = 2^10, 2^12, ..., 2^28,
//                                               the ladder table at 2^24 and 2^28, the targets
//   06_ladder --quick                           fewer sizes (2^10 to 2^24) and 30 repetitions
//   06_ladder --kernel v9_float4 --n 2^28       one version (the baselines always run beside it)
//   06_ladder --sizes 2^20,2^26                 chosen sizes
//   06_ladder --csv results/local/06_ladder.csv also writes 06_ladder_{ladder,sweep,targets,device}.csv
//   06_ladder --device 1                        another GPU (everything runs on its course::Context)
//
// Every version is validated against an fp64 reference before and after timing. Each call is timed
// on its own with a pair of CUDA events (GPU time from the start event to the stop event: for small
// N that is mostly launch latency, which is the point there), the versions in turn (call r of each
// before call r + 1 of any). Inputs rotate over enough copies that
// each size reads at least twice the L2's capacity between two uses of the same copy, so no size is
// served from the cache. Beside every version, per size: the launch-latency floor, an empty
// kernel's time per call (timed the same way) plus the bytes over the measured read roofline, and
// the registry's speed_of_light row (the read-only kernel: the final version's loads and grid, no
// combine), the floor with memory latency, timed like every version but checked only for having run.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/device.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch06::Launcher>;

// [g80]
// The 2007 figures (Harris, "Optimizing Parallel Reduction in CUDA"): a sum of 2^22 ints on a
// G80 (GeForce 8800 GTX, 86.4 GB/s peak), one row per classic kernel. Not measured here: quoted.
struct G80Row {
  const char* version;
  double ms;
  double gbps;
};
constexpr G80Row kG80[] = {
    {"v1_divergent", 8.054, 2.083},       {"v2_bank_conflicts", 3.456, 4.854}, {"v3_sequential", 1.722, 9.741},
    {"v4_first_add", 0.965, 17.377},      {"v5_unroll_warp", 0.536, 31.289},   {"v6_unroll_all", 0.381, 43.996},
    {"v7_many_per_thread", 0.268, 62.671},
};
constexpr double kG80PeakGbps = 86.4;
// [g80]

const G80Row* g80_row(const std::string& version) {
  for (const auto& r : kG80)
    if (version == r.version) return &r;
  return nullptr;
}

/// `sets` copies of the same random x and y (each copy starts on a 256-byte boundary), and their
/// fp64 reference. Calls rotate over the copies.
struct Inputs {
  std::size_t n = 0;
  std::size_t stride = 0;  ///< elements from one copy to the next
  std::size_t sets = 1;
  course::DeviceBuffer<float> d_x, d_y;
  course::Reference ref;

  const float* x(std::size_t set) const { return d_x.data() + set * stride; }
  const float* y(std::size_t set) const { return d_y.data() + set * stride; }
  /// x[i] of copy `set` becomes `value` (course::TimedInputChange), in order on `stream`.
  void set_x(std::size_t set, std::size_t i, float value, cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(d_x.data() + set * stride + i, &value, sizeof value, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));  // `value` lives on this function's stack
  }
  /// {x[i], y[i]} of copy 0, read back from the device.
  std::pair<float, float> xy_at(std::size_t i) const {
    std::pair<float, float> v;
    CUDA_CHECK(cudaMemcpy(&v.first, x(0) + i, sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&v.second, y(0) + i, sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  }

  /// Copies needed so that `sets` copies of both inputs hold at least 2 × L2.
  static std::size_t sets_for(std::size_t n, std::size_t l2_bytes) {
    return course::copies_beyond_l2(2.0 * static_cast<double>(n) * sizeof(float), l2_bytes);
  }
  static std::size_t stride_for(std::size_t n) { return std::max<std::size_t>(64, (n + 63) / 64 * 64); }

  Inputs(std::size_t n_, std::size_t l2_bytes, std::uint64_t seed, cudaStream_t stream)
      : n(n_), stride(stride_for(n_)), sets(sets_for(n_, l2_bytes)), d_x(sets * stride), d_y(sets * stride) {
    course::fill_random_device(d_x.data(), n, seed, -1.0f, 1.0f, stream);
    course::fill_random_device(d_y.data(), n, course::seed_y(seed), -1.0f, 1.0f, stream);
    course::replicate(d_x.data(), stride * sizeof(float), n * sizeof(float), sets, stream);
    course::replicate(d_y.data(), stride * sizeof(float), n * sizeof(float), sets, stream);
    ref = ch06::streamed_reference(n, seed, course::seed_y(seed));  // on the host, while the GPU copies
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
};

/// Runs `v` once on copy `set` with a poisoned result and checks it against the reference. The
/// speed-of-light row is not a dot product: it passes when it wrote a finite value over the poison.
course::Verdict validate(const Version& v, const Inputs& in, std::size_t set, course::DeviceBuffer<float>& d_result,
                         ch06::Workspace& ws) {
  cudaStream_t stream = ws.ctx.stream();
  const float got =
      course::poisoned_run(d_result, [&] { v.run(in.x(set), in.y(set), in.n, d_result.data(), ws, stream); }, stream);
  return ch06::is_speed_of_light(v) ? course::ran_verdict(got) : course::check_dot(got, in.ref);
}

/// Times every version of `vs` at one size (the speed_of_light row among them), and beside them an
/// empty kernel. One call at a time,
/// each on an idle GPU, timed by its own event pair: the time per call a caller waits, launch
/// latency included (for small n that latency is the point; see the chapter's text). Round-robin:
/// call r of every version runs before call r + 1 of any, so a drift of the clocks or the memory
/// system during the size falls on every version alike, the empty kernel included. Every version
/// is validated before and after timing: a benchmark must not be able to pass by not running.
/// And every timed call is checked too, after its stop event, and the copy it read is changed
/// before that copy is read again (one element of x alternates with a spike: TimedInputChange), so
/// that a version that returns an earlier call's answer, from a cache kept in the workspace that
/// the benchmark never resets, fails here and not only in a test that calls as the benchmark does.
std::vector<course::Measurement> measure_size(const std::vector<const Version*>& vs, Inputs& in,
                                              ch06::Workspace& ws, const course::Options& opt, int reps,
                                              std::vector<std::string>& failures, double& empty_ms) {
  cudaStream_t stream = ws.ctx.stream();
  course::DeviceBuffer<float> d_result(1);
  const std::size_t count = vs.size();  // index `count` is the empty kernel
  std::vector<course::Verdict> before;
  for (const Version* v : vs) before.push_back(validate(*v, in, 0, d_result, ws));
  const course::TimedInputChange change =
      course::timed_input_change(in.ref, in.n, [&](std::size_t i) { return in.xy_at(i); });
  std::vector<char> changed(in.sets, 0);  // copy s holds the spike
  std::vector<std::string> timed_failure(count);
  std::size_t set = 0;
  auto call = [&](std::size_t i) {
    set = (set + 1) % in.sets;
    if (i == count)
      ch06::run_empty(stream);
    else
      vs[i]->run(in.x(set), in.y(set), in.n, d_result.data(), ws, stream);
  };
  auto after = [&](std::size_t i) {  // the stream is idle here, and this is not timed
    if (i == count || ch06::is_speed_of_light(*vs[i])) return;
    float got = 0.0f;
    d_result.download_async(&got, 1, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const course::Verdict v = course::check_dot(got, change.ref(changed[set] != 0));
    if (!v.ok && timed_failure[i].empty())
      timed_failure[i] = "a timed call (copy " + std::to_string(set) + (changed[set] ? ", x changed" : "") +
                         "): " + v.message;
    if (change.active) {
      changed[set] = !changed[set];
      in.set_x(set, change.at, change.value(changed[set] != 0), stream);
    }
  };
  const auto samples = course::time_round_robin(count + 1, call, opt.warmup, reps, stream, after);
  empty_ms = course::summarize(samples[count]).median;
  for (std::size_t s = 0; s < in.sets; ++s)  // every copy as generated again, for the validation after
    if (changed[s]) in.set_x(s, change.at, change.original, stream);

  std::vector<course::Measurement> out;
  for (std::size_t i = 0; i < count; ++i) {
    // Again after timing, on the next copy.
    set = (set + 1) % in.sets;
    const course::Verdict after = validate(*vs[i], in, set, d_result, ws);
    // bytes: each input read once
    const course::Measurement m =
        course::measured(vs[i]->name, "sets=" + std::to_string(in.sets), in.n,
                         2.0 * static_cast<double>(in.n) * sizeof(float), samples[i], ws.ctx.roofline().read_gbps,
                         std::max(before[i].rel_error, after.rel_error),
                         before[i].ok && after.ok && timed_failure[i].empty());
    if (!m.valid)
      failures.push_back(m.version + " at n = " + std::to_string(in.n) + ": " +
                         (!before[i].ok ? before[i].message : !after.ok ? after.message : timed_failure[i]));
    out.push_back(m);
  }
  return out;
}

/// Calls `v` one at a time for about `ms` milliseconds of host time, so that the GPU's clocks are
/// up before the first call of a size is timed (the GPU idled while the host made the reference).
void settle(const Version& v, const Inputs& in, ch06::Workspace& ws, double ms) {
  course::DeviceBuffer<float> d_result(1);
  std::size_t set = 0;
  course::settle(
      [&] {
        set = (set + 1) % in.sets;
        v.run(in.x(set), in.y(set), in.n, d_result.data(), ws, ws.ctx.stream());
      },
      ws.ctx.stream(), ms);
}

const double kNone = std::nan("");

/// A number, or an empty cell where there is none (the CSV stays readable, and the text's tables
/// show a blank rather than "nan").
course::Cell number(double v) { return std::isfinite(v) ? course::Cell{v} : course::Cell{std::string()}; }

struct Row {
  const Version* version;
  course::Measurement m;
};

// The ladder at one size: every version's time, GB/s, % of the roofline, its speed-up over the
// previous rung and over version 1, beside the 2007 figures.
void add_ladder_rows(course::Table& ladder, const std::vector<Row>& rows, std::size_t n, double launch_floor_ms) {
  double previous_ms = kNone, v1_ms = kNone, previous_g80_ms = kNone;
  for (const auto& r : rows)
    if (r.m.n == n && r.version->name == "v1_divergent") v1_ms = r.m.ms.median;
  for (const auto& r : rows) {
    if (r.m.n != n) continue;
    const std::string name(r.version->name);
    const bool library = ch06::is_baseline(*r.version);
    const double ms = r.m.ms.median;
    const double rate = course::gbps(r.m.bytes, ms);
    const G80Row* g = g80_row(name);
    ladder.add_row({name, std::string(r.version->description), static_cast<long long>(n), ms, rate,
                    100.0 * rate / r.m.roofline_gbps, number(library ? kNone : previous_ms / ms),
                    number(library ? kNone : v1_ms / ms), r.m.roofline_gbps,
                    r.m.bytes / (r.m.roofline_gbps * 1e9) * 1e3, number(g ? g->ms : kNone),
                    number(g ? g->gbps : kNone), number(g ? 100.0 * g->gbps / kG80PeakGbps : kNone),
                    number(g ? previous_g80_ms / g->ms : kNone), number(launch_floor_ms), number(ms / launch_floor_ms),
                    static_cast<long long>(r.m.valid ? 1 : 0)});
    if (!library) previous_ms = ms;
    if (g) previous_g80_ms = g->ms;
  }
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("06_ladder", course::about(R"(
Chapter 06: the reduction ladder. The dot product of two float vectors, from the seven classic
reduction kernels of 2007 to the bandwidth limit of the card, against cuBLAS and CUB measured in the
same run.
)"),
                  std::size_t{1} << 28, 100, 10);
  bool quick = false;
  std::string sizes_text;
  app.cli().add_flag("--quick", quick, "Fewer sizes (2^10, 2^14, 2^18, 2^20, 2^24) and 30 repetitions");
  app.add_sizes_option(sizes_text, "Comma list of sizes to sweep, e.g. 2^20,2^26 (default 2^10, 2^12, ..., 2^28)");
  app.set_versions(ch06::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    // Sizes: --n alone, else --sizes, else the sweep.
    std::vector<std::size_t> defaults;
    if (quick)
      defaults = {std::size_t{1} << 10, std::size_t{1} << 14, std::size_t{1} << 18, std::size_t{1} << 20,
                  std::size_t{1} << 24};
    else
      for (int p = 10; p <= 28; p += 2) defaults.push_back(std::size_t{1} << p);
    const std::vector<std::size_t> sizes =
        course::sweep_sizes(opt, sizes_text, defaults, course::SizesFirst::n, /*sorted=*/true);
    const int reps = quick && opt.reps_given == 0 ? 30 : opt.reps;

    // Everything that belongs to the GPU (its stream, facts, roofline, cuBLAS handle, scratch
    // memory) lives in one Context; every launch, copy and timer below runs on its stream.
    course::Context ctx(opt.device);
    const course::DeviceFacts& facts = ctx.facts();
    const course::Roofline& roof = ctx.roofline();
    course::print_gpu(ctx);

    const std::size_t max_n = *std::max_element(sizes.begin(), sizes.end());
    std::size_t need = ch06::Workspace::bytes_for(max_n);
    for (std::size_t n : sizes)
      need = std::max(need, ch06::Workspace::bytes_for(max_n) + 2 * Inputs::sets_for(n, facts.l2_bytes) *
                                                                    Inputs::stride_for(n) * sizeof(float));
    course::require_fits(need, "the inputs (rotated copies) and the workspace for n = " + course::format_size(max_n));
    ch06::Workspace ws(ctx, max_n);

    const std::vector<const Version*> chosen =
        course::select_versions(ch06::versions(), opt, [](const Version& v) { return ch06::is_baseline(v); });
    std::printf("Sizes %s to %s, %d timed calls per version and size, each call timed by its own event pair, the "
                "versions in turn.\n\n",
                course::format_size(sizes.front()).c_str(), course::format_size(sizes.back()).c_str(), reps);

    course::Table table = course::measurement_table();
    std::vector<Row> rows;
    std::vector<std::string> failures;
    std::map<std::size_t, double> empty_ms;  // per size: an empty kernel's median time per call
    {
      course::Progress progress(static_cast<int>(sizes.size()), "06_ladder", !opt.quiet);
      for (std::size_t n : sizes) {
        progress.step("n=" + course::format_size(n));
        Inputs in(n, facts.l2_bytes, opt.seed, ctx.stream());
        settle(*chosen.front(), in, ws, 20.0);
        const auto measured = measure_size(chosen, in, ws, opt, reps, failures, empty_ms[n]);
        for (std::size_t i = 0; i < chosen.size(); ++i) {
          rows.push_back({chosen[i], measured[i]});
          course::add_measurement(table, measured[i]);
        }
      }
      progress.done();
    }
    // The launch-latency floor at n: nothing that launches a kernel and reads 8n bytes takes less.
    auto launch_floor_ms = [&](std::size_t n) {
      return empty_ms.at(n) + 2.0 * static_cast<double>(n) * sizeof(float) / (roof.read_gbps * 1e9) * 1e3;
    };

    // The ladder on this GPU, beside the 2007 figures.
    course::Table ladder({"version", "description", "n", "median_ms", "gbps", "pct_roofline", "x_prev", "x_v1",
                          "roofline_gbps", "floor_ms", "g80_ms", "g80_gbps", "g80_pct_peak", "g80_x_prev",
                          "launch_floor_ms", "x_floor", "valid"});
    std::vector<std::size_t> ladder_sizes;
    for (std::size_t n : sizes)
      if (n == (std::size_t{1} << 24) || n == (std::size_t{1} << 28)) ladder_sizes.push_back(n);
    if (ladder_sizes.empty()) ladder_sizes.push_back(max_n);
    for (std::size_t n : ladder_sizes) add_ladder_rows(ladder, rows, n, launch_floor_ms(n));
    for (std::size_t n : ladder_sizes) {
      std::printf("The ladder on your GPU, n = %s (%.0f MB read per call); G80 columns: 2007, 2^22 ints, %.1f GB/s peak\n",
                  course::format_size(n).c_str(), 8.0 * n / 1e6, kG80PeakGbps);
      course::Table one(ladder.columns());
      for (const auto& r : ladder.rows())
        if (std::get<long long>(r[2]) == static_cast<long long>(n)) one.add_row(r);
      one.print(std::cout, {"version", "median_ms", "gbps", "pct_roofline", "x_prev", "x_v1", "x_floor", "g80_gbps",
                            "g80_pct_peak", "g80_x_prev"});
      std::cout << "\n";
    }

    // The size sweep: time per call of the final version beside the baselines, version 11, the
    // launch-latency floor and the speed-of-light row (its columns keep the name read_only), and the
    // targets.
    const Version& best = ch06::final_version();
    auto time_of = [&](std::string_view version, std::size_t n) {
      for (const auto& r : rows)
        if (r.version->name == version && r.m.n == n) return r.m.ms.median;
      return kNone;
    };
    course::Table targets({"target", "n", "value", "threshold", "met"});
    course::Table sweep({"n", "final_ms", "v11_ms", "atomic_ms", "cublas_ms", "cub_ms", "empty_ms", "floor_ms",
                         "final_vs_cublas", "final_vs_cub", "final_vs_atomic", "final_vs_floor", "v11_vs_floor",
                         "atomic_vs_floor", "cublas_vs_floor", "cub_vs_floor", "fastest_course", "read_only_ms",
                         "read_only_vs_floor", "final_vs_read_only", "atomic_vs_read_only"});
    for (std::size_t n : sizes) {
      const double mine = time_of(best.name, n), v11 = time_of("v11_single_pass", n), atomic = time_of("atomic_vec4", n),
                   cublas = time_of("cublas", n), cub = time_of("cub", n), floor = launch_floor_ms(n),
                   read_only = time_of("speed_of_light", n);
      std::string fastest;
      double fastest_ms = kNone;
      for (const auto& r : rows)
        if (r.m.n == n && !ch06::is_baseline(*r.version) && !(r.m.ms.median >= fastest_ms)) {
          fastest_ms = r.m.ms.median;
          fastest = std::string(r.version->name);
        }
      sweep.add_row({static_cast<long long>(n), number(mine), number(v11), number(atomic), number(cublas), number(cub),
                     empty_ms.at(n), floor, number(mine / cublas), number(mine / cub), number(mine / atomic),
                     number(mine / floor), number(v11 / floor), number(atomic / floor), number(cublas / floor),
                     number(cub / floor), fastest, number(read_only), number(read_only / floor), number(mine / read_only),
                     number(atomic / read_only)});
      if (std::isnan(mine)) continue;
      auto target = [&](const std::string& what, double value, double threshold, bool at_most) {
        if (std::isnan(value)) return;  // a baseline that did not run (--kernel runs them all; --list does not)
        const bool met = at_most ? value <= threshold : value >= threshold;
        targets.add_row({what, static_cast<long long>(n), value, threshold, static_cast<long long>(met ? 1 : 0)});
      };
      target("final time / cuBLAS time <= 1", mine / cublas, 1.0, true);
      target("final time / CUB time <= 1", mine / cub, 1.0, true);
      target("final time / atomic_vec4 time <= 1", mine / atomic, 1.0, true);
      // The floor a kernel that reads its inputs from DRAM can reach is the speed-of-light row, not
      // the launch floor (an empty kernel leaves out the first trip to memory): the final version is
      // held to 1.05 times it at every size from 2^10 to 2^28.
      if (n >= (std::size_t{1} << 10) && n <= (std::size_t{1} << 28))
        target("final time / speed_of_light time <= 1.05", mine / read_only, 1.05, true);
      if (n <= (std::size_t{1} << 20)) target("final time / cuBLAS time <= 0.75", mine / cublas, 0.75, true);
      if (n == (std::size_t{1} << 28)) {
        for (const auto& r : rows)
          if (r.m.n == n && (r.version->name == best.name || r.version->name == "v7_many_per_thread"))
            target(std::string(r.version->name) + " % of roofline",
                   100.0 * course::gbps(r.m.bytes, r.m.ms.median) / r.m.roofline_gbps,
                   r.version->name == best.name ? 97.0 : 90.0, false);
      }
    }
    std::printf("Time per call, %s against the baselines and the launch-latency floor (an empty kernel's time per "
                "call + bytes / read roofline), and speed_of_light (read_only_ms: the final version's loads, no "
                "combine); ratio < 1: the course kernel is faster\n",
                std::string(best.name).c_str());
    sweep.print(std::cout, {"n", "final_ms", "v11_ms", "atomic_ms", "cublas_ms", "cub_ms", "floor_ms", "read_only_ms",
                            "final_vs_cublas", "final_vs_cub", "final_vs_atomic", "final_vs_floor",
                            "read_only_vs_floor", "fastest_course"});
    std::cout << "\nTargets (H100 goals of the chapter; informational, the exit code depends on validation only)\n";
    targets.print(std::cout);

    if (!opt.csv.empty()) {
      course::Table device({"name", "sm_count", "l2_mb", "peak_gbps", "read_gbps", "copy_gbps", "machine_grid",
                            "atomic_grid", "grid12"});
      device.add_row({facts.name, static_cast<long long>(facts.sm_count), facts.l2_bytes / 1e6, facts.peak_gbps,
                      roof.read_gbps, roof.copy_gbps, static_cast<long long>(ws.machine_grid),
                      static_cast<long long>(ws.atomic_grid), static_cast<long long>(ws.grid12)});
      course::write_csvs(opt.csv, table,
                         {{"ladder", &ladder}, {"sweep", &sweep}, {"targets", &targets}, {"device", &device}});
      std::cout << "\nCSV written to " << opt.csv << " and beside it: _ladder, _sweep, _targets, _device\n";
    }
    if (!failures.empty()) {
      std::cerr << "\n06_ladder: " << failures.size() << " result(s) failed validation:\n";
      for (const auto& f : failures) std::cerr << "  " << f << "\n";
      return static_cast<int>(course::kExitFailure);
    }
    return static_cast<int>(course::kExitOk);
  });
}
