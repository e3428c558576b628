// Chapter 11 driver — the dot product on many GPUs of one host, with NCCL.
//
//   11_multi_gpu                       every combine on 1..G GPUs over a size sweep; weak scaling
//                                      (2^30 per GPU) and strong scaling (2^31 in all); the
//                                      host-data form (each GPU copies its slice over its own link)
//   11_multi_gpu --gpus 1              one GPU: a communicator of one, the same code path
//   11_multi_gpu --kernel allgather --n 2^28
//   11_multi_gpu --steps parts,crossover   only where the combine's time goes, and the n from which
//                                      two GPUs beat one
//   11_multi_gpu --csv results/local/11_multi_gpu.csv
//       (and _scaling, _host, _parts, _crossover, _targets beside it)
//   mpirun -np 2 11_multi_gpu_mpi      the same dot, one process per GPU (main_mpi.cpp)
//
// Beside the combines, in the size sweep on every GPU count and timed the same way, the registry's
// speed_of_light row: not a dot but the floor, every GPU reading its own slice at once with the best
// access pattern and nothing else. It is checked by the value each GPU writes (it has no result to
// compare), runs beside any --kernel, and has no combine columns.
//
// NCCL_NVLS_ENABLE=0 is set in the process before any communicator is made (ch11::disable_nvls).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/table.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

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

// Issue 38, class 4: one element of x changes between timed calls (course::TimedInputChange), and
// every timed result is checked against the reference of the input it was given, outside the
// timed region. `write` puts a value at x[change.at] wherever the calls read it, and waits.
struct Toggle {
  course::TimedInputChange change;
  std::function<void(float)> write;
  bool changed = false;
  const course::Reference& ref() const { return change.ref(changed); }
  std::string note() const { return changed ? " (x[" + std::to_string(change.at) + "] changed)" : std::string(); }
  void flip() {
    if (!change.active) return;
    changed = !changed;
    write(change.value(changed));
  }
  void restore() {
    if (changed) flip();
  }
};

// x[at] of the n-element input on the GPUs of `team` that hold it (their slices), on each GPU's
// stream, after what is queued there; waits.
void write_x(ch11::Team& team, std::size_t n, std::size_t at, float value) {
  for (std::size_t i = 0; i < team.gpus.size(); ++i) {
    const ch11::Slice s = ch11::slice_of(n, team.ranks, team.first_rank + static_cast<int>(i));
    if (at < s.begin || at - s.begin >= s.count) continue;
    ch11::Gpu& g = *team.gpus[i];
    g.context().activate();
    CUDA_CHECK(cudaMemcpyAsync(g.x() + (at - s.begin), &value, sizeof value, cudaMemcpyHostToDevice, g.context().stream()));
    g.context().synchronize();
  }
}

// The change for the inputs fill_slices(team, n, seed) generates, written into `teams`.
Toggle device_toggle(std::vector<ch11::Team*> teams, std::size_t n, std::uint64_t seed, const course::Reference& ref) {
  Toggle t;
  t.change = course::timed_input_change(ref, n, [seed](std::size_t i) {
    return std::make_pair(course::random_at(seed, i, -1.0f, 1.0f), course::random_at(course::seed_y(seed), i, -1.0f, 1.0f));
  });
  const std::size_t at = t.change.at;
  t.write = [teams, n, at](float value) {
    for (ch11::Team* team : teams) write_x(*team, n, at, value);
  };
  return t;
}

struct Row {
  course::Stats ms;
  ch11::Split split;
  double rel_error = 0;
  bool valid = false;
};

// Validates (every rank within the bound; the deterministic combines the same bits on every rank),
// times `reps` calls by the host clock (each call ends with the result on every GPU), validates
// again, then times the split of a few more calls with events. The speed-of-light row computes no
// dot: it passes when every GPU wrote its one value (finite, from finite inputs), and has no rel_error.
Row measure(ch11::Team& team, const Version& v, std::size_t n, std::uint64_t seed, const course::Reference& base, int reps,
            int warmup) {
  const bool is_floor = ch11::is_speed_of_light(v);
  Toggle toggle = device_toggle({&team}, n, seed, base);
  auto check = [&](const std::vector<float>& got, std::string* why) {
    const course::Reference& ref = toggle.ref();
    for (float r : got) {
      if (is_floor) {
        if (!std::isfinite(r)) return *why = "a GPU left its one value unwritten (NaN)", false;
        continue;
      }
      const course::Verdict verdict = course::check_dot(r, ref);
      if (!verdict.ok) return *why = verdict.message, false;
      if (v.name != "allreduce" && std::memcmp(&r, &got[0], sizeof r) != 0) return *why = "ranks disagree", false;
    }
    return true;
  };
  Row row;
  std::string why;
  const bool before = check(ch11::dot(team, v.run, n), &why);
  bool every_call = true;
  // After every timed call, outside the timed region: its result checked, then the input changed.
  auto after_call = [&](const std::vector<float>& got, int r, const char* timing) {
    std::string bad;
    if (!check(got, &bad) && every_call) {
      every_call = false;
      why = std::string(timing) + " call " + std::to_string(r) + toggle.note() + ": " + bad;
    }
    toggle.flip();
  };
  std::vector<double> samples;
  std::vector<float> last;
  double last_rel_error = std::nan("");
  for (int r = 0; r < warmup + reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    last = ch11::dot(team, v.run, n);
    if (r >= warmup) samples.push_back(ms_since(t0));
    if (!is_floor) last_rel_error = course::check_dot(last[0], toggle.ref()).rel_error;
    after_call(last, r, "timed");
  }
  row.ms = course::summarize(samples);
  row.rel_error = last_rel_error;
  std::vector<double> kernel, combine;
  for (int r = 0; r < 7; ++r) {
    ch11::Split s;
    const std::vector<float> got = ch11::dot(team, v.run, n, &s);
    kernel.push_back(s.kernel_ms);
    combine.push_back(s.combine_ms);
    after_call(got, r, "split-timed");
  }
  toggle.restore();
  row.valid = before && every_call;
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

using Clock = std::chrono::steady_clock;

double us_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

// A Gpu's pair of events around one span of its stream, read after the stream has finished.
struct Span {
  std::unique_ptr<course::EventTimer> t;
  explicit Span(ch11::Gpu& g) : t(std::make_unique<course::EventTimer>(g.context().stream())) {}
};

// NCCL's own time for one tiny collective on every GPU of the team, with the host out of the way:
// `count` of them captured into one graph per GPU and replayed, the GPU time divided by count.
constexpr int kBackToBack = 20;
void allgather_back_to_back(ch11::Team& team) {
  for (int k = 0; k < kBackToBack; ++k) {
    ch11::NcclGroup group;
    for (std::size_t i = 0; i < team.gpus.size(); ++i) {
      ch11::Gpu& g = *team.gpus[i];
      NCCL_CHECK(ncclAllGather(g.partial(), g.gathered(), 1, ncclFloat, team.comms[i], g.context().stream()));
    }
    group.end();
  }
}
void allreduce_back_to_back(ch11::Team& team) {
  for (int k = 0; k < kBackToBack; ++k) {
    ch11::NcclGroup group;
    for (std::size_t i = 0; i < team.gpus.size(); ++i) {
      ch11::Gpu& g = *team.gpus[i];
      NCCL_CHECK(ncclAllReduce(g.partial(), g.result(), 1, ncclFloat, ncclSum, team.comms[i], g.context().stream()));
    }
    group.end();
  }
}

// Where one eager allgather call's time goes on this team at n: the host's time for each step it
// enqueues, the GPU's time between the steps (the slowest GPU's), and NCCL's own floor with the
// host out of the way. Rows: part, side (host / gpu / floor / call), microseconds (median).
void measure_parts(ch11::Team& team, std::size_t n, std::uint64_t seed, int reps, course::Table& parts, std::string* wrong) {
  Toggle toggle = device_toggle({&team}, n, seed, ch11::reference_from_seed(n, seed));
  const std::size_t count = team.gpus.size();
  std::vector<std::size_t> counts;
  for (std::size_t i = 0; i < count; ++i) counts.push_back(ch11::slice_of(n, team.ranks, static_cast<int>(i)).count);
  std::vector<double> h_partials, h_nccl, h_kernels, h_wait, h_total, g_partial, g_nccl, g_kernel;
  for (int r = 0; r < reps + 5; ++r) {
    std::vector<Span> a, b, c;
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      ch11::Gpu& g = *team.gpus[i];
      g.context().activate();
      a.emplace_back(g);
      a.back().t->start();
      g.count_call();
      g.launch_partial(counts[i]);
      a.back().t->record_stop();
      b.emplace_back(g);
      b.back().t->start();
    }
    const auto t1 = Clock::now();
    {
      ch11::NcclGroup group;
      for (std::size_t i = 0; i < count; ++i) {
        ch11::Gpu& g = *team.gpus[i];
        NCCL_CHECK(ncclAllGather(g.partial(), g.gathered(), 1, ncclFloat, team.comms[i], g.context().stream()));
      }
      group.end();
    }
    const auto t2 = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      ch11::Gpu& g = *team.gpus[i];
      g.context().activate();
      b[i].t->record_stop();
      c.emplace_back(g);
      c.back().t->start();
      ch11::launch_combine(g, g.gathered(), team.ranks, g.result());
      c.back().t->record_stop();
    }
    const auto t3 = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      ch11::Gpu& g = *team.gpus[i];
      g.context().activate();
      CUDA_CHECK(cudaMemcpyAsync(g.host_partials() + g.max_ranks() + 1, g.result(), sizeof(float), cudaMemcpyDeviceToHost,
                                 g.context().stream()));
    }
    for (std::size_t i = 0; i < count; ++i) team.gpus[i]->context().synchronize();
    const auto t4 = Clock::now();
    for (std::size_t i = 0; i < count && wrong->empty(); ++i) {  // outside the timed steps
      ch11::Gpu& g = *team.gpus[i];
      const course::Verdict v = course::check_dot(g.host_partials()[g.max_ranks() + 1], toggle.ref());
      if (!v.ok) *wrong = "call " + std::to_string(r) + toggle.note() + ", GPU " + std::to_string(i) + ": " + v.message;
    }
    toggle.flip();
    if (r < 5) continue;  // warm-up
    double gp = 0, gn = 0, gk = 0;
    for (std::size_t i = 0; i < count; ++i) {
      gp = std::max(gp, 1e3 * a[i].t->elapsed_ms());
      gn = std::max(gn, 1e3 * b[i].t->elapsed_ms());
      gk = std::max(gk, 1e3 * c[i].t->elapsed_ms());
    }
    h_partials.push_back(us_between(t0, t1));
    h_nccl.push_back(us_between(t1, t2));
    h_kernels.push_back(us_between(t2, t3));
    h_wait.push_back(us_between(t3, t4));
    h_total.push_back(us_between(t0, t4));
    g_partial.push_back(gp);
    g_nccl.push_back(gn);
    g_kernel.push_back(gk);
  }
  toggle.restore();
  auto floor_of = [&](ch11::Combine many) {
    std::vector<double> per_call;
    for (int r = 0; r < 25; ++r) {
      std::vector<Span> s;
      for (ch11::Gpu* g : team.gpus) {
        g->context().activate();
        s.emplace_back(*g);
        s.back().t->start();
      }
      ch11::replay_graph(team, many);
      double worst = 0;
      for (std::size_t i = 0; i < count; ++i) {
        team.gpus[i]->context().activate();
        s[i].t->record_stop();
      }
      for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, 1e3 * s[i].t->elapsed_ms());
      if (r >= 5) per_call.push_back(worst / kBackToBack);
    }
    return course::summarize(per_call).median;
  };
  const double floor_gather = floor_of(allgather_back_to_back);
  const double floor_reduce = floor_of(allreduce_back_to_back);
  const long long g = static_cast<long long>(team.ranks), nn = static_cast<long long>(n);
  auto row = [&](const std::string& part, const std::string& side, double us, const std::string& what) {
    parts.add_row({part, side, g, nn, us, what});
  };
  auto med = [](const std::vector<double>& v) { return course::summarize(v).median; };
  row("enqueue partial kernels", "host", med(h_partials), "launch chapter 06's kernel on every GPU (with its events)");
  row("enqueue allgather group", "host", med(h_nccl), "ncclGroupStart, ncclAllGather per GPU, ncclGroupEnd");
  row("enqueue rank-order kernels", "host", med(h_kernels), "launch the pairwise add (one block) on every GPU");
  row("copy back and wait", "host", med(h_wait), "copy each result to the host, wait for every GPU");
  row("whole call", "host", med(h_total), "the four steps above");
  row("partial kernel", "gpu", med(g_partial), "the slowest GPU's partial kernel");
  row("partial end to allgather end", "gpu", med(g_nccl), "idle until the host enqueues NCCL, then the exchange");
  row("rank-order kernel", "gpu", med(g_kernel), "the pairwise add (one block), launched after the group");
  row("allgather, host out of the way", "floor", floor_gather, "20 allgathers in a CUDA graph, GPU time / 20");
  row("allreduce, host out of the way", "floor", floor_reduce, "20 allreduces in a CUDA graph, GPU time / 20");
}

// One GPU alone against the team at the same n, timed in turns (one call of each per round, the
// order alternating), for every power of two from 2^12 to 2^26: the n from which the team wins.
constexpr const char* kCrossoverNames[4] = {"one GPU alone", "p2p", "allgather_graph", "allgather"};
struct CrossoverRow {
  std::size_t n;
  double one_us, p2p_us, graph_us, eager_us;
};

}  // namespace

int main(int argc, char** argv) {
  ch11::disable_nvls();
  course::App app("11_multi_gpu", course::about(R"(
Chapter 11: the dot product on many GPUs of one host. Each GPU computes the partial of its slice
with chapter 06's final kernel; NCCL (or the host) combines the partials. Size sweep, weak and
strong scaling, the combine's cost against the kernel's, and host data copied over every GPU's link
at once. --n is the n per GPU of the weak-scaling runs and the top of the sweep.
)"),
                  std::size_t{1} << 30, 20, 3);
  int gpus_wanted = 0;
  std::string strong_text = "2^31", host_text = "2^28", steps_text = "sweep,scaling,host,parts,crossover";
  // Every option is checked while the command line is read, so bad input exits 2 before any GPU work.
  app.cli().add_option("--gpus", gpus_wanted, "GPUs to use at most (0: all)")->check(course::whole_number(0, 64))->capture_default_str();
  app.cli().add_option("--strong-n", strong_text, "Total n of the strong-scaling runs")->check(course::size_at_least(1))->capture_default_str();
  app.cli().add_option("--host-n", host_text, "n per GPU of the host-data runs (0: none)")->check(course::size_at_least(0))->capture_default_str();
  app.cli()
      .add_option("--steps", steps_text,
                   "Which measurements, comma-separated: sweep (every combine over sizes), scaling (weak and strong), "
                   "host (host data), parts (where the combine's time goes), crossover (one GPU against all)")
      ->check([](const std::string& text) {
        std::string item;
        std::stringstream in(text);
        while (std::getline(in, item, ','))
          if (item != "sweep" && item != "scaling" && item != "host" && item != "parts" && item != "crossover")
            return course::not_a(item, "a step (sweep, scaling, host, parts, crossover)");
        return std::string();
      })
      ->capture_default_str();
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& v : ch11::versions()) names.emplace_back(v.name, v.description);
  app.set_versions(names);

  app.add_check([](const course::Options& opt) {
    if (opt.device != 0)
      throw course::UsageError("--device: 11_multi_gpu uses GPUs 0 to --gpus - 1; choose them with CUDA_VISIBLE_DEVICES");
  });

  return app.run(argc, argv, [&](const course::Options& opt) {
    const std::size_t strong_n = course::parse_size(strong_text);
    const std::size_t host_n = course::parse_size(host_text);
    const std::size_t weak_n = opt.n;  // n per GPU of the weak-scaling runs and the top of the sweep
    auto wants = [&](const std::string& step) { return ("," + steps_text + ",").find("," + step + ",") != std::string::npos; };
    const int available = course::device_count();
    const int gpus = gpus_wanted == 0 ? available : gpus_wanted;
    if (gpus > available)
      throw course::UsageError("--gpus " + std::to_string(gpus) + ": this machine has " + std::to_string(available) + " GPU(s)");
    std::vector<const Version*> selected;  // the floor, speed_of_light, runs beside any --kernel
    for (const auto& v : ch11::versions())
      if (opt.selects(v.name) || ch11::is_speed_of_light(v)) selected.push_back(&v);
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

    const int steps = 1 + (wants("sweep") ? static_cast<int>(counts.size()) : 0) + wants("scaling") + (wants("host") && host_n > 0) +
                      wants("parts") + wants("crossover");
    course::Progress progress(steps, "11_multi_gpu", !opt.quiet);
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
    course::Table parts({"part", "side", "gpus", "n", "us", "what"});
    course::Table crossover({"n", "gpus", "one_gpu_us", "p2p_us", "graph_us", "eager_us", "speedup", "team_wins"});
    course::Table targets({"target", "value", "goal", "met", "note"});
    // A target is about a team of GPUs: on one GPU it is not missed, it cannot be tried. Then `met`
    // is empty (missing, the CSV convention) and the note says why.
    auto verdict = [gpus](double value, double goal, bool met) -> std::vector<course::Cell> {
      if (gpus < 2) return {value, goal, std::string(), std::string("needs 2 GPUs")};
      return {value, goal, static_cast<long long>(met), std::string()};
    };
    auto target = [&](const std::string& what, double value, double goal, bool met) {
      std::vector<course::Cell> row{what};
      for (course::Cell& c : verdict(value, goal, met)) row.push_back(std::move(c));
      targets.add_row(std::move(row));
    };
    std::set<std::string> failed;
    auto add = [&](const std::string& version, const std::string& config, int g, std::size_t n, const Row& r) {
      if (!r.valid) failed.insert(version);
      const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
      const double gb = course::gbps(bytes, r.ms.median);
      const double combine_bytes = 4.0 * g;  // the gathered partials (nccl-tests' size for allgather)
      const double algbw = r.split.combine_ms > 0 ? combine_bytes / (r.split.combine_ms * 1e6) : 0.0;
      // The floor combines nothing: its combine columns are empty cells, not zeros.
      const bool combines = version != "speed_of_light";
      const double none = std::nan("");
      table.add_row({version, config, static_cast<long long>(g), static_cast<long long>(n),
                     static_cast<long long>(ch11::max_slice(n, g)), bytes, static_cast<long long>(r.ms.count), r.ms.median,
                     r.ms.mean, r.ms.sd, r.ms.min, gb, 100.0 * gb / roof_of(g), r.split.kernel_ms,
                     combines ? r.split.combine_ms : none,
                     combines ? 100.0 * r.split.combine_ms / std::max(r.split.kernel_ms, 1e-9) : none,
                     combines ? combine_bytes : none, combines ? 1e3 * r.split.combine_ms : none, combines ? algbw : none,
                     combines ? algbw * bus_factor(version, g) : none, r.rel_error, static_cast<long long>(r.valid)});
    };

    // The size sweep: every combine, on each GPU count.
    std::size_t seed_n = 0;
    for (int g : counts) {
      if (!wants("sweep")) break;
      progress.step("size sweep on " + std::to_string(g) + " GPU(s)");
      ch11::Team team = ch11::make_local_team(devices, g);
      for (std::size_t per : per_gpu_sizes) {
        const std::size_t n = per * static_cast<std::size_t>(g);
        const std::uint64_t seed = opt.seed + 2 * (++seed_n);
        ch11::fill_slices(team, n, seed);
        const course::Reference ref = ch11::reference_from_seed(n, seed);
        const int reps = n >= (std::size_t{1} << 26) ? opt.reps : std::max(opt.reps, 100);
        for (const Version* v : selected)
          add(std::string(v->name), "resident gpus=" + std::to_string(g), g, n, measure(team, *v, n, seed, ref, reps, opt.warmup));
      }
    }

    // Weak (n per GPU fixed) and strong (n fixed) scaling, with the deterministic combine.
    double weak_ratio = 1, strong_ratio = 1;
    if (wants("scaling")) progress.step("weak and strong scaling");
    for (const char* kind : {"weak", "strong"}) {
      if (!wants("scaling")) break;
      double base_gbps = 0, base_ms = 0;
      for (int g : counts) {
        const std::size_t n = std::string(kind) == "weak" ? weak_n * static_cast<std::size_t>(g) : strong_n;
        ch11::Team team = ch11::make_local_team(devices, g);
        const std::uint64_t seed = opt.seed + 1000 + 2 * static_cast<std::uint64_t>(g);
        ch11::fill_slices(team, n, seed);
        const course::Reference ref = ch11::reference_from_seed(n, seed);
        const Row r = measure(team, *allgather, n, seed, ref, opt.reps, opt.warmup);
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
    if (wants("scaling")) {
      target("weak scaling, " + course::format_size(weak_n) + " per GPU: " + std::to_string(gpus) +
                 " GPU(s) / 1 GPU throughput", weak_ratio, 1.9, weak_ratio >= 1.9);
      target("strong scaling, " + course::format_size(strong_n) + " in all: " + std::to_string(gpus) +
                 " GPU(s) / 1 GPU throughput", strong_ratio, 1.8, strong_ratio >= 1.8);
    }

    // Where the combine's time goes, on every GPU at a small n (2^16 per GPU): the host's steps,
    // the GPUs' spans between them, and NCCL's floor with the host out of the way.
    const Version* graph = course::find_version(ch11::versions(), "allgather_graph");
    const Version* p2p = course::find_version(ch11::versions(), "p2p");
    if (wants("parts")) {
      progress.step("where the combine's time goes");
      ch11::Team team = ch11::make_local_team(devices, gpus);
      const std::size_t n = (std::size_t{1} << 16) * static_cast<std::size_t>(gpus);
      ch11::fill_slices(team, n, opt.seed + 7001);
      std::string wrong;
      measure_parts(team, n, opt.seed + 7001, std::max(opt.reps, 200), parts, &wrong);
      if (!wrong.empty()) {
        std::fprintf(stderr, "11_multi_gpu: the parts of allgather on %d GPU(s) at n = %zu FAILED: %s\n", gpus, n, wrong.c_str());
        failed.insert("allgather (parts)");
      }
      // The same call through the graph, split the same way (partial end to result).
      const course::Reference ref = ch11::reference_from_seed(n, opt.seed + 7001);
      const Row r = measure(team, *graph, n, opt.seed + 7001, ref, std::max(opt.reps, 200), opt.warmup);
      if (!r.valid) failed.insert("allgather_graph (parts)");
      parts.add_row({std::string("partial end to result, graph"), std::string("gpu"), static_cast<long long>(gpus),
                     static_cast<long long>(n), 1e3 * r.split.combine_ms, std::string("allgather_graph: NCCL and the add replayed from one graph per GPU")});
      parts.add_row({std::string("whole call, graph"), std::string("call"), static_cast<long long>(gpus), static_cast<long long>(n),
                     1e3 * r.ms.median, std::string("allgather_graph, host clock, result on every GPU")});
      // The same call with the combine inside the kernel: partial stores straight into every GPU.
      const Row q = measure(team, *p2p, n, opt.seed + 7001, ref, std::max(opt.reps, 200), opt.warmup);
      if (!q.valid) failed.insert("p2p (parts)");
      parts.add_row({std::string("partial end to result, p2p"), std::string("gpu"), static_cast<long long>(gpus),
                     static_cast<long long>(n), 1e3 * q.split.combine_ms,
                     std::string("p2p: tagged partials stored over NVLink, read and added in the same kernel (GPU clock)")});
      parts.add_row({std::string("whole call, p2p"), std::string("call"), static_cast<long long>(gpus), static_cast<long long>(n),
                     1e3 * q.ms.median, std::string("p2p, host clock, result on every GPU")});
      // The same p2p call with every kernel launched from this one thread, one after the other:
      // what launching from a thread per GPU saves.
      team.threaded_launch = false;
      const Row s = measure(team, *p2p, n, opt.seed + 7001, ref, std::max(opt.reps, 200), opt.warmup);
      team.threaded_launch = true;
      if (!s.valid) failed.insert("p2p, one launching thread (parts)");
      parts.add_row({std::string("partial end to result, p2p, one launching thread"), std::string("gpu"),
                     static_cast<long long>(gpus), static_cast<long long>(n), 1e3 * s.split.combine_ms,
                     std::string("p2p with the kernels launched one after the other from one host thread")});
      parts.add_row({std::string("whole call, p2p, one launching thread"), std::string("call"), static_cast<long long>(gpus),
                     static_cast<long long>(n), 1e3 * s.ms.median, std::string("p2p launched from one thread, host clock")});
      target("combine on " + std::to_string(gpus) + " GPU(s), p2p at " + course::format_size(n) +
                 ": partial end to result, us (at most)", 1e3 * q.split.combine_ms, 12.0, 1e3 * q.split.combine_ms <= 12.0);
    }

    // One GPU alone against all of them at the same n, in turns: the crossover.
    if (wants("crossover") && gpus >= 2) {
      progress.step("crossover: one GPU against " + std::to_string(gpus));
      const std::size_t top = std::min<std::size_t>(std::size_t{1} << 26, std::min(devices[0]->capacity(), weak_n * gpus));
      ch11::Team solo = ch11::make_local_team(devices, 1);
      ch11::Team team = ch11::make_local_team(devices, gpus);
      const Version* eager = allgather;
      std::vector<CrossoverRow> rows;
      for (std::size_t n = std::size_t{1} << 12; n <= top; n *= 2) {
        const std::uint64_t seed = opt.seed + 9000 + n;
        // GPU 0's slice of the team is the prefix of the whole vector: fill the team, then GPU 0
        // with everything, and both hold their inputs at once.
        ch11::fill_slices(team, n, seed);
        ch11::fill_slices(solo, n, seed);
        const course::Reference ref = ch11::reference_from_seed(n, seed);
        // One GPU alone, then the team with p2p, allgather_graph and allgather: one call of each
        // per round, the order turning each round.
        const ch11::Combine team_versions[3] = {p2p->run, graph->run, eager->run};
        std::vector<double> times[4];
        bool valid = true;
        // Both teams hold x[at] (GPU 0 the whole vector, the team its slices): changed in both.
        Toggle toggle = device_toggle({&team, &solo}, n, seed, ref);
        const int reps = std::max(opt.reps, n >= (std::size_t{1} << 24) ? 50 : 200);
        for (int r = 0; r < opt.warmup + reps; ++r) {
          for (int k = 0; k < 4; ++k) {
            const int which = (k + r) % 4;
            const auto t0 = Clock::now();
            const float got = which == 0 ? ch11::single_gpu_dot(*devices[0], n)
                                         : ch11::dot(team, team_versions[which - 1], n)[0];
            const double us = us_between(t0, Clock::now());
            if (r >= opt.warmup) times[which].push_back(us);
            const course::Verdict v = course::check_dot(got, toggle.ref());  // every call, outside the clock
            if (!v.ok && valid)
              std::fprintf(stderr, "11_multi_gpu: crossover at n = %zu, %s, call %d%s FAILED: %s\n", n,
                           kCrossoverNames[which], r, toggle.note().c_str(),
                           v.message.c_str());
            valid = valid && v.ok;
            toggle.flip();
          }
        }
        toggle.restore();
        if (!valid) failed.insert("crossover");
        rows.push_back({n, course::summarize(times[0]).median, course::summarize(times[1]).median,
                        course::summarize(times[2]).median, course::summarize(times[3]).median});
      }
      // The crossover: the smallest n from which the team (p2p, the fastest combine) wins at
      // every larger n measured.
      std::size_t from = 0;
      for (auto it = rows.rbegin(); it != rows.rend() && it->p2p_us < it->one_us; ++it) from = it->n;
      for (const CrossoverRow& c : rows)
        crossover.add_row({static_cast<long long>(c.n), static_cast<long long>(gpus), c.one_us, c.p2p_us, c.graph_us,
                           c.eager_us, c.one_us / c.p2p_us, static_cast<long long>(c.p2p_us < c.one_us)});
      target(std::to_string(gpus) + " GPUs (p2p) faster than 1 GPU alone from n = (at most 2^23)",
             static_cast<double>(from), static_cast<double>(std::size_t{1} << 23), from != 0 && from <= (std::size_t{1} << 23));
    }

    // Host data: every GPU copies its slice over its own link at once. Does H2D add up?
    if (host_n > 0 && wants("host")) {
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
        Toggle toggle;  // the host's x: the timed calls copy it in
        toggle.change = course::timed_input_change(ref, n, [&](std::size_t i) { return std::make_pair(h_x.data()[i], h_y.data()[i]); });
        toggle.write = [&h_x, at = toggle.change.at](float value) { h_x.data()[at] = value; };
        for (int r = 0; r < opt.warmup + opt.reps; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          ch11::upload_slices(team, h_x.data(), h_y.data(), n);
          sync_all();
          const double c = ms_since(t0);
          const std::vector<float> got = ch11::dot(team, allgather->run, n);
          const double t = ms_since(t0);
          if (r >= opt.warmup) copy.push_back(c), total.push_back(t);
          for (float one : got) {  // every GPU's result of every call, outside the clock
            const course::Verdict v = course::check_dot(one, toggle.ref());
            if (!v.ok && valid)
              std::fprintf(stderr, "11_multi_gpu: host data on %d GPU(s), call %d%s FAILED: %s\n", g, r, toggle.note().c_str(),
                           v.message.c_str());
            valid = valid && v.ok;
          }
          toggle.flip();
        }
        toggle.restore();
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
                 "combine step in nccl-tests' terms; speed_of_light is not a dot but the floor, every GPU reading "
                 "its slice and nothing else):\n\n";
    if (wants("sweep"))
      table.print(std::cout, {"version", "gpus", "n", "median_ms", "gbps", "pct_roofline", "kernel_ms", "combine_ms",
                              "combine_us", "algbw_gbps", "busbw_gbps", "valid"});
    if (wants("scaling")) {
      std::cout << "\nScaling (allgather):\n\n";
      scaling.print(std::cout);
    }
    if (wants("parts")) {
      std::cout << "\nWhere one combine's time goes (allgather, eager; medians in microseconds):\n\n";
      parts.print(std::cout);
    }
    if (!crossover.rows().empty()) {
      std::cout << "\nOne GPU alone against " << gpus << " (time per call in microseconds, timed in turns):\n\n";
      crossover.print(std::cout);
    }
    if (host_n > 0 && wants("host")) {
      std::cout << "\nHost data (pinned), each GPU copying its slice over its own link:\n\n";
      host.print(std::cout);
    }
    std::cout << "\nTargets (a team of GPUs; on one GPU each says 'needs 2 GPUs'):\n\n";
    targets.print(std::cout);
    course::write_csvs(opt.csv, table,
                       {{"scaling", wants("scaling") ? &scaling : nullptr},
                        {"host", host_n > 0 && wants("host") ? &host : nullptr},
                        {"parts", wants("parts") ? &parts : nullptr},
                        {"crossover", crossover.rows().empty() ? nullptr : &crossover}, {"targets", &targets}});
    if (!opt.csv.empty())
      std::cout << "\nCSV written to " << opt.csv << " (and its _scaling, _host, _parts, _crossover, _targets beside it)\n";
    if (!failed.empty()) {
      std::cerr << "11_multi_gpu: wrong results from:";
      for (const auto& f : failed) std::cerr << " " << f;
      std::cerr << "\n";
      return course::kExitFailure;
    }
    return course::kExitOk;
  });
}
