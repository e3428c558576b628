// Chapter 11 driver — the dot product on many GPUs of one host, with NCCL.
//
//   11_multi_gpu                       every combine on 1..G GPUs over a size sweep; weak scaling
//                                      (2^30 per GPU) and strong scaling (2^31 in all); the
//                                      host-data form (each GPU copies its slice over its own link)
//   11_multi_gpu --gpus 1              one GPU: a communicator of one, the same code path
//   11_multi_gpu --kernel allgather --n 2^28
//   11_multi_gpu --csv results/local/11_multi_gpu.csv
//       (and _scaling, _host, _targets beside it)
//   mpirun -np 2 11_multi_gpu_mpi      the same dot, one process per GPU (main_mpi.cpp)
//
// NCCL_NVLS_ENABLE=0 is set in the process before any communicator is made (ch11::disable_nvls).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/table.hpp"
#include "multi.hpp"

namespace {

using Version = course::Version<ch11::Combine>;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// nccl-tests' bus-bandwidth factor: what each rank's link carries relative to the data size.
double bus_factor(const std::string& version, int ranks) {
  if (ranks < 2) return 0.0;
  const double r = ranks;
  return version == "allreduce" ? 2.0 * (r - 1) / r : (r - 1) / r;
}

struct Row {
  course::Stats ms;
  ch11::Split split;
  double rel_error = 0;
  bool valid = false;
};

// Validates (every rank within the bound; the deterministic combines the same bits on every rank),
// times `reps` calls by the host clock (each call ends with the result on every GPU), validates
// again, then times the split of a few more calls with events.
Row measure(ch11::Team& team, const Version& v, std::size_t n, const course::Reference& ref, int reps, int warmup) {
  auto check = [&](const std::vector<float>& got, std::string* why) {
    for (float r : got) {
      const course::Verdict verdict = course::check_dot(r, ref);
      if (!verdict.ok) return *why = verdict.message, false;
      if (v.name != "allreduce" && std::memcmp(&r, &got[0], sizeof r) != 0) return *why = "ranks disagree", false;
    }
    return true;
  };
  Row row;
  std::string why;
  const bool before = check(ch11::dot(team, v.run, n), &why);
  std::vector<double> samples;
  std::vector<float> last;
  for (int r = 0; r < warmup + reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    last = ch11::dot(team, v.run, n);
    if (r >= warmup) samples.push_back(ms_since(t0));
  }
  const bool after = check(last, &why);
  row.ms = course::summarize(samples);
  row.rel_error = course::check_dot(last[0], ref).rel_error;
  row.valid = before && after;
  std::vector<double> kernel, combine;
  for (int r = 0; r < 7; ++r) {
    ch11::Split s;
    ch11::dot(team, v.run, n, &s);
    kernel.push_back(s.kernel_ms);
    combine.push_back(s.combine_ms);
  }
  row.split.kernel_ms = course::summarize(kernel).median;
  row.split.combine_ms = course::summarize(combine).median;
  if (!row.valid)
    std::fprintf(stderr, "11_multi_gpu: %s on %d GPU(s) at n = %zu FAILED: %s\n", std::string(v.name).c_str(), team.ranks, n,
                 why.c_str());
  return row;
}

// Fills x, y (pinned) with random_vector(n, seed) and random_vector(n, course::seed_y(seed)), with threads.
void fill_host(float* x, float* y, std::size_t n, std::uint64_t seed, unsigned threads) {
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([=] {
      const ch11::Slice s{n / threads * t + std::min<std::size_t>(t, n % threads), n / threads + (t < n % threads ? 1 : 0)};
      for (std::size_t i = s.begin; i < s.begin + s.count; ++i) {
        x[i] = course::random_at(seed, i, -1.0f, 1.0f);
        y[i] = course::random_at(course::seed_y(seed), i, -1.0f, 1.0f);
      }
    });
  for (auto& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  ch11::disable_nvls();
  course::App app("11_multi_gpu",
                  "Chapter 11: the dot product on many GPUs of one host. Each GPU computes the partial of its "
                  "slice with chapter 06's final kernel; NCCL (or the host) combines the partials. Size sweep, "
                  "weak and strong scaling, the combine's cost against the kernel's, and host data copied "
                  "over every GPU's link at once. --n is the n per GPU of the weak-scaling runs and the top of the sweep.",
                  std::size_t{1} << 30, 20, 3);
  int gpus_wanted = 0;
  std::string strong_text = "2^31", host_text = "2^28";
  app.cli().add_option("--gpus", gpus_wanted, "GPUs to use at most (0: all)")->check(CLI::Range(0, 64))->capture_default_str();
  app.cli().add_option("--strong-n", strong_text, "Total n of the strong-scaling runs")->capture_default_str();
  app.cli().add_option("--host-n", host_text, "n per GPU of the host-data runs (0: none)")->capture_default_str();
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& v : ch11::versions()) names.emplace_back(v.name, v.description);
  app.set_versions(names);

  return app.run(argc, argv, [&](const course::Options& opt) {
    if (opt.device != 0)
      throw course::UsageError("--device: 11_multi_gpu uses GPUs 0 to --gpus - 1; choose them with CUDA_VISIBLE_DEVICES");
    const std::size_t strong_n = course::parse_size(strong_text);
    const std::size_t host_n = course::parse_size(host_text);
    const std::size_t weak_n = opt.n;  // n per GPU of the weak-scaling runs and the top of the sweep
    const int available = course::device_count();
    const int gpus = gpus_wanted == 0 ? available : gpus_wanted;
    if (gpus > available)
      throw course::UsageError("--gpus " + std::to_string(gpus) + ": this machine has " + std::to_string(available) + " GPU(s)");
    if (weak_n == 0 || strong_n == 0) throw course::UsageError("--n and --strong-n must be at least 1");
    std::vector<const Version*> selected;
    for (const auto& v : ch11::versions())
      if (opt.kernel.empty() || v.name == opt.kernel) selected.push_back(&v);
    const Version* allgather = course::find_version(ch11::versions(), "allgather");

    // n per GPU of the size sweep: powers of 4 from 2^16 up to the weak-scaling size.
    std::vector<std::size_t> per_gpu_sizes;
    if (opt.n_given) per_gpu_sizes = {weak_n};
    else
      for (std::size_t s = std::size_t{1} << 16; s < weak_n; s *= 4) per_gpu_sizes.push_back(s);
    if (per_gpu_sizes.empty() || per_gpu_sizes.back() != weak_n) per_gpu_sizes.push_back(weak_n);
    // GPU 0 takes the whole strong-scaling input alone; the others at most half of it.
    const std::size_t capacity = std::max({weak_n, strong_n, host_n});
    const std::size_t capacity_others = std::max({weak_n, ch11::max_slice(strong_n, 2), host_n});
    std::vector<std::unique_ptr<ch11::Gpu>> devices;
    for (int d = 0; d < gpus; ++d) {
      CUDA_CHECK(cudaSetDevice(d));  // require_fits asks the current device
      const std::size_t cap = d == 0 ? capacity : capacity_others;
      course::require_fits(2 * cap * sizeof(float), "x and y slices on GPU " + std::to_string(d));
      devices.push_back(std::make_unique<ch11::Gpu>(d, cap, gpus));
    }
    for (auto& g : devices) std::printf("GPU %d: %s\n", g->context().device(), course::describe_device(g->context().facts()).c_str());
    std::vector<int> counts;  // GPU counts measured: 1, 2, 4, ... and all
    for (int g = 1; g < gpus; g *= 2) counts.push_back(g);
    counts.push_back(gpus);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

    course::Progress progress(4 + static_cast<int>(counts.size()), "11_multi_gpu", !opt.quiet);
    progress.step("rooflines");
    std::vector<double> roof(static_cast<std::size_t>(gpus));
    for (int d = 0; d < gpus; ++d) roof[static_cast<std::size_t>(d)] = devices[static_cast<std::size_t>(d)]->context().roofline().read_gbps;
    auto roof_of = [&](int g) {
      double sum = 0;
      for (int d = 0; d < g; ++d) sum += roof[static_cast<std::size_t>(d)];
      return sum;
    };

    course::Table table({"version", "config", "gpus", "n", "n_per_gpu", "bytes", "reps", "median_ms", "mean_ms", "sd_ms",
                         "min_ms", "gbps", "pct_roofline", "kernel_ms", "combine_ms", "combine_pct", "combine_bytes",
                         "combine_us", "algbw_gbps", "busbw_gbps", "rel_error", "valid"});
    course::Table scaling({"kind", "version", "gpus", "n", "n_per_gpu", "median_ms", "gbps", "pct_roofline", "speedup",
                           "efficiency", "kernel_ms", "combine_ms", "valid"});
    course::Table host({"gpus", "n", "n_per_gpu", "copy_ms", "h2d_gbps", "h2d_gbps_per_gpu", "h2d_speedup", "dot_ms",
                        "total_ms", "valid"});
    course::Table targets({"target", "value", "goal", "met"});
    std::set<std::string> failed;
    auto add = [&](const std::string& version, const std::string& config, int g, std::size_t n, const Row& r) {
      if (!r.valid) failed.insert(version);
      const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
      const double gb = course::gbps(bytes, r.ms.median);
      const double combine_bytes = 4.0 * g;  // the gathered partials (nccl-tests' size for allgather)
      const double algbw = r.split.combine_ms > 0 ? combine_bytes / (r.split.combine_ms * 1e6) : 0.0;
      table.add_row({version, config, static_cast<long long>(g), static_cast<long long>(n),
                     static_cast<long long>(ch11::max_slice(n, g)), bytes, static_cast<long long>(r.ms.count), r.ms.median,
                     r.ms.mean, r.ms.sd, r.ms.min, gb, 100.0 * gb / roof_of(g), r.split.kernel_ms, r.split.combine_ms,
                     100.0 * r.split.combine_ms / std::max(r.split.kernel_ms, 1e-9), combine_bytes,
                     1e3 * r.split.combine_ms, algbw, algbw * bus_factor(version, g), r.rel_error,
                     static_cast<long long>(r.valid)});
    };

    // The size sweep: every combine, on each GPU count.
    std::size_t seed_n = 0;
    for (int g : counts) {
      progress.step("size sweep on " + std::to_string(g) + " GPU(s)");
      ch11::Team team = ch11::make_local_team(devices, g);
      for (std::size_t per : per_gpu_sizes) {
        const std::size_t n = per * static_cast<std::size_t>(g);
        const std::uint64_t seed = opt.seed + 2 * (++seed_n);
        ch11::fill_slices(team, n, seed);
        const course::Reference ref = ch11::reference_from_seed(n, seed);
        const int reps = n >= (std::size_t{1} << 26) ? opt.reps : std::max(opt.reps, 100);
        for (const Version* v : selected)
          add(std::string(v->name), "resident gpus=" + std::to_string(g), g, n, measure(team, *v, n, ref, reps, opt.warmup));
      }
    }

    // Weak (n per GPU fixed) and strong (n fixed) scaling, with the deterministic combine.
    progress.step("weak and strong scaling");
    double weak_ratio = 1, strong_ratio = 1;
    for (const char* kind : {"weak", "strong"}) {
      double base_gbps = 0, base_ms = 0;
      for (int g : counts) {
        const std::size_t n = std::string(kind) == "weak" ? weak_n * static_cast<std::size_t>(g) : strong_n;
        ch11::Team team = ch11::make_local_team(devices, g);
        const std::uint64_t seed = opt.seed + 1000 + 2 * static_cast<std::uint64_t>(g);
        ch11::fill_slices(team, n, seed);
        const course::Reference ref = ch11::reference_from_seed(n, seed);
        const Row r = measure(team, *allgather, n, ref, opt.reps, opt.warmup);
        if (!r.valid) failed.insert(std::string(kind) + " scaling");
        const double gb = course::gbps(2.0 * n * sizeof(float), r.ms.median);
        if (g == 1) base_gbps = gb, base_ms = r.ms.median;
        const double speedup = std::string(kind) == "weak" ? gb / base_gbps : base_ms / r.ms.median;
        scaling.add_row({std::string(kind), std::string("allgather"), static_cast<long long>(g), static_cast<long long>(n),
                         static_cast<long long>(ch11::max_slice(n, g)), r.ms.median, gb, 100.0 * gb / roof_of(g), speedup,
                         speedup / g, r.split.kernel_ms, r.split.combine_ms, static_cast<long long>(r.valid)});
        if (g == gpus) (std::string(kind) == "weak" ? weak_ratio : strong_ratio) = speedup;
      }
    }
    targets.add_row({"weak scaling, " + course::format_size(weak_n) + " per GPU: " + std::to_string(gpus) +
                         " GPU(s) / 1 GPU throughput", weak_ratio, 1.9, static_cast<long long>(gpus >= 2 && weak_ratio >= 1.9)});
    targets.add_row({"strong scaling, " + course::format_size(strong_n) + " in all: " + std::to_string(gpus) +
                         " GPU(s) / 1 GPU throughput", strong_ratio, 1.8, static_cast<long long>(gpus >= 2 && strong_ratio >= 1.8)});

    // Host data: every GPU copies its slice over its own link at once. Does H2D add up?
    if (host_n > 0) {
      progress.step("host data");
      const std::size_t n_max = host_n * static_cast<std::size_t>(gpus);
      course::PinnedBuffer<float> h_x(n_max), h_y(n_max);
      double base_h2d = 0;
      for (int g : counts) {
        const std::size_t n = host_n * static_cast<std::size_t>(g);
        const std::uint64_t seed = opt.seed + 5000 + 2 * static_cast<std::uint64_t>(g);
        fill_host(h_x.data(), h_y.data(), n, seed, std::min(cores, 16u));
        const course::Reference ref = course::reference_dot(h_x.data(), h_y.data(), n);
        ch11::Team team = ch11::make_local_team(devices, g);
        auto sync_all = [&] { for (int d = 0; d < g; ++d) devices[static_cast<std::size_t>(d)]->context().synchronize(); };
        std::vector<double> copy, total;
        bool valid = true;
        for (int r = 0; r < opt.warmup + opt.reps; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          ch11::upload_slices(team, h_x.data(), h_y.data(), n);
          sync_all();
          const double c = ms_since(t0);
          const std::vector<float> got = ch11::dot(team, allgather->run, n);
          const double t = ms_since(t0);
          valid = valid && course::check_dot(got[0], ref).ok;
          if (r >= opt.warmup) copy.push_back(c), total.push_back(t);
        }
        if (!valid) failed.insert("host data");
        const double copy_ms = course::summarize(copy).median, total_ms = course::summarize(total).median;
        const double h2d = course::gbps(2.0 * n * sizeof(float), copy_ms);
        if (g == 1) base_h2d = h2d;
        host.add_row({static_cast<long long>(g), static_cast<long long>(n), static_cast<long long>(host_n), copy_ms, h2d,
                      h2d / g, h2d / base_h2d, total_ms - copy_ms, total_ms, static_cast<long long>(valid)});
      }
    }
    progress.done();

    std::cout << "\nThe dot of device-resident slices, combined on every GPU (time per call, the result on every GPU; "
                 "pct_roofline = % of the used GPUs' summed read roofline; combine_* and algbw/busbw: the "
                 "combine step in nccl-tests' terms):\n\n";
    table.print(std::cout, {"version", "gpus", "n", "median_ms", "gbps", "pct_roofline", "kernel_ms", "combine_ms",
                            "combine_us", "algbw_gbps", "busbw_gbps", "valid"});
    std::cout << "\nScaling (allgather):\n\n";
    scaling.print(std::cout);
    if (host_n > 0) {
      std::cout << "\nHost data (pinned), each GPU copying its slice over its own link:\n\n";
      host.print(std::cout);
    }
    std::cout << "\nTargets (two GPUs or more; one GPU reports 1.0 and 'not met'):\n\n";
    targets.print(std::cout);
    if (!opt.csv.empty()) {
      table.write_csv(opt.csv);
      scaling.write_csv(course::csv_beside(opt.csv, "scaling"));
      if (host_n > 0) host.write_csv(course::csv_beside(opt.csv, "host"));
      targets.write_csv(course::csv_beside(opt.csv, "targets"));
      std::cout << "\nCSV written to " << opt.csv << " (and _scaling, _host, _targets beside it)\n";
    }
    if (!failed.empty()) {
      std::cerr << "11_multi_gpu: wrong results from:";
      for (const auto& f : failed) std::cerr << " " << f;
      std::cerr << "\n";
      return course::kExitFailure;
    }
    return course::kExitOk;
  });
}
