#pragma once
// Host checks of the index arithmetic that chapters 04–06 put in __host__ __device__ functions
// (their headers): the kernels call those functions on the GPU, these checks call the very same
// functions on the host, so a student without a GPU learns whether the indexing is right. No GPU,
// no CUDA call: the functions take what they do with an index (an add, a barrier, a visit, a
// shuffle) as arguments, and here those arguments record and simulate.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "course/random.hpp"

namespace course::test {

/// Thrown by a recorder when the function under test runs away (a loop that never ends).
struct RunsAway {
  std::string what;
};

/// The smallest s with 2^s >= count: the fewest steps a tree of pairwise adds needs.
inline int ceil_log2(unsigned count) {
  int s = 0;
  while ((1ull << s) < count) ++s;
  return s;
}

/// Runs a block's tree, steps(tid, count, add, barrier), for every thread tid < count, as the
/// threads of one block would, and checks what the block would do with it: every thread calls
/// barrier() equally often (on the GPU a barrier that some thread misses hangs or corrupts); no add
/// after a thread's last barrier (its sum would not be seen); every index below count; in one step,
/// no value written by one thread and read or written by another (a race), one add per thread
/// (a tree, not a serial loop); at most max_steps steps; and value 0 ends with every value exactly
/// once (random 64-bit values added with wrap-around: a value lost or added twice shows). Returns ""
/// or the first problem, in words.
template <class Steps>
std::string check_tree(Steps steps, unsigned count, int max_steps, std::uint64_t seed) {
  struct Add {
    unsigned tid, to, from;
  };
  std::vector<std::vector<Add>> by_step;  // the adds of step s, every thread's
  std::vector<int> barriers(count, 0);
  std::ostringstream problem;
  const int kRunaway = 64;
  for (unsigned tid = 0; tid < count; ++tid) {
    int step = 0;
    int adds_in_step = 0;
    try {
      steps(
          tid, count,
          [&](unsigned to, unsigned from) {
            if (++adds_in_step > 1 && problem.str().empty())
              problem << "thread " << tid << " calls add() more than once in step " << step
                      << ": a tree gives each thread at most one add per step (at most half the values are "
                         "added into the other half at each step)";
            if (static_cast<int>(by_step.size()) <= step) by_step.resize(static_cast<std::size_t>(step) + 1);
            by_step[static_cast<std::size_t>(step)].push_back({tid, to, from});
            if (by_step[static_cast<std::size_t>(step)].size() > 4u * count)
              throw RunsAway{"more than 4 * count adds in one step"};
          },
          [&] {
            ++step;
            adds_in_step = 0;
            if (step > kRunaway) throw RunsAway{"more than 64 barriers"};
          });
    } catch (const RunsAway& e) {
      std::ostringstream msg;
      msg << "count = " << count << ", thread " << tid << ": the steps run away (" << e.what
          << "): a loop that never ends, such as an unsigned stride compared with >= 0";
      return msg.str();
    }
    barriers[tid] = step;
    if (!problem.str().empty()) return "count = " + std::to_string(count) + ": " + problem.str();
  }
  const int steps_taken = barriers.empty() ? 0 : barriers[0];
  for (unsigned tid = 0; tid < count; ++tid)
    if (barriers[tid] != steps_taken) {
      std::ostringstream msg;
      msg << "count = " << count << ": thread 0 calls barrier() " << steps_taken << " times and thread " << tid
          << " " << barriers[tid]
          << " times. Every thread must call it after every step, adding or not (outside the if): on the "
             "GPU a __syncthreads() that some threads never reach hangs or corrupts the block";
      return msg.str();
    }
  for (std::size_t s = 0; s < by_step.size(); ++s)
    for (const Add& a : by_step[s]) {
      std::ostringstream msg;
      msg << "count = " << count << ", thread " << a.tid << ", step " << s << ": add(" << a.to << ", " << a.from
          << ")";
      if (static_cast<int>(s) >= steps_taken)
        return msg.str() + " comes after the thread's last barrier(): a barrier must follow every step's adds";
      if (a.to >= count || a.from >= count)
        return msg.str() + " reaches past the " + std::to_string(count) +
               " values (indices 0 to count - 1): on the GPU, a read or write outside the block's values";
      if (a.to == a.from) return msg.str() + " adds a value into itself";
    }
  if (steps_taken > max_steps) {
    std::ostringstream msg;
    msg << "count = " << count << ": " << steps_taken << " steps; a tree needs " << ceil_log2(count)
        << " (each step halves the values left, rounding up), and this one may take " << max_steps;
    return msg.str();
  }
  // The block's shared memory, step by step.
  std::vector<std::uint64_t> value(count);
  std::uint64_t expected = 0;
  for (unsigned i = 0; i < count; ++i) {
    value[i] = course::mix64(seed, i);
    expected += value[i];
  }
  std::vector<int> writer(count);
  for (std::size_t s = 0; s < by_step.size(); ++s) {
    std::fill(writer.begin(), writer.end(), -1);
    auto race = [&](const Add& a, unsigned slot, const char* how) {
      std::ostringstream msg;
      msg << "count = " << count << ", step " << s << ": value " << slot << " is " << how << " by thread " << a.tid
          << " and written by thread " << writer[slot]
          << " in the same step: a race (which one wins depends on the schedule)";
      return msg.str();
    };
    for (const Add& a : by_step[s]) {
      if (writer[a.to] >= 0 && writer[a.to] != static_cast<int>(a.tid)) return race(a, a.to, "written");
      writer[a.to] = static_cast<int>(a.tid);
    }
    for (const Add& a : by_step[s])
      if (writer[a.from] >= 0 && writer[a.from] != static_cast<int>(a.tid)) return race(a, a.from, "read");
    std::vector<std::uint64_t> next = value;  // no races: every add reads values of the step before
    for (const Add& a : by_step[s]) next[a.to] += value[a.from];
    value = next;
  }
  if (count > 0 && value[0] != expected) {
    std::ostringstream msg;
    msg << "count = " << count << ": value 0 does not end with the sum of all " << count
        << " values (one lost or added twice), after " << steps_taken << " steps";
    return msg.str();
  }
  return "";
}

/// A simulated warp: the 32 lanes' values at once, for a function written for one lane (T the
/// lane's value type) that combines values only through `+`, `+=` and a shuffle. Exact: 64-bit
/// integers with wrap-around.
struct Warp {
  std::array<std::uint64_t, 32> lane{};
  Warp& operator+=(const Warp& o) {
    for (std::size_t l = 0; l < lane.size(); ++l) lane[l] += o.lane[l];
    return *this;
  }
  friend Warp operator+(Warp a, const Warp& b) { return a += b; }
};

/// __shfl_down_sync(0xffffffff, value, offset) on a simulated warp: lane l gets lane l + offset's
/// value, or its own where l + offset is past the warp. Counts its calls.
struct ShflDown {
  int* calls;
  Warp operator()(const Warp& v, unsigned offset) const {
    if (++*calls > 64) throw RunsAway{"more than 64 shuffles"};
    Warp out;
    for (std::size_t l = 0; l < 32; ++l) out.lane[l] = l + offset < 32 ? v.lane[l + offset] : v.lane[l];
    return out;
  }
};

/// Runs warp_sum_steps(warp, shfl_down) of a chapter on 8 simulated warps of random 64-bit lanes
/// (seed from the caller) and checks that lane 0 ends with the sum of the 32 lanes in at most five
/// shuffles. Returns "" or the first problem, in words, with the shuffles counted.
template <class WarpSum>
std::string check_warp_sum(WarpSum warp_sum_steps, std::uint64_t seed) {
  for (std::uint64_t trial = 0; trial < 8; ++trial) {
    Warp warp;
    std::uint64_t expected = 0;
    for (std::size_t l = 0; l < 32; ++l) expected += warp.lane[l] = course::mix64(seed + trial, l);
    int calls = 0;
    std::string problem;
    try {
      const Warp out = warp_sum_steps(warp, ShflDown{&calls});
      if (out.lane[0] != expected) problem = "lane 0 does not end with the sum of the 32 lanes' values";
      else if (calls > 5) problem = std::to_string(calls) + " shuffles; 32 lanes need at most five (log2 32)";
    } catch (const RunsAway&) {
      problem = "more than 64 shuffles: a loop that never ends";
    }
    if (!problem.empty()) return "warp_sum_steps, " + std::to_string(calls) + " shuffles: " + problem;
  }
  return "";
}

}  // namespace course::test
