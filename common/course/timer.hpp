#pragma once
/// \file timer.hpp
/// \brief GPU timing with CUDA events, and host timing for CPU baselines.
///
/// Kernel launches return before the kernel has run, so a host clock around a launch measures
/// the launch, not the work. Events are recorded into the stream and time-stamped by the GPU when
/// the stream reaches them: their difference is the GPU time of whatever was enqueued in between.

#include <cuda_runtime.h>

#include <chrono>
#include <vector>

#include "course/check.hpp"

namespace course {

/// A pair of CUDA events on one stream (a course::Context's: the one the timed work runs on),
/// created on construction and destroyed with the timer.
class EventTimer {
 public:
  explicit EventTimer(cudaStream_t stream);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  EventTimer& operator=(EventTimer&&) = delete;

  /// Records the start event into the stream.
  void start();
  /// Records the stop event, waits for it, and returns the milliseconds since start().
  float stop_ms();
  /// Records the stop event without waiting (see elapsed_ms).
  void record_stop();
  /// Waits for the stop event and returns the milliseconds between start and stop.
  float elapsed_ms();

  EventTimer(EventTimer&& o) noexcept : stream_(o.stream_), start_(o.start_), stop_(o.stop_) {
    o.start_ = nullptr;
    o.stop_ = nullptr;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// time_gpu_ms with a hook: `between(i)` runs before call i (i counts from 0, the warm-up calls
/// included), outside every pair of events, and may enqueue work on `stream` (a change of the input
/// the next call reads, course::TimedInputChange); the host never waits for the GPU in between, so
/// the samples are the calls alone, back to back, as time_gpu_ms's.
template <class Work, class Between>
std::vector<double> time_gpu_ms(Work&& work, int warmup, int reps, cudaStream_t stream, Between&& between) {
  std::size_t call = 0;
  for (int i = 0; i < warmup; ++i) {
    between(call++);
    work();
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<EventTimer> timers;
  timers.reserve(reps > 0 ? static_cast<std::size_t>(reps) : 0u);
  for (int i = 0; i < reps; ++i) timers.emplace_back(stream);
  for (auto& timer : timers) {
    between(call++);
    timer.start();
    work();
    timer.record_stop();
  }
  std::vector<double> samples;
  samples.reserve(timers.size());
  for (auto& timer : timers) samples.push_back(timer.elapsed_ms());
  return samples;
}

/// Runs `work()` `warmup` times untimed, then `reps` times, each between its own pair of events
/// on `stream`. Returns the `reps` samples in milliseconds (the warm-up never enters them).
///
/// All runs are enqueued before the host waits once at the end, so the GPU never idles waiting
/// for the host between samples: for a kernel of a few microseconds, a wait after every run would
/// add the launch latency to each sample. (Work that synchronizes by itself still works.)
template <class Work>
std::vector<double> time_gpu_ms(Work&& work, int warmup, int reps, cudaStream_t stream) {
  return time_gpu_ms(std::forward<Work>(work), warmup, reps, stream, [](std::size_t) {});
}

/// Like time_gpu_ms, but each run is timed alone: the host waits for the GPU before every run, so
/// each sample starts on an idle GPU and includes the launch latency a single caller sees. This is
/// the time per call of a short kernel (latency); time_gpu_ms gives it back-to-back (throughput).
template <class Work>
std::vector<double> time_gpu_each_ms(Work&& work, int warmup, int reps, cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) work();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> samples;
  samples.reserve(reps > 0 ? static_cast<std::size_t>(reps) : 0u);
  EventTimer timer(stream);
  for (int i = 0; i < reps; ++i) {
    timer.start();
    work();
    samples.push_back(timer.stop_ms());  // waits: the next run starts on an idle GPU
  }
  return samples;
}

/// When a host measurement has enough samples (nvbench's stopping criterion): at least
/// `min_samples`, and then either the relative noise of the mean (standard deviation / mean /
/// sqrt(samples)) at most `max_noise`, or `max_seconds` of timed work spent; and, as nvbench's
/// timeout, two samples once 3 × `max_seconds` are spent, whatever `min_samples` says. `reps` stays the most
/// samples ever taken. The rule comes from the environment, so that a whole course run is given a
/// budget without touching a driver (tools/run_course.sh sets COURSE_MAX_SECONDS=2 and
/// COURSE_MAX_NOISE=0.005): COURSE_MIN_SAMPLES (default 3), COURSE_MAX_NOISE and COURSE_MAX_SECONDS
/// (default 0: off, every rep is taken, as the tests and the grader want). Warm-up runs stop after
/// the first once they have taken max_seconds / 4: a run of seconds needs no warming.
struct StoppingRule {
  int min_samples = 3;
  double max_noise = 0;
  double max_seconds = 0;

  /// The rule the environment sets (the defaults above where it sets nothing or nonsense).
  static StoppingRule from_environment();
  /// Whether `samples` (milliseconds) are enough.
  bool enough(const std::vector<double>& samples) const;
};

/// The host clock time_cpu_ms reads by default: std::chrono::steady_clock, in milliseconds. Any
/// type with `double now_ms() const` can stand in for it; the tests pass a fake clock that moves only
/// when the timed work says so, so that no test of the stopping rule depends on how fast the host is.
struct SteadyClock {
  double now_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

/// Same contract as time_gpu_ms, for host code, timed on `clock` (the steady clock unless a test
/// gives another); stops sooner when `rule` says the samples are enough (StoppingRule{} takes
/// exactly `reps`).
template <class Work, class Clock = SteadyClock>
std::vector<double> time_cpu_ms(Work&& work, int warmup, int reps,
                                const StoppingRule& rule = StoppingRule::from_environment(),
                                const Clock& clock = Clock{}) {
  const double started = clock.now_ms();
  for (int i = 0; i < warmup; ++i) {
    work();
    if (rule.max_seconds > 0 && clock.now_ms() - started >= 1e3 * rule.max_seconds / 4) break;
  }
  std::vector<double> samples;
  samples.reserve(reps > 0 ? static_cast<std::size_t>(reps) : 0u);
  for (int i = 0; i < reps; ++i) {
    const double t0 = clock.now_ms();
    work();
    samples.push_back(clock.now_ms() - t0);
    if (rule.enough(samples)) break;
  }
  return samples;
}

}  // namespace course
