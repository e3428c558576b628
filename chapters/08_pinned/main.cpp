// Chapter 08 driver — pinned memory: every path from host memory to the GPU, measured.
//
//   08_pinned                          the transfer sweep (4 KiB – 256 MiB, h2d, d2h, both) with an
//                                      α + S/β fit per path, the cost of pinning, and the dot of host
//                                      data end to end at 2^20 and 2^26 on every path (about a minute)
//   08_pinned --full                   the sweep up to 1 GiB, pinning costs up to 1 GiB
//   08_pinned --kernel staged          one path
//   08_pinned --n 2^24                 the end-to-end dot at one size
//   08_pinned --csv results/local/08_pinned.csv
//       (the end-to-end table; _sweep, _fit, _pinning and _targets beside it)
//
// Beside the paths, at every n of the end-to-end dot and timed the same way, the registry's
// speed_of_light row: not a dot but the floor, the pinned path's two copies and nothing else; it is
// checked by the bytes that landed (it has no result), and runs beside any --kernel. Its copies are
// the pinned path's, so the transfer sweep leaves it out.
//
// Copies on asynchronous paths are timed as nvbandwidth does: a spin kernel holds the stream
// while the host queues a batch of copies, then lets go, so the events time the copies and not
// their enqueueing. Pageable, staged and managed paths block the host, so they are timed one
// copy at a time between events.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/context.hpp"
#include "course/driver.hpp"
#include "course/inputs.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/stream.hpp"
#include "course/table.hpp"
#include "course/thread_pool.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch08::PathFactory>;
constexpr std::size_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
constexpr long long kHoldTimeoutNs = 2'000'000'000;  // a hold never outlives 2 s, whatever happens

// Issue 38, class 4: a timed copy's result is the bytes it left on the device. Outside the timed
// region, the device buffer is poisoned before the copy and compared with the source after it,
// through `scratch` (pinned, at least `bytes`), so a copy skipped because an earlier one moved the
// same bytes leaves the poison and is seen. check_landed returns "" or what went wrong.
void poison(ch08::Path& path, std::size_t bytes, cudaStream_t s) {
  if (bytes > 0) CUDA_CHECK(cudaMemsetAsync(path.device(), 0xA5, bytes, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
}
std::string check_landed(ch08::Path& path, std::size_t bytes, cudaStream_t s, unsigned char* scratch, const char* what, int call) {
  if (bytes == 0) return "";
  CUDA_CHECK(cudaMemcpyAsync(scratch, path.device(), bytes, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (std::memcmp(scratch, path.src(), bytes) == 0) return "";
  std::size_t at = 0;
  while (at < bytes && scratch[at] == path.src()[at]) ++at;
  return std::string(what) + " of " + course::format_bytes(bytes) + ", timed call " + std::to_string(call) +
         ": the device's byte " + std::to_string(at) + " is not the source's once the call is done (a copy skipped, "
         "short, or not on the stream given)";
}

// One copy size: milliseconds per copy (median of batches). Copies timed one at a time (the paths
// that block the host, the staged exercise among them) are checked one by one (poison, then
// check_landed; h2d with a device copy); the first wrong one goes to *wrong.
double time_transfer(ch08::Path& path, const std::string& dir, std::size_t bytes, course::Context& ctx,
                     cudaStream_t second, int* flag, int& reps_out, unsigned char* scratch = nullptr,
                     std::string* wrong = nullptr, bool has_device_copy = true) {
  cudaStream_t s = ctx.stream();
  const int reps = static_cast<int>(std::clamp<std::size_t>(64 * MiB / std::max<std::size_t>(bytes, 1), 3, 100));
  const int batches = 5;
  reps_out = reps * batches;
  std::vector<double> samples;
  course::Event start, stop, stop2, forked;
  auto issue = [&](bool h2d_dir, cudaStream_t st) { h2d_dir ? path.h2d(bytes, st) : path.d2h(bytes, st); };
  if (path.asynchronous()) {
    // [held_timing]
    for (int b = 0; b < batches + 1; ++b) {  // batch 0 warms up
      *flag = 0;
      ch08::hold_stream(flag, kHoldTimeoutNs, s);  // the stream waits here until the host lets go
      CUDA_CHECK(cudaEventRecord(start, s));
      if (dir == "both") {
        CUDA_CHECK(cudaEventRecord(forked, s));
        CUDA_CHECK(cudaStreamWaitEvent(second, forked, 0));
      }
      for (int r = 0; r < reps; ++r) {
        if (dir == "both") {
          issue(true, s);
          issue(false, second);
        } else {
          issue(dir == "h2d", s);
        }
      }
      CUDA_CHECK(cudaEventRecord(stop, s));
      if (dir == "both") CUDA_CHECK(cudaEventRecord(stop2, second));
      *flag = 1;  // every copy is queued: let the stream go
      CUDA_CHECK(cudaStreamSynchronize(s));
      CUDA_CHECK(cudaStreamSynchronize(second));
      double ms = stop.ms_since(start);
      if (dir == "both") ms = std::max<double>(ms, stop2.ms_since(start));
      if (b > 0) samples.push_back(ms / reps);
    }
    // [held_timing]
  } else {
    const int n = std::min(reps, 20);
    const bool check = dir == "h2d" && has_device_copy && scratch != nullptr && wrong != nullptr;
    for (int r = 0; r < n + 1; ++r) {
      path.reset(dir == "h2d", s);
      if (check) poison(path, bytes, s);  // outside the events
      CUDA_CHECK(cudaEventRecord(start, s));
      issue(dir == "h2d", s);
      CUDA_CHECK(cudaEventRecord(stop, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
      if (r > 0) samples.push_back(stop.ms_since(start));
      if (check && wrong->empty()) *wrong = check_landed(path, bytes, s, scratch, "h2d", r);
    }
    reps_out = n;
  }
  return course::summarize(samples).median;
}

// Weighted least squares of t = α + S/β, each point weighted by 1/t² (relative errors), so the
// small sizes set α and the large ones β.
void fit(const std::vector<double>& bytes, const std::vector<double>& ms, double& alpha_us, double& beta_gbps) {
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double t = ms[i] * 1e-3, S = bytes[i], w = 1.0 / (t * t);
    a11 += w;
    a12 += w * S;
    a22 += w * S * S;
    b1 += w * t;
    b2 += w * S * t;
  }
  const double det = a11 * a22 - a12 * a12;
  const double alpha = (b1 * a22 - b2 * a12) / det;
  const double inv_beta = (a11 * b2 - a12 * b1) / det;
  alpha_us = alpha * 1e6;
  beta_gbps = inv_beta > 0 ? 1.0 / inv_beta / 1e9 : 0.0;
}

using course::ms_since;

// The cost of pinning, against size: allocate, register, free.
void pinning_costs(const std::vector<std::size_t>& sizes, course::Table& table) {
  for (std::size_t bytes : sizes) {
    std::vector<double> t_malloc, t_host_alloc, t_host_free, t_register, t_unregister, t_free;
    for (int r = 0; r < 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      void* p = std::malloc(bytes);
      if (p == nullptr) throw course::DoesNotFitError("malloc of " + course::format_bytes(bytes) + " failed");
      std::memset(p, 1, bytes);  // the OS maps pages on first touch: part of what pageable memory costs
      t_malloc.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      { ch08::Registration reg(p, bytes);
        t_register.push_back(ms_since(t0));
        t0 = std::chrono::steady_clock::now();
        reg.release();
        t_unregister.push_back(ms_since(t0)); }
      t0 = std::chrono::steady_clock::now();
      std::free(p);
      t_free.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      void* q = nullptr;
      CUDA_CHECK(cudaMallocHost(&q, bytes));
      t_host_alloc.push_back(ms_since(t0));
      std::memset(q, 1, bytes);
      t0 = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaFreeHost(q));
      t_host_free.push_back(ms_since(t0));
    }
    auto row = [&](const char* op, const std::vector<double>& t) {
      const double ms = course::summarize(t).median;
      table.add_row({std::string(op), static_cast<long long>(bytes), ms, course::gbps(static_cast<double>(bytes), ms)});
    };
    row("malloc_and_touch", t_malloc);
    row("cudaHostRegister", t_register);
    row("cudaHostUnregister", t_unregister);
    row("free", t_free);
    row("cudaMallocHost", t_host_alloc);
    row("cudaFreeHost", t_host_free);
  }
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("08_pinned", course::about(R"(
Chapter 08: pinned memory. Every path from host memory to the GPU (pageable, pinned, registered,
mapped zero-copy, staged through reused pinned buffers by host threads, managed with and without
prefetch): a transfer sweep with a latency/bandwidth fit, the cost of pinning, and the dot of host
data end to end.
)"),
                  std::size_t{1} << 20, 20, 3);
  bool full = false;
  app.cli().add_flag("--full", full, "The complete sweep: transfers and pinning costs up to 1 GiB (default 256 MiB)");
  app.set_versions(ch08::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    course::Context ctx(opt.device);
    const auto& facts = ctx.facts();
    std::printf("GPU: %s\n", course::describe_device(facts).c_str());
    const ch08::LinkInfo link = ch08::link_info(ctx.device());
    std::printf("Host link: %s\n", link.text.c_str());

    // The floor, speed_of_light, runs beside any --kernel: every path is measured against it.
    const std::vector<const Version*> selected =
        course::select_versions(ch08::versions(), opt, [](const Version& v) { return ch08::is_speed_of_light(v); });
    const int floors = static_cast<int>(std::count_if(selected.begin(), selected.end(),
                                                      [](const Version* v) { return ch08::is_speed_of_light(*v); }));
    std::vector<std::size_t> dot_sizes = {opt.n};
    if (!opt.n_given) dot_sizes = {std::size_t{1} << 20, std::size_t{1} << 26};
    const std::size_t n_max = *std::max_element(dot_sizes.begin(), dot_sizes.end());
    const std::size_t sweep_max = full ? GiB : 256 * MiB;
    std::vector<std::size_t> sweep_sizes;
    for (std::size_t b = 4 * KiB; b <= sweep_max; b *= 4) sweep_sizes.push_back(b);
    std::vector<std::size_t> pin_sizes;
    for (std::size_t b = MiB; b <= sweep_max; b *= 4) pin_sizes.push_back(b);
    const std::size_t path_bytes = std::max(sweep_max, 2 * n_max * sizeof(float));

    const int steps = 2 + static_cast<int>(selected.size() * 2) - floors + 1;  // the floor has no sweep
    course::Progress progress(steps, "08_pinned", !opt.quiet);
    course::PinnedBuffer<int> flag(1);
    course::PinnedBuffer<unsigned char> scratch(sweep_max);  // where timed copies are read back and checked
    course::Stream second;  // the second direction of "both" (the context's stream takes the first)

    // The two ceilings of this run: pinned H2D at 256 MiB, and the host's own pageable → pinned
    // memcpy with every core.
    progress.step("ceilings");
    double pinned_h2d_gbps = 0, host_copy_gbps = 0;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    {
      const std::size_t bytes = 256 * MiB;
      auto pinned = course::find_version(ch08::versions(), "pinned")->run(ctx);
      pinned->prepare(bytes);
      int reps = 0;
      pinned_h2d_gbps = course::gbps(static_cast<double>(bytes), time_transfer(*pinned, "h2d", bytes, ctx, second, flag.data(), reps));
      std::vector<unsigned char> pageable(bytes, 1);
      course::PinnedBuffer<unsigned char> staging(bytes);
      course::ThreadPool pool(cores);
      ch08::parallel_memcpy(pool, staging.data(), pageable.data(), bytes);  // warm-up: touches every page
      const auto samples = course::time_cpu_ms([&] { ch08::parallel_memcpy(pool, staging.data(), pageable.data(), bytes); }, 1, 10);
      host_copy_gbps = course::gbps(static_cast<double>(bytes), course::summarize(samples).median);
    }
    std::printf("This run's ceilings: pinned H2D %.1f GB/s (256 MiB); host memcpy pageable -> pinned with %u threads %.1f GB/s\n\n",
                pinned_h2d_gbps, cores, host_copy_gbps);

    course::Table sweep({"path", "direction", "bytes", "reps", "median_ms", "gbps", "held"});
    course::Table fits({"path", "direction", "alpha_us", "beta_gbps", "link_gbps", "pct_wire", "points"});
    course::Table table = course::measurement_table(course::Share::link);
    course::Table pinning({"op", "bytes", "median_ms", "gbps"});
    course::Table targets({"target", "value_gbps", "ceiling_gbps", "ratio", "goal", "met"});
    course::Table staging({"chunk_bytes", "threads", "bytes", "median_ms", "gbps", "pct_ceiling", "host_gbps", "per_chunk_us",
                           "predicted_ms"});
    std::set<std::string> failed;

    for (const Version* v : selected) {
      auto path = v->run(ctx);
      path->prepare(path_bytes);
      const bool is_floor = ch08::is_speed_of_light(*v);
      // The transfer sweep (not for the floor: its copies are the pinned path's).
      if (!is_floor) progress.step(std::string(v->name) + " sweep");
      std::vector<std::string> dirs;
      if (!is_floor) dirs.push_back("h2d");
      if (!is_floor && path->has_d2h()) dirs.push_back("d2h");
      if (!is_floor && path->has_d2h() && path->asynchronous()) dirs.push_back("both");
      // Validate first: a pattern round trip through the device buffer.
      if (!is_floor) {
        const std::size_t bytes = sweep_sizes.back() - 13;  // an odd size, within what prepare() was given
        for (std::size_t i = 0; i < bytes; ++i) path->src()[i] = static_cast<unsigned char>(i * 7 + 3);
        path->reset(true, ctx.stream());
        path->h2d(bytes, ctx.stream());
        ctx.synchronize();
        bool ok = true;
        if (std::string(v->name) != "managed_prefetch") {
          std::vector<unsigned char> back(bytes);
          CUDA_CHECK(cudaMemcpy(back.data(), path->device(), bytes, cudaMemcpyDeviceToHost));
          ok = std::memcmp(back.data(), path->src(), bytes) == 0;
        }
        if (!ok) {
          std::fprintf(stderr, "08_pinned: %s h2d of %zu bytes delivered wrong bytes\n", std::string(v->name).c_str(), bytes);
          failed.insert(std::string(v->name));
        }
      }
      for (const std::string& dir : dirs) {
        std::vector<double> xs, ts;
        for (std::size_t bytes : sweep_sizes) {
          int reps = 0;
          std::string wrong;
          const double ms = time_transfer(*path, dir, bytes, ctx, second, flag.data(), reps, scratch.data(), &wrong,
                                          std::string(v->name) != "managed_prefetch");
          if (!wrong.empty()) {
            std::fprintf(stderr, "08_pinned: %s sweep FAILED: %s\n", std::string(v->name).c_str(), wrong.c_str());
            failed.insert(std::string(v->name));
          }
          const double counted = dir == "both" ? 2.0 * bytes : static_cast<double>(bytes);
          sweep.add_row({std::string(v->name), dir, static_cast<long long>(bytes), static_cast<long long>(reps), ms,
                         course::gbps(counted, ms), static_cast<long long>(path->asynchronous() ? 1 : 0)});
          xs.push_back(counted);
          ts.push_back(ms);
        }
        double alpha_us = 0, beta = 0;
        fit(xs, ts, alpha_us, beta);
        const double link_rate = link.gbps * (dir == "both" ? 2 : 1);
        fits.add_row({std::string(v->name), dir, alpha_us, beta, link_rate, link_rate > 0 ? 100 * beta / link_rate : 0.0,
                      static_cast<long long>(xs.size())});
      }

      // The dot of host data, end to end.
      progress.step(std::string(v->name) + " end to end");
      for (std::size_t n : dot_sizes) {
        const course::HostDotInputs in(n, opt.seed);
        const std::vector<float>& x = in.x;
        const std::vector<float>& y = in.y;
        const course::Reference& ref = in.ref;
        path->reset(true, ctx.stream());
        std::memcpy(path->src(), x.data(), n * sizeof(float));
        std::memcpy(path->src() + path_bytes / 2, y.data(), n * sizeof(float));
        // The floor computes nothing: it is checked by the bytes that landed, and has no rel_error.
        const course::Verdict before = is_floor ? ch08::check_link_floor(ctx, *path, n) : course::check_dot(path->dot(n), ref);
        const int reps = n >= (std::size_t{1} << 24) ? std::min(opt.reps, 10) : opt.reps;
        // The pinned target's ceiling is timed interleaved with the dot, call by call, with the same
        // clock: the host's memory bandwidth drifts within a run (a shared host), and a ceiling
        // measured minutes earlier would compare two different machines.
        const bool pinned_target = v->name == "pinned" && n == (std::size_t{1} << 26);
        std::vector<double> samples, copy_samples;
        float last = 0;
        // Issue 38, class 4: x[at] alternates between its value and a spike between timed calls,
        // and every call's result is checked against the reference of the input it was given (the
        // floor's, by the x[at] that landed on the device), outside the timed region.
        const course::TimedInputChange change =
            course::timed_input_change(ref, n, [&](std::size_t i) { return std::make_pair(x[i], y[i]); });
        bool changed = false, every_call_ok = true;
        course::Verdict last_verdict;
        std::string wrong;
        auto x_at = [&]() -> float& { return reinterpret_cast<float*>(path->src())[change.at]; };
        for (int r = 0; r < reps + opt.warmup; ++r) {
          path->reset(true, ctx.stream());  // managed data starts on the host every call
          const auto t0 = std::chrono::steady_clock::now();
          last = path->dot(n);
          if (r >= opt.warmup) samples.push_back(ms_since(t0));
          if (is_floor && change.active) {
            float landed = 0;
            CUDA_CHECK(cudaMemcpy(&landed, path->device() + change.at * sizeof(float), sizeof landed, cudaMemcpyDeviceToHost));
            const float want = change.value(changed);
            if (std::memcmp(&landed, &want, sizeof want) != 0 && wrong.empty())
              wrong = "timed call " + std::to_string(r) + ": x[" + std::to_string(change.at) + "] on the device is not the " +
                      "value the host held for that call (a copy skipped or short)";
          } else if (!is_floor) {
            last_verdict = course::check_dot(last, change.ref(changed));
            if (!last_verdict.ok && wrong.empty())
              wrong = "timed call " + std::to_string(r) + (changed ? " (x[" + std::to_string(change.at) + "] changed)" : std::string()) +
                      ": " + last_verdict.message;
          }
          every_call_ok = every_call_ok && wrong.empty();
          if (change.active) {
            changed = !changed;
            x_at() = change.value(changed);
          }
          if (pinned_target) {
            const auto t1 = std::chrono::steady_clock::now();
            path->h2d(2 * n * sizeof(float), ctx.stream());  // the same bytes, copy only
            ctx.synchronize();
            if (r >= opt.warmup) copy_samples.push_back(ms_since(t1));
          }
        }
        if (changed) x_at() = change.value(false);  // the input as generated again
        course::Verdict after = is_floor ? ch08::check_link_floor(ctx, *path, n) : last_verdict;
        if (!every_call_ok) {
          after.ok = false;
          after.message = wrong;
        }
        // roofline_gbps: the pinned H2D bandwidth timed at the start (pct_link's denominator), not
        // device memory's. One reading, taken before anything else: if it comes in low, pct_link passes 100.
        const course::Measurement m = course::measured(v->name, is_floor ? "x, y pinned: one copy each, no kernel, no result (the floor)"
                                                                       : "host data, result on the host", n,
                                                       2.0 * n * sizeof(float), samples, pinned_h2d_gbps,
                                                       after.rel_error, before.ok && after.ok);
        if (!m.valid) {
          std::fprintf(stderr, "08_pinned: %s dot at n = %zu FAILED: %s\n", m.version.c_str(), n,
                       (before.ok ? after : before).message.c_str());
          failed.insert(m.version);
        }
        course::add_measurement(table, m);
        if (pinned_target) {
          const double g = course::gbps(m.bytes, m.ms.median);
          const double ceiling = course::gbps(m.bytes, course::summarize(copy_samples).median);
          std::printf("pinned 2^26: the copies alone, interleaved with the dot calls: %.1f GB/s (at the run's start: %.1f GB/s)\n",
                      ceiling, pinned_h2d_gbps);
          targets.add_row({std::string("pinned dot 2^26 end to end vs pinned H2D"), g, ceiling, g / ceiling, 0.90,
                           static_cast<long long>(g >= 0.90 * ceiling)});
        }
      }
      if (v->name == "staged") {
        // The staged target: 2 × 256 MiB of pageable input, against the lesser ceiling. The host's
        // memory bandwidth drifts from run to run (other tenants, clocks), so the host memcpy
        // ceiling is measured again here, interleaved with the staged copies, both medians of 10.
        const std::size_t bytes = std::min<std::size_t>(512 * MiB, path_bytes);
        course::PinnedBuffer<unsigned char> pinned_dst(bytes);
        course::ThreadPool pool(cores);
        std::vector<double> staged_ms, memcpy_ms;
        // Every timed copy is checked (issue 38, class 4): one source byte changed before it and the
        // device poisoned, then all the bytes read back and compared, outside the timed region.
        std::string wrong;
        auto checked = [&](int r, const std::function<void()>& copy, std::vector<double>& into, const char* what) {
          path->src()[(static_cast<std::size_t>(r) * 7919 * 4099 + bytes / 2) % bytes] ^= 0x5A;
          poison(*path, bytes, ctx.stream());
          const auto t0 = std::chrono::steady_clock::now();
          copy();
          ctx.synchronize();
          if (r > 0) into.push_back(ms_since(t0));
          if (wrong.empty()) wrong = check_landed(*path, bytes, ctx.stream(), pinned_dst.data(), what, r);
        };
        for (int r = 0; r < 11; ++r) {
          checked(r, [&] { path->h2d(bytes, ctx.stream()); }, staged_ms, "staged h2d");
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          const auto t0 = std::chrono::steady_clock::now();
          ch08::parallel_memcpy(pool, pinned_dst.data(), path->src(), bytes);
          if (r > 0) memcpy_ms.push_back(ms_since(t0));
          // Both pools' workers poll for 500 µs after their last chunk before they sleep: let them
          // settle, so neither measurement shares the cores with the other's idle threads.
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        const double g = course::gbps(static_cast<double>(bytes), course::summarize(staged_ms).median);
        host_copy_gbps = std::max(host_copy_gbps, course::gbps(static_cast<double>(bytes), course::summarize(memcpy_ms).median));
        const double ceiling = std::min(pinned_h2d_gbps, host_copy_gbps);
        targets.add_row({std::string("staged h2d 2 x 256 MiB pageable vs min(pinned H2D, host memcpy)"), g, ceiling, g / ceiling,
                         0.90, static_cast<long long>(g >= 0.90 * ceiling)});
        // The staging knobs: chunk size and threads (4 pinned buffers each), each beside exercise 2's
        // prediction from this run's pinned H2D rate and the host's side of the row measured alone
        // with that many threads: the hand-over (one page per thread) and the chunks copied in turn
        // into 4 chunk-sized pinned buffers, as the Stager fills them (they stay in the caches).
        for (std::size_t chunk : {2 * MiB, 8 * MiB, 32 * MiB})
          for (unsigned threads : {4u, 8u, cores}) {
            if (threads > cores) continue;
            double host_gbps = 0, per_chunk_us = 0;
            {
              course::ThreadPool pool_t(threads);
              const std::size_t chunks = (bytes + chunk - 1) / chunk;
              auto fill = [&] {
                for (std::size_t i = 0; i < chunks; ++i)
                  ch08::parallel_memcpy(pool_t, pinned_dst.data() + i % 4 * chunk, path->src() + i * chunk,
                                        std::min(chunk, bytes - i * chunk));
              };
              auto hand_over = [&] { ch08::parallel_memcpy(pool_t, pinned_dst.data(), path->src(), threads * 4 * KiB); };
              per_chunk_us = 1e3 * course::summarize(course::time_cpu_ms(hand_over, 5, 50)).median;
              const double fill_ms = course::summarize(course::time_cpu_ms(fill, 1, 3)).median;
              // The hand-overs are part of fill_ms: host_gbps is the rate of the rest (never more than
              // twice the plain rate, should the hand-over's estimate be high).
              const double copy_ms = std::max(fill_ms - 1e-3 * per_chunk_us * static_cast<double>(chunks), 0.5 * fill_ms);
              host_gbps = course::gbps(static_cast<double>(bytes), copy_ms);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the pool's polling threads are gone
            const double predicted = ch08::staged_copy_ms(bytes, chunk, host_gbps, pinned_h2d_gbps, per_chunk_us);
            ch08::Stager stager(ctx, threads, chunk, 4);
            std::vector<double> t;
            for (int r = 0; r < 5; ++r)
              checked(r, [&] { stager.h2d(path->device(), path->src(), bytes, ctx.stream()); }, t, "staging knobs h2d");
            const double ms = course::summarize(t).median;
            staging.add_row({static_cast<long long>(chunk), static_cast<long long>(threads), static_cast<long long>(bytes), ms,
                             course::gbps(static_cast<double>(bytes), ms), 100 * course::gbps(static_cast<double>(bytes), ms) / ceiling,
                             host_gbps, per_chunk_us, predicted});
          }
        if (!wrong.empty()) {
          std::fprintf(stderr, "08_pinned: staged FAILED: %s\n", wrong.c_str());
          failed.insert("staged");
        }
      }
    }
    progress.step("pinning costs");
    pinning_costs(pin_sizes, pinning);
    progress.done();

    std::cout << "\nTransfer fit t = alpha + S/beta per path and direction (bytes counted: payload, both directions "
                 "summed for 'both'; link rate after line coding; pct_wire = % of it):\n\n";
    fits.print(std::cout);
    std::cout << "\nThe dot of host data end to end (result on the host, every cost counted); pct_link = % of "
                 "the pinned H2D bandwidth timed at the start (256 MiB, the first ceiling above; a yardstick, not a "
                 "bound); speed_of_light is not a dot but the floor, the same bytes copied from pinned memory and "
                 "nothing else (checked by the bytes that landed; no rel_error):\n\n";
    table.print(std::cout, course::measurement_screen_columns(course::Share::link));
    std::cout << "\nWhat pinning costs:\n\n";
    pinning.print(std::cout);
    if (!staging.rows().empty()) {
      std::cout << "\nStaging knobs (pageable -> device, 512 MiB; pct_ceiling: % of min(pinned H2D, host memcpy); "
                   "predicted_ms: ch08::staged_copy_ms from pinned H2D, host_gbps and per_chunk_us):\n\n";
      staging.print(std::cout);
    }
    std::cout << "\nTargets:\n\n";
    targets.print(std::cout);

    course::write_csvs(opt.csv, table,
                       {{"sweep", &sweep}, {"fit", &fits}, {"pinning", &pinning}, {"targets", &targets},
                        {"staging", staging.rows().empty() ? nullptr : &staging}});
    if (!opt.csv.empty())
      std::cout << "\nCSV written to " << opt.csv << " (and _sweep, _fit, _pinning, _targets, _staging beside it)\n";
    return course::exit_code("08_pinned", failed, "path(s) gave wrong results");
  });
}
