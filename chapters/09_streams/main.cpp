// Chapter 09 driver — streams and overlap.
//
//   09_streams                         every issue order on the dot of pinned host data at 2^20 and
//                                      2^26 (16 chunks, 4 streams), each engine's work timed alone
//                                      and the yardstick it sets, the 1–16 stream sweep, the book's
//                                      program, timelines, graphs against plain issue, and the CPU
//   09_streams --kernel breadth_first  one issue order
//   09_streams --n 2^24 --streams 8 --chunks 32
//   09_streams --csv results/local/09_streams.csv
//       (and _sweep, _timeline, _overlap, _graph, _targets beside it)
//
// Beside the issue orders, at every n and timed the same way, the registry's speed_of_light row: not
// a dot but the floor, x and y copied in whole from pinned memory and nothing else; it is checked by
// the bytes that landed (it has no result), runs beside any --kernel, and stays out of the book's
// program (whose output comes back too).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
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
#include "course/thread_pool.hpp"
#include "course/timer.hpp"
#include "dot.hpp"

namespace {

using Version = course::Version<ch09::Issue>;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Pinned host data for the largest n: x, y (random, signed, spikes), and an output.
struct HostData {
  explicit HostData(std::size_t n_max) : x(n_max), y(n_max), out(n_max) {}
  void fill(std::size_t n, std::uint64_t seed) {
    const course::HostDotInputs in(n, seed);
    std::memcpy(x.data(), in.x.data(), n * sizeof(float));
    std::memcpy(y.data(), in.y.data(), n * sizeof(float));
    ref = in.ref;
  }
  course::PinnedBuffer<float> x, y, out;
  course::Reference ref;
};

ch09::Job dot_job(HostData& h, std::size_t n, std::size_t chunks, int streams) {
  ch09::Job job;
  job.problem = ch09::Problem::dot;
  job.h_x = h.x.data();
  job.h_y = h.y.data();
  job.n = n;
  job.chunk = std::max<std::size_t>(1, (n + chunks - 1) / chunks);
  job.streams = streams;
  return job;
}

// Time per call (host clock: issue, wait, combine; the result on the host), validated before and after.
// The speed-of-light row has no result: it is checked by the bytes that landed, and has no rel_error.
course::Measurement measure(ch09::Pipeline& p, const Version& v, const ch09::Job& job, const course::Reference* ref,
                            const float* book_ref, const std::string& config, double h2d_gbps, int reps, int warmup) {
  auto check = [&](float got) {
    if (ch09::is_speed_of_light(v)) return ch09::check_link_floor(p, job);
    if (job.problem == ch09::Problem::dot) return course::check_dot(got, *ref);
    course::Verdict verdict;
    verdict.ok = std::memcmp(job.h_out, book_ref, job.n * sizeof(float)) == 0;
    verdict.message = verdict.ok ? "" : "book output differs from the host's";
    return verdict;
  };
  if (job.problem == ch09::Problem::book) std::memset(job.h_out, 0xFF, job.n * sizeof(float));
  const course::Verdict before = check(ch09::run(p, v.run, job));
  // Every timed call is checked after its clock stops (the book's output poisoned before its clock
  // starts): a version right only on the calls the validation sees is wrong here (issue 38, class 4).
  std::vector<double> samples;
  float last = 0;
  course::Verdict timed;
  timed.ok = true;
  const bool floor = ch09::is_speed_of_light(v);
  for (int r = 0; r < warmup + reps; ++r) {
    if (job.problem == ch09::Problem::book && !floor) std::memset(job.h_out, 0xFF, job.n * sizeof(float));
    const auto t0 = std::chrono::steady_clock::now();
    last = ch09::run(p, v.run, job);
    if (r >= warmup) samples.push_back(ms_since(t0));
    if (floor || !timed.ok) continue;
    timed = check(last);
    if (!timed.ok) timed.message = "call " + std::to_string(r + 1) + " of the timed loop (warm-up included): " + timed.message;
  }
  course::Verdict after = check(last);
  if (!timed.ok) after = timed;
  const course::Measurement m =
      course::measured(v.name, config, job.n, (job.problem == ch09::Problem::dot ? 2.0 : 3.0) * job.n * sizeof(float),
                       samples, h2d_gbps, after.rel_error, before.ok && after.ok);
  if (!m.valid)
    std::fprintf(stderr, "09_streams: %s at n = %zu FAILED: %s\n", m.version.c_str(), job.n,
                 (before.ok ? after : before).message.c_str());
  return m;
}

// One engine's work alone: every chunk's `op` on stream 0, event-timed (median).
double alone_ms(ch09::Pipeline& p, const ch09::Job& job, void (ch09::Pipeline::*op)(const ch09::Job&, std::size_t, int)) {
  const auto samples = course::time_gpu_ms(
      [&] {
        for (std::size_t k = 0; k < ch09::chunk_count(job); ++k) (p.*op)(job, k, 0);
      },
      2, 10, p.stream(0));
  return course::summarize(samples).median;
}

// Both copy directions at once: every chunk's copy in on stream 0 and every chunk's copy out on
// stream 1, forked and joined with events, event-timed on stream 0 (median). The yardstick assumes
// that the link moves both directions at full speed together; this row shows whether this host does.
double copies_together_ms(ch09::Pipeline& p, const ch09::Job& job) {
  course::Event fork(cudaEventDisableTiming), join(cudaEventDisableTiming);
  const auto samples = course::time_gpu_ms(
      [&] {
        CUDA_CHECK(cudaEventRecord(fork, p.stream(0)));
        CUDA_CHECK(cudaStreamWaitEvent(p.stream(1), fork, 0));
        for (std::size_t k = 0; k < ch09::chunk_count(job); ++k) {
          p.copy_in(job, k, 0);
          p.copy_out(job, k, 1);
        }
        CUDA_CHECK(cudaEventRecord(join, p.stream(1)));
        CUDA_CHECK(cudaStreamWaitEvent(p.stream(0), join, 0));
      },
      2, 10, p.stream(0));
  return course::summarize(samples).median;
}

course::Measurement plain_row(const std::string& name, const std::string& config, std::size_t n, double bytes, double ms,
                              double h2d_gbps) {
  return course::measured(name, config, n, bytes, std::vector<double>{ms}, h2d_gbps, 0.0, true);
}

// The pipeline's yardstick, a target and not a bound: 1.10 × the busiest engine's time + one chunk's
// share of all three engines' time (the first chunk's copy in and the last chunk's copy out overlap
// nothing). A good schedule comes in under it (the 10% and the chunk's share are allowances), and
// `serial`, one large copy each way with no per-chunk latency, does too. The engines' times come
// from each engine alone or from one recorded run's busy times. The CSV rows keep the name "bound".
double pipeline_yardstick(double h2d_ms, double kernel_ms, double d2h_ms, std::size_t chunks) {
  return 1.10 * std::max({h2d_ms, kernel_ms, d2h_ms}) + (h2d_ms + kernel_ms + d2h_ms) / static_cast<double>(chunks);
}

// One run of `version` recorded into `tl` (an event around every copy and kernel): its spans.
std::vector<ch09::Span> recorded_run(ch09::Pipeline& p, const Version& version, const ch09::Job& job, ch09::Timeline& tl) {
  p.timeline = &tl;
  ch09::run(p, version.run, job);
  p.timeline = nullptr;
  return tl.spans();
}

// Whether a recorded run holds each chunk's copy in, kernel and copy out exactly once. A ratio from
// a timeline that misses operations (copies issued around the Pipeline's calls) would mean nothing.
bool covers_every_chunk(const std::vector<ch09::Span>& spans, std::size_t chunks) {
  std::vector<int> seen(3 * chunks, 0);
  for (const auto& s : spans) {
    if (s.chunk < 0 || static_cast<std::size_t>(s.chunk) >= chunks) return false;
    ++seen[static_cast<std::size_t>(s.engine) * chunks + static_cast<std::size_t>(s.chunk)];
  }
  return std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; });
}

}  // namespace

int main(int argc, char** argv) {
  course::App app("09_streams", course::about(R"(
Chapter 09: streams and overlap. The dot of pinned host data in chunks, issued on one stream,
depth-first and breadth-first over several streams, and as a CUDA graph; each engine's work timed
alone; a timeline of every copy and kernel; the classic program of CUDA by Example; the CPU with
every core beside it.
)"),
                  std::size_t{1} << 20, 20, 3);
  int streams = 4;
  std::size_t chunks = 16;
  app.cli().add_option("--streams", streams, "Streams of the multi-stream orders")->check(course::whole_number(1, ch09::kMaxStreams))->capture_default_str();
  app.cli().add_option("--chunks", chunks, "Chunks the input is cut into")->check(course::whole_number(1, 4096))->capture_default_str();
  app.set_versions(ch09::versions());

  return app.run(argc, argv, [&](const course::Options& opt) {
    course::Context ctx(opt.device);
    std::printf("GPU: %s\n", course::describe_device(ctx.facts()).c_str());
    // The floor, speed_of_light, runs beside any --kernel: every order is measured against it.
    const std::vector<const Version*> selected =
        course::select_versions(ch09::versions(), opt, [](const Version& v) { return ch09::is_speed_of_light(v); });
    const Version* depth = course::find_version(ch09::versions(), "depth_first");
    const Version* one = course::find_version(ch09::versions(), "one_stream");
    const Version* breadth = course::find_version(ch09::versions(), "breadth_first");
    const Version* graph = course::find_version(ch09::versions(), "graph");

    std::vector<std::size_t> sizes = {opt.n};
    if (!opt.n_given) sizes = {std::size_t{1} << 20, std::size_t{1} << 26};
    const std::size_t large = *std::max_element(sizes.begin(), sizes.end());
    constexpr std::size_t kBookChunk = std::size_t{1} << 20, kBookN = 20 * kBookChunk;  // the book's sizes
    const std::size_t n_max = std::max(large, kBookN);
    ch09::Pipeline p(ctx, n_max);
    HostData host(n_max);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    course::ThreadPool pool(cores);

    course::Progress progress(8, "09_streams", !opt.quiet);
    // This run's pinned H2D bandwidth: one copy of x at the largest size.
    progress.step("pinned H2D ceiling");
    double h2d_gbps = 0;
    {
      host.fill(large, opt.seed);
      course::DeviceBuffer<float> d(large);
      const auto samples = course::time_gpu_ms([&] { d.upload_async(host.x.data(), large, ctx.stream()); }, 2, 10, ctx.stream());
      h2d_gbps = course::gbps(static_cast<double>(large) * sizeof(float), course::summarize(samples).median);
    }
    std::printf("Pinned H2D in this run: %.1f GB/s (one %s copy)\n\n", h2d_gbps,
                course::format_bytes(large * sizeof(float)).c_str());

    course::Table table = course::measurement_table(course::Share::link);
    course::Table sweep = course::measurement_table(course::Share::link);
    course::Table timeline({"scenario", "version", "problem", "streams", "stream", "engine", "chunk", "ready_ms", "start_ms", "end_ms"});
    course::Table overlap({"scenario", "version", "problem", "n", "streams", "chunks", "wall_ms", "sum_ms", "busy_h2d_ms",
                           "busy_kernel_ms", "busy_d2h_ms", "overlap_pct", "bottleneck_pct"});
    course::Table graphs({"n", "chunks", "streams", "depth_first_ms", "graph_ms", "saved_us"});
    course::Table targets({"target", "value", "goal", "met"});
    course::Table predictions({"n", "chunks", "streams", "depth_first_ms", "predicted_ms"});  // exercise 3, on screen
    std::set<std::string> failed;
    auto add = [&](course::Table& t, const course::Measurement& m) {
      if (!m.valid) failed.insert(m.version);
      course::add_measurement(t, m);
    };

    // Every issue order at each size, beside each engine alone, the yardstick (row "bound"), and the CPU.
    progress.step("issue orders");
    double yardstick_large = 0, best_large = 0, h2d_alone_gbps = 0;
    for (std::size_t n : sizes) {
      host.fill(n, opt.seed + n);
      const ch09::Job job = dot_job(host, n, chunks, streams);
      const std::string config = "chunks=" + std::to_string(ch09::chunk_count(job)) + " streams=" + std::to_string(streams);
      const int reps = n >= (std::size_t{1} << 24) ? std::min(opt.reps, 20) : std::max(opt.reps, 50);
      double depth_ms = 0;
      for (const Version* v : selected) {
        const course::Measurement m = measure(p, *v, job, &host.ref, nullptr, config, h2d_gbps, reps, opt.warmup);
        add(table, m);
        if (v->name == "depth_first") depth_ms = m.ms.median;
        if (n == large && m.valid && (v->name == "depth_first" || v->name == "breadth_first" || v->name == "graph"))
          best_large = best_large == 0 ? m.ms.median : std::min(best_large, m.ms.median);
      }
      const double h2d = alone_ms(p, job, &ch09::Pipeline::copy_in);
      const double ker = alone_ms(p, job, &ch09::Pipeline::compute);
      const double d2h = alone_ms(p, job, &ch09::Pipeline::copy_out);
      const double yardstick = pipeline_yardstick(h2d, ker, d2h, ch09::chunk_count(job));
      const double bytes = 2.0 * n * sizeof(float);
      add(table, plain_row("h2d_alone", config, n, bytes, h2d, h2d_gbps));
      add(table, plain_row("kernel_alone", config, n, bytes, ker, h2d_gbps));
      add(table, plain_row("d2h_alone", config, n, bytes, d2h, h2d_gbps));
      add(table, plain_row("bound", config, n, bytes, yardstick, h2d_gbps));
      // Exercise 3's prediction from the engines alone; their times already hold every chunk's
      // latency, so none is added.
      if (depth_ms > 0)
        predictions.add_row({static_cast<long long>(n), static_cast<long long>(ch09::chunk_count(job)), static_cast<long long>(streams),
                             depth_ms, ch09::pipeline_ms(h2d, ker, d2h, ch09::chunk_count(job), 0.0)});
      {
        std::vector<double> samples;
        float got = 0;
        for (int r = 0; r < reps + opt.warmup; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          got = ch09::cpu_dot(pool, host.x.data(), host.y.data(), n);
          if (r >= opt.warmup) samples.push_back(ms_since(t0));
        }
        course::Measurement m = plain_row("cpu_threads", config, n, bytes, 0, h2d_gbps);
        m.ms = course::summarize(samples);
        const course::Verdict verdict = course::check_dot(got, host.ref);
        m.rel_error = verdict.rel_error;
        m.valid = verdict.ok;
        add(table, m);
      }
      if (n == large) {
        yardstick_large = yardstick;
        h2d_alone_gbps = course::gbps(bytes, h2d);
      }
    }
    if (best_large > 0) {
      // The ceiling: the faster of the run's first copy and the copies alone timed beside the
      // pipelines (the host's memory bandwidth drifts within a run, so pct_link, against the
      // first copy alone, can exceed 100: the appendix, "Method"). Never the slower: that would
      // flatter the pipeline.
      const double g = course::gbps(2.0 * large * sizeof(float), best_large);
      const double ceiling = std::max(h2d_gbps, h2d_alone_gbps);
      std::printf("Pinned H2D ceiling for the target: %.1f GB/s (first copy %.1f GB/s, copies alone beside the pipelines %.1f GB/s)\n",
                  ceiling, h2d_gbps, h2d_alone_gbps);
      targets.add_row({std::string("best pipeline, pinned n=") + course::format_size(large) + " end to end: % of pinned H2D",
                       100 * g / ceiling, 90.0, static_cast<long long>(g >= 0.9 * ceiling)});
      targets.add_row({std::string("best pipeline wall / yardstick (1.10 max(alone) + one chunk)"), best_large / yardstick_large, 1.0,
                       static_cast<long long>(best_large <= yardstick_large)});
    }

    // 1–16 streams, depth-first and breadth-first, at the largest size.
    progress.step("stream sweep");
    host.fill(large, opt.seed + large);
    for (int s : {1, 2, 4, 8, 16})
      for (const Version* v : {depth, breadth}) {
        if (!opt.selects(v->name)) continue;
        const ch09::Job job = dot_job(host, large, chunks, s);
        add(sweep, measure(p, *v, job, &host.ref, nullptr, "streams=" + std::to_string(s), h2d_gbps, std::min(opt.reps, 20), 2));
      }

    // The book's program: 20 chunks of 2^20 elements, 2 streams.
    progress.step("the book's program");
    // The book's kernel takes neighbours within a chunk: serial (one chunk) has its own answer.
    std::vector<float> book_ref(kBookN), book_ref_whole(kBookN);
    {
      auto a = course::random_vector(kBookN, opt.seed + 7), b = course::random_vector(kBookN, course::seed_y(opt.seed + 7));
      std::memcpy(host.x.data(), a.data(), kBookN * sizeof(float));
      std::memcpy(host.y.data(), b.data(), kBookN * sizeof(float));
      ch09::book_reference(a.data(), b.data(), book_ref.data(), kBookN, kBookChunk);
      ch09::book_reference(a.data(), b.data(), book_ref_whole.data(), kBookN, kBookN);
    }
    ch09::Job book_job;
    book_job.problem = ch09::Problem::book;
    book_job.h_x = host.x.data();
    book_job.h_y = host.y.data();
    book_job.h_out = host.out.data();
    book_job.n = kBookN;
    book_job.chunk = kBookChunk;
    book_job.streams = 2;
    // Its rows go in the main table (n = 20 × 2^20 tells them apart): the book's program is where
    // overlap pays, since its copy back is as large as one input. The graded overlap is here.
    const std::string book_config = "book: chunks=20 streams=2";
    double book_yardstick = 0;
    for (const Version* v : selected)
      if (!ch09::is_speed_of_light(*v))  // the dot's floor: the book's program also copies its output back
        add(table, measure(p, *v, book_job, nullptr, v->name == "serial" ? book_ref_whole.data() : book_ref.data(),
                           book_config, h2d_gbps, 20, 2));
    {
      const double h2d = alone_ms(p, book_job, &ch09::Pipeline::copy_in);
      const double ker = alone_ms(p, book_job, &ch09::Pipeline::compute);
      const double d2h = alone_ms(p, book_job, &ch09::Pipeline::copy_out);
      book_yardstick = pipeline_yardstick(h2d, ker, d2h, ch09::chunk_count(book_job));
      const double bytes = 3.0 * kBookN * sizeof(float);
      add(table, plain_row("h2d_alone", book_config, kBookN, bytes, h2d, h2d_gbps));
      add(table, plain_row("kernel_alone", book_config, kBookN, bytes, ker, h2d_gbps));
      add(table, plain_row("d2h_alone", book_config, kBookN, bytes, d2h, h2d_gbps));
      add(table, plain_row("bound", book_config, kBookN, bytes, book_yardstick, h2d_gbps));
      // Not part of the yardstick (which takes each engine alone): the copies in both
      // directions at once, against max(h2d, d2h) alone, says whether this host's link is full duplex.
      add(table, plain_row("copies_together", book_config, kBookN, bytes, copies_together_ms(p, book_job), h2d_gbps));
      for (const auto& row : table.rows())
        if (std::get<std::string>(row[1]) == book_config) {
          const std::string name = std::get<std::string>(row[0]);
          if (name == "depth_first" || name == "breadth_first" || name == "one_stream") {
            const double ms = std::get<double>(row[5]);
            targets.add_row({"book " + name + ": wall / yardstick", ms / book_yardstick, 1.0, static_cast<long long>(ms <= book_yardstick)});
          }
        }
    }

    // The graded overlap, on the GPU's clock. Each order's book program is recorded kBookRecorded
    // times; per run, the wall (first start to last end) is set against the yardstick made of that
    // same run's engines: 1.10 × the busiest engine's busy time + one chunk's share of all three
    // (row "timeline_bound"). A link that slows one direction while the other runs (the
    // copies_together row) slows the copies inside the pipeline too, so this ratio judges the issue
    // order and not the host. The yardstick above, from each engine alone, cannot: on such a host
    // one program measured 0.81 and 1.10 in two processes.
    {
      constexpr int kBookRecorded = 20;
      const std::size_t book_chunks = ch09::chunk_count(book_job);
      ch09::Timeline tl;
      for (const Version* v : selected) {
        if (v->name != "one_stream" && v->name != "depth_first" && v->name != "breadth_first") continue;
        std::vector<double> walls, yardsticks;
        bool complete = true;
        std::memset(host.out.data(), 0xFF, kBookN * sizeof(float));
        ch09::run(p, v->run, book_job);  // warm
        bool same = true;  // every recorded run's output, each poisoned before its run
        for (int r = 0; r < kBookRecorded; ++r) {
          std::memset(host.out.data(), 0xFF, kBookN * sizeof(float));
          const auto spans = recorded_run(p, *v, book_job, tl);
          same = same && std::memcmp(host.out.data(), book_ref.data(), kBookN * sizeof(float)) == 0;
          complete = complete && covers_every_chunk(spans, book_chunks);
          const ch09::Overlap o = ch09::overlap_of(spans);
          walls.push_back(o.wall_ms);
          yardsticks.push_back(pipeline_yardstick(o.busy_ms[0], o.busy_ms[1], o.busy_ms[2], book_chunks));
        }
        if (!complete)
          std::fprintf(stderr, "09_streams: %s on the book's program: the timeline does not hold every chunk's copy in, "
                               "kernel and copy out once (operations issued outside the Pipeline's calls?)\n",
                       std::string(v->name).c_str());
        if (!same) std::fprintf(stderr, "09_streams: %s on the book's program (recorded): output differs from the host's\n",
                                std::string(v->name).c_str());
        const std::string config = "book timeline of " + std::string(v->name) + ": chunks=20 streams=2";
        const double bytes = 3.0 * kBookN * sizeof(float);
        course::Measurement wall = plain_row(std::string(v->name), config, kBookN, bytes, 0, h2d_gbps);
        wall.ms = course::summarize(walls);
        wall.valid = complete && same;
        course::Measurement own = plain_row("timeline_bound", config, kBookN, bytes, 0, h2d_gbps);
        own.ms = course::summarize(yardsticks);
        own.valid = complete;
        add(table, wall);
        add(table, own);
        targets.add_row({"book " + std::string(v->name) + ", GPU clock: wall / its own engines' yardstick",
                         wall.ms.median / own.ms.median, 1.0, static_cast<long long>(wall.ms.median <= own.ms.median)});
      }
    }

    // Timelines: the book depth-first against breadth-first (2 streams), the dot on 1 against 4 streams.
    progress.step("timelines");
    ch09::Timeline tl;
    auto record = [&](const std::string& scenario, const Version* v, const ch09::Job& job) {
      ch09::run(p, v->run, job);  // warm
      const auto spans = recorded_run(p, *v, job, tl);
      const ch09::Overlap o = ch09::overlap_of(spans);
      const char* problem = job.problem == ch09::Problem::dot ? "dot" : "book";
      for (const auto& s : spans)
        timeline.add_row({scenario, std::string(v->name), std::string(problem), static_cast<long long>(job.streams),
                          static_cast<long long>(s.stream), std::string(ch09::engine_name(s.engine)),
                          static_cast<long long>(s.chunk), s.ready_ms, s.start_ms, s.end_ms});
      overlap.add_row({scenario, std::string(v->name), std::string(problem), static_cast<long long>(job.n),
                       static_cast<long long>(job.streams), static_cast<long long>(ch09::chunk_count(job)), o.wall_ms, o.sum_ms,
                       o.busy_ms[0], o.busy_ms[1], o.busy_ms[2], o.overlap_pct, o.bottleneck_pct});
      return o;
    };
    record("book_depth_first_2", depth, book_job);
    record("book_breadth_first_2", breadth, book_job);
    host.fill(large, opt.seed + large);
    record("dot_one_stream", one, dot_job(host, large, chunks, 1));
    const ch09::Overlap o4 = record("dot_depth_first_4", depth, dot_job(host, large, chunks, 4));
    const ch09::Overlap ob4 = record("dot_breadth_first_4", breadth, dot_job(host, large, chunks, 4));
    targets.add_row({std::string("timeline: depth_first 4 streams wall / yardstick"), o4.wall_ms / yardstick_large, 1.0,
                     static_cast<long long>(o4.wall_ms <= yardstick_large)});
    targets.add_row({std::string("timeline: breadth_first 4 streams wall / yardstick"), ob4.wall_ms / yardstick_large, 1.0,
                     static_cast<long long>(ob4.wall_ms <= yardstick_large)});

    // What a graph saves per call, most at small n.
    progress.step("graphs");
    for (std::size_t n : {std::size_t{1} << 16, std::size_t{1} << 20, large}) {
      if (n > n_max) continue;
      host.fill(n, opt.seed + 3 * n);
      const ch09::Job job = dot_job(host, n, chunks, streams);
      const int reps = n >= (std::size_t{1} << 24) ? 20 : 200;
      const auto md = measure(p, *depth, job, &host.ref, nullptr, "", h2d_gbps, reps, 5);
      const auto mg = measure(p, *graph, job, &host.ref, nullptr, "", h2d_gbps, reps, 5);
      if (!md.valid || !mg.valid) failed.insert("graph");
      graphs.add_row({static_cast<long long>(n), static_cast<long long>(ch09::chunk_count(job)), static_cast<long long>(streams),
                      md.ms.median, mg.ms.median, 1e3 * (md.ms.median - mg.ms.median)});
    }
    progress.done();

    std::cout << "\nThe dot of pinned host data, then the book's program (n = 20 x 2^20; bytes = a, b in and c out); "
                 "result on the host, every cost counted; pct_link = % of the first pinned H2D copy (a reading, "
                 "not a limit: it can exceed 100); 'bound' is the "
                 "yardstick 1.10 x the busiest engine + one chunk's share, a target and not a lower bound; "
                 "speed_of_light is not a dot but the floor, x and y copied in whole and nothing else (checked by "
                 "the bytes that landed; no rel_error):\n\n";
    table.print(std::cout, course::measurement_screen_columns(course::Share::link));
    if (!predictions.rows().empty()) {
      std::cout << "\nExercise 3: ch09::pipeline_ms from h2d_alone, kernel_alone and d2h_alone (try other --chunks):\n\n";
      predictions.print(std::cout);
    }
    std::cout << "\nStreams swept at n = " << course::format_size(large) << ":\n\n";
    sweep.print(std::cout, course::measurement_screen_columns(course::Share::link));
    std::cout << "\nOverlap from the timelines:\n\n";
    overlap.print(std::cout);
    std::cout << "\nCUDA graph against plain issue (depth_first):\n\n";
    graphs.print(std::cout);
    std::cout << "\nTargets:\n\n";
    targets.print(std::cout);

    course::write_csvs(opt.csv, table,
                       {{"sweep", &sweep}, {"timeline", &timeline}, {"overlap", &overlap}, {"graph", &graphs},
                        {"targets", &targets}});
    if (!opt.csv.empty())
      std::cout << "\nCSV written to " << opt.csv << " (and _sweep, _timeline, _overlap, _graph, _targets beside it)\n";
    return course::exit_code("09_streams", failed);
  });
}
