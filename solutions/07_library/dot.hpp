#pragma once
/// \file
/// \brief Chapter 07: the course's dot product as a library: the engine behind dotcourse.h.
///
/// libdotcourse (library/) includes this header through one seam, library/src/engine.hpp, which
/// lists what the library calls; everything else here is the lesson's.
/// An Engine is what a dotcourse_context holds: one course::Context (device, stream, scratch
/// arena) with the device buffers for n_max elements, a pinned result, and the pinned staging
/// buffers and host threads of the staged copy. Every version of the host-array dot takes an
/// Engine; the registry, versions(), is the only list of them (CLI, tests, benchmark, text).

#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/reference.hpp"
#include "course/registry.hpp"
#include "course/stream.hpp"

namespace ch07 {

/// Threads per block of the two-pass dot kernels (launch_dot). The typed single pass
/// (library/src/typed.cu) has its own, kTypedBlock.
constexpr int kDotBlock = 256;
/// Floats per pinned staging chunk of reuse_staged (2 MiB). Calls with n >= kLargePieces use
/// whole chunks; smaller calls use pieces of kSmallPiece floats (512 KiB), so that the pipeline
/// fills quickly. (Measured on the H100 machine: 07_library_staging.csv.)
constexpr std::size_t kChunk = std::size_t{1} << 19;
constexpr std::size_t kSmallPiece = std::size_t{1} << 17;
constexpr std::size_t kLargePieces = std::size_t{1} << 22;
/// Below this many elements the host-array dot of the C API uses `reuse`: waking the staging
/// threads costs more than the copy they would speed up.
constexpr std::size_t kStageMin = std::size_t{1} << 16;

/// n larger than the engine's n_max: a usage error the C API reports as DOTCOURSE_ERROR_TOO_LARGE.
class TooLargeError : public course::UsageError {
 public:
  using course::UsageError::UsageError;
};

/// The pinned staging buffers of reuse_staged and the parts that fill them. Part w owns two pinned
/// chunks and an event per chunk; run() hands every part its share of a list of chunks and returns
/// when all of them are enqueued (and therefore read from the caller's memory). The parts run on
/// the process's thread pool (course::process_pool), shared with the library's CPU dot and with
/// every other context: a process never has more staging threads than CPUs.
class Stager {
 public:
  /// `threads` parts (the caller's thread runs part 0), each with two pinned chunks of `chunk`
  /// floats. Starts (or grows) the process's pool; throws std::system_error when it cannot.
  Stager(course::Context& gpu, int threads, std::size_t chunk = kChunk);
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  /// One chunk: `count` floats from host `src` to device `dst`.
  struct Piece {
    const float* src;
    float* dst;
    std::size_t count;
  };
  /// Copies every piece to the device through the pinned chunks, on the context's stream, in up to
  /// threads() parts (the caller's thread runs the first). Returns once every host read is done and
  /// every copy is enqueued; the copies may still be in flight.
  void run(const std::vector<Piece>& pieces);
  int threads() const noexcept { return static_cast<int>(slots_.size()); }
  /// Floats per pinned chunk: the size of the pieces run() expects.
  std::size_t chunk() const noexcept { return chunk_; }

 private:
  struct Slot {
    course::PinnedBuffer<float> chunk[2];
    course::Event done[2] = {course::Event(cudaEventDisableTiming), course::Event(cudaEventDisableTiming)};
    int next = 0;
  };
  void work(int w, const std::vector<Piece>& pieces, int used);

  course::Context& gpu_;
  std::size_t chunk_;
  std::vector<Slot> slots_;
  unsigned pool_threads_ = 1;  // threads wanted of the process's pool: min(threads, CPUs)
};

/// Events recorded on a stream at the boundaries of a call's phases, for the phase breakdown.
/// Phases: allocate, copy x, copy y, kernel, copy back, free (mark(0) before the first, mark(k)
/// after phase k).
class PhaseEvents {
 public:
  static constexpr int kPhases = 6;
  explicit PhaseEvents(cudaStream_t stream);
  PhaseEvents(const PhaseEvents&) = delete;
  PhaseEvents& operator=(const PhaseEvents&) = delete;
  void mark(int boundary);
  /// Waits, then the milliseconds of each phase.
  std::vector<double> phase_ms();

 private:
  cudaStream_t stream_;
  std::vector<course::Event> events_;  // kPhases + 1 of them
};

/// Records a phase boundary when timing is on (the versions call it; it costs nothing otherwise).
inline void mark(PhaseEvents* clock, int boundary) {
  if (clock != nullptr) clock->mark(boundary);
}

/// Whether [p, p + bytes) lies entirely inside one range of `ranges` (each entry: a range's first
/// byte -> its length in bytes; the ranges are disjoint). False for a null p, bytes == 0 or no
/// ranges. Engine::is_registered asks it of the engine's registrations (exercise 4, *think*).
bool covers(const std::map<const char*, std::size_t>& ranges, const void* p, std::size_t bytes);

/// What the reused dot asks of the GPU, one virtual call per step, so that its order can be
/// checked without one: the engine's StreamOps (dot.cu) makes the CUDA calls on the stream it is
/// given; the host tests' records them and plays them in stream order ("ch07 reuse on the host: *").
class StreamOps {
 public:
  virtual ~StreamOps() = default;
  /// Enqueues a copy of `count` floats from host `h_src` to device `d_dst` on `stream`.
  virtual void copy_to_device(float* d_dst, const float* h_src, std::size_t count, cudaStream_t stream) = 0;
  /// Enqueues launch_dot(d_x, d_y, n, d_partials, max_blocks, d_result, stream).
  virtual void dot(const float* d_x, const float* d_y, std::size_t n, float* d_partials, int max_blocks,
                   float* d_result, cudaStream_t stream) = 0;
  /// Enqueues a copy of `count` floats from device `d_src` to host `h_dst` on `stream`.
  virtual void copy_to_host(float* h_dst, const float* d_src, std::size_t count, cudaStream_t stream) = 0;
  /// Returns when everything enqueued on `stream` has finished.
  virtual void wait(cudaStream_t stream) = 0;
  /// The phase clock's boundary k (mark(clock, k) of the call's PhaseEvents).
  virtual void mark(int boundary) = 0;
};

/// An engine's planned memory and stream as the reused dot sees them (Engine::view).
struct EngineView {
  std::size_t n_max = 0;        ///< the floats d_x and d_y hold
  float* d_x = nullptr;         ///< n_max floats on the device
  float* d_y = nullptr;         ///< n_max floats on the device
  float* d_partials = nullptr;  ///< max_blocks floats on the device
  int max_blocks = 0;
  float* d_result = nullptr;    ///< one float on the device
  float* h_result = nullptr;    ///< one float of pinned host memory
  cudaStream_t stream = nullptr;
};

/// Exercise 2: the reused dot of x and y (n >= 1 floats each, host memory) through `ops`, in e's
/// memory, on e.stream; returns the result. dot_reuse calls it with the engine's StreamOps.
float reuse_steps(StreamOps& ops, const EngineView& e, const float* x, const float* y, std::size_t n);

/// The C API's table of live handles (library/src/c_api.cpp): every handle created and not yet destroyed,
/// each with the one owner the table keeps. A call takes a copy of the owner (acquire) and holds it
/// until it returns, so a destroy on another thread never frees a context under a call. A template
/// so that the host tests fill it with a fake context ("ch07 handles on the host: *"); c_api.cpp
/// keeps one, of dotcourse_context. Thread-safe: every member locks the table.
template <class T>
class Handles {
 public:
  /// Makes `owner` live under its address (the handle).
  void add(std::shared_ptr<T> owner) {
    std::lock_guard<std::mutex> guard(mutex_);
    const T* handle = owner.get();
    live_.emplace(handle, std::move(owner));
  }
  /// A copy of the owner of `handle`, or null when it is not live (null, destroyed, never created).
  std::shared_ptr<T> acquire(const T* handle) const {
    if (handle == nullptr) return nullptr;
    std::lock_guard<std::mutex> guard(mutex_);
    const auto it = live_.find(handle);
    return it == live_.end() ? nullptr : it->second;
  }
  /// Live handles now.
  std::size_t size() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return live_.size();
  }

  /// Exercise 1b, what dotcourse_destroy asks: ends `handle`'s life in the table and hands its
  /// owner to the caller, who frees the context by dropping it. Null when the handle is not live.
  std::shared_ptr<T> retire(const T* handle) {
    // BEGIN SOLUTION
    std::lock_guard<std::mutex> guard(mutex_);
    const auto it = live_.find(handle);
    if (it == live_.end()) return nullptr;
    std::shared_ptr<T> last = std::move(it->second);  // the table's reference, moved out: no copy is left
    live_.erase(it);
    return last;  // freed by the caller, outside the lock, or by a call still holding its own copy
    // STUB
    //> // TODO(student): exercise 1b. What must hold when this returns: `handle` is no longer live
    //> // (acquire and a second retire give null), and the pointer returned is the reference the table
    //> // had, so that once the caller drops it and no call holds a copy, the context is freed, and
    //> // not before (never here, under the table's lock). A handle that is not live gives null and
    //> // changes nothing. live_ is read and changed only under mutex_. Tests (host, a fake context):
    //> // "ch07 handles on the host: *"; with a GPU, "ch07 context: *" and "ch07 threads: destroying a
    //> // context while other threads call it".
    //> (void)handle;
    //> return nullptr;
    // END SOLUTION
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const T*, std::shared_ptr<T>> live_;
};

/// Exercise 1a's plan: where each of the engine's device regions starts in its one arena (byte
/// offsets) and the arena's size. bytes == 0 means "not planned".
struct ScratchPlan {
  std::size_t off_x = 0, off_y = 0, off_partials = 0, off_result = 0, bytes = 0;
};

/// Exercise 1a: the plan for every call of up to n_max elements whose launch_dot grid has up to
/// max_blocks blocks. A function of the two numbers and nothing else (no GPU): Engine::Engine
/// reserves plan.bytes once and finds its regions at the offsets; the host tests check the plan
/// itself ("ch07 plan on the host: *").
ScratchPlan plan_scratch(std::size_t n_max, int max_blocks);

/// Everything one dotcourse_context owns. Not copyable, not thread-safe by itself: the C API
/// serializes calls with `lock`.
class Engine {
 public:
  /// Creates the context on `device` and allocates everything a dot of up to n_max elements
  /// needs, once. Throws NoGpuError (no GPU, no such device), UsageError (n_max = 0),
  /// CudaError (out of memory, ...).
  Engine(int device, std::size_t n_max, int stage_threads = 0);
  /// Unregisters the host ranges still registered (register_host).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// The largest n planned for: the constructor's, or more after a call grew it (exercise 3).
  std::size_t n_max() const noexcept { return n_max_; }
  /// Re-plans for `n_max` elements when that is more than now: the arena grows (the old one freed,
  /// after the stream's work), the regions move. If the new arena cannot be had, the old plan is
  /// reserved again and the error thrown: the engine works as before.
  void replan(std::size_t n_max);
  course::Context& gpu() noexcept { return gpu_; }
  float* d_x() const;
  float* d_y() const;
  /// One partial sum per block of the first pass, and the result after the second.
  float* d_partials() const;
  float* d_result() const;
  float* h_result() noexcept { return h_result_.data(); }
  int max_blocks() const noexcept { return max_blocks_; }
  Stager& stager() noexcept { return stager_; }
  /// The planned memory and the stream, as reuse_steps sees them.
  EngineView view();

  std::mutex lock;  ///< held by every C API call on this engine

  /// Pins the caller's host memory [p, p + bytes) (cudaHostRegister, read-only for the device where
  /// it can) so that dot_host copies arrays inside it straight to the GPU. The caller keeps the
  /// memory allocated until unregister_host. Throws UsageError for an empty or overlapping range.
  void register_host(const void* p, std::size_t bytes);
  /// Undoes register_host(p, ...) (p as registered). Throws UsageError if p is not registered here.
  void unregister_host(const void* p);
  /// Whether [p, p + bytes) lies inside one range registered here.
  bool is_registered(const void* p, std::size_t bytes) const;
  std::size_t registered_ranges() const noexcept { return registered_.size(); }
  /// The device's view of h_result() (pinned memory is mapped): kernels write the result there.
  float* d_h_result();
  /// What chapter 10's typed dot (library/src/typed.cu) keeps between calls, made on its first
  /// call; it is freed with the engine, before the engine's context.
  std::shared_ptr<void>& typed_state() noexcept { return typed_; }

 private:
  course::Context gpu_;
  std::size_t n_max_ = 0;
  int max_blocks_ = 0;
  ScratchPlan plan_;  // plan_scratch(n_max_, max_blocks_), reserved on gpu_
  course::PinnedBuffer<float> h_result_;
  float* d_h_result_ = nullptr;
  Stager stager_;
  std::map<const char*, std::size_t> registered_;  // start -> bytes of each registered host range
  std::shared_ptr<void> typed_;                    // last: destroyed first
};

/// The deterministic two-pass dot of device arrays: x·y into *d_result (device memory),
/// asynchronously on `stream`; d_partials holds at least max_blocks floats. n = 0 writes 0.
void launch_dot(const float* d_x, const float* d_y, std::size_t n, float* d_partials, int max_blocks,
                float* d_result, cudaStream_t stream);

/// The largest grid launch_dot uses on this engine's device (partials to reserve).
int dot_max_blocks(course::Context& gpu);

/// A host-array dot: x and y in host memory, the result returned on the host. `clock` is null
/// except when the driver measures the phases.
using HostDot = float (*)(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock);

/// The chapter's registry: the floor (speed_of_light), then the story's versions in order:
/// alloc_per_call, reuse, reuse_staged.
const std::vector<course::Version<HostDot>>& versions();

/// True for the speed-of-light row (link_floor): not a dot product but the floor every version is
/// held to, timed in the same run. It computes nothing: the driver and the tests check that it moved
/// the bytes (check_link_floor), never a result; it runs beside any --kernel.
bool is_speed_of_light(const course::Version<HostDot>& version);

/// Not a dot product: the registry's speed_of_light row. x and y (n floats each) must be
/// page-locked host memory, pinned or registered (its bytes go by DMA; from pageable memory the row
/// would be the pageable path, not the floor): one copy of each to the engine's device buffers by
/// the copy engine, on the engine's stream, and nothing else: no staging, no kernel, no result.
/// Returns NaN once both copies have landed. n > n_max: as require_fits decides (exercise 3).
float link_floor(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock);

/// The check of the speed-of-light row, for the driver and the tests: requires x and y page-locked
/// (UsageError otherwise), fills the engine's device buffers with NaN, runs link_floor, then reads
/// the n floats of each that landed, without waiting for the engine's stream (a floor that returned
/// before its copies landed shows the poison), and compares them with x and y bit for bit. ok when
/// every byte moved; rel_error is NaN (no result to compare).
course::Verdict check_link_floor(Engine& e, const float* x, const float* y, std::size_t n);

/// Exercise 3's decision: what a host-array call with n > n_max does. Either choice is defensible
/// and the tests hold a build to the rules of the one it declares (over_n_max()); for both, the
/// result is right or the error clear, nothing is read or written past a buffer, nothing leaks, and
/// the context works afterwards.
enum class OverNMax {
  undecided,  ///< no decision yet (the stub): every n_max test fails and says so
  refuse,     ///< TooLargeError naming n and n_max (the C API: DOTCOURSE_ERROR_TOO_LARGE); e unchanged
  grow,       ///< the engine re-plans for a larger n_max (at least n), then computes
};
/// "undecided", "refuse" or "grow".
const char* to_string(OverNMax decision);
/// Exercise 3: the decision this build made.
OverNMax over_n_max();
/// Exercise 3, the rule as a function of two numbers (no GPU: the host tests call it, "ch07 n_max on
/// the host: *"): the n_max a call of n elements needs on a plan for n_max. n <= n_max: n_max. n >
/// n_max: refuse throws TooLargeError naming n and n_max; grow returns the new n_max, at least n.
std::size_t n_max_for(std::size_t n, std::size_t n_max);
/// What every host-array path calls before it touches the GPU: n_max_for(n, e.n_max()), then
/// Engine::replan when that asks for more. Throws UsageError when n_max_for returns less than n.
void require_fits(Engine& e, std::size_t n);

/// The version the C API's dotcourse_dot uses for n elements: the fastest, reuse_staged, except
/// for small n where waking threads costs more than it saves (reuse).
HostDot fastest(std::size_t n);

/// The C API's host-array dot: arrays inside ranges registered with Engine::register_host are
/// copied straight from there (the pinned rate, no staging); the others as fastest(n) does.
float dot_host(Engine& e, const float* x, const float* y, std::size_t n);

/// x·y of two arrays in device memory, on the caller's `stream`; returns when the result is on
/// the host. Checks that x and y are device memory of this engine's device.
float dot_device(Engine& e, const float* d_x, const float* d_y, std::size_t n, cudaStream_t stream);

}  // namespace ch07
