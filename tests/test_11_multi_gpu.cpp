// Chapter 11 grading tests: the slices cover any n exactly once for any GPU count (n = 0, n smaller
// than the GPU count, n not divisible by it); the pairwise combine adds any number of partials in
// the chapter's pairwise order, bit for bit like this file's own reference, on host threads (no GPU
// needed) and on one block of the GPU; every combine gives the fp64 answer within the bound on one
// GPU and on two (skipped, with the reason, where fewer GPUs exist); the deterministic combines
// give the same bits on every GPU and on every run, whichever GPU finishes first; bad input is
// refused. The MPI form is tested by CTest with 1 and 2 processes (cmake/MultiGpu.cmake).
// Without a GPU, "ch11 slices: *" and "ch11 pairwise: *" run; the others are skipped.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/random.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

// A test that needs more GPUs than the machine has: skipped with the reason, never passed. Same
// rules as COURSE_REQUIRE_GPU (first statement after it, never inside a SECTION).
#define COURSE_REQUIRE_GPUS(count)                                                                   \
  do {                                                                                               \
    const int course_have_ = ::course::device_count();                                               \
    if (course_have_ < (count))                                                                      \
      COURSE_SKIP_TEST("COURSE-FEW-GPUS: needs " + std::to_string(count) + " GPUs, this machine has " + \
                       std::to_string(course_have_));                                                \
  } while (0)

namespace {

using Version = course::Version<ch11::Combine>;

// p2p needs every pair of GPUs to reach each other's memory: where they cannot, its multi-GPU
// tests are skipped with the reason (the marker CTest reads as a skip), never passed.
#define COURSE_REQUIRE_PEER_ACCESS(v, count)                                                          \
  do {                                                                                               \
    if ((v).name == "p2p" && (count) > 1) {                                                          \
      int course_can_ = 0;                                                                           \
      CUDA_CHECK(cudaDeviceCanAccessPeer(&course_can_, 0, 1));                                       \
      if (!course_can_) COURSE_SKIP_TEST("COURSE-FEW-GPUS: p2p needs peer access between GPU 0 and 1"); \
    }                                                                                                \
  } while (0)

std::uint32_t bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

const char* kSliceHint =
    "slice_of (exercise 1): the slices follow each other in rank order from 0 (each begins where the previous "
    "ended), cover all n elements, and the first n % ranks ranks hold one element more than the others. See README "
    "§Exercise 1 — slices for any n and any GPU count.";

std::string slice_text(std::size_t n, int ranks, int rank, const ch11::Slice& s) {
  return "slice_of(n = " + std::to_string(n) + ", ranks = " + std::to_string(ranks) + ", rank = " + std::to_string(rank) +
         ") = {begin " + std::to_string(s.begin) + ", count " + std::to_string(s.count) + "}. " + kSliceHint;
}

std::string hint(const Version& v) {
  if (v.name == "allgather" || v.name == "allgather_graph")
    return "exercise 2: after combine_allgather every GPU must hold rank r's partial at gathered()[r]; exercise 3: "
           "add_pairwise must add them in the pairwise order (\"ch11 pairwise: *\" checks it without a GPU); "
           "slice_of decides which elements each GPU adds.";
  if (v.name == "p2p" || v.name == "host")
    return std::string(v.name) + " adds the partials with add_pairwise (exercise 3; \"ch11 pairwise: *\" checks it without a "
           "GPU); slice_of decides which elements each GPU adds.";
  return "slice_of decides which elements each GPU adds (exercise 1).";
}

// The pairwise order, level by level, as the chapter states it: this file's own reference, written
// apart from the exercise (exercise 3 must equal it bit for bit). Neighbours (0, 1), (2, 3), ...
// added left + right; an odd last value carried up; until one is left; none: +0.0f.
float pairwise_reference(std::vector<float> level) {
  if (level.empty()) return 0.0f;
  while (level.size() > 1) {
    std::vector<float> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(level[i] + level[i + 1]);
    if (level.size() % 2 == 1) next.push_back(level.back());
    level.swap(next);
  }
  return level[0];
}

// Partials whose sum depends on the order almost surely: magnitudes from 2^-20 to 2^20, both signs.
std::vector<float> spread_partials(int count, std::mt19937& rng) {
  std::vector<float> partials(static_cast<std::size_t>(count));
  for (auto& p : partials)
    p = std::ldexp(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng), std::uniform_int_distribution<int>(-20, 20)(rng));
  return partials;
}

// Exercise 3 without a GPU. add_pairwise only says which thread adds what, and when: add(to,
// from) and barrier() are its arguments. Here every thread of a simulated block runs it in turn,
// and its adds are recorded by step (the barriers it has passed); then the block's steps are
// checked as the GPU would run them, all threads of a step at once, in any order, and carried out
// on the partials. Returns "" or the first problem, in words; `sum` gets work[0] at the end.
constexpr int kRunaway = 64;
struct Runaway {
  std::string what;
};

std::string simulate_pairwise(const std::vector<float>& partials, int threads, float& sum) {
  struct Add {
    int thread, to, from;
  };
  const int count = static_cast<int>(partials.size());
  std::vector<std::vector<Add>> by_step;
  std::vector<int> barriers(static_cast<std::size_t>(threads), 0);
  std::ostringstream where;
  where << count << " partials, " << threads << " threads: ";
  for (int t = 0; t < threads; ++t) {
    int step = 0;
    try {
      ch11::add_pairwise(
          count, t, threads,
          [&](int to, int from) {
            if (static_cast<int>(by_step.size()) <= step) by_step.resize(static_cast<std::size_t>(step) + 1);
            by_step[static_cast<std::size_t>(step)].push_back({t, to, from});
            if (by_step[static_cast<std::size_t>(step)].size() > 4u * static_cast<unsigned>(count) + 4)
              throw Runaway{"more than 4 * count adds in one step"};
          },
          [&] {
            if (++step > kRunaway) throw Runaway{"more than 64 barriers"};
          });
    } catch (const Runaway& e) {
      return where.str() + "thread " + std::to_string(t) + " runs away (" + e.what + "): a loop that never ends?";
    }
    barriers[static_cast<std::size_t>(t)] = step;
  }
  const int steps = barriers[0];
  for (int t = 1; t < threads; ++t)
    if (barriers[static_cast<std::size_t>(t)] != steps)
      return where.str() + "thread 0 calls barrier() " + std::to_string(steps) + " times, thread " + std::to_string(t) +
             " " + std::to_string(barriers[static_cast<std::size_t>(t)]) +
             ". Every thread must call it equally often, adding or not: on the GPU a __syncthreads() that some "
             "threads never reach hangs or corrupts the block.";
  int levels = 0;
  while ((1 << levels) < count) ++levels;
  std::vector<float> value(partials);
  for (std::size_t st = 0; st < by_step.size(); ++st) {
    const std::vector<Add>& adds = by_step[st];
    const std::string at = where.str() + "step " + std::to_string(st) + ": ";
    std::vector<int> writer(static_cast<std::size_t>(count), -1);
    std::vector<int> per_thread(static_cast<std::size_t>(threads), 0);
    for (const Add& a : adds) {
      const std::string add = "thread " + std::to_string(a.thread) + "'s add(" + std::to_string(a.to) + ", " +
                              std::to_string(a.from) + ")";
      if (static_cast<int>(st) >= steps)
        return at + add + " comes after the thread's last barrier(): the other threads, and the caller that "
                        "reads work[0], would not see it.";
      if (a.to < 0 || a.to >= count || a.from < 0 || a.from >= count)
        return at + add + " reaches outside work[0, " + std::to_string(count) + ").";
      if (a.to == a.from) return at + add + " adds a value into itself.";
      if (writer[static_cast<std::size_t>(a.to)] >= 0)
        return at + add + ": work[" + std::to_string(a.to) + "] is added into a second time in one step (by thread " +
               std::to_string(writer[static_cast<std::size_t>(a.to)]) +
               "): one value's adds in a row are a serial chain (or a race), not a level of the tree.";
      writer[static_cast<std::size_t>(a.to)] = a.thread;
      ++per_thread[static_cast<std::size_t>(a.thread)];
    }
    for (const Add& a : adds)
      if (writer[static_cast<std::size_t>(a.from)] >= 0)
        return at + "thread " + std::to_string(a.thread) + " reads work[" + std::to_string(a.from) +
               "], which thread " + std::to_string(writer[static_cast<std::size_t>(a.from)]) +
               " adds into in the same step: a race (a barrier is missing between the two levels).";
    const int fair = (static_cast<int>(adds.size()) + threads - 1) / threads;
    for (int t = 0; t < threads; ++t)
      if (per_thread[static_cast<std::size_t>(t)] > fair)
        return at + "thread " + std::to_string(t) + " does " + std::to_string(per_thread[static_cast<std::size_t>(t)]) +
               " of the step's " + std::to_string(adds.size()) + " adds; shared evenly over " + std::to_string(threads) +
               " threads, none needs more than " + std::to_string(fair) + ".";
    std::vector<float> next(value);
    for (const Add& a : adds) next[static_cast<std::size_t>(a.to)] = value[static_cast<std::size_t>(a.to)] + value[static_cast<std::size_t>(a.from)];
    value.swap(next);
  }
  if (steps > levels + 1)
    return where.str() + std::to_string(steps) + " steps (barriers); the pairwise order has " + std::to_string(levels) +
           " levels, and each level's adds are independent: one step each.";
  sum = count > 0 ? value[0] : 0.0f;
  return "";
}

// GPUs 0..count-1 prepared for slices of up to `capacity` elements.
std::vector<std::unique_ptr<ch11::Gpu>> make_gpus(int count, std::size_t capacity) {
  std::vector<std::unique_ptr<ch11::Gpu>> gpus;
  for (int d = 0; d < count; ++d) gpus.push_back(std::make_unique<ch11::Gpu>(d, capacity, count));
  return gpus;
}

// The partials each GPU of the team computed in the last call, in rank order.
std::vector<float> partials_of(ch11::Team& team) {
  std::vector<float> out;
  for (ch11::Gpu* g : team.gpus) {
    g->context().synchronize();
    float p = 0;
    g->context().activate();
    CUDA_CHECK(cudaMemcpy(&p, g->partial(), sizeof p, cudaMemcpyDeviceToHost));
    out.push_back(p);
  }
  return out;
}

void poison(ch11::Team& team) {
  for (ch11::Gpu* g : team.gpus) g->poison();
}

const bool registered = [] {
  for (const auto& v : ch11::versions())
    for (int gpus : {1, 2}) {
      if (ch11::is_speed_of_light(v)) break;  // not a dot product: its own test cases below
      const std::string name(v.name);
      const std::string on = " on " + std::to_string(gpus) + " GPU" + (gpus > 1 ? "s" : "");
      const std::string tags = std::string("[ch11][gpu]") + (gpus > 1 ? "[multi]" : "") + (v.exercise ? "[exercise]" : "");
      course::test::add_case("ch11 " + name + on + ": matches the fp64 reference at awkward sizes", tags, [&v, gpus] {
        COURSE_REQUIRE_GPU();
        COURSE_REQUIRE_GPUS(gpus);
        COURSE_REQUIRE_PEER_ACCESS(v, gpus);
        std::vector<std::size_t> sizes = course::test::awkward_sizes(8192, 11);
        sizes.insert(sizes.end(), {static_cast<std::size_t>(gpus) - 1, static_cast<std::size_t>(gpus) + 1, 3, 8192 * 3 + 5});
        const std::size_t n_max = *std::max_element(sizes.begin(), sizes.end());
        auto devices = make_gpus(gpus, ch11::max_slice(n_max, 1));
        ch11::Team team = ch11::make_local_team(devices, gpus);
        for (std::size_t n : sizes) {
          const auto in = course::test::make_dot_inputs(n, course::test::seed(1100 + n));
          ch11::upload_slices(team, in.x.data(), in.y.data(), n);
          poison(team);
          const std::vector<float> got = ch11::dot(team, v.run, n);
          REQUIRE(got.size() == static_cast<std::size_t>(gpus));
          for (int r = 0; r < gpus; ++r) {
            const course::Verdict verdict = course::check_dot(got[static_cast<std::size_t>(r)], in.ref);
            INFO("GPU " << r << " of " << gpus << ": " << course::test::explain(verdict, n, std::string(v.name), hint(v)));
            REQUIRE(verdict.ok);
          }
          if (n == 0) {
            INFO("n = 0 must give exactly 0 on every GPU. " << hint(v));
            for (float r : got) REQUIRE(bits(r) == 0u);
          }
          if (v.name != "allreduce") {
            const std::vector<float> partials = partials_of(team);
            const float expected = pairwise_reference(partials);
            for (int r = 0; r < gpus; ++r) {
              INFO("GPU " << r << " holds " << got[static_cast<std::size_t>(r)] << ", the partials added pairwise give "
                          << expected << " (n = " << n << "): every GPU must add the same partials in the same order. "
                          << hint(v));
              REQUIRE(bits(got[static_cast<std::size_t>(r)]) == bits(expected));
            }
          }
        }
      });
      // Called as the benchmark calls it: one team, call after call, nothing reset between calls,
      // new inputs each time. The tests above poison the team before each call; a hole that keeps
      // what an earlier call left in the team's buffers (the gathered partials, say) passes them,
      // and only a test that calls the same team again with new data sees the stale result.
      // tests/negative/11_exploit_gathered_kept_gpu proves it.
      course::test::add_case("ch11 " + name + on + ": called again on one team with new inputs, each result is the new one",
                             tags, [&v, gpus] {
        COURSE_REQUIRE_GPU();
        COURSE_REQUIRE_GPUS(gpus);
        COURSE_REQUIRE_PEER_ACCESS(v, gpus);
        const std::size_t n = 8192 * 3 + 5;
        auto devices = make_gpus(gpus, ch11::max_slice(n, 1));
        ch11::Team team = ch11::make_local_team(devices, gpus);
        for (int call = 0; call < 4; ++call) {
          const auto in = course::test::make_dot_inputs(n, course::test::seed(1180 + static_cast<std::uint64_t>(call)));
          ch11::upload_slices(team, in.x.data(), in.y.data(), n);
          const std::vector<float> got = ch11::dot(team, v.run, n);
          REQUIRE(got.size() == static_cast<std::size_t>(gpus));
          for (int r = 0; r < gpus; ++r) {
            const course::Verdict verdict = course::check_dot(got[static_cast<std::size_t>(r)], in.ref);
            INFO("call " << call + 1 << " of 4 on the same team, new inputs, nothing reset between calls; GPU " << r
                         << ": " << course::test::explain(verdict, n, std::string(v.name), hint(v))
                         << " A result that matches the previous call's inputs means something of an earlier call "
                            "was kept: every call must gather and add this call's partials.");
            REQUIRE(verdict.ok);
          }
        }
      });
      if (v.name == "allreduce") continue;  // NCCL's order: not promised to be fixed
      course::test::add_case("ch11 " + name + on + ": the same bits on every run, whichever GPU finishes first", tags,
                             [&v, gpus] {
        COURSE_REQUIRE_GPU();
        COURSE_REQUIRE_GPUS(gpus);
        COURSE_REQUIRE_PEER_ACCESS(v, gpus);
        const std::size_t n = (std::size_t{1} << 22) + 7;
        auto devices = make_gpus(gpus, ch11::max_slice(n, gpus));
        ch11::Team team = ch11::make_local_team(devices, gpus);
        // Spiked inputs (make_dot_inputs), not fill_slices: at this n the error bound of plain random
        // data is wider than the dot itself, so a combine that returns a constant 0 would pass.
        const auto in = course::test::make_dot_inputs(n, 1111);
        ch11::upload_slices(team, in.x.data(), in.y.data(), n);
        const course::Reference& ref = in.ref;
        std::vector<std::uint32_t> seen;
        for (int run = 0; run < 6; ++run) {
          poison(team);
          // Run 0: no delay; then GPU 0 late, then the last GPU late, ... : a different arrival order.
          if (run > 0) ch11::delay(*team.gpus[static_cast<std::size_t>(run % gpus)], 500.0 * run);
          const std::vector<float> got = ch11::dot(team, v.run, n);
          const course::Verdict verdict = course::check_dot(got[0], ref);
          INFO(course::test::explain(verdict, n, std::string(v.name), hint(v)));
          REQUIRE(verdict.ok);
          for (float r : got) seen.push_back(bits(r));
        }
        INFO("the result changed between runs or between GPUs: the combine must not depend on which GPU's partial "
             "arrives first. "
             << hint(v));
        REQUIRE(std::count(seen.begin(), seen.end(), seen[0]) == static_cast<long>(seen.size()));
      });
    }
  return true;
}();

}  // namespace

TEST_CASE("ch11 slices: cover 0 to n-1 once, in rank order, sizes within one, for any n and GPU count", "[ch11][exercise][hole:dot.cu:1]") {
  std::mt19937_64 rng(course::test::seed(1101));
  std::vector<std::size_t> sizes = {0, 1, 2, 3, 5, 7, 8, 9, 63, 64, 65, 1000, (std::size_t{1} << 20) + 3,
                                    (std::size_t{1} << 31) + 1, (std::size_t{1} << 62) + 5};
  for (int k = 0; k < 8; ++k) sizes.push_back(rng() % 100000);
  for (int ranks : {1, 2, 3, 4, 5, 7, 8, 13, 64}) {
    for (std::size_t n : sizes) {
      std::size_t next = 0, smallest = n, largest = 0;
      for (int r = 0; r < ranks; ++r) {
        const ch11::Slice s = ch11::slice_of(n, ranks, r);
        INFO(slice_text(n, ranks, r, s));
        REQUIRE(s.begin == next);                                   // contiguous, in rank order, from 0
        REQUIRE(s.count <= n - std::min(n, s.begin));               // never past n
        next = s.begin + s.count;
        smallest = std::min(smallest, s.count);
        largest = std::max(largest, s.count);
        // The first n % ranks ranks hold the extra elements.
        REQUIRE(s.count == n / ranks + (static_cast<std::size_t>(r) < n % ranks ? 1 : 0));
      }
      INFO("n = " << n << " over " << ranks << " ranks: the slices end at " << next << ", sizes from " << smallest
                  << " to " << largest << ". " << kSliceHint);
      REQUIRE(next == n);
      REQUIRE(largest - std::min(smallest, largest) <= 1);
      REQUIRE(ch11::max_slice(n, ranks) == largest);
    }
  }
  REQUIRE_THROWS_AS(ch11::slice_of(10, 0, 0), course::UsageError);
  REQUIRE_THROWS_AS(ch11::slice_of(10, 2, 2), course::UsageError);
  REQUIRE_THROWS_AS(ch11::slice_of(10, 2, -1), course::UsageError);
}

// Exercise 3 without a GPU: add_pairwise is __host__ __device__, and what it does with an index
// (an add, a barrier) is its argument, so the host runs the very code a block runs.
// Exercise 2 without a GPU or NCCL: gather_partials (the allgather combine's hole) with a recorder
// that plays NCCL for the GPUs of one process (ranks first to first + gpus - 1 of `ranks`; the other
// ranks are other processes, which call with one float each). Host floats stand for each GPU's
// partial and gathered partials, with NaN guards around them.
namespace {

class GatherRecorder : public ch11::GatherCalls {
 public:
  GatherRecorder(int ranks, int first, int gpus, int fail_gpu = -1)
      : ranks_(ranks), first_(first), fail_gpu_(fail_gpu), mem_(static_cast<std::size_t>(gpus)) {
    for (int i = 0; i < gpus; ++i) {
      Memory& m = mem_[static_cast<std::size_t>(i)];
      m.partial.assign(kGuard + 1 + kGuard, kPoison);
      m.partial[kGuard] = partial_of(first + i);
      m.gathered.assign(kGuard + static_cast<std::size_t>(ranks) + kGuard, kPoison);
    }
  }
  static float partial_of(int rank) { return 1.0f + static_cast<float>(rank) * 0.25f; }
  static ncclComm_t comm_of(int rank) { return reinterpret_cast<ncclComm_t>(std::uintptr_t{0x1000} + 16 * static_cast<unsigned>(rank)); }
  static cudaStream_t stream_of(int gpu) { return reinterpret_cast<cudaStream_t>(std::uintptr_t{0x2000} + 16 * static_cast<unsigned>(gpu)); }

  std::vector<ch11::GatherSide> sides() {
    std::vector<ch11::GatherSide> out;
    for (std::size_t i = 0; i < mem_.size(); ++i)
      out.push_back({mem_[i].partial.data() + kGuard, mem_[i].gathered.data() + kGuard, comm_of(first_ + static_cast<int>(i)),
                     stream_of(static_cast<int>(i))});
    return out;
  }

  void group_start() override {
    log("ncclGroupStart");
    ++depth_;
  }
  void group_end() override {
    log("ncclGroupEnd");
    if (depth_ == 0) return problem("ncclGroupEnd without a group open");
    if (--depth_ == 0) run_pending();
  }
  void all_gather(const float* send, float* recv, std::size_t count, ncclComm_t comm, cudaStream_t stream) override {
    int gpu = -1;
    for (std::size_t i = 0; i < mem_.size(); ++i)
      if (comm == comm_of(first_ + static_cast<int>(i))) gpu = static_cast<int>(i);
    log("ncclAllGather(count " + std::to_string(count) + ") on " + (gpu < 0 ? std::string("an unknown communicator") :
        "GPU " + std::to_string(gpu) + "'s communicator (rank " + std::to_string(first_ + gpu) + ")") +
        (depth_ > 0 ? ", in a group" : ", outside a group"));
    if (gpu < 0) return problem("an ncclAllGather on a communicator that is none of this process's GPUs'");
    if (stream != stream_of(gpu))
      problem("GPU " + std::to_string(gpu) + "'s gather on a stream other than its own (the partial kernel before it and "
              "the combine kernel after it are on the GPU's stream)");
    if (gpu == fail_gpu_) {
      log("  (the recorder fails this call, as NCCL may)");
      throw ch11::NcclError("ncclAllGather failed (the recorder's injected failure)");
    }
    pending_.push_back({gpu, send, recv, count});
    if (depth_ == 0) {
      if (mem_.size() > 1)
        return problem("ncclAllGather for GPU " + std::to_string(gpu) + " outside a group while this thread drives " +
                       std::to_string(mem_.size()) + " GPUs: it waits for the other ranks' calls, which this thread "
                       "never makes (a hang)");
      run_pending();
    }
  }

  int depth() const { return depth_; }
  const std::string& first_problem() const { return problem_; }
  std::string trace() const {
    std::string out;
    for (std::size_t i = 0; i < log_.size() && i < 40; ++i) out += "  " + log_[i] + "\n";
    return out;
  }
  // "" when every GPU holds every rank's partial in rank order and nothing else was touched.
  std::string check_slots() const {
    for (std::size_t i = 0; i < mem_.size(); ++i) {
      const Memory& m = mem_[i];
      for (int r = 0; r < ranks_; ++r) {
        const float got = m.gathered[kGuard + static_cast<std::size_t>(r)];
        if (same(got, partial_of(r))) continue;
        std::string who = "no rank's partial (NaN: nothing landed there)";
        for (int q = 0; q < ranks_; ++q)
          if (same(got, partial_of(q))) who = "rank " + std::to_string(q) + "'s partial";
        return "GPU " + std::to_string(i) + " (rank " + std::to_string(first_ + static_cast<int>(i)) + "): gathered[" +
               std::to_string(r) + "] holds " + who + ", not rank " + std::to_string(r) + "'s";
      }
      for (std::size_t g = 0; g < kGuard; ++g)
        if (!std::isnan(m.gathered[g]) || !std::isnan(m.gathered[kGuard + static_cast<std::size_t>(ranks_) + g]))
          return "GPU " + std::to_string(i) + ": a float written outside gathered[0, ranks)";
    }
    return "";
  }

 private:
  static constexpr std::size_t kGuard = 8;
  static constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();
  struct Memory {
    std::vector<float> partial, gathered;
  };
  struct Call {
    int gpu;
    const float* send;
    float* recv;
    std::size_t count;
  };
  static bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
  // Where `p` (count floats) lies: {gpu, true for its partial / false for gathered}, or gpu -1.
  std::pair<int, bool> where(const float* p, std::size_t count) const {
    for (std::size_t i = 0; i < mem_.size(); ++i) {
      const Memory& m = mem_[i];
      const float* pb = m.partial.data() + kGuard;
      if (p >= pb && p + count <= pb + 1) return {static_cast<int>(i), true};
      const float* gb = m.gathered.data() + kGuard;
      if (p >= gb && p + count <= gb + ranks_) return {static_cast<int>(i), false};
    }
    return {-1, false};
  }
  void run_pending() {
    std::vector<Call> calls;
    calls.swap(pending_);
    std::vector<int> seen(mem_.size(), 0);
    for (const Call& c : calls) ++seen[static_cast<std::size_t>(c.gpu)];
    if (calls.empty()) return;
    for (std::size_t i = 0; i < mem_.size(); ++i)
      if (seen[i] != 1)
        return problem("GPU " + std::to_string(i) + " (rank " + std::to_string(first_ + static_cast<int>(i)) + ") made " +
                       std::to_string(seen[i]) + " all-gather calls in the collective, where every rank makes one: NCCL "
                       "waits for the missing call for ever, or pairs the calls wrongly");
    for (const Call& c : calls)
      if (c.count != 1)
        return problem("an all-gather of " + std::to_string(c.count) + " floats per rank: each rank has one partial (and "
                       "the other processes send one)");
    // NCCL: rank r's `send` lands at recv + r on every rank.
    std::vector<float> from_rank(static_cast<std::size_t>(ranks_));
    for (int r = 0; r < ranks_; ++r) from_rank[static_cast<std::size_t>(r)] = partial_of(r);  // other processes
    for (const Call& c : calls) {
      if (where(c.send, 1).first < 0) return problem("a gather sends from memory that is no GPU's partial");
      from_rank[static_cast<std::size_t>(first_ + c.gpu)] = *c.send;
    }
    for (const Call& c : calls) {
      const auto w = where(c.recv, static_cast<std::size_t>(ranks_));
      if (w.first < 0 || w.second)
        return problem("GPU " + std::to_string(c.gpu) + "'s gather receives into memory that is not a GPU's gathered[0, " +
                       std::to_string(ranks_) + ") (or not all of it)");
      for (int r = 0; r < ranks_; ++r) c.recv[r] = from_rank[static_cast<std::size_t>(r)];
    }
    log("  (the collective ran: rank r's float at recv + r on every rank)");
  }
  void problem(const std::string& what) {
    log("  ^ " + what);
    if (problem_.empty()) problem_ = what;
  }
  void log(const std::string& line) {
    if (log_.size() < 400) log_.push_back(line);
  }

  int ranks_, first_, fail_gpu_;
  std::vector<Memory> mem_;
  std::vector<Call> pending_;
  std::vector<std::string> log_;
  std::string problem_;
  int depth_ = 0;
};

struct GatherShape {
  int ranks, first, gpus;
};

std::string play_gather(const GatherShape& s) {
  const std::string shape = std::to_string(s.gpus) + " GPU(s) in this process as ranks " + std::to_string(s.first) + " to " +
                            std::to_string(s.first + s.gpus - 1) + " of " + std::to_string(s.ranks);
  {
    GatherRecorder rec(s.ranks, s.first, s.gpus);
    const auto sides = rec.sides();
    ch11::on_host::gather_partials(rec, sides);
    std::string what = rec.first_problem();
    if (what.empty() && rec.depth() != 0) what = "returned with the group still open: nothing is enqueued until ncclGroupEnd";
    if (what.empty()) what = rec.check_slots();
    if (!what.empty()) return shape + ": " + what + "\nThe calls:\n" + rec.trace();
  }
  // A failing call: the error reaches the caller, and the group is closed on the way out.
  for (int fail = 0; fail < s.gpus; fail += std::max(1, s.gpus - 1)) {
    GatherRecorder rec(s.ranks, s.first, s.gpus, fail);
    const auto sides = rec.sides();
    bool thrown = false;
    try {
      ch11::on_host::gather_partials(rec, sides);
    } catch (const ch11::NcclError&) {
      thrown = true;
    }
    std::string what;
    if (!thrown) what = "GPU " + std::to_string(fail) + "'s ncclAllGather failed, and the failure did not reach the caller";
    else if (rec.depth() != 0)
      what = "GPU " + std::to_string(fail) + "'s ncclAllGather failed and the group was left open: this thread stays inside "
             "an NCCL group for ever (ch11::GroupOf closes it on the way out)";
    if (!what.empty()) return shape + ": " + what + "\nThe calls:\n" + rec.trace();
  }
  return "";
}

}  // namespace

TEST_CASE("ch11 allgather schedule: one group, rank r's partial in slot r on every GPU, on its own stream",
          "[ch11][exercise][hole:dot.cu:2]") {
  std::string first;
  for (const GatherShape s : {GatherShape{1, 0, 1}, GatherShape{2, 0, 2}, GatherShape{3, 0, 3}, GatherShape{4, 0, 4},
                              GatherShape{5, 0, 5}, GatherShape{8, 0, 8}, GatherShape{4, 2, 1}, GatherShape{3, 0, 1}})
    if (first.empty()) first = play_gather(s);
  INFO(first << "\nHint: one ncclAllGather of one float per GPU, from its partial into its gathered, on its own "
                "communicator and stream, all of them inside one group (ch11::GroupOf over `nccl`, which also closes "
                "the group when a call throws); NCCL puts rank r's float at gathered[r] whatever the order of the "
                "calls. The stub makes no call, so nothing lands. See README §Exercise 2.");
  CHECK(first.empty());
}

TEST_CASE("ch11 pairwise: the adds of any count on any number of threads give the pairwise order, bit for bit",
          "[ch11][exercise][design][hole:dot.hpp:1]") {
  const char* kPairwiseHint =
      " add_pairwise (exercise 3): the contract above it in dot.hpp: each level pairs neighbours (0, 1), (2, 3), ... "
      "left + right and carries an odd last value up; one step (between barriers) per level, its adds shared by the "
      "threads; work[0] ends with the sum. See README §Exercise 3 — the pairwise combine for any rank count.";
  std::mt19937 rng(static_cast<unsigned>(course::test::seed(1102)));
  const std::vector<int> counts = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31, 33, 64, 100, 127, 255, 257, 1000, 1023, 1024};
  for (int threads : {1, 2, 3, 7, 32, 64, 512}) {
    for (int count : counts) {
      const std::vector<float> partials = spread_partials(count, rng);
      float got = std::nanf("");
      const std::string problem = simulate_pairwise(partials, threads, got);
      {
        INFO(problem << kPairwiseHint);
        REQUIRE(problem.empty());
      }
      const float expected = pairwise_reference(partials);
      INFO(count << " partials, " << threads << " threads: work[0] ends as " << got << ", the pairwise order gives "
                 << expected << "." << kPairwiseHint);
      REQUIRE(bits(got) == bits(expected));
    }
  }
}

TEST_CASE("ch11 pairwise gpu: one block adds any count of partials in the pairwise order, bit for bit",
          "[ch11][gpu][exercise][design]") {
  COURSE_REQUIRE_GPU();
  ch11::Gpu gpu(0, 1, 1);
  std::mt19937 rng(static_cast<unsigned>(course::test::seed(1103)));
  for (int count : {0, 1, 2, 3, 5, 8, 1000, 1024}) {
    const std::vector<float> partials = spread_partials(count, rng);
    course::DeviceBuffer<float> d_partials(partials), d_result(1);
    d_result.fill_bytes(0xFF, gpu.context().stream());
    ch11::launch_combine(gpu, d_partials.data(), count, d_result.data());
    const float got = d_result.download(gpu.context().stream())[0];
    const float expected = pairwise_reference(partials);
    INFO(count << " partials: the combine kernel wrote " << got << ", the pairwise order gives " << expected
               << ". add_pairwise (exercise 3) runs here on one block, __syncthreads() as its barrier; "
                  "\"ch11 pairwise: *\" runs the same function on host threads.");
    REQUIRE(bits(got) == bits(expected));
  }
  REQUIRE_THROWS_AS(ch11::launch_combine(gpu, nullptr, ch11::kMaxPartials + 1, nullptr), course::UsageError);
}

TEST_CASE("ch11 p2p on 2 GPUs: launched from a thread per GPU or from one, the same bits, call after call",
          "[ch11][gpu][multi]") {
  COURSE_REQUIRE_GPU();
  COURSE_REQUIRE_GPUS(2);
  const Version* p2p = course::find_version(ch11::versions(), "p2p");
  REQUIRE(p2p != nullptr);
  COURSE_REQUIRE_PEER_ACCESS(*p2p, 2);
  const std::size_t n = (std::size_t{1} << 16) + 3;
  auto devices = make_gpus(2, ch11::max_slice(n, 2));
  const auto in = course::test::make_dot_inputs(n, 1117);
  for (int round = 0; round < 2; ++round) {  // a team made, used and destroyed twice: its threads must stop
    ch11::Team team = ch11::make_local_team(devices, 2);
    ch11::upload_slices(team, in.x.data(), in.y.data(), n);
    std::vector<std::uint32_t> seen;
    for (int call = 0; call < 200; ++call) {
      team.threaded_launch = call % 2 == 0;
      // Idle past the workers' spin: they sleep, and the next call must wake them.
      if (call == 100) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (float r : ch11::dot(team, p2p->run, n)) seen.push_back(bits(r));
    }
    float first = 0;
    std::memcpy(&first, &seen[0], sizeof first);
    const course::Verdict verdict = course::check_dot(first, in.ref);
    INFO(course::test::explain(verdict, n, "p2p", hint(*p2p)));
    REQUIRE(verdict.ok);
    INFO("p2p gave different bits from one call to the next, or between launching from threads and from one thread");
    REQUIRE(std::count(seen.begin(), seen.end(), seen[0]) == static_cast<long>(seen.size()));
  }
}

TEST_CASE("ch11 bad input: sizes the GPUs were not prepared for and impossible teams are refused", "[ch11][gpu]") {
  COURSE_REQUIRE_GPU();
  std::vector<std::unique_ptr<ch11::Gpu>> gpus;
  gpus.push_back(std::make_unique<ch11::Gpu>(0, 1000, 1));
  REQUIRE_THROWS_AS(ch11::make_local_team(gpus, 0), course::UsageError);
  REQUIRE_THROWS_AS(ch11::make_local_team(gpus, 2), course::UsageError);
  ch11::Team team = ch11::make_local_team(gpus, 1);
  REQUIRE_THROWS_AS(ch11::dot(team, ch11::versions().front().run, 1001), course::UsageError);
  REQUIRE_THROWS_AS(ch11::fill_slices(team, 1001, 1), course::UsageError);
  REQUIRE_THROWS_AS(ch11::Gpu(0, 10, 0), course::UsageError);
  ch11::Team empty;
  REQUIRE_THROWS_AS(ch11::dot(empty, ch11::versions().front().run, 10), course::UsageError);
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");  // set before the first communicator
  REQUIRE(nvls != nullptr);
  REQUIRE(std::string(nvls) == "0");
}

// ---- the speed-of-light row: the floor, not a dot ---------------------------------------------
// The registry's speed_of_light row has every GPU read its own slice with the best access pattern
// (the kit's read-only kernel) and write one value, nothing combined. It has no result to check;
// what it must do is run on every GPU of the team at any size (slices empty, short, long), write
// its one value, and take that value from its loads: a NaN planted at the start of a slice shows
// in that GPU's value. The slices start where the GPUs' buffers do (the chapter has no misaligned
// slices). It stays out of grading.

TEST_CASE("ch11 speed_of_light: one floor row in the registry, first, not a dot, not an exercise, across processes",
          "[ch11]") {
  const auto& reg = ch11::versions();
  int floors = 0;
  for (const auto& v : reg) floors += ch11::is_speed_of_light(v) ? 1 : 0;
  CHECK(floors == 1);
  REQUIRE(!reg.empty());
  CHECK(ch11::is_speed_of_light(reg.front()));
  CHECK(std::string(reg.front().name) == "speed_of_light");
  CHECK(!reg.front().exercise);
  CHECK(ch11::across_processes(reg.front()));  // it needs no other process: the MPI form runs it too
  CHECK_THAT(std::string(reg.front().description), course::test::contains("not a dot"));
  CHECK_THROWS_AS(reg.front().run(*std::make_unique<ch11::Team>()), course::UsageError);  // not a combine
}

namespace {

// Every GPU of a team of `gpus` reads its slice and writes its one value; a NaN at the start of
// each slice reaches that GPU's value.
void check_floor_on(int gpus) {
  const auto* v = course::find_version(ch11::versions(), "speed_of_light");
  REQUIRE(v != nullptr);
  const std::vector<std::size_t> sizes = {0, 1, 3, static_cast<std::size_t>(gpus) + 1, 8192 * 3 + 5, 1000003};
  const std::size_t n_max = sizes.back();
  auto devices = make_gpus(gpus, ch11::max_slice(n_max, 1));
  ch11::Team team = ch11::make_local_team(devices, gpus);
  for (std::size_t n : sizes) {
    auto in = course::test::make_dot_inputs(n, course::test::seed(1190 + n));
    ch11::upload_slices(team, in.x.data(), in.y.data(), n);
    std::vector<float> got = ch11::dot(team, v->run, n);
    REQUIRE(got.size() == static_cast<std::size_t>(gpus));
    for (int r = 0; r < gpus; ++r) {
      INFO("speed_of_light on " << gpus << " GPU(s), n = " << n << ": GPU " << r << " wrote " << got[static_cast<std::size_t>(r)]);
      CHECK(std::isfinite(got[static_cast<std::size_t>(r)]));
    }
    // The value comes from the loads: the first element of each slice is read by thread 0 of block 0.
    for (int r = 0; r < gpus; ++r) {
      const ch11::Slice s = ch11::slice_of(n, gpus, r);
      if (s.count > 0) in.x[s.begin] = std::nanf("");
    }
    ch11::upload_slices(team, in.x.data(), in.y.data(), n);
    got = ch11::dot(team, v->run, n);
    for (int r = 0; r < gpus; ++r) {
      const ch11::Slice s = ch11::slice_of(n, gpus, r);
      INFO("speed_of_light on " << gpus << " GPU(s), n = " << n << ", a NaN at the start of GPU " << r << "'s slice of "
                                << s.count << ": it wrote " << got[static_cast<std::size_t>(r)]);
      CHECK(std::isnan(got[static_cast<std::size_t>(r)]) == (s.count > 0));
    }
    ch11::Split split;  // timed: all of it is the kernel's, nothing is combined
    ch11::dot(team, v->run, n, &split);
    CHECK(split.kernel_ms >= 0);
    CHECK(split.combine_ms == 0);
  }
  REQUIRE_THROWS_AS(ch11::dot(team, v->run, n_max * static_cast<std::size_t>(gpus) + 1), course::UsageError);
}

}  // namespace

TEST_CASE("ch11 speed_of_light: every GPU reads its slice and writes its one value at awkward sizes, on 1 GPU",
          "[ch11][gpu]") {
  COURSE_REQUIRE_GPU();
  check_floor_on(1);
}

TEST_CASE("ch11 speed_of_light: every GPU reads its slice and writes its one value at awkward sizes, on 2 GPUs",
          "[ch11][gpu][multi]") {
  COURSE_REQUIRE_GPU();
  COURSE_REQUIRE_GPUS(2);
  check_floor_on(2);
}

TEST_CASE("ch11 reference_from_seed: the fp64 reference of random_vector's two streams, without storing them", "[ch11]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 20) + 3}) {
    const auto x = course::random_vector(n, 77), y = course::random_vector(n, course::seed_y(77));
    const course::Reference want = course::reference_dot(x.data(), y.data(), n);
    const course::Reference got = ch11::reference_from_seed(n, 77);
    INFO("n = " << n << ": " << got.value << " against " << want.value);
    REQUIRE(got.n == n);
    // Both are fp64 sums of the same products, in different orders: they agree far inside the
    // float bound the benchmark holds the GPUs to.
    REQUIRE(std::abs(got.value - want.value) <= 1e-9 * (1.0 + want.sum_abs));
    REQUIRE(std::abs(got.sum_abs - want.sum_abs) <= 1e-9 * (1.0 + want.sum_abs));
  }
}

// ---- the exploit gallery (docs/grading.md): the gather on each GPU's own stream ----------------
// A collective enqueued on another stream (the legacy default stream: `0`) is not ordered before
// the combine kernel on the GPU's stream, and a timer on that stream does not wait for it. The
// hole scan sees cudaStreamLegacy by name, not a literal 0; this test sees either.
// tests/negative/11_exploit_default_stream_zero proves it.

TEST_CASE("ch11 allgather on 1 GPU: the gather waits for the GPU's own stream (nothing lands while it is held)",
          "[ch11][gpu][exercise][exploit]") {
  COURSE_REQUIRE_GPU();
  // Under compute-sanitizer (COURSE_TEST_SMALL) NCCL's first collective can take longer than the
  // gate's 30 s limit, and the gate then opens by itself: an ordering test, not a memory one.
  if (std::getenv("COURSE_TEST_SMALL") != nullptr) return;  // the plain run (ctest, the grade) checks it
  const auto* v = course::find_version(ch11::versions(), "allgather");
  REQUIRE(v != nullptr);
  const std::size_t n = 8192 * 3 + 5;
  auto devices = make_gpus(1, ch11::max_slice(n, 1));
  ch11::Team team = ch11::make_local_team(devices, 1);
  const auto in = course::test::make_dot_inputs(n, 1170);
  ch11::upload_slices(team, in.x.data(), in.y.data(), n);
  const std::vector<float> got = ch11::dot(team, v->run, n);  // leaves this call's partial on the GPU
  REQUIRE(course::check_dot(got[0], in.ref).ok);
  ch11::Gpu& g = *team.gpus[0];
  g.context().activate();
  course::Stream probe;  // not the GPU's stream
  const float poison = std::nanf("");
  CUDA_CHECK(cudaMemcpyAsync(g.gathered(), &poison, sizeof poison, cudaMemcpyHostToDevice, probe));
  probe.synchronize();
  float partial = 0;
  CUDA_CHECK(cudaMemcpyAsync(&partial, g.partial(), sizeof partial, cudaMemcpyDeviceToHost, probe));
  probe.synchronize();
  course::test::StreamGate gate;
  gate.hold(g.context().stream());
  v->run(team);  // the combine alone: it enqueues, it does not wait
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  float held = 0;
  CUDA_CHECK(cudaMemcpyAsync(&held, g.gathered(), sizeof held, cudaMemcpyDeviceToHost, probe));
  probe.synchronize();
  gate.open();
  g.context().synchronize();
  float after = 0;
  CUDA_CHECK(cudaMemcpyAsync(&after, g.gathered(), sizeof after, cudaMemcpyDeviceToHost, probe));
  probe.synchronize();
  INFO("while the GPU's stream was held, gathered()[0] became " << held << " (NaN: nothing landed); after it went on, "
       << after << " (the partial is " << partial << "). Exercise 2's collective must go on every GPU's own stream "
       "(its context's): on any other stream (the legacy default stream 0, a stream of its own) nothing orders "
       "it after the partial kernel or before the combine kernel, and the caller's timer does not wait for it. See "
       "combine_allgather, README §Exercise 2 — the all-gather.");
  CHECK(std::isnan(held));
  CHECK_FALSE(gate.timed_out());
  CHECK(bits(after) == bits(partial));
}
