#pragma once
/// \file thread_pool.hpp
/// \brief course::ThreadPool: host threads started once and reused, for work split into parts.
///
/// Starting threads costs tens of microseconds each; a copy or a dot that starts 16 of them per
/// call pays that every call (chapter 08 measured a staged copy that did: 24.5 GB/s instead of
/// 38). The pool starts its workers once; run(fn) calls fn(0..size()-1) spread over them (the
/// calling thread takes part 0) and returns when every part is done. One run() at a time per
/// pool: callers on other threads wait their turn; a run() from inside one of this pool's parts
/// runs its parts on that thread, one after another.
///
/// Waking a sleeping thread through the kernel costs 5–50 µs; a staged copy runs the pool once per
/// chunk of a few hundred µs, and that would cost it a fifth of its time. So idle workers first
/// poll for kPollUs, giving the core away after every look (std::this_thread::yield: another
/// thread that wants the core gets it at once), and only then park on a condition variable. The
/// caller of run(), once its own parts are done, waits for the others the same way: it polls for
/// kPollUs, then parks until the last part wakes it.
///
/// Polling is only cheap while the threads that poll are no more than the CPUs: beyond that, a
/// thread with work waits behind pollers for a scheduler time slice (an H200 host's benchmark, with
/// three libdotcourse contexts of 16 to 27 threads each in one process on 16 cores, saw calls of tens
/// of microseconds take about 3 ms; issue 41). A library therefore shares one pool per process,
/// process_pool(), sized by the CPUs of the affinity mask, among all its users; a user that wants
/// its own number of parts (for the same bits on every host) runs them on it through a view,
/// ThreadPool(process_pool(t), parts).
///
/// A pool that cannot start all its threads stops the ones it started and throws: the caller gets
/// an exception, never a pool that waits for workers that do not exist.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
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
/// it), the idle threads' pause between looks (a test counts it) and their clock (a fake one).
struct PoolHooks {
  std::function<std::thread(std::function<void()>)> start;  ///< default: std::thread(fn)
  std::function<void()> relax;                              ///< default: std::this_thread::yield()
  std::function<std::chrono::steady_clock::time_point()> now;  ///< default: steady_clock::now()
};

class ThreadPool {
 public:
  /// How long an idle worker, and the caller of run() waiting for the last part, poll (yielding
  /// between looks) before they park.
  static constexpr int kPollUs = 500;
  /// The name of every worker thread (Linux: /proc/self/task/*/comm), so that a test or a user can
  /// count them.
  static constexpr const char* kThreadName = "course-pool";

  /// `threads` threads in all, the caller included (1: everything runs on the caller). Throws
  /// std::system_error, naming how many threads it could start, when one cannot be started; the
  /// ones already started are stopped first.
  explicit ThreadPool(unsigned threads, PoolHooks hooks = {}) : hooks_(std::move(hooks)) {
    if (!hooks_.start) hooks_.start = [](std::function<void()> fn) { return std::thread(std::move(fn)); };
    if (!hooks_.relax) hooks_.relax = [] { std::this_thread::yield(); };
    if (!hooks_.now) hooks_.now = [] { return std::chrono::steady_clock::now(); };
    const unsigned n = threads > 0 ? threads : 1;
    try {
      start_workers(n);
    } catch (const std::system_error& e) {
      const std::size_t started = workers_.size();
      stop();
      throw std::system_error(e.code(), "course::ThreadPool: could not start thread " + std::to_string(started + 2) +
                                            " of " + std::to_string(n) + " (the " + std::to_string(started) +
                                            " started were stopped)");
    } catch (...) {
      stop();
      throw;
    }
  }

  /// A view: `parts` parts (at least 1) that run on `base`'s threads; it starts no thread of its
  /// own. Its size() is `parts` whatever base's size: part p runs on base's thread p mod
  /// base.threads(). `base` must outlive the view.
  ThreadPool(ThreadPool& base, unsigned parts) : base_(&base.owner()), parts_(parts > 0 ? parts : 1) {}

  ~ThreadPool() {
    if (base_ == nullptr) stop();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Parts of run(fn): the threads of a pool, the caller included; a view's `parts`.
  unsigned size() const noexcept { return base_ != nullptr ? parts_ : threads(); }
  /// Threads that run the parts, the caller included (a view: its base's).
  unsigned threads() const noexcept { return owner().threads_.load(std::memory_order_acquire); }
  /// The pool whose threads run this one's parts: itself, or a view's base.
  ThreadPool& owner() noexcept { return base_ != nullptr ? *base_ : *this; }
  const ThreadPool& owner() const noexcept { return base_ != nullptr ? *base_ : *this; }

  /// Workers parked on the condition variable now (idle past their poll window): for tests.
  unsigned parked() const noexcept { return owner().parked_.load(std::memory_order_acquire); }
  /// Whether the caller of a run() is parked now, waiting for a part (past its poll window): for tests.
  bool caller_parked() const noexcept { return owner().caller_parked_.load(std::memory_order_acquire); }

  /// Starts threads until the pool has `threads` (a view: its base); waits for a run() in flight,
  /// and does nothing when called from one of the pool's own parts. Throws std::system_error when
  /// one cannot be started; those started before stay, and the pool is usable as it is.
  void grow(unsigned threads) {
    ThreadPool& o = owner();
    if (running_ == &o) return;  // from inside one of its parts (which holds run_mutex_): as it is
    std::lock_guard<std::mutex> serial(o.run_mutex_);  // no run() in flight while workers_ changes
    try {
      o.start_workers(threads);
    } catch (const std::system_error& e) {
      throw std::system_error(e.code(), "course::ThreadPool: could not grow to " + std::to_string(threads) +
                                            " threads (it has " + std::to_string(o.threads()) + ")");
    }
  }

  /// Calls fn(part) for part in [0, size()): part 0 on the caller, the others on the workers.
  /// Returns when all are done; rethrows the first exception a part threw.
  void run(const std::function<void(unsigned part)>& fn) { run(size(), fn); }

  /// Calls fn(part) for part in [0, parts), whatever the pool's size: thread t (the caller is 0)
  /// runs parts t, t + threads(), ... in that order. Returns when all are done; rethrows the first
  /// exception a part threw.
  void run(unsigned parts, const std::function<void(unsigned part)>& fn) {
    ThreadPool& o = owner();
    if (parts == 0) return;
    if (running_ == &o || parts == 1) {  // inside one of o's parts, or nothing to share: here
      for (unsigned p = 0; p < parts; ++p) fn(p);
      return;
    }
    std::lock_guard<std::mutex> serial(o.run_mutex_);
    o.run_here(parts, fn);
  }

 private:
  // [pool_run]
  void run_here(unsigned parts, const std::function<void(unsigned)>& fn) {
    const unsigned threads = static_cast<unsigned>(workers_.size()) + 1;
    if (threads == 1) {
      const Running mark(this);
      for (unsigned p = 0; p < parts; ++p) fn(p);
      return;
    }
    // Only the first min(parts, threads) threads take part: a dot of 4 parts on a pool of 16 waits
    // for 3 workers, not for 15 (of which the parked ones cost a kernel wake-up each, 5-50 us).
    const unsigned active = std::min(parts, threads);
    job_ = &fn;
    job_parts_ = parts;
    job_threads_ = threads;
    error_ = nullptr;
    pending_.store(active - 1, std::memory_order_relaxed);  // the workers that take part answer
    next_generation(active);
    { std::lock_guard<std::mutex> lock(mutex_); }  // a worker between its check and its wait gets the notify
    wake_.notify_all();
    std::exception_ptr mine;
    {
      const Running mark(this);
      try {
        for (unsigned p = 0; p < parts; p += threads) fn(p);
      } catch (...) {
        mine = std::current_exception();
      }
    }
    // Wait for the workers' parts: poll for kPollUs, giving the core away after every look, then
    // park until the last worker wakes this thread. Never a wait without end on a core.
    const auto t0 = hooks_.now();
    while (pending_.load(std::memory_order_seq_cst) != 0 && hooks_.now() - t0 < std::chrono::microseconds(kPollUs))
      hooks_.relax();
    if (pending_.load(std::memory_order_seq_cst) != 0) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_parked_.store(true, std::memory_order_seq_cst);
      done_.wait(lock, [&] { return pending_.load(std::memory_order_seq_cst) == 0; });
      caller_parked_.store(false, std::memory_order_relaxed);
    }
    job_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }
  // [pool_run]

  // Marks the thread as running parts of `pool` (a run() from inside runs its parts in place).
  struct Running {
    explicit Running(const ThreadPool* pool) : saved(running_) { running_ = pool; }
    ~Running() { running_ = saved; }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    const ThreadPool* saved;
  };

  // Starts workers until there are `threads` threads (the caller included). No run() is in flight.
  void start_workers(unsigned threads) {
    const unsigned n = threads > 0 ? threads : 1;
    const std::size_t seen = generation_.load(std::memory_order_acquire);
    workers_.reserve(n - 1);
    for (unsigned t = static_cast<unsigned>(workers_.size()) + 1; t < n; ++t) {
      workers_.push_back(hooks_.start([this, t, seen] { loop(t, seen); }));  // throws std::system_error
      threads_.store(t + 1, std::memory_order_release);
    }
  }

  void stop() noexcept {
    stop_.store(true, std::memory_order_release);
    next_generation(kActiveMask);
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
    threads_.store(1, std::memory_order_release);
  }

  // [pool_idle]
  // Idle: look, give the core away, look again, for kPollUs by the clock; then park. Every look is
  // followed by relax() (a yield): no worker holds a core that another thread is waiting for.
  void loop(unsigned t, std::size_t seen) {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), kThreadName);  // what top -H and /proc/self/task/*/comm show
#endif
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
      // A worker past the job's active threads has no part and does not answer: the caller may
      // already be writing the next job, so it reads nothing of this one but the generation word,
      // which holds the active count. A worker that takes part reads the job safely: the next job
      // waits for its answer.
      if (t >= active_of(seen)) continue;
      {
        const Running mark(this);
        try {
          for (unsigned p = t; p < job_parts_; p += job_threads_) (*job_)(p);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (!error_) error_ = std::current_exception();
        }
      }
      // The last worker wakes the caller if it parked (seq_cst on both sides: either the caller
      // sees pending_ at 0 before it sleeps, or this sees it parked).
      if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_parked_.load(std::memory_order_seq_cst)) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_one();
      }
    }
  }
  // [pool_idle]

  static inline thread_local const ThreadPool* running_ = nullptr;  // the pool whose part this thread runs

  // generation_ counts jobs in its high bits and holds, in its low 16 bits, how many threads take
  // part in the current one (the caller included): one atomic word, so that a worker that takes no
  // part reads nothing the next job may be writing.
  static constexpr std::size_t kActiveBits = 16, kActiveMask = (std::size_t{1} << kActiveBits) - 1;
  static unsigned active_of(std::size_t generation) noexcept { return static_cast<unsigned>(generation & kActiveMask); }
  void next_generation(std::size_t active) noexcept {  // one writer at a time: run_here (under run_mutex_) or stop()
    const std::size_t count = (generation_.load(std::memory_order_relaxed) >> kActiveBits) + 1;
    generation_.store((count << kActiveBits) | std::min(active, kActiveMask), std::memory_order_release);
  }

  ThreadPool* base_ = nullptr;  // a view's pool; null for a pool with threads of its own
  unsigned parts_ = 0;          // a view's parts
  PoolHooks hooks_;
  std::vector<std::thread> workers_;  // changes only under run_mutex_ (or in the constructor)
  std::atomic<unsigned> threads_{1};
  std::mutex run_mutex_;  // one run() at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;  // job_*: written before generation_ is released
  unsigned job_parts_ = 0, job_threads_ = 1;
  std::atomic<std::size_t> generation_{0};
  std::atomic<unsigned> pending_{0};
  std::atomic<unsigned> parked_{0};
  std::atomic<bool> caller_parked_{false};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // under mutex_
};

namespace detail {
inline std::atomic<ThreadPool*>& process_pool_slot() noexcept {
  static std::atomic<ThreadPool*> slot{nullptr};
  return slot;
}
}  // namespace detail

/// The process's pool, shared by every user of a library (libdotcourse: every context's CPU dot
/// and staging): made on first use and grown to at least `threads` threads, the caller included;
/// never beyond the CPUs of the calling thread's affinity mask (usable_cpus()). Pass at most
/// usable_cpus(), computed once, so that the usual call only reads a pointer and a count. Throws
/// std::system_error when a thread cannot be started (the next call tries again). Never destroyed
/// (a context may outlive static destructors); in a child made by fork() the next call starts a
/// new one, the parent's threads not being there.
inline ThreadPool& process_pool(unsigned threads) {
  std::atomic<ThreadPool*>& slot = detail::process_pool_slot();
  ThreadPool* pool = slot.load(std::memory_order_acquire);
  if (pool != nullptr && pool->threads() >= threads) return *pool;
  const unsigned want = std::max(1u, std::min(threads, usable_cpus()));
  if (pool == nullptr) {
#if defined(__linux__)
    static const bool forks_forget = [] {
      pthread_atfork(nullptr, nullptr, [] { detail::process_pool_slot().store(nullptr, std::memory_order_relaxed); });
      return true;
    }();
    (void)forks_forget;
#endif
    auto made = std::make_unique<ThreadPool>(want);
    ThreadPool* expected = nullptr;
    if (slot.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) return *made.release();
    pool = expected;  // another thread made one first
  }
  if (pool->threads() < want) pool->grow(want);
  return *pool;
}

}  // namespace course
