#pragma once
/// \file
/// \brief Chapter 07: the fastest path for a dot of two host arrays: the CPU, the GPU, or both.
///
/// For data that lives on the host, the link (about 55 GB/s pinned, less staged) is slower than the
/// host's own memory (about 100 GB/s read by 16 threads): the course's threaded CPU dot
/// (course/cpu_dot.hpp) beats the copy to the GPU at most sizes. A HostAuto is what a
/// dotcourse_context adds to its Engine for that: a thread pool for the CPU dot, made on first use,
/// and a plan (dotcourse_plan: per size and registered-or-not, CPU, GPU or both on two parts) that
/// calibrate() measures on this host and device. choose() reads a plan; it is a pure function.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "course/thread_pool.hpp"
#include "dotcourse/dotcourse.h"
#include "engine.hpp"

namespace ch07 {

/// What one host dot will do: the path, and how many of the n elements go to the GPU (the first
/// n_gpu; the CPU takes the rest).
struct Choice {
  dotcourse_path path = DOTCOURSE_PATH_CPU;
  std::size_t n_gpu = 0;
};

/// The plan of a context nobody calibrated: the CPU at every size. The rule behind it: a staged
/// array crosses host memory three times (read by the staging threads, written to pinned chunks,
/// read again by the copy engine) and the link is slower than host memory, so neither a staged nor
/// a registered array reaches the GPU sooner than 16 threads read it. calibrate() measures whether
/// both at once beat the CPU alone.
dotcourse_plan default_plan();

/// Throws course::UsageError when a plan cannot be used (rows out of order, a share outside
/// (0, 1) for a split, an unknown path, too many rows).
void check_plan(const dotcourse_plan& plan);

/// The plan's choice for n elements: the row of the same `registered` with the largest n_min <= n
/// (none: the CPU). Pure: no context, no GPU, no clock.
Choice choose(const dotcourse_plan& plan, std::size_t n, bool registered);

/// One call of calibrate() at one size: which candidate, and whether it is timed (the first call of
/// each candidate is a warm-up).
struct CalibrationStep {
  std::size_t candidate;
  bool timed;
};

/// The order of calibrate()'s calls at one size: each candidate in a block of its own (a warm-up,
/// then `reps` timed calls), the candidates one after another. Interleaved, every candidate was
/// timed right after another's call, whose threads (the staging threads after a GPU or a split
/// call) were still polling for their next job on the cores the candidate wanted.
inline std::vector<CalibrationStep> calibration_order(std::size_t candidates, int reps) {
  std::vector<CalibrationStep> order;
  for (std::size_t k = 0; k < candidates; ++k)
    for (int rep = -1; rep < reps; ++rep) order.push_back({k, rep >= 0});  // rep -1: the warm-up
  return order;
}

/// The CPU side of a context: its share of the process's pool and its plan.
class HostAuto {
 public:
  /// `threads` parts for the CPU dot (0: $DOTCOURSE_CPU_THREADS, else one per CPU of the process's
  /// affinity mask, course::usable_cpus()). The parts run on the process's pool
  /// (course::process_pool), shared with every other context and with the staging of GPU calls:
  /// however many contexts a process makes, the library's threads never outnumber its CPUs (three
  /// contexts with a pool each, 70 threads on 16 cores, made calls of tens of µs take 3 ms).
  explicit HostAuto(unsigned threads = 0);

  /// A view of `threads()` parts on the process's pool, which is started (or grown) on first use;
  /// throws std::system_error (and keeps nothing) when its threads cannot be started, so that the
  /// next call tries again.
  course::ThreadPool& pool();
  unsigned threads() const noexcept { return threads_; }
  const dotcourse_plan& plan() const noexcept { return plan_; }
  void set_plan(const dotcourse_plan& plan);
  /// Names the GPU in the plan (`device`): a GPU context's plan says which card it is for, measured
  /// or not, so that a caller can key a saved plan by it.
  void set_device(const std::string& name);

  /// x·y of two host float arrays, on the path `where` asks for (AUTO: the plan's choice). `engine`
  /// is null for a CPU-only context (then only the CPU). Fills *report when it is not null.
  /// Throws course::NoGpuError for where = GPU without a GPU, TooLargeError for a GPU share above
  /// n_max (AUTO and GPU; the CPU is not limited).
  float dot(Engine* engine, const float* x, const float* y, std::size_t n, dotcourse_where where,
            dotcourse_report* report);

  /// Measures CPU, GPU and both (several shares) on buffers of its own, registered and staged, at
  /// sizes 2^12, 2^14, ... up to min(n_limit, n_max, 2^26); the fastest (the CPU unless another path
  /// is at least 3% faster) becomes the plan's row for that size. Returns the plan (also kept).
  const dotcourse_plan& calibrate(Engine& engine, std::size_t n_limit);

 private:
  unsigned threads_;
  unsigned pool_threads_;  // threads the process's pool needs for this context: min(threads_, CPUs)
  std::unique_ptr<course::ThreadPool> pool_;  // a view on the process's pool
  dotcourse_plan plan_;
};

/// The device's name (cudaGetDeviceProperties), for a plan's `device` field.
std::string device_name(int device);

}  // namespace ch07
