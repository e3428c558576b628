// Chapter 09 grading tests: every issue order computes the dot of pinned host data within the fp64
// bound at awkward sizes around the chunk, gives the same bits on every run, and (the chunked
// orders) the same bits as each other, since the partials are combined in a fixed order; the
// book's program gives exactly the host's answer; a graph replays new data and re-captures a new
// shape; bad jobs (too large, no chunk, too many streams, pageable input) are refused by name; and
// (host only: these run without a GPU) the breadth-first order's operations, recorded by the very
// code that enqueues them, follow its rules; the combine adds every chunk's partials where the
// kernels leave them; the predicted time of a chunked pipeline matches a simulation of its three
// engines.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/random.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

using Version = course::Version<ch09::Issue>;
constexpr std::size_t kChunk = 4096;

std::uint32_t bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::string hint(const Version& v) {
  std::string h =
      "combine_partials (a result of 0: its TODO is still empty; a wrong sum: are the partials where you read them, "
      "and as many? see Pipeline in dot.hpp, README §Exercise 2 — a deterministic combination). ";
  if (v.name == "breadth_first")
    h += "issue_breadth_first (its TODO states what must hold): a sum too small by whole chunks means a chunk never "
         "issued (the last group, when the chunks are not a multiple of the streams?). See README §Exercise 1 — the "
         "breadth-first order.";
  return h;
}

// Pinned inputs for up to n_max elements.
struct Host {
  explicit Host(std::size_t n_max) : x(std::max<std::size_t>(n_max, 1)), y(std::max<std::size_t>(n_max, 1)), out(std::max<std::size_t>(n_max, 1)) {}
  course::Reference load(std::size_t n, std::uint64_t seed) {
    const auto in = course::test::make_dot_inputs(n, seed);
    if (n > 0) {
      std::memcpy(x.data(), in.x.data(), n * sizeof(float));
      std::memcpy(y.data(), in.y.data(), n * sizeof(float));
    }
    return in.ref;
  }
  ch09::Job job(std::size_t n, std::size_t chunk, int streams, ch09::Problem problem = ch09::Problem::dot) {
    ch09::Job j;
    j.problem = problem;
    j.h_x = x.data();
    j.h_y = y.data();
    j.h_out = out.data();
    j.n = n;
    j.chunk = chunk;
    j.streams = streams;
    return j;
  }
  course::PinnedBuffer<float> x, y, out;
};

const bool registered = [] {
  for (const auto& v : ch09::versions()) {
    if (ch09::is_speed_of_light(v)) continue;  // not a dot product: its own test cases below
    const std::string name(v.name);
    const std::string tags = std::string("[ch09][gpu]") + (v.exercise ? "[exercise]" : "");
    course::test::add_case("ch09 " + name + ": matches the fp64 reference at awkward sizes", tags, [&v] {
      COURSE_REQUIRE_GPU();
      auto sizes = course::test::awkward_sizes(kChunk, 9);
      sizes.insert(sizes.end(), {3 * kChunk - 1, 3 * kChunk, 3 * kChunk + 1, 5 * kChunk + 77});
      const std::size_t n_max = *std::max_element(sizes.begin(), sizes.end());
      course::Context ctx;
      ch09::Pipeline p(ctx, n_max);
      Host host(n_max);
      for (int streams : {1, 3}) {
        for (std::size_t n : sizes) {
          const course::Reference ref = host.load(n, 90 + n);
          const float got = ch09::run(p, v.run, host.job(n, kChunk, streams));
          const course::Verdict verdict = course::check_dot(got, ref);
          INFO(course::test::explain(verdict, n, std::string(v.name) + " (" + std::to_string(streams) + " streams, chunk " +
                                                     std::to_string(kChunk) + ")",
                                     hint(v)));
          CHECK(verdict.ok);
        }
      }
    });
    course::test::add_case("ch09 " + name + ": the same bits on every run", tags + "[determinism]", [&v] {
      COURSE_REQUIRE_GPU();
      const auto awkward = course::test::awkward_sizes(1024, 99);
      const std::size_t n = *std::max_element(awkward.begin(), awkward.end());
      course::Context ctx;
      ch09::Pipeline p(ctx, n);
      Host host(n);
      const course::Reference ref = host.load(n, 99);
      const ch09::Job job = host.job(n, std::max<std::size_t>(1, n / 13), 4);
      std::set<std::uint32_t> distinct;
      for (int r = 0; r < 20; ++r) {
        const float got = ch09::run(p, v.run, job);
        const course::Verdict verdict = course::check_dot(got, ref);
        INFO("run " << r << ": " << course::test::explain(verdict, n, std::string(v.name), hint(v)));
        CHECK(verdict.ok);
        distinct.insert(bits(got));
      }
      INFO(v.name << ": 20 runs on 4 streams gave " << distinct.size()
                  << " distinct results. Partials must be added in one fixed order, whichever stream finished first.");
      CHECK(distinct.size() == 1);
    });
    if (v.exercise) {
      // A result must follow the input: new values in the same pinned arrays give the new answer (a
      // version that caches its result by pointer, or hard-codes the public one, fails).
      course::test::add_case("ch09 " + name + ": follows its input (new values in the same buffers)", tags, [&v] {
        COURSE_REQUIRE_GPU();
        const std::size_t n = 5 * kChunk + 77;
        course::Context ctx;
        ch09::Pipeline p(ctx, n);
        Host host(n);
        for (int round = 0; round < 2; ++round) {
          const course::Reference ref = host.load(n, 990 + static_cast<std::uint64_t>(round));
          const float got = ch09::run(p, v.run, host.job(n, kChunk, 3));
          const course::Verdict verdict = course::check_dot(got, ref);
          INFO(course::test::explain(verdict, n, std::string(v.name) + " (round " + std::to_string(round + 1) + " of 2)",
                                     "the second round has new values in the same buffers: read x and y on every "
                                     "run, keep nothing between runs. " + hint(v)));
          CHECK(verdict.ok);
        }
      });
    }
    course::test::add_case("ch09 " + name + ": the book's program gives exactly the host's answer", tags, [&v] {
      COURSE_REQUIRE_GPU();
      const std::vector<std::size_t> sizes = {1, 2, 255, 256, 257, kChunk - 1, kChunk, kChunk + 1, 7 * kChunk + 300};
      const std::size_t n_max = sizes.back();
      course::Context ctx;
      ch09::Pipeline p(ctx, n_max);
      Host host(n_max);
      for (std::size_t n : sizes) {
        host.load(n, 5 + n);
        std::memset(host.out.data(), 0xFF, n * sizeof(float));
        const ch09::Job job = host.job(n, kChunk, 2, ch09::Problem::book);
        ch09::run(p, v.run, job);
        std::vector<float> expect(n);
        // serial runs it as one chunk; the others in chunks of kChunk.
        ch09::book_reference(host.x.data(), host.y.data(), expect.data(), n, v.name == "serial" ? n : kChunk);
        std::size_t first_bad = n;
        for (std::size_t i = 0; i < n && first_bad == n; ++i)
          if (bits(host.out.data()[i]) != bits(expect[i])) first_bad = i;
        INFO(v.name << ", book problem, n = " << n << ": first wrong element " << first_bad << " (chunk "
                    << first_bad / kChunk << "). " << hint(v));
        CHECK(first_bad == n);
      }
    });
  }
  return true;
}();

}  // namespace

TEST_CASE("ch09 combine: the chunked orders agree bit for bit", "[ch09][gpu][exercise]") {
  COURSE_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 18) + 5;
  course::Context ctx;
  ch09::Pipeline p(ctx, n);
  Host host(n);
  const course::Reference ref = host.load(n, 17);
  std::set<std::uint32_t> distinct;
  for (const char* name : {"one_stream", "depth_first", "breadth_first", "graph"}) {
    const auto* v = course::find_version(ch09::versions(), name);
    REQUIRE(v != nullptr);
    const float got = ch09::run(p, v->run, host.job(n, 10000, 3));
    const course::Verdict verdict = course::check_dot(got, ref);
    INFO(name << ": " << course::test::explain(verdict, n, name, hint(*v)));
    CHECK(verdict.ok);
    distinct.insert(bits(got));
  }
  INFO("the same chunks and the same fixed order of combining must give the same bits in every issue order");
  CHECK(distinct.size() == 1);
}

TEST_CASE("ch09 graph: replays new data in place and re-captures a new shape", "[ch09][gpu]") {
  COURSE_REQUIRE_GPU();
  const std::size_t n = 100000;
  course::Context ctx;
  ch09::Pipeline p(ctx, n);
  Host host(n);
  const auto* graph = course::find_version(ch09::versions(), "graph");
  REQUIRE(graph != nullptr);
  for (std::uint64_t seed : {1u, 2u, 3u}) {  // same pointers, same shape: the same graph, new data
    const course::Reference ref = host.load(n, seed);
    CHECK(course::check_dot(ch09::run(p, graph->run, host.job(n, 7000, 2)), ref).ok);
  }
  const course::Reference ref = host.load(n / 2, 4);  // a new shape: a new capture
  CHECK(course::check_dot(ch09::run(p, graph->run, host.job(n / 2, 3000, 5)), ref).ok);
}

TEST_CASE("ch09 pipeline: bad jobs are refused by name", "[ch09][gpu]") {
  COURSE_REQUIRE_GPU();
  course::Context ctx;
  ch09::Pipeline p(ctx, 1000, 10);
  Host host(1000);
  const auto* depth = course::find_version(ch09::versions(), "depth_first");
  REQUIRE(depth != nullptr);
  CHECK_THROWS_WITH(ch09::run(p, depth->run, host.job(1001, 100, 2)), course::test::contains("n_max"));
  CHECK_THROWS_AS(ch09::run(p, depth->run, host.job(1000, 0, 2)), course::UsageError);
  CHECK_THROWS_AS(ch09::run(p, depth->run, host.job(1000, 100, 0)), course::UsageError);
  CHECK_THROWS_AS(ch09::run(p, depth->run, host.job(1000, 100, ch09::kMaxStreams + 1)), course::UsageError);
  CHECK_THROWS_WITH(ch09::run(p, depth->run, host.job(1000, 10, 2)), course::test::contains("chunks"));
  std::vector<float> pageable(1000, 1.0f);
  ch09::Job job = host.job(1000, 100, 2);
  job.h_x = pageable.data();
  CHECK_THROWS_WITH(ch09::run(p, depth->run, job), course::test::contains("not page-locked"));
  // Nothing was enqueued by the refused jobs: a good one still runs.
  const course::Reference ref = host.load(1000, 3);
  CHECK(course::check_dot(ch09::run(p, depth->run, host.job(1000, 100, 2)), ref).ok);
}

// Exercise 1 without a GPU: issue_breadth_first is a template, and breadth_first_ops runs it with a
// recorder in place of the Pipeline: the operations it would enqueue, in order.
namespace {

const char* stage_name(ch09::Stage st) {
  return st == ch09::Stage::copy_in ? "copy_in" : st == ch09::Stage::compute ? "compute" : "copy_out";
}

std::string listing(const std::vector<ch09::Op>& ops) {
  std::ostringstream s;
  for (std::size_t i = 0; i < ops.size() && i < 24; ++i)
    s << (i ? ", " : "") << stage_name(ops[i].stage) << "(chunk " << ops[i].chunk << ", stream " << ops[i].stream << ")";
  if (ops.size() > 24) s << ", ... (" << ops.size() << " in all)";
  if (ops.empty()) s << "nothing";
  return s.str();
}

// "" or what is wrong with the operations the breadth-first order issued for chunks on S streams.
std::string breadth_first_problem(const std::vector<ch09::Op>& ops, std::size_t chunks, int S) {
  std::ostringstream out;
  if (ops.size() != 3 * chunks) {
    out << ops.size() << " operations for " << chunks << " chunks; every chunk needs one copy_in, one compute and one "
        << "copy_out (3 per chunk)";
    return out.str();
  }
  std::vector<int> stream_of(chunks, -1);
  std::vector<int> seen(3 * chunks, 0);
  for (const ch09::Op& op : ops) {
    if (op.chunk >= chunks) {
      out << stage_name(op.stage) << " of chunk " << op.chunk << ": there are only " << chunks << " chunks";
      return out.str();
    }
    if (op.stream < 0 || op.stream >= S) {
      out << stage_name(op.stage) << " of chunk " << op.chunk << " on stream " << op.stream << ": the job has streams 0 to "
          << S - 1 << " only (the others are not forked or joined: run() would not wait for them)";
      return out.str();
    }
    if (++seen[3 * op.chunk + static_cast<std::size_t>(op.stage)] > 1) {
      out << "chunk " << op.chunk << "'s " << stage_name(op.stage) << " is issued twice";
      return out.str();
    }
    if (stream_of[op.chunk] < 0) stream_of[op.chunk] = op.stream;
    if (stream_of[op.chunk] != op.stream) {
      out << "chunk " << op.chunk << "'s operations are on streams " << stream_of[op.chunk] << " and " << op.stream
          << ": all three of a chunk's on one stream, which runs them in the order they were issued";
      return out.str();
    }
  }
  // Groups: a run of copy_ins, then the computes of the same chunks, then their copy_outs.
  std::size_t i = 0, groups = 0;
  while (i < ops.size()) {
    std::set<std::size_t> group;
    std::set<int> streams;
    while (i < ops.size() && ops[i].stage == ch09::Stage::copy_in) {
      group.insert(ops[i].chunk);
      streams.insert(ops[i].stream);
      ++i;
    }
    const std::size_t m = group.size();
    if (m == 0) {
      out << "operation " << i << " (" << stage_name(ops[i].stage) << " of chunk " << ops[i].chunk
          << ") comes before its group's copies in are all issued, or a chunk's operations run out of order: a "
             "group issues every copy_in, then every compute, then every copy_out";
      return out.str();
    }
    for (ch09::Stage st : {ch09::Stage::compute, ch09::Stage::copy_out})
      for (std::size_t j = 0; j < m; ++j, ++i)
        if (i >= ops.size() || ops[i].stage != st || group.count(ops[i].chunk) == 0) {
          out << "group " << groups << " (chunks copied in: " << m << ") needs the " << stage_name(st)
              << " of each of its chunks next, one after the other; operation " << i << " is "
              << (i < ops.size() ? std::string(stage_name(ops[i].stage)) + " of chunk " + std::to_string(ops[i].chunk)
                                 : std::string("missing"));
          return out.str();
        }
    if (streams.size() != m) {
      out << "group " << groups << " puts " << m << " chunks on " << streams.size()
          << " streams: the chunks of a group go on different streams";
      return out.str();
    }
    const bool last = i == ops.size();
    if (m > static_cast<std::size_t>(S) || (!last && m != static_cast<std::size_t>(S))) {
      out << "group " << groups << " holds " << m << " chunks; the chunks go S = " << S
          << " at a time (only the last group may hold fewer)";
      return out.str();
    }
    ++groups;
  }
  return "";
}

}  // namespace

TEST_CASE("ch09 breadth_first order: every chunk once, S at a time, stage by stage, on the job's streams",
          "[ch09][exercise][hole:dot.cu:1]") {
  for (int S : {1, 2, 3, 4, 7, ch09::kMaxStreams})
    for (std::size_t chunks : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4},
                               std::size_t{5}, std::size_t{7}, std::size_t{8}, std::size_t{16}, std::size_t{17},
                               std::size_t{100}}) {
      const std::vector<ch09::Op> ops = ch09::breadth_first_ops(chunks, S);
      const std::string problem = breadth_first_problem(ops, chunks, S);
      INFO(chunks << " chunks on " << S << " streams: " << problem << ".\nIssued: " << listing(ops)
                  << "\nHint: issue_breadth_first (exercise 1; its TODO states what must hold). A group is S "
                     "consecutive chunks on S different streams; the last group may be short. See README "
                     "§Exercise 1 — the breadth-first order.");
      REQUIRE(problem.empty());
    }
}

// Exercise 2 without a GPU: combine_partials over partials laid out as the pipeline leaves them.
TEST_CASE("ch09 combine_partials: every chunk's partials where the kernels leave them, and no others",
          "[ch09][exercise][hole:dot.cu:2]") {
  for (std::size_t stride : {std::size_t{1}, std::size_t{3}, std::size_t{8}})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                          std::size_t{1000}, std::size_t{5000}})
      for (std::size_t chunk : {std::size_t{1}, std::size_t{100}, std::size_t{256}, std::size_t{1000}, std::size_t{4096}}) {
        ch09::Job job;
        job.n = n;
        job.chunk = chunk;
        const std::size_t chunks = ch09::chunk_count(job);
        // NaN wherever no kernel writes: a partial read from there makes the sum NaN.
        std::vector<float> partials(std::max<std::size_t>(1, chunks * stride), std::nanf(""));
        double exact = 0.0;  // small integers: any order of the additions gives this sum exactly
        for (std::size_t k = 0; k < chunks; ++k) {
          const std::size_t len = std::min(chunk, n - k * chunk);
          for (int b = 0; b < ch09::dot_blocks(len, stride); ++b) {
            const float v = static_cast<float>(7 * k + static_cast<std::size_t>(b) + 1);
            partials[k * stride + static_cast<std::size_t>(b)] = v;
            exact += v;
          }
        }
        const float got = ch09::combine_partials(ch09::Partials{partials.data(), stride}, job);
        INFO("n = " << n << ", chunk = " << chunk << " (" << chunks << " chunks), partials " << stride
                    << " floats apart: combine_partials gave " << got << ", the partials add up to " << exact
                    << " (NaN: a slot no kernel wrote was read).\nHint: combine_partials (exercise 2): every partial "
                       "the chunks' kernels wrote must be added once, and no slot they did not write: where chunk k's "
                       "partials start and how many it has (the last chunk is shorter) is stated by Pipeline in "
                       "dot.hpp. See README §Exercise 2 — a deterministic combination.");
        REQUIRE(bits(got) == bits(static_cast<float>(exact)));
      }
}

TEST_CASE("ch09 cpu_dot: every thread's slice counted", "[ch09]") {
  course::ThreadPool pool(3);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000003}}) {
    const auto in = course::test::make_dot_inputs(n, 12);
    const course::Verdict verdict = course::check_dot(ch09::cpu_dot(pool, in.x.data(), in.y.data(), n), in.ref);
    INFO(course::test::explain(verdict, n, "cpu_dot", "kit code: please report"));
    CHECK(verdict.ok);
  }
}

TEST_CASE("ch09 registry: unique names, breadth_first the exercise", "[ch09]") {
  std::set<std::string> names;
  for (const auto& v : ch09::versions()) {
    CHECK(names.insert(std::string(v.name)).second);
    CHECK(!v.description.empty());
    CHECK(v.exercise == (v.name == "breadth_first"));
  }
}

// ---- the speed-of-light row: the floor, not a dot ---------------------------------------------
// The registry's speed_of_light row moves the same bytes as every issue order (x and y, from pinned
// memory, whole, one copy each) and nothing else. It has no result to check; what it must do is
// move every byte before run() returns, at any size and from any 4-byte offset of pinned memory,
// whatever chunk and stream count the job asks for. It stays out of grading.

TEST_CASE("ch09 speed_of_light: one floor row in the registry, first, not a dot and not an exercise", "[ch09]") {
  const auto& reg = ch09::versions();
  int floors = 0;
  for (const auto& v : reg) floors += ch09::is_speed_of_light(v) ? 1 : 0;
  CHECK(floors == 1);
  REQUIRE(!reg.empty());
  CHECK(ch09::is_speed_of_light(reg.front()));
  CHECK(std::string(reg.front().name) == "speed_of_light");
  CHECK(!reg.front().exercise);
  CHECK_THAT(std::string(reg.front().description), course::test::contains("not a dot"));
}

TEST_CASE("ch09 speed_of_light: moves x and y whole at awkward sizes and offsets, and returns no result",
          "[ch09][gpu]") {
  COURSE_REQUIRE_GPU();
  const auto* v = course::find_version(ch09::versions(), "speed_of_light");
  REQUIRE(v != nullptr);
  const std::size_t n_max = 1000003;
  course::Context ctx;
  ch09::Pipeline p(ctx, n_max);
  course::PinnedBuffer<float> x(n_max + 3), y(n_max + 3);
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, n_max}) {
    const auto in = course::test::make_dot_inputs(n, 9090 + n);
    for (const auto& [off_x, off_y] : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 2}, {3, 1}}) {
      std::copy(in.x.begin(), in.x.end(), x.data() + off_x);
      std::copy(in.y.begin(), in.y.end(), y.data() + off_y);
      ch09::Job job;
      job.h_x = x.data() + off_x;
      job.h_y = y.data() + off_y;
      job.n = n;
      job.chunk = 1000;  // the floor copies x and y whole, whatever the job's chunks and streams
      job.streams = 3;
      const course::Verdict verdict = ch09::check_link_floor(p, job);
      INFO("speed_of_light at n = " << n << ", x + " << off_x << ", y + " << off_y << ": " << verdict.message);
      CHECK(verdict.ok);
      CHECK(std::isnan(verdict.rel_error));  // no result, no error to report
      CHECK(std::isnan(ch09::run(p, v->run, job)));  // not a dot: no result
    }
  }
}

TEST_CASE("ch09 speed_of_light: refuses pageable input and n > n_max by name", "[ch09][gpu]") {
  COURSE_REQUIRE_GPU();
  const auto* v = course::find_version(ch09::versions(), "speed_of_light");
  REQUIRE(v != nullptr);
  course::Context ctx;
  ch09::Pipeline p(ctx, 1000);
  Host host(1001);
  host.load(1001, 9191);
  CHECK_THROWS_WITH(ch09::run(p, v->run, host.job(1001, 100, 1)), course::test::contains("n_max"));
  CHECK_THROWS_WITH(ch09::check_link_floor(p, host.job(1001, 100, 1)), course::test::contains("n_max"));
  std::vector<float> pageable(1000, 1.0f);
  ch09::Job job = host.job(1000, 100, 1);
  job.h_x = pageable.data();
  CHECK_THROWS_WITH(ch09::run(p, v->run, job), course::test::contains("pinned"));
  const course::Verdict verdict = ch09::check_link_floor(p, host.job(1000, 1000, 1));  // the pipeline works afterwards
  INFO(verdict.message);
  CHECK(verdict.ok);
}

// Exercise 3 (think): how long a chunked pipeline takes. Host only (no GPU). Checked against
// examples worked out by hand (the arithmetic is in the comment above the table), and against the
// three engines played on a grid of ticks, for pipelines whose every operation lasts a whole number
// of ticks: the engines' times and the latency are whole numbers of a unit u (10 µs here), and with
// `chunks` chunks one tick is u / chunks, so that an operation lasts latency·chunks + engine ticks.
namespace {

constexpr double kUnitMs = 0.01;  // u
constexpr std::size_t kIdle = std::numeric_limits<std::size_t>::max();

/// The tick at which the last copy out ends, the engines played tick by tick. Engine e (copy in,
/// kernel, copy out) takes the chunks in order, one at a time, each for op_ticks[e] ticks; it may
/// start chunk k once it is idle and (but for the copy in) the engine before it has finished chunk
/// k. At each tick, operations start and end until nothing changes (one may take no time), then
/// every busy engine works one tick.
std::size_t pipeline_ticks(const std::size_t op_ticks[3], std::size_t chunks) {
  std::size_t started[3] = {0, 0, 0}, finished[3] = {0, 0, 0}, working[3] = {kIdle, kIdle, kIdle}, left[3] = {0, 0, 0};
  for (std::size_t tick = 0;; ++tick) {
    for (bool changed = true; changed;) {
      changed = false;
      for (int e = 0; e < 3; ++e) {
        if (working[e] == kIdle && started[e] < chunks && (e == 0 || finished[e - 1] > started[e])) {
          working[e] = started[e]++;
          left[e] = op_ticks[e];
          changed = true;
        }
        if (working[e] != kIdle && left[e] == 0) {
          working[e] = kIdle;
          ++finished[e];
          changed = true;
        }
      }
    }
    if (finished[2] == chunks) return tick;
    for (int e = 0; e < 3; ++e)
      if (working[e] != kIdle) --left[e];
  }
}

/// A job on the grid: each engine's time for the whole input, and the latency, in units u.
struct PipelineCase {
  std::size_t engine_units[3];
  std::size_t latency_units;
  double engine_ms(int e) const { return static_cast<double>(engine_units[e]) * kUnitMs; }
  double latency_us() const { return static_cast<double>(latency_units) * kUnitMs * 1000.0; }
  /// The simulated wall time in ms.
  double simulated_ms(std::size_t chunks) const {
    std::size_t op[3];
    for (int e = 0; e < 3; ++e) op[e] = latency_units * chunks + engine_units[e];
    return static_cast<double>(pipeline_ticks(op, chunks)) * kUnitMs / static_cast<double>(chunks);
  }
  double predicted_ms(std::size_t chunks) const {
    return ch09::pipeline_ms(engine_ms(0), engine_ms(1), engine_ms(2), chunks, latency_us());
  }
};

std::vector<PipelineCase> pipeline_cases() {
  std::vector<PipelineCase> cases = {
      {{200, 50, 100}, 1},  // the copy in the busiest
      {{1000, 0, 0}, 0},    // one engine, no latency
      {{100, 100, 100}, 1}, // three equal engines
      {{0, 0, 0}, 1},       // latency only
      {{5, 200, 5}, 1},     // the kernel the busiest
      {{1, 1, 50}, 6},      // the copy back the busiest, a large latency
  };
  std::mt19937_64 rng(course::test::seed(909));
  for (int k = 0; k < 60; ++k) {
    PipelineCase c{};
    for (std::size_t& t : c.engine_units) t = (rng() % 5 == 0) ? 0 : rng() % 41;
    c.latency_units = (rng() % 4 == 0) ? 0 : 1 + rng() % 6;
    cases.push_back(c);
  }
  return cases;
}

std::string describe(double h2d_ms, double kernel_ms, double d2h_ms, std::size_t chunks, double latency_us) {
  std::ostringstream s;
  s << "pipeline_ms(h2d_ms = " << h2d_ms << ", kernel_ms = " << kernel_ms << ", d2h_ms = " << d2h_ms
    << ", chunks = " << chunks << ", latency_us = " << latency_us << ")";
  return s.str();
}
std::string describe(const PipelineCase& c, std::size_t chunks) {
  return describe(c.engine_ms(0), c.engine_ms(1), c.engine_ms(2), chunks, c.latency_us());
}

}  // namespace

TEST_CASE("ch09 pipeline_ms: matches an operation-by-operation simulation of three engines", "[ch09][exercise][think][hole:dot.cu:3]") {
  std::size_t wrong = 0, total = 0;
  std::string first;
  auto judge = [&](double got, double expected, const std::string& call, const char* source) {
    ++total;
    if (!(std::fabs(got - expected) <= 1e-9 * expected) && wrong++ == 0) {
      std::ostringstream s;
      s << call << " returned " << got << " ms; " << source << " " << expected << " ms";
      first = s.str();
    }
  };
  // Worked by hand. An operation lasts the latency plus its engine's time / chunks.
  //  - One engine of 10 ms, no latency, 5 chunks: the other two take no time, so 5 × 2 = 10 ms:
  //    chunks buy nothing when there is nothing to overlap.
  //  - 2, 0.5 and 1 ms, 4 µs latency, 4 chunks: operations of 0.504, 0.129 and 0.254 ms. The first
  //    chunk passes all three (0.887 ms); the copy in, the busiest, hands over a chunk every
  //    0.504 ms, so the last leaves the copy out 3 × 0.504 later: 2.399 ms.
  //  - Three engines of 1 ms, 10 µs latency: 1 chunk, 3 × 1.01 = 3.03 ms; 10 chunks, operations of
  //    0.11 ms, 0.33 + 9 × 0.11 = 1.32 ms.
  //  - No work, 5 µs latency, 3 chunks: 3 operations for the first chunk, then one more latency per
  //    chunk: 0.015 + 0.010 = 0.025 ms.
  //  - 0.05, 2 and 0.05 ms, 1 µs latency, 8 chunks: operations of 0.00725, 0.251 and 0.00725 ms:
  //    0.2655 + 7 × 0.251 = 2.0225 ms.
  //  - Three engines of 1 ms, no latency, a million chunks: 3 µs for the first chunk, then a
  //    microsecond per chunk: 1.000002 ms (a simulation would play three million operations).
  const struct {
    double h2d, kernel, d2h;
    std::size_t chunks;
    double latency_us, expected_ms;
  } worked[] = {
      {10.0, 0.0, 0.0, 5, 0.0, 10.0},  {2.0, 0.5, 1.0, 4, 4.0, 2.399},       {1.0, 1.0, 1.0, 1, 10.0, 3.03},
      {1.0, 1.0, 1.0, 10, 10.0, 1.32}, {0.0, 0.0, 0.0, 3, 5.0, 0.025},       {0.05, 2.0, 0.05, 8, 1.0, 2.0225},
      {1.0, 1.0, 1.0, 1000000, 0.0, 1.000002},
  };
  for (const auto& w : worked)
    judge(ch09::pipeline_ms(w.h2d, w.kernel, w.d2h, w.chunks, w.latency_us), w.expected_ms,
          describe(w.h2d, w.kernel, w.d2h, w.chunks, w.latency_us), "worked by hand:");
  for (const PipelineCase& c : pipeline_cases())
    for (std::size_t chunks = 1; chunks <= 64; ++chunks)
      judge(c.predicted_ms(chunks), c.simulated_ms(chunks), describe(c, chunks), "the simulation finishes at");
  INFO(wrong << " of " << total << " predictions wrong; the first: " << first
             << ".\nHint: -1 is the unfilled stub. Draw the three engines' timelines for three chunks: when does "
                "the first chunk's copy back start, and what keeps the last one waiting? Every operation pays the "
                "latency, whatever its engine. See pipeline_ms, README §Exercise 3 — how many chunks?");
  CHECK(wrong == 0);
  CHECK_THROWS_AS(ch09::pipeline_ms(1.0, 1.0, 1.0, 0, 1.0), course::UsageError);  // kit code, outside the hole
}

TEST_CASE("ch09 pipeline_ms: its best chunk count is the simulation's", "[ch09][exercise][think][hole:dot.cu:3]") {
  // Ties (two chunk counts within rounding of each other) are accepted: the chunk count the
  // prediction picks must be as fast as the best one in the simulation.
  std::size_t wrong = 0, total = 0;
  std::string first;
  for (const PipelineCase& c : pipeline_cases()) {
    std::size_t best_predicted = 1, best_simulated = 1;
    double predicted_min = 0.0, simulated_min = 0.0, at_predicted = 0.0;
    for (std::size_t chunks = 1; chunks <= 64; ++chunks) {
      const double p = c.predicted_ms(chunks);
      const double s = c.simulated_ms(chunks);
      if (chunks == 1 || p < predicted_min) predicted_min = p, best_predicted = chunks, at_predicted = s;
      if (chunks == 1 || s < simulated_min) simulated_min = s, best_simulated = chunks;
    }
    ++total;
    if (!(at_predicted <= simulated_min * (1 + 1e-9)) && wrong++ == 0) {
      std::ostringstream s;
      s << describe(c, best_predicted) << " is the smallest prediction over 1..64 chunks, but the simulation is "
        << "fastest at " << best_simulated << " chunks (" << simulated_min << " ms against " << at_predicted << " ms)";
      first = s.str();
    }
  }
  INFO(wrong << " of " << total << " jobs given the wrong chunk count; the first: " << first
             << ".\nHint: more chunks shorten the fill and the drain, and every chunk adds a latency to each engine. "
                "See README §Exercise 3 — how many chunks?");
  CHECK(wrong == 0);
}

// ---- the exploit gallery (docs/grading.md): the pipeline's work on its streams, its answer the
// kernels' ---------------------------------------------------------------------------------------
// The graded timeline waits for the job's streams; work issued on another of the pipeline's streams
// is neither joined nor waited for. And a combine that recomputes the dot from the pinned inputs
// on the host passes every accuracy test. Each test below sees one of these; tests/negative/09_exploit_*.

// Exercise 4 (design): the plan is timed as the depth-first pipeline (not an exercise) runs it, and
// compared with the best of a sweep of shapes timed in the same test, on the same card. The job is
// the book's program: its output is as large as an input, so the copies back overlap the copies in
// only in a pipeline (for the dot, whose copy back is a few bytes, one chunk is nearly as fast as
// any pipeline, and a plan that does not pipeline could not be told from one that does).
TEST_CASE("ch09 plan: the planned pipeline runs within 15% of the best shape measured here",
          "[ch09][gpu][exercise][design][exclusive]") {
  COURSE_REQUIRE_GPU();
  const std::size_t n = std::size_t{1} << 25;
  course::Context ctx;
  ch09::Pipeline p(ctx, n);
  Host host(n);
  host.load(n, 29);
  const auto* depth = course::find_version(ch09::versions(), "depth_first");
  REQUIRE(depth != nullptr);
  // The engines are measured on 16 chunks, as the stub says: each time is 16 operations of its
  // engine, one after another, latency included; engines.chunks carries the count to the plan.
  const ch09::Engines engines = ch09::measure_engines(p, host.job(n, n / 16, 1, ch09::Problem::book));
  REQUIRE(engines.chunks == 16);  // kit code (measure_engines), outside the hole
  const ch09::Plan plan = ch09::plan_pipeline(n, engines);
  INFO("engines for the book's program on 2^25 floats, each over " << engines.chunks << " chunks (latency included): h2d "
       << engines.h2d_ms << " ms, kernel " << engines.kernel_ms << " ms, d2h " << engines.d2h_ms << " ms; one operation's latency "
       << engines.latency_us << " us; plan: chunk " << plan.chunk << ", streams " << plan.streams);
  REQUIRE(plan.chunk >= 1);
  REQUIRE(plan.chunk <= n);
  REQUIRE(plan.streams >= 1);
  REQUIRE(plan.streams <= ch09::kMaxStreams);
  REQUIRE((n + plan.chunk - 1) / plan.chunk <= 4096);
  // Under compute-sanitizer (COURSE_TEST_SMALL) times mean nothing: the plan's shape is checked,
  // its speed is not.
  if (std::getenv("COURSE_TEST_SMALL") != nullptr) return;
  auto median_ms = [&](std::size_t chunk, int streams) {
    std::vector<double> ms;
    for (int r = 0; r < 6; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      ch09::run(p, depth->run, host.job(n, chunk, streams, ch09::Problem::book));
      const auto t1 = std::chrono::steady_clock::now();
      if (r > 0) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  double best = 0;
  std::string best_shape;
  for (std::size_t chunks : {4, 8, 16, 32, 64, 128, 256})
    for (int streams : {2, 3, 4}) {
      const double ms = median_ms((n + chunks - 1) / chunks, streams);
      if (best == 0 || ms < best) {
        best = ms;
        best_shape = std::to_string(chunks) + " chunks on " + std::to_string(streams) + " streams";
      }
    }
  const double planned = median_ms(plan.chunk, plan.streams);
  INFO("the plan takes " << planned << " ms; the best shape of the sweep (" << best_shape << ") " << best
       << " ms: " << planned / best << "x. Hint: exercise 3's model says what more chunks buy and cost; how "
       "many streams does a chunk's copy in, kernel and copy out need to run at once? See plan_pipeline, README "
       "§Exercise 4 — plan the pipeline for your card.");
  CHECK(planned <= 1.15 * best);
}

// Issue 38, class 3: a plan that returns the shape that won on the grading card (a constant chunk
// count and stream count) passes the GPU test above on that card. Here the plan is fed the engine
// figures other machines would measure (synthetic: the book's program on a T4 over PCIe 3, an
// A100 over PCIe 4, an H200 over PCIe 5, the H200's link behind a slow, latency-bound path, and
// small jobs where the latency is all there is) and judged by exercise 3's model, extended to
// streams: an operation waits for its engine's previous one, its chunk's previous stage, and the
// last stage of the chunk `streams` earlier (the same stream, in order). Its time must be within
// 15 % of the model's best shape (any chunk count up to 4096, any stream count), as on the card.
// Host only: no GPU, no timing.
namespace {

struct Machine {
  const char* name;
  std::size_t n;          // floats per input
  double h2d_gbps;        // the link, each way
  double d2h_gbps;
  double dram_gbps;       // the book's kernel reads two floats and writes one per element
  double latency_us;      // one operation's fixed cost
};

// Each engine's time for the whole job's bytes, no latency in it: x and y in, the output back.
void engine_ms(const Machine& m, double out[3]) {
  const double n = static_cast<double>(m.n);
  out[0] = 8.0 * n / (m.h2d_gbps * 1e6);
  out[1] = 12.0 * n / (m.dram_gbps * 1e6);
  out[2] = 4.0 * n / (m.d2h_gbps * 1e6);
}

// The model with streams: chunk k of `chunk` elements (the last one shorter), issued depth-first on
// stream k % streams.
double model_ms(const Machine& m, std::size_t chunk, int streams) {
  double e[3];
  engine_ms(m, e);
  const std::size_t chunks = (m.n + chunk - 1) / chunk;
  std::vector<double> done(chunks, 0.0);  // each chunk's copy out ends
  double engine_free[3] = {0.0, 0.0, 0.0};
  for (std::size_t k = 0; k < chunks; ++k) {
    const double share = static_cast<double>(std::min(chunk, m.n - k * chunk)) / static_cast<double>(m.n);
    double ready = k >= static_cast<std::size_t>(streams) ? done[k - static_cast<std::size_t>(streams)] : 0.0;
    for (int s = 0; s < 3; ++s) {
      engine_free[s] = std::max(ready, engine_free[s]) + m.latency_us * 1e-3 + e[s] * share;
      ready = engine_free[s];
    }
    done[k] = ready;
  }
  return engine_free[2];
}

// What measure_engines would report on this machine: each engine over 16 chunks, one after another,
// 16 latencies included, and one operation's latency apart.
ch09::Engines measured(const Machine& m) {
  double e[3];
  engine_ms(m, e);
  ch09::Engines out;
  out.chunks = 16;
  out.latency_us = m.latency_us;
  out.h2d_ms = e[0] + 16 * m.latency_us * 1e-3;
  out.kernel_ms = e[1] + 16 * m.latency_us * 1e-3;
  out.d2h_ms = e[2] + 16 * m.latency_us * 1e-3;
  return out;
}

}  // namespace

TEST_CASE("ch09 plan: on other machines' engine figures, within 15% of the model's best shape",
          "[ch09][exercise][design][exploit]") {
  const std::size_t big = std::size_t{1} << 25;
  const Machine machines[] = {
      {"T4 on PCIe 3", big, 12.0, 13.0, 300.0, 10.0},
      {"A100 on PCIe 4", big, 25.0, 26.0, 1500.0, 8.0},
      {"H200 on PCIe 5", big, 50.0, 52.0, 4500.0, 6.0},
      {"H200 on PCIe 5, 2^28 floats", std::size_t{1} << 28, 50.0, 52.0, 4500.0, 6.0},
      {"H200's link behind a 300 us path (latency-bound)", big, 50.0, 52.0, 4500.0, 300.0},
      {"A100 on PCIe 4, 2^21 floats, 40 us path", std::size_t{1} << 21, 25.0, 26.0, 1500.0, 40.0},
      {"T4 on PCIe 3, 2^14 floats (latency only)", std::size_t{1} << 14, 12.0, 13.0, 300.0, 10.0},
  };
  for (const Machine& m : machines) {
    const ch09::Plan plan = ch09::plan_pipeline(m.n, measured(m));
    INFO(m.name << ", n = " << m.n << ": plan chunk " << plan.chunk << ", streams " << plan.streams);
    REQUIRE(plan.chunk >= 1);
    REQUIRE(plan.chunk <= m.n);
    REQUIRE(plan.streams >= 1);
    REQUIRE(plan.streams <= ch09::kMaxStreams);
    REQUIRE((m.n + plan.chunk - 1) / plan.chunk <= 4096);
    double best = 0.0;
    std::string best_shape;
    for (std::size_t chunks = 1; chunks <= std::min<std::size_t>(m.n, 4096); chunks += chunks < 64 ? 1 : chunks / 16) {
      for (int streams = 1; streams <= std::min<int>(4, static_cast<int>(chunks)); ++streams) {
        const double ms = model_ms(m, (m.n + chunks - 1) / chunks, streams);
        if (best == 0.0 || ms < best)
          best = ms, best_shape = std::to_string(chunks) + " chunks on " + std::to_string(streams) + " stream(s)";
      }
    }
    const double planned = model_ms(m, plan.chunk, plan.streams);
    INFO("the model gives the plan " << planned << " ms, its best shape (" << best_shape << ") " << best << " ms: "
         << planned / best << "x.\nHint: the plan must follow the engines it is given, not one card's: more chunks "
         "shorten the fill and the drain, each adds a latency to every engine (exercise 3), and a chunk's three "
         "stages run at once only on as many streams. See plan_pipeline, README §Exercise 4.");
    CHECK(planned <= 1.15 * best);
  }
}

TEST_CASE("ch09 breadth_first: issues work only on the job's streams (the others stay empty)",
          "[ch09][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  const auto* v = course::find_version(ch09::versions(), "breadth_first");
  REQUIRE(v != nullptr);
  const std::size_t n = 7 * kChunk + 5;
  course::Context ctx;
  ch09::Pipeline p(ctx, n);
  Host host(n);
  for (int streams : {1, 2, 3}) {
    const course::Reference ref = host.load(n, 9090 + static_cast<std::uint64_t>(streams));
    // Streams the job does not use record instead of run: whatever is issued on them is captured
    // into a graph that the test counts and never launches. Each capture starts with one node of
    // the test's own (a memset), so that no capture is empty.
    course::DeviceBuffer<int> marker(ch09::kMaxStreams);
    for (int s = streams; s < ch09::kMaxStreams; ++s) {
      CUDA_CHECK(cudaStreamBeginCapture(p.stream(s), cudaStreamCaptureModeRelaxed));
      CUDA_CHECK(cudaMemsetAsync(marker.data() + s, 0, sizeof(int), p.stream(s)));
    }
    float got = std::nanf("");
    std::string error;
    try {
      got = ch09::run(p, v->run, host.job(n, kChunk, streams));
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::size_t foreign = 0;
    std::string where;
    for (int s = streams; s < ch09::kMaxStreams; ++s) {
      cudaGraph_t graph = nullptr;
      const cudaError_t code = cudaStreamEndCapture(p.stream(s), &graph);
      std::size_t nodes = 0;
      if (code == cudaSuccess && graph != nullptr) {
        CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
        CUDA_CHECK(cudaGraphDestroy(graph));
        nodes = nodes > 0 ? nodes - 1 : 0;  // the test's own memset
      } else {
        cudaGetLastError();
        nodes = 1;  // the capture was broken by work that waited on another stream
      }
      if (nodes > 0) where += (where.empty() ? "" : ", ") + std::to_string(s);
      foreign += nodes;
    }
    INFO("breadth_first with " << streams << " stream(s): " << foreign << " operation(s) issued on pipeline streams "
         << (where.empty() ? std::string("(none)") : where) << ", which the job did not ask for"
         << (error.empty() ? std::string() : "; the run failed: " + error)
         << ". Every chunk goes on one of the job's S streams (p.copy_in/compute/copy_out with s < S): run() joins and "
            "waits for those only, so work elsewhere is not finished when the answer is read or the timer stops.");
    CHECK(foreign == 0);
    CHECK(error.empty());
    const course::Verdict verdict = course::check_dot(got, ref);
    INFO(course::test::explain(verdict, n, "breadth_first (" + std::to_string(streams) + " streams)", hint(*v)));
    CHECK(verdict.ok);
  }
}

TEST_CASE("ch09 combine: adds the kernels' partials, never the inputs", "[ch09][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  const auto* v = course::find_version(ch09::versions(), "depth_first");  // not the exercise: only the combine is tested
  REQUIRE(v != nullptr);
  const std::size_t n = 5 * kChunk + 77;
  course::Context ctx;
  ch09::Pipeline p(ctx, n);
  Host host(n);
  const course::Reference ref = host.load(n, 9191);
  const ch09::Job job = host.job(n, kChunk, 3);
  const float got = ch09::run(p, v->run, job);
  REQUIRE(course::check_dot(got, ref).ok);
  // The partials stay where the kernels' copies left them; the inputs change under the combine.
  std::memset(host.x.data(), 0, n * sizeof(float));
  std::memset(host.y.data(), 0, n * sizeof(float));
  const float again = ch09::combine_partials(p, job);
  INFO("combine_partials gave " << got << " after the run and " << again << " when called again on the same partials "
       "with x and y zeroed. The combine adds the partials the kernels left (p.host_partials()); an answer computed "
       "from the inputs on the host is not the pipeline's.");
  CHECK(bits(again) == bits(got));
}

// ---- exercise 4 without a GPU (issue 39: a host check for every hole) ---------------------------
// The plan on synthetic engine figures: the time of a shape is an operation-by-operation
// simulation of the depth-first pipeline (chunk k on stream k mod S, its copy in, kernel and copy
// out in that order; each engine takes operations in the order they were issued, one at a time;
// every operation pays the latency, the last chunk's bytes are its share), and the plan must be
// within 15% of the best shape of a sweep, as the GPU test asks of the measured pipeline.
namespace {

struct SyntheticJob {
  const char* what;
  std::size_t n;
  double bytes_ms[3];  // each engine's time for the whole input's bytes, no latency in it
  double latency_us;
};

double simulate_depth_first_ms(const SyntheticJob& j, std::size_t chunk, int streams) {
  const std::size_t chunks = (j.n + chunk - 1) / chunk;
  double engine_free[3] = {0.0, 0.0, 0.0};
  std::vector<double> stream_free(static_cast<std::size_t>(streams), 0.0);
  double end = 0.0;
  for (std::size_t k = 0; k < chunks; ++k) {
    const std::size_t len = std::min(chunk, j.n - k * chunk);
    double& ready = stream_free[k % static_cast<std::size_t>(streams)];
    for (int e = 0; e < 3; ++e) {
      const double start = std::max(ready, engine_free[e]);
      engine_free[e] = start + j.latency_us / 1000.0 + j.bytes_ms[e] * static_cast<double>(len) / static_cast<double>(j.n);
      ready = engine_free[e];
    }
    end = std::max(end, ready);
  }
  return end;
}

// What measure_engines would report for this job on `measured_chunks` chunks: each engine's bytes
// plus one latency per operation.
ch09::Engines measured(const SyntheticJob& j, std::size_t measured_chunks) {
  ch09::Engines e;
  e.h2d_ms = j.bytes_ms[0] + static_cast<double>(measured_chunks) * j.latency_us / 1000.0;
  e.kernel_ms = j.bytes_ms[1] + static_cast<double>(measured_chunks) * j.latency_us / 1000.0;
  e.d2h_ms = j.bytes_ms[2] + static_cast<double>(measured_chunks) * j.latency_us / 1000.0;
  e.chunks = measured_chunks;
  e.latency_us = j.latency_us;
  return e;
}

}  // namespace

TEST_CASE("ch09 plan on synthetic engines: within 15% of the best simulated shape, no GPU",
          "[ch09][exercise][design][hole:dot.cu:4]") {
  const std::size_t n25 = std::size_t{1} << 25;
  // The book's program (its copy back as large as one input) and the dot (a few bytes back), at
  // link and kernel rates of PCIe 4 and 5 cards, with small and large per-operation latencies.
  const std::vector<SyntheticJob> jobs = {
      {"the book's program, PCIe 5", n25, {5.2, 0.4, 2.6}, 8.0},
      {"the book's program, PCIe 4, slow kernel", n25, {10.4, 6.0, 5.2}, 12.0},
      {"the book's program, large latency", n25, {5.2, 0.4, 2.6}, 200.0},
      {"the book's program, 2^20 elements", std::size_t{1} << 20, {0.17, 0.02, 0.085}, 6.0},
      {"the dot, PCIe 5", n25, {5.2, 0.2, 0.0}, 8.0},
      {"the book's program, kernel-bound", n25, {1.0, 8.0, 1.0}, 5.0},
      {"the book's program, 1000 elements", 1000, {0.001, 0.001, 0.001}, 5.0},
  };
  std::size_t wrong = 0;
  std::string first;
  for (const SyntheticJob& j : jobs)
    for (std::size_t measured_chunks : {std::size_t{1}, std::size_t{16}}) {
      const ch09::Engines e = measured(j, std::min(measured_chunks, j.n));
      const ch09::Plan plan = ch09::plan_pipeline(j.n, e);
      std::ostringstream s;
      s << j.what << " (n = " << j.n << ", bytes " << j.bytes_ms[0] << " / " << j.bytes_ms[1] << " / " << j.bytes_ms[2]
        << " ms, latency " << j.latency_us << " us, Engines measured on " << e.chunks << " chunks: " << e.h2d_ms << " / "
        << e.kernel_ms << " / " << e.d2h_ms << " ms): plan chunk " << plan.chunk << ", streams " << plan.streams;
      const bool fits = plan.chunk >= 1 && plan.chunk <= j.n && plan.streams >= 1 && plan.streams <= ch09::kMaxStreams &&
                        (j.n + plan.chunk - 1) / plan.chunk <= 4096;
      if (!fits) {
        if (wrong++ == 0) first = s.str() + ", which does not fit (chunk 1 to n, 1 to kMaxStreams streams, at most 4096 chunks)";
        continue;
      }
      double best = 0;
      std::string best_shape;
      for (std::size_t chunks = 1; chunks <= std::min<std::size_t>(4096, j.n); chunks *= 2)
        for (int streams = 1; streams <= 4; ++streams) {
          const double ms = simulate_depth_first_ms(j, (j.n + chunks - 1) / chunks, streams);
          if (best == 0 || ms < best) {
            best = ms;
            best_shape = std::to_string(chunks) + " chunks on " + std::to_string(streams) + " streams";
          }
        }
      const double planned = simulate_depth_first_ms(j, plan.chunk, plan.streams);
      if (!(planned <= 1.15 * best) && wrong++ == 0)
        first = s.str() + " takes " + std::to_string(planned) + " ms simulated; the best shape (" + best_shape + ") " +
                std::to_string(best) + " ms";
    }
  INFO(wrong << " of " << 2 * jobs.size() << " plans wrong; the first: " << first
             << ".\nHint: Plan{} (chunk 0) is the unfilled stub. Take the latency the engines' times hold out "
                "(engines.chunks operations each), then use exercise 3's model: more chunks shorten the fill and the "
                "drain, each adds a latency to every engine; how many streams does a chunk's copy in, kernel and copy "
                "out need to run at once? See plan_pipeline, README §Exercise 4.");
  CHECK(wrong == 0);
}
