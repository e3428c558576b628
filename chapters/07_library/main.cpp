// Chapter 07 driver — memory reuse, and the course's dot as a library.
//
//   07_library                          every version at n = 2^10, 2^12, ..., 2^26 (host arrays in,
//                                       result on the host), the phase breakdown, the host link,
//                                       and the motivating program (init, 100 × dot on 2^20, deinit)
//   07_library --kernel reuse           one version
//   07_library --n 2^20 --reps 20       one size
//   07_library --csv results/local/07_library.csv
//       (and 07_library_phases.csv, _link.csv, _staging.csv, _program.csv beside it)
//
// Every version is validated against the fp64 reference before and after timing. A call's time is
// taken on the host clock, from the call to the result in the caller's hands: that is what a
// caller waits for. Beside them, timed the same way at every n, the registry's speed_of_light row:
// not a dot but the floor, the same bytes copied from pinned copies of x and y and nothing else;
// it is checked by the bytes that landed on the device (it has no result), and it runs beside any
// --kernel. The phases (allocate, copy x, copy y, kernel, copy back, free) are timed with
// events recorded between them, each such run right after a plain call timed on the host clock
// (07_library_phases.csv: call_ms is the median of those plain calls, call_minus_phases_ms the
// median of the per-pair differences). The call with events is timed on the host clock too:
// own_call_minus_phases_ms is the median of that call's host time minus its own phases, a
// comparison inside one call that the host's drift between two calls cannot blur; and
// control_host_minus_span_ms the same reading of a control of the same length that does nothing
// but GPU work (device-to-device copies between events, one synchronization): what the host clock
// reads beyond an event span when the call adds nothing to it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
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
#include "course/driver.hpp"
#include "course/inputs.hpp"
#include "course/progress.hpp"
#include "course/random.hpp"
#include "course/reference.hpp"
#include "course/stats.hpp"
#include "course/stream.hpp"
#include "course/table.hpp"
#include "course/timer.hpp"
#include "dotcourse/dotcourse.h"
#include "dot.hpp"

namespace {

using Version = course::Version<ch07::HostDot>;

// The motivating program: this many calls on this many floats.
constexpr int kProgramCalls = 100;
constexpr std::size_t kProgramN = std::size_t{1} << 20;
// Runs of each version with phase events, each paired with a plain call timed just before it.
constexpr int kPhaseReps = 20;

using HostInputs = course::HostDotInputs;  // random signed x, y with planted spikes, and the reference

// The plain loop a Go or C++ programmer writes first (float accumulator, one thread).
float cpu_loop(const float* x, const float* y, std::size_t n) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

using course::ms_since;

void check_status(dotcourse_status s, const char* what) {
  if (s != DOTCOURSE_OK)
    throw course::CudaError(cudaErrorUnknown, std::string(what) + ": " + dotcourse_status_string(s) + ": " +
                                                  dotcourse_last_error());
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("07_library", course::about(R"(
Chapter 07: the course's dot product as a library called with host arrays. Allocating on every call,
reusing device memory planned once, and staging the copies through pinned chunks with several host
threads; the phase breakdown per n, the host link, and the motivating program (100 calls on 2^20
floats) against a CPU loop.
)"),
                  std::size_t{1} << 20, 50, 5);
  app.set_versions(ch07::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    std::vector<std::size_t> sizes;
    if (opt.n_given)
      sizes = {opt.n};
    else
      for (int p = 10; p <= 26; p += 2) sizes.push_back(std::size_t{1} << p);
    const std::size_t largest = std::max(*std::max_element(sizes.begin(), sizes.end()), kProgramN);
    // alloc_per_call always runs: it is the baseline the others are compared with (the grader's
    // speed-up); and the floor, speed_of_light, which every version is measured against.
    const std::vector<const Version*> selected = course::select_versions(
        ch07::versions(), opt, [](const Version& v) { return v.name == "alloc_per_call" || ch07::is_speed_of_light(v); });

    course::require_gpu();
    course::require_fits(2 * largest * sizeof(float) + (std::size_t{64} << 20), "two float vectors of n = " +
                                                                                 course::format_size(largest));
    ch07::Engine engine(opt.device, largest);
    course::Context& gpu = engine.gpu();
    std::printf("GPU: %s\n", course::describe_device(gpu.facts()).c_str());
    const double roofline = gpu.roofline().read_gbps;
    std::printf("Measured read roofline %.0f GB/s; %d staging threads of %zu KiB chunks\n\n", roofline,
                engine.stager().threads(), engine.stager().chunk() * sizeof(float) / 1024);

    course::Table table = course::measurement_table();
    course::Table phases({"version", "config", "n", "mallocs_per_call", "alloc_ms", "copy_x_ms", "copy_y_ms",
                          "kernel_ms", "copy_back_ms", "free_ms", "phases_ms", "call_ms", "call_minus_phases_ms",
                          "own_call_minus_phases_ms", "control_host_minus_span_ms"});
    course::Table link({"what", "n", "bytes", "median_ms", "gbps"});
    course::Table staging({"threads", "chunk_kib", "n", "median_ms", "gbps"});
    course::Table program({"language", "variant", "n", "calls", "init_ms", "calls_ms", "deinit_ms", "per_call_ms",
                           "rel_error"});
    std::set<std::string> failed;
    course::Progress progress(static_cast<int>(sizes.size() * (selected.size() + 2) + 3), "07_library", !opt.quiet);

    auto add_row = [&](const std::string& version, const std::string& config, std::size_t n, const course::Stats& s,
                       double rel_error, bool valid) {
      if (!valid) failed.insert(version);
      course::add_measurement(table, course::measured(version, config, n, 2.0 * static_cast<double>(n) * sizeof(float),
                                                      s, roofline, rel_error, valid));
    };

    const Version* alloc = course::find_version(ch07::versions(), "alloc_per_call");  // the graded pair
    const Version* reuse = course::find_version(ch07::versions(), "reuse");
    // The floor's inputs: pinned copies of x and y, the memory its copies need (made once, for the largest n).
    course::PinnedBuffer<float> floor_x(largest), floor_y(largest);
    for (std::size_t n : sizes) {
      HostInputs in(n, opt.seed + n);
      const int reps = n >= (std::size_t{1} << 24) ? std::min(opt.reps, 20) : opt.reps;
      for (const Version* v : selected) {
        progress.step(std::string(v->name) + " n=" + course::format_size(n));
        if (ch07::is_speed_of_light(*v)) {
          // Not a dot: checked by the bytes that landed, before and after timing; no rel_error. Its
          // phases are its two copies, and it takes no part in the program below.
          std::copy(in.x.begin(), in.x.end(), floor_x.data());
          std::copy(in.y.begin(), in.y.end(), floor_y.data());
          const course::Verdict before = ch07::check_link_floor(engine, floor_x.data(), floor_y.data(), n);
          const auto samples = course::time_cpu_ms([&] { v->run(engine, floor_x.data(), floor_y.data(), n, nullptr); },
                                                   opt.warmup, reps);
          const course::Verdict after = ch07::check_link_floor(engine, floor_x.data(), floor_y.data(), n);
          if (!(before.ok && after.ok))
            std::fprintf(stderr, "07_library: speed_of_light at n = %zu FAILED: %s\n", n,
                         (before.ok ? after : before).message.c_str());
          add_row(std::string(v->name), "x, y pinned: one copy each, no kernel, no result (the floor)", n,
                  course::summarize(samples), std::nan(""), before.ok && after.ok);
          continue;
        }
        const course::Verdict before = course::check_dot(v->run(engine, in.x.data(), in.y.data(), n, nullptr), in.ref);
        // Every timed call is checked, and x changes between calls (one element alternates with a
        // spike: course::TimedInputChange), so that a version that returns an earlier call's
        // answer (a cache kept by pointer or in the engine's memory) fails here too. The timed
        // calls only note their result and store one float; the checks come after the timing.
        const course::TimedInputChange change = course::timed_input_change(
            in.ref, n, [&](std::size_t i) { return std::pair<float, float>{in.x[i], in.y[i]}; });
        bool changed = false;
        std::vector<std::pair<float, bool>> results;  // each call's result, and whether its x held the spike
        results.reserve(static_cast<std::size_t>(opt.warmup + reps));
        const auto samples = course::time_cpu_ms(
            [&] {
              results.emplace_back(v->run(engine, in.x.data(), in.y.data(), n, nullptr), changed);
              if (change.active) {
                changed = !changed;
                in.x[change.at] = change.value(changed);
              }
            },
            opt.warmup, reps);
        if (changed) in.x[change.at] = change.original;
        course::Verdict timed;
        timed.ok = true;
        for (const auto& [got, was_changed] : results) {
          timed = course::check_dot(got, change.ref(was_changed));
          if (!timed.ok) break;
        }
        const course::Verdict after = course::check_dot(v->run(engine, in.x.data(), in.y.data(), n, nullptr), in.ref);
        if (!(before.ok && timed.ok && after.ok))
          std::fprintf(stderr, "07_library: %s at n = %zu FAILED validation: %s\n", std::string(v->name).c_str(), n,
                       (!before.ok ? before : !timed.ok ? timed : after).message.c_str());
        const course::Stats call = course::summarize(samples);
        add_row(std::string(v->name), "host arrays, result on the host", n, call, after.rel_error,
                before.ok && timed.ok && after.ok);

        // The same calls again, with events between the phases, each right after a plain call timed
        // on the host clock: call and phases are compared at the same moments (the host's memory
        // bandwidth drifts by several percent over seconds), per iteration and as medians. The
        // call with events is itself timed on the host clock: its time minus its own phases is
        // what the call costs beyond the work its events saw, free of the drift between two
        // calls (at 2^26 a pageable copy differs by milliseconds from one call to the next).
        std::vector<std::vector<double>> per_phase(ch07::PhaseEvents::kPhases);
        std::vector<double> paired_call, paired_diff, own_diff, spans;
        ch07::PhaseEvents clock(gpu.stream());
        for (int r = 0; r < kPhaseReps; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          v->run(engine, in.x.data(), in.y.data(), n, nullptr);
          const double call_ms = ms_since(t0);
          t0 = std::chrono::steady_clock::now();
          v->run(engine, in.x.data(), in.y.data(), n, &clock);
          const double own_ms = ms_since(t0);
          const auto ms = clock.phase_ms();
          double sum_r = 0;
          for (int k = 0; k < ch07::PhaseEvents::kPhases; ++k) {
            per_phase[static_cast<std::size_t>(k)].push_back(ms[static_cast<std::size_t>(k)]);
            sum_r += ms[static_cast<std::size_t>(k)];
          }
          paired_call.push_back(call_ms);
          paired_diff.push_back(call_ms - sum_r);
          own_diff.push_back(own_ms - sum_r);
          spans.push_back(sum_r);
        }
        // The control: device-to-device copies of n floats, as many as fill the phases' median
        // time, between two events, then a synchronization and a third event, as a call ends.
        std::vector<double> control;
        {
          const double target_ms = course::summarize(spans).median;
          course::Event c[3];
          cudaStream_t st = gpu.stream();
          c[0].record(st);
          CUDA_CHECK(cudaMemcpyAsync(engine.d_y(), engine.d_x(), n * sizeof(float), cudaMemcpyDeviceToDevice, st));
          c[1].record(st);
          c[1].synchronize();
          const float one_ms = c[1].ms_since(c[0]);
          const int copies = static_cast<int>(std::clamp(target_ms / std::max(one_ms, 1e-4f), 1.0, 100000.0));
          for (int r = 0; r < kPhaseReps; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            c[0].record(st);
            for (int k = 0; k < copies; ++k)
              CUDA_CHECK(cudaMemcpyAsync(engine.d_y(), engine.d_x(), n * sizeof(float), cudaMemcpyDeviceToDevice, st));
            c[1].record(st);
            CUDA_CHECK(cudaStreamSynchronize(st));
            c[2].record(st);
            const double host_ms = ms_since(t0);
            c[2].synchronize();
            control.push_back(host_ms - c[2].ms_since(c[0]));
          }
        }
        std::vector<course::Cell> row = {std::string(v->name),
                                         std::string(v->name == "reuse_staged" ? "copy_x holds x and y (one pipeline)" : ""),
                                         static_cast<long long>(n), static_cast<long long>(v->name == "alloc_per_call" ? 3 : 0)};
        double sum = 0;
        for (auto& samples_k : per_phase) {
          const double med = course::summarize(samples_k).median;
          sum += med;
          row.emplace_back(med);
        }
        row.emplace_back(sum);
        row.emplace_back(course::summarize(paired_call).median);
        row.emplace_back(course::summarize(paired_diff).median);
        row.emplace_back(course::summarize(own_diff).median);
        row.emplace_back(course::summarize(control).median);
        phases.add_row(row);
      }

      // The graded pair at the program's size, timed alternately (alloc_per_call, reuse, reuse,
      // alloc_per_call, ...) so that both see the same moments of a host whose pageable copies
      // can run at half speed for seconds at a time; timed one after the other, such a stretch
      // can fall on one version alone and reverse the ratio (the appendix, "Timed one after
      // another, or in turns").
      if (n == kProgramN && std::find(selected.begin(), selected.end(), reuse) != selected.end()) {
        std::vector<double> t_alloc, t_reuse;
        float got_alloc = 0, got_reuse = 0;
        auto once = [&](const Version* v, float& got) {
          const auto t0 = std::chrono::steady_clock::now();
          got = v->run(engine, in.x.data(), in.y.data(), n, nullptr);
          return ms_since(t0);
        };
        for (int r = 0; r < opt.warmup; ++r) {
          once(alloc, got_alloc);
          once(reuse, got_reuse);
        }
        for (int r = 0; r < reps; ++r) {
          if (r % 2 == 0) {
            t_alloc.push_back(once(alloc, got_alloc));
            t_reuse.push_back(once(reuse, got_reuse));
          } else {
            t_reuse.push_back(once(reuse, got_reuse));
            t_alloc.push_back(once(alloc, got_alloc));
          }
        }
        const course::Verdict va = course::check_dot(got_alloc, in.ref), vr = course::check_dot(got_reuse, in.ref);
        add_row("alloc_per_call_paired", "timed alternately with reuse", n, course::summarize(t_alloc), va.rel_error, va.ok);
        add_row("reuse_paired", "timed alternately with alloc_per_call", n, course::summarize(t_reuse), vr.rel_error, vr.ok);
      }

      // Beside them: the arrays already on the device (no copies), and the CPU loop.
      progress.step("device arrays n=" + course::format_size(n));
      {
        course::DeviceBuffer<float> d_x(in.x), d_y(in.y);
        const course::Stream user;  // the caller's own stream, as a library user's would be
        float got = ch07::dot_device(engine, d_x.data(), d_y.data(), n, user);
        const course::Verdict before = course::check_dot(got, in.ref);
        const auto samples = course::time_cpu_ms([&] { got = ch07::dot_device(engine, d_x.data(), d_y.data(), n, user); },
                                                 opt.warmup, reps);
        const course::Verdict after = course::check_dot(got, in.ref);
        add_row("device_arrays", "x, y already on the GPU; result on the host", n, course::summarize(samples),
                after.rel_error, before.ok && after.ok);
      }
      progress.step("cpu loop n=" + course::format_size(n));
      {
        float got = 0;
        const auto samples = course::time_cpu_ms([&] { got = cpu_loop(in.x.data(), in.y.data(), n); }, 1,
                                                 std::max(3, reps / 2));
        // A float loop is not held to the GPU's bound (its error grows with n); reported, not validated.
        add_row("cpu_loop", "one thread, float accumulator", n, course::summarize(samples),
                course::check_dot(got, in.ref).rel_error, true);
      }
    }

    // The host link: what a copy from pageable and from pinned memory reaches, and a CPU memcpy.
    progress.step("host link");
    for (std::size_t n : std::set<std::size_t>{kProgramN, largest}) {
      const std::size_t bytes = n * sizeof(float);
      std::vector<float> pageable(n, 1.0f), other(n, 0.0f);
      course::PinnedBuffer<float> pinned(n);
      std::fill(pinned.data(), pinned.data() + n, 1.0f);
      const int reps = n >= (std::size_t{1} << 24) ? 10 : 30;
      auto add_link = [&](const std::string& what, const std::vector<double>& s) {
        const double med = course::summarize(s).median;
        link.add_row({what, static_cast<long long>(n), static_cast<double>(bytes), med, course::gbps(bytes, med)});
      };
      cudaStream_t st = gpu.stream();
      add_link("h2d_pageable", course::time_cpu_ms([&] {
                 CUDA_CHECK(cudaMemcpyAsync(engine.d_x(), pageable.data(), bytes, cudaMemcpyHostToDevice, st));
                 CUDA_CHECK(cudaStreamSynchronize(st));
               }, 2, reps));
      add_link("h2d_pinned", course::time_cpu_ms([&] {
                 CUDA_CHECK(cudaMemcpyAsync(engine.d_x(), pinned.data(), bytes, cudaMemcpyHostToDevice, st));
                 CUDA_CHECK(cudaStreamSynchronize(st));
               }, 2, reps));
      add_link("host_memcpy_1_thread", course::time_cpu_ms([&] { std::memcpy(other.data(), pageable.data(), bytes); }, 2, reps));
      add_link("h2d_staged", course::time_cpu_ms([&] {
                 std::vector<ch07::Stager::Piece> pieces;
                 const std::size_t piece = n >= ch07::kLargePieces ? engine.stager().chunk() : ch07::kSmallPiece;
                 for (std::size_t i = 0; i < n; i += piece)
                   pieces.push_back({pageable.data() + i, engine.d_x() + i, std::min(piece, n - i)});
                 engine.stager().run(pieces);
                 CUDA_CHECK(cudaStreamSynchronize(st));
               }, 2, reps));
    }

    // How many staging threads, and how large a chunk: the staged copy of one vector, swept.
    progress.step("staging sweep");
    for (std::size_t n : std::set<std::size_t>{kProgramN, largest}) {
      std::vector<float> pageable(n, 1.0f);
      const int reps = n >= (std::size_t{1} << 24) ? 5 : 20;
      const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      for (int threads : {1, 2, 4, 8, 12, 16}) {
        if (threads > hw) continue;
        for (std::size_t chunk : {std::size_t{1} << 15, std::size_t{1} << 17, std::size_t{1} << 19}) {
          ch07::Stager stager(gpu, threads, chunk);
          const auto s = course::time_cpu_ms([&] {
            std::vector<ch07::Stager::Piece> pieces;
            for (std::size_t i = 0; i < n; i += chunk) pieces.push_back({pageable.data() + i, engine.d_x() + i, std::min(chunk, n - i)});
            stager.run(pieces);
            CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
          }, 2, reps);
          const double med = course::summarize(s).median;
          staging.add_row({static_cast<long long>(threads), static_cast<long long>(chunk * sizeof(float) / 1024),
                           static_cast<long long>(n), med, course::gbps(n * sizeof(float), med)});
        }
      }
    }

    // The motivating program through the C API, as the Go program does it: init, 100 calls, deinit.
    progress.step("motivating program");
    {
      HostInputs in(kProgramN, 7);
      for (const Version* v : selected) {
        if (ch07::is_speed_of_light(*v)) continue;  // not a dot: nothing to compare with the CPU loop
        // Each version as the program would have called it (init builds an engine; deinit frees it).
        auto t0 = std::chrono::steady_clock::now();
        auto e = std::make_unique<ch07::Engine>(opt.device, kProgramN);
        const double init_ms = ms_since(t0);
        float got = 0;
        t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < kProgramCalls; ++c) got = v->run(*e, in.x.data(), in.y.data(), kProgramN, nullptr);
        const double calls_ms = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        e.reset();
        const double deinit_ms = ms_since(t0);
        program.add_row({std::string("C++"), std::string(v->name), static_cast<long long>(kProgramN),
                         static_cast<long long>(kProgramCalls), init_ms, calls_ms, deinit_ms, calls_ms / kProgramCalls,
                         course::check_dot(got, in.ref).rel_error});
      }
      {
        auto t0 = std::chrono::steady_clock::now();
        dotcourse_context* ctx = nullptr;
        check_status(dotcourse_create(opt.device, kProgramN, &ctx), "dotcourse_create");
        const double init_ms = ms_since(t0);
        float got = 0;
        t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < kProgramCalls; ++c)
          check_status(dotcourse_dot(ctx, in.x.data(), in.y.data(), kProgramN, &got), "dotcourse_dot");
        const double calls_ms = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        check_status(dotcourse_destroy(ctx), "dotcourse_destroy");
        const double deinit_ms = ms_since(t0);
        const course::Verdict verdict = course::check_dot(got, in.ref);
        if (!verdict.ok) failed.insert("C API");
        program.add_row({std::string("C++"), std::string("c_api"), static_cast<long long>(kProgramN),
                         static_cast<long long>(kProgramCalls), init_ms, calls_ms, deinit_ms, calls_ms / kProgramCalls,
                         verdict.rel_error});
      }
      {
        float got = 0;
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < kProgramCalls; ++c) got = cpu_loop(in.x.data(), in.y.data(), kProgramN);
        const double calls_ms = ms_since(t0);
        program.add_row({std::string("C++"), std::string("cpu_loop"), static_cast<long long>(kProgramN),
                         static_cast<long long>(kProgramCalls), 0.0, calls_ms, 0.0, calls_ms / kProgramCalls,
                         course::check_dot(got, in.ref).rel_error});
      }
    }
    progress.done();

    std::cout << "Host arrays in (pageable std::vector), result on the host; random signed inputs with spikes,\n"
                 "validated against the fp64 reference before and after timing. bytes = 2 n sizeof(float).\n"
                 "speed_of_light is not a dot but the floor: the same bytes copied from pinned memory, nothing else\n"
                 "(checked by the bytes that landed; no rel_error).\n\n";
    table.print(std::cout, course::measurement_screen_columns());
    std::cout << "\nWhere the time goes (median ms of " << kPhaseReps << " runs with events between the phases):\n\n";
    phases.print(std::cout);
    std::cout << "\nThe host link:\n\n";
    link.print(std::cout);
    std::cout << "\nThe staged copy of one vector: threads and chunk size swept:\n\n";
    staging.print(std::cout);
    std::cout << "\nThe motivating program: init, " << kProgramCalls << " × dot on " << course::format_size(kProgramN)
              << " floats, deinit:\n\n";
    program.print(std::cout);

    course::write_csvs(opt.csv, table,
                       {{"phases", &phases}, {"link", &link}, {"program", &program}, {"staging", &staging}});
    if (!opt.csv.empty()) std::cout << "\nCSV written to " << opt.csv << " and beside it _phases, _link, _staging, _program\n";
    return course::exit_code("07_library", failed);
  });
}
