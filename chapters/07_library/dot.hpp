#pragma once
/// \file
/// \brief Chapter 07: the course's dot product as a library: the engine behind dotcourse.h.
///
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

  std::size_t n_max() const noexcept { return n_max_; }
  course::Context& gpu() noexcept { return gpu_; }
  float* d_x() const;
  float* d_y() const;
  /// One partial sum per block of the first pass, and the result after the second.
  float* d_partials() const;
  float* d_result() const;
  float* h_result() noexcept { return h_result_.data(); }
  int max_blocks() const noexcept { return max_blocks_; }
  Stager& stager() noexcept { return stager_; }

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
  std::size_t off_x_ = 0, off_y_ = 0, off_partials_ = 0, off_result_ = 0, bytes_ = 0;
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
/// Returns NaN once both copies have landed. Throws TooLargeError for n > n_max.
float link_floor(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock);

/// The check of the speed-of-light row, for the driver and the tests: requires x and y page-locked
/// (UsageError otherwise), fills the engine's device buffers with NaN, runs link_floor, then reads
/// the n floats of each that landed, without waiting for the engine's stream (a floor that returned
/// before its copies landed shows the poison), and compares them with x and y bit for bit. ok when
/// every byte moved; rel_error is NaN (no result to compare).
course::Verdict check_link_floor(Engine& e, const float* x, const float* y, std::size_t n);

/// Exercise 3: what a call that does not fit e's plan (n > n_max) must do: throws TooLargeError
/// naming n and n_max. Every host-array path calls it before it touches the GPU.
void require_fits(const Engine& e, std::size_t n);
/// The same rule as a function of n and the plan's n_max alone (what require_fits(e, n) asks with
/// e.n_max()): no GPU needed, so the host tests call it ("ch07 n_max on the host: *").
void require_fits(std::size_t n, std::size_t n_max);

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
