#pragma once
/// \file thread_pool.hpp
/// \brief course::ThreadPool: host threads started once and reused, for work split into parts.
///
/// Starting threads costs tens of microseconds each; a copy or a dot that starts 16 of them per
/// call pays that every call (chapter 08 measured a staged copy that did: 24.5 GB/s instead of
/// 38). The pool starts its workers once; run(fn) calls fn(0..size()-1) spread over them (the
/// calling thread takes part 0) and returns when every part is done. Not re-entrant: one run() at
/// a time per pool.
///
/// Waking a sleeping thread through the kernel costs 5–50 µs; a staged copy runs the pool once per
/// chunk of a few hundred µs, and that would cost it a fifth of its time. So idle workers first
/// poll for kPollUs, giving the core away after every look (std::this_thread::yield: another
/// thread that wants the core gets it at once), and only then park on a condition variable.
///
/// A pool that cannot start all its threads stops the ones it started and throws: the caller gets
/// an exception, never a pool that waits for workers that do not exist.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace course {

/// The CPUs this process may run on: the calling thread's affinity mask (taskset, cgroups'
/// cpusets, an OpenMP runtime that pinned the caller), not the machine's count: threads beyond it
/// only take turns. Where the mask cannot be read, std::thread::hardware_concurrency(); at least 1.
inline unsigned usable_cpus() noexcept {
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return static_cast<unsigned>(count);
  }
#endif
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

/// What a ThreadPool asks of the system, replaceable by tests: thread creation (a test refuses
/// it), the idle workers' pause between looks (a test counts it) and their clock (a fake one).
struct PoolHooks {
  std::function<std::thread(std::function<void()>)> start;  ///< default: std::thread(fn)
  std::function<void()> relax;                              ///< default: std::this_thread::yield()
  std::function<std::chrono::steady_clock::time_point()> now;  ///< default: steady_clock::now()
};

class ThreadPool {
 public:
  /// How long an idle worker polls (yielding between looks) before it parks.
  static constexpr int kPollUs = 500;

  /// `threads` workers in all, the caller included (1: everything runs on the caller). Throws
  /// std::system_error, naming how many threads it could start, when one cannot be started; the
  /// ones already started are stopped first.
  explicit ThreadPool(unsigned threads, PoolHooks hooks = {}) : hooks_(std::move(hooks)) {
    if (!hooks_.start) hooks_.start = [](std::function<void()> fn) { return std::thread(std::move(fn)); };
    if (!hooks_.relax) hooks_.relax = [] { std::this_thread::yield(); };
    if (!hooks_.now) hooks_.now = [] { return std::chrono::steady_clock::now(); };
    const unsigned n = threads > 0 ? threads : 1;
    workers_.reserve(n - 1);
    for (unsigned t = 1; t < n; ++t) {
      try {
        workers_.push_back(hooks_.start([this, t] { loop(t); }));
      } catch (const std::system_error& e) {
        stop();
        throw std::system_error(e.code(), "course::ThreadPool: could not start thread " + std::to_string(t + 1) +
                                              " of " + std::to_string(n) + " (the " + std::to_string(t - 1) +
                                              " started were stopped)");
      } catch (...) {
        stop();
        throw;
      }
    }
  }
  ~ThreadPool() { stop(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads in the pool, the caller included.
  unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }

  /// Workers parked on the condition variable now (idle past their poll window): for tests.
  unsigned parked() const noexcept { return parked_.load(std::memory_order_acquire); }

  /// Calls fn(part) for part in [0, size()): part 0 on the caller, the others on the workers.
  /// Returns when all are done; rethrows the first exception a part threw.
  void run(const std::function<void(unsigned part)>& fn) {
    job_ = &fn;
    error_ = nullptr;
    pending_.store(static_cast<unsigned>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(mutex_); }  // a worker between its check and its wait gets the notify
    wake_.notify_all();
    std::exception_ptr mine;
    try {
      fn(0);
    } catch (...) {
      mine = std::current_exception();
    }
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    job_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void stop() noexcept {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  // [pool_idle]
  // Idle: look, give the core away, look again, for kPollUs by the clock; then park. Every look is
  // followed by relax() (a yield): no worker holds a core that another thread is waiting for.
  void loop(unsigned part) {
    std::size_t seen = 0;
    for (;;) {
      const auto t0 = hooks_.now();
      while (generation_.load(std::memory_order_acquire) == seen &&
             hooks_.now() - t0 < std::chrono::microseconds(kPollUs))
        hooks_.relax();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        parked_.fetch_add(1, std::memory_order_acq_rel);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        parked_.fetch_sub(1, std::memory_order_acq_rel);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) return;
      try {
        (*job_)(part);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  // [pool_idle]

  PoolHooks hooks_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void(unsigned)>* job_ = nullptr;  // written before generation_ is released
  std::atomic<std::size_t> generation_{0};
  std::atomic<unsigned> pending_{0};
  std::atomic<unsigned> parked_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // under mutex_
};

}  // namespace course
