#pragma once
/// \file driver.hpp
/// \brief The driver harness: what every chapter's main.cpp would otherwise repeat.
///
/// On the model of nccl-tests' common.cu, where a collective supplies five hooks and timing,
/// checking and reporting live once: a chapter's driver supplies its registry, its inputs and its
/// bytes per element, and keeps its own experiments; choosing versions and sizes, the device line,
/// validate → time → validate, the measurement row, the CSVs and the exit code come from here.
/// Built on course::App (cli.hpp), which parses the command line and maps errors to exit codes.

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "course/bench.hpp"
#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cli.hpp"
#include "course/registry.hpp"
#include "course/reference.hpp"
#include "course/table.hpp"

namespace course {

class Context;

/// A chapter's --help description, written as a raw string over several lines: newlines become
/// spaces, and the newlines just inside R"( and )" are dropped. The text stays one paragraph.
std::string about(std::string_view text);

/// The registry entries --kernel selects (all when it is empty; Options::selects), in registry
/// order; `keep(v)` adds entries that run whatever --kernel says (baselines).
template <class Fn, class Keep>
std::vector<const Version<Fn>*> select_versions(const std::vector<Version<Fn>>& registry, const Options& opt,
                                                Keep keep) {
  std::vector<const Version<Fn>*> chosen;
  for (const auto& v : registry)
    if (opt.selects(v.name) || keep(v)) chosen.push_back(&v);
  return chosen;
}
template <class Fn>
std::vector<const Version<Fn>*> select_versions(const std::vector<Version<Fn>>& registry, const Options& opt) {
  return select_versions(registry, opt, [](const Version<Fn>&) { return false; });
}

/// Which of --n and --sizes wins when both are given.
enum class SizesFirst { sizes, n };

/// The sizes a sweep measures: --sizes (a list), --n alone, or `defaults`, `first` deciding between
/// the two options when both are given (App has refused a size of 0 in either while parsing). With
/// `sorted`, ascending and without repeats (one CSV row per version and size).
std::vector<std::size_t> sweep_sizes(const Options& opt, const std::string& sizes_text,
                                     std::vector<std::size_t> defaults, SizesFirst first, bool sorted = false);

/// Prints "GPU: <device>\nMeasured read roofline R GB/s (P% of the B GB/s peak)" and then `tail`.
void print_gpu(Context& ctx, const std::string& tail = "\n");

/// A measurement row from its parts.
Measurement measured(std::string_view version, std::string config, std::size_t n, double bytes, const Stats& ms,
                     double roofline_gbps, double rel_error, bool valid);
/// The same from the timed samples (course::summarize).
Measurement measured(std::string_view version, std::string config, std::size_t n, double bytes,
                     const std::vector<double>& samples, double roofline_gbps, double rel_error, bool valid);

/// The verdict on a speed-of-light row (not a dot product): it ran when it wrote a finite value over
/// the NaN poison; its relative error is NaN (an empty cell).
Verdict ran_verdict(double got);

/// One validation run: fills d_result with NaN bytes on `stream`, calls run() (which writes
/// d_result[0] on `stream`), and returns d_result[0] once the stream has finished.
template <class T, class Run>
T poisoned_run(DeviceBuffer<T>& d_result, Run&& run, cudaStream_t stream) {
  d_result.fill_bytes(0xFF, stream);
  run();
  T got{};
  d_result.download_async(&got, 1, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return got;
}

/// Times `count` calls in turn: call(i) for i in [0, count), `warmup` rounds untimed, then `reps`
/// rounds, each call alone between its own pair of events on `stream` (the host waits after each, so
/// the next call starts on an idle GPU). Round-robin: call r of every i runs before call r + 1 of
/// any, so a drift of the clocks falls on every i alike. Returns the samples of each i.
/// `after(i)`, when given, runs after every call (warm-up ones too) once its stop event has been
/// waited for, outside the timed region: where a driver checks the call's result and changes the
/// input of the next (course::TimedInputChange).
std::vector<std::vector<double>> time_round_robin(std::size_t count, const std::function<void(std::size_t)>& call,
                                                  int warmup, int reps, cudaStream_t stream,
                                                  const std::function<void(std::size_t)>& after = {});

/// One element of x that a benchmark changes between timed calls (issue 38, class 4): x[at]
/// alternates between its own value and a spike that moves the dot by 64 error bounds, and every
/// timed result is checked against the reference of the input it was given. A call that returns an
/// earlier call's answer (a cache kept by pointer, by size, in a workspace or an engine) is then
/// wrong, and seen, though the benchmark reuses its buffers and every copy holds the same values.
struct TimedInputChange {
  bool active = false;        ///< false when there is nothing to change (n = 0)
  std::size_t at = 0;         ///< the element of x that changes
  float original = 0.0f;      ///< x[at] as generated
  float spike = 0.0f;         ///< x[at] in the changed input
  Reference base, changed;    ///< the fp64 references of the two inputs
  float value(bool is_changed) const { return is_changed ? spike : original; }
  const Reference& ref(bool is_changed) const { return is_changed ? changed : base; }
};

/// The change for x·y of n elements with reference `ref`; xy_at(i) gives {x[i], y[i]}. The element
/// is the first from n/2 on (up to 64 tried) whose y is at least 1/8 in magnitude, so that the spike
/// needs no huge value; `active` is false when n is 0 or no such element is found.
TimedInputChange timed_input_change(const Reference& ref, std::size_t n,
                                    const std::function<std::pair<float, float>(std::size_t)>& xy_at);

/// Whether call `i` of a back-to-back benchmark reads the changed input (x[at] = spike): every other
/// call (the odd ones, counted from 0 with the warm-up), when the change is active. The driver changes
/// x before each call (time_gpu_ms's between hook) and checks call i against c.ref(changed_at(c, i)).
inline bool changed_at(const TimedInputChange& c, std::size_t i) { return c.active && i % 2 == 1; }

/// The check of every timed call of a benchmark, after the timing (issue 38, class 4): `check(i, got)`
/// is call i's verdict against the reference of the input it read; results[i] is what call i wrote
/// (each call its own slot). Returns the first wrong call's verdict, its message naming the call
/// ("timed call 3 of 20 (x changed): ..."; warm-up calls as "warm-up call 1 of 2"), or, when every
/// call is right, the verdict with the largest relative error. `warmup` calls come first in results.
Verdict check_timed_calls(const std::vector<double>& results, std::size_t warmup,
                          const std::function<Verdict(std::size_t, double)>& check,
                          const std::function<bool(std::size_t)>& changed = {});

/// Calls `call()` and waits for `stream`, again and again for about `ms` milliseconds of host time,
/// so that the GPU's clocks are up before a size is timed.
void settle(const std::function<void()>& call, cudaStream_t stream, double ms);

/// Copies of one input that together hold at least twice the L2 (at least one): calls that rotate
/// over them never find their input in the cache.
std::size_t copies_beyond_l2(double bytes_per_copy, std::size_t l2_bytes);

/// Fills copies 1 .. copies − 1 of a rotated input from copy 0 (`bytes` each, `stride` bytes apart),
/// on `stream`.
void replicate(void* d_base, std::size_t stride, std::size_t bytes, std::size_t copies, cudaStream_t stream);

/// Writes `main` to `csv` and each named table beside it (course::csv_beside); a null table is
/// skipped. Nothing is written when `csv` is empty.
void write_csvs(const std::string& csv, const Table& main,
                const std::vector<std::pair<std::string, const Table*>>& beside = {});

/// The rows of `table` whose column `col` holds the whole number `value`.
Table rows_where(const Table& table, const std::string& col, long long value);

/// Milliseconds of host time since `t0` (std::chrono::steady_clock).
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// The exit code of a run: kExitOk when nothing failed; otherwise "<name>: <count> <what>: a b" on
/// stderr and kExitFailure.
int exit_code(const std::string& name, const std::set<std::string>& failed,
              const std::string& what = "version(s) gave wrong results");

}  // namespace course
