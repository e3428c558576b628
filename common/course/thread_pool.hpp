#pragma once
/// \file thread_pool.hpp
/// \brief course::ThreadPool: host threads started once and reused, for work split into parts.
///
/// Starting threads costs tens of microseconds each; a copy or a dot that starts 16 of them per
/// call pays that every call (chapter 08 measured a staged copy that did: 24.5 GB/s instead of
/// 38). The pool starts its workers once; run(parts, fn) calls fn(0..parts-1) spread over them
/// (the calling thread takes part 0) and returns when every part is done. Not re-entrant: one
/// run() at a time per pool.
///
/// Waking a sleeping thread through the kernel costs 5–50 µs; a staged copy runs the pool once per
/// chunk of a few hundred µs, and that would cost it a fifth of its time. So idle workers first
/// poll (yielding the core each time, so an oversubscribed machine still makes progress) for
/// kPollUs, and only then sleep on the condition variable.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace course {

class ThreadPool {
 public:
  /// `threads` workers in all, the caller included (1: everything runs on the caller).
  explicit ThreadPool(unsigned threads) {
    const unsigned n = threads > 0 ? threads : 1;
    for (unsigned t = 1; t < n; ++t) workers_.emplace_back([this, t] { loop(t); });
  }
  ~ThreadPool() {
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Threads in the pool, the caller included.
  unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }

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
  static constexpr int kPollUs = 500;

  void loop(unsigned part) {
    std::size_t seen = 0;
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(kPollUs))
        std::this_thread::yield();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
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

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void(unsigned)>* job_ = nullptr;  // written before generation_ is released
  std::atomic<std::size_t> generation_{0};
  std::atomic<unsigned> pending_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // under mutex_
};

}  // namespace course
