#pragma once
/// \file thread_pool.hpp
/// \brief course::ThreadPool: host threads started once and reused, for work split into parts.
///
/// Starting threads costs tens of microseconds each; a copy or a dot that starts 16 of them per
/// call pays that every call (chapter 08 measured a staged copy that did: 24.5 GB/s instead of
/// 38). The pool starts its workers once; run(parts, fn) calls fn(0..parts-1) spread over them
/// (the calling thread takes part 0) and returns when every part is done. Not re-entrant: one
/// run() at a time per pool.

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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      ++generation_;
    }
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
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      pending_ = static_cast<unsigned>(workers_.size());
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr mine;
    try {
      fn(0);
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void loop(unsigned part) {
    std::size_t seen = 0;
    for (;;) {
      const std::function<void(unsigned)>* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
        job = job_;
      }
      std::exception_ptr err;
      try {
        (*job)(part);
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (err && !error_) error_ = err;
        if (--pending_ == 0) done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(unsigned)>* job_ = nullptr;
  std::size_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace course
