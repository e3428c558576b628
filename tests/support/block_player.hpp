#pragma once
// A host player of one GPU block (issue 39: a host check for every hole). The kernels' hole code
// lives in __host__ __device__ helpers that take the block's barrier, its shuffle and its block sum
// as arguments; the host tests run that very code here, one simulated thread after another, with
// no GPU.
//
// Each simulated thread is a fiber (POSIX ucontext: its own stack, switched to and from by the
// player; no OS thread, no lock), and only one runs at a time: a thread runs until it reaches a
// barrier, a warp sync inside a shuffle, or returns; then the next one runs. When every thread of the block waits at the block barrier (or every lane of a
// warp at its warp sync), they are released together. So the schedule is fully determined by the
// order, and each order is one a GPU may really run. A thread may also pause (a simulated load of
// global memory): the others take their turn before it goes on.
//
//   - a missing barrier lets one thread run ahead of the others' writes: a wrong sum in some order;
//   - a barrier that some threads skip (inside an if) is a deadlock here: reported, never a hang;
//   - a shuffle that only some lanes of a warp call is a deadlock too.
// Shared memory is plain host memory that the test owns, filled with NaN where "nothing written
// yet" must show.

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace course::test {

class BlockPlayer {
 public:
  /// In which order the runnable threads take their turn, each round: thread order, its reverse,
  /// or a new random permutation every round (seeded: the same on every run of the test).
  enum class Order { ascending, descending, shuffled };

  static const char* name(Order o) {
    return o == Order::ascending ? "threads in index order" : o == Order::descending ? "threads in reverse order"
                                                                                      : "threads in a shuffled order";
  }

  explicit BlockPlayer(unsigned threads, Order order = Order::ascending, std::uint64_t seed = 1)
      : threads_(threads), order_(order), rng_(seed), state_(threads, State::ready), slot_(threads, 0.0f),
        syncs_(threads, 0), fibers_(threads), stacks_(threads) {
    for (auto& stack : stacks_) stack.reset(new char[kStack]);
  }

  BlockPlayer(const BlockPlayer&) = delete;
  BlockPlayer& operator=(const BlockPlayer&) = delete;

  /// Runs body(tid) for every thread tid < threads, as one block. Returns "" or the first problem,
  /// in words (a barrier that not every thread reaches, a thread that throws, a run-away). May be
  /// called again: each call is a fresh block.
  std::string run(const std::function<void(unsigned tid)>& body) {
    body_ = &body;
    problem_.clear();
    aborted_ = false;
    std::fill(state_.begin(), state_.end(), State::ready);
    std::fill(syncs_.begin(), syncs_.end(), 0);
    for (unsigned t = 0; t < threads_; ++t) {
      getcontext(&fibers_[t]);
      fibers_[t].uc_stack.ss_sp = stacks_[t].get();
      fibers_[t].uc_stack.ss_size = kStack;
      fibers_[t].uc_link = &main_;
      makecontext(&fibers_[t], &BlockPlayer::entry, 0);
    }
    schedule();
    return problem_;
  }

  /// __syncthreads() for the running thread.
  void sync_block() { yield(State::at_block); }

  /// Lets the other threads take a turn before the running one goes on (no barrier: it stays ready).
  /// A simulated global-memory load calls it between reading its value and returning it, so that a
  /// plain read-modify-write loses the updates other threads make in between, as on a GPU.
  void pause() { yield(State::ready); }

  /// __syncwarp() for the running thread (every lane of its warp must call it).
  void sync_warp() { yield(State::at_warp); }

  /// __shfl_down_sync(0xffffffff, v, offset) for the running thread: lane + offset's value, or its
  /// own past the warp's end. Every lane of the warp must call it.
  float shfl_down(float v, unsigned offset) {
    const unsigned t = current_;
    slot_[t] = v;
    sync_warp();
    const unsigned lane = t % 32, src = t + offset;
    const float r = (lane + offset < 32 && src < threads_) ? slot_[src] : v;
    sync_warp();  // nobody overwrites a slot before every lane has read it
    return r;
  }

  /// The block's sum, as the kit's block_sum: every thread calls it; thread 0 gets the sum of every
  /// thread's value (in thread order), the other threads NaN (the kit leaves them unspecified).
  float block_sum(float v) {
    const unsigned t = current_;
    slot_[t] = v;
    sync_block();
    float s = 0.0f;
    if (t == 0)
      for (unsigned i = 0; i < threads_; ++i) s += slot_[i];
    sync_block();
    return t == 0 ? s : std::numeric_limits<float>::quiet_NaN();
  }

 private:
  enum class State { ready, at_block, at_warp, done };
  struct Abort {};
  static constexpr int kRunaway = 4096;        // syncs per thread before the player calls it a run-away
  static constexpr std::size_t kStack = 1 << 17;  // bytes of stack per simulated thread

  static BlockPlayer*& running() {
    static thread_local BlockPlayer* p = nullptr;
    return p;
  }

  /// A fiber's first frame: runs the body for the current thread, catches everything (no exception
  /// may leave a fiber), marks the thread done and returns to the player (uc_link).
  static void entry() {
    BlockPlayer* self = running();
    const unsigned t = self->current_;
    if (!self->aborted_) {
      try {
        (*self->body_)(t);
      } catch (const Abort&) {
      } catch (const std::exception& e) {
        self->note("thread " + std::to_string(t) + " threw: " + e.what());
      } catch (...) {
        self->note("thread " + std::to_string(t) + " threw an exception");
      }
    }
    self->state_[t] = State::done;
  }

  void note(const std::string& what) {
    if (problem_.empty()) problem_ = what;
  }

  void yield(State s) {
    const unsigned t = current_;
    if (++syncs_[t] > kRunaway) {
      note("thread " + std::to_string(t) + " passed more than " + std::to_string(kRunaway) +
           " barriers or shuffles: a loop that never ends?");
      throw Abort{};
    }
    state_[t] = s;
    swapcontext(&fibers_[t], &main_);
    if (aborted_) throw Abort{};
  }

  void resume(unsigned t) {
    current_ = t;
    BlockPlayer*& r = running();
    BlockPlayer* outer = r;
    r = this;
    swapcontext(&main_, &fibers_[t]);
    r = outer;
  }

  /// Rounds of turns until every thread is done or nothing can move; then every thread still
  /// waiting is unwound (Abort), so that its stack holds nothing when the next run starts.
  void schedule() {
    std::vector<unsigned> order(threads_);
    std::iota(order.begin(), order.end(), 0u);
    if (order_ == Order::descending) std::reverse(order.begin(), order.end());
    for (;;) {
      if (order_ == Order::shuffled) std::shuffle(order.begin(), order.end(), rng_);
      for (unsigned t : order)
        if (state_[t] == State::ready && problem_.empty()) resume(t);
      if (!problem_.empty()) break;
      if (std::all_of(state_.begin(), state_.end(), [](State s) { return s == State::done; })) break;
      // A thread that paused is ready again: it goes on next round.
      bool moved = std::any_of(state_.begin(), state_.end(), [](State s) { return s == State::ready; });
      if (std::all_of(state_.begin(), state_.end(), [](State s) { return s == State::at_block; })) {
        std::fill(state_.begin(), state_.end(), State::ready);
        moved = true;
      }
      for (unsigned w = 0; w * 32 < threads_; ++w) {
        const unsigned lo = w * 32, hi = std::min(threads_, lo + 32);
        if (std::all_of(state_.begin() + lo, state_.begin() + hi, [](State s) { return s == State::at_warp; })) {
          std::fill(state_.begin() + lo, state_.begin() + hi, State::ready);
          moved = true;
        }
      }
      if (!moved) {
        problem_ = deadlock();
        break;
      }
    }
    aborted_ = true;
    for (unsigned t = 0; t < threads_; ++t)
      if (state_[t] != State::done) resume(t);  // unwinds it (or, never started, returns at once)
  }

  std::string deadlock() const {
    auto first = [&](State s) {
      for (unsigned t = 0; t < threads_; ++t)
        if (state_[t] == s) return static_cast<long>(t);
      return -1L;
    };
    std::ostringstream msg;
    const long block = first(State::at_block), warp = first(State::at_warp), done = first(State::done);
    msg << "the block cannot go on: ";
    if (block >= 0 && done >= 0)
      msg << "thread " << block << " waits at a block barrier (__syncthreads) that thread " << done
          << " never reaches (it has returned): every thread must pass the same barriers, so a barrier "
             "inside a branch some threads skip hangs or corrupts the block on a GPU";
    else if (block >= 0 && warp >= 0)
      msg << "thread " << block << " waits at a block barrier while thread " << warp
          << " waits in a shuffle (or __syncwarp) for lanes of its warp that are elsewhere";
    else if (warp >= 0)
      msg << "thread " << warp << " waits in a shuffle (or __syncwarp) that some lanes of its warp never "
             "reach: every lane of the warp must take part in every shuffle";
    else
      msg << "no thread can move";
    return msg.str();
  }

  const unsigned threads_;
  const Order order_;
  std::mt19937_64 rng_;
  std::vector<State> state_;
  std::vector<float> slot_;  // one exchange slot per thread (shuffles, block sums)
  std::vector<int> syncs_;
  std::vector<ucontext_t> fibers_;
  std::vector<std::unique_ptr<char[]>> stacks_;
  ucontext_t main_{};
  const std::function<void(unsigned)>* body_ = nullptr;
  unsigned current_ = 0;
  bool aborted_ = false;
  std::string problem_;
};

}  // namespace course::test
