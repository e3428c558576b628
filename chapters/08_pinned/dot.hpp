#pragma once
/// \file
/// \brief Chapter 08: the paths from host memory to the GPU, and what pinning costs.
///
/// A Path is one way for host data to reach the device (and results to come back): pageable
/// cudaMemcpy, pinned memory, the caller's buffer registered, mapped zero-copy, staging through
/// reused pinned buffers, managed memory with and without prefetch. Each path owns the host memory
/// a caller of that path would have (a std::vector for pageable data, a pinned block, managed
/// memory), so the benchmark, the tests and the end-to-end dot all use it the same way. The
/// registry, versions(), is the only list of them.

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/pinned.hpp"
#include "course/reference.hpp"
#include "course/registry.hpp"
#include "course/stream.hpp"
#include "course/thread_pool.hpp"

namespace ch08 {

/// Page-locks the caller's own memory [ptr, ptr + bytes) for its lifetime (cudaHostRegister),
/// and unregisters it on destruction. A failed registration throws CudaError with the reason
/// (already registered, a range the driver cannot lock) and leaves nothing behind: the CUDA
/// context stays usable and the memory stays the caller's, pageable as before.
class Registration {
 public:
  Registration() = default;
  Registration(void* ptr, std::size_t bytes, unsigned flags = cudaHostRegisterDefault);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  Registration(Registration&& o) noexcept;
  Registration& operator=(Registration&& o) noexcept;
  void* data() const noexcept { return ptr_; }
  std::size_t bytes() const noexcept { return bytes_; }
  /// Unregisters now (also done by the destructor); throws CudaError if the driver refuses.
  void release();

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Chunk k of a staged copy: bytes [offset, offset + len) of the source travel through staging
/// buffer `slot`.
struct StagedChunk {
  std::size_t offset = 0;
  std::size_t len = 0;
  int slot = 0;
};

/// Exercise 1's index arithmetic, host only (Stager::h2d walks its chunks with it): chunk k of a
/// copy of `bytes` in chunks of `chunk_bytes` through `buffers` staging buffers. The chunks follow
/// each other from offset 0, every one chunk_bytes long but the last, which holds what is left
/// (1 to chunk_bytes bytes); they cover [0, bytes) exactly once, with no overflow for any bytes up
/// to SIZE_MAX. Chunk k goes through buffer k % buffers (the buffers in turn, so the one refilled
/// is the one whose copy was enqueued longest ago). For k at or past the last chunk + 1 (every k
/// when bytes is 0): len 0, which ends the walk. Needs chunk_bytes > 0 and buffers > 0.
StagedChunk staged_chunk(std::size_t bytes, std::size_t chunk_bytes, int buffers, std::size_t k);

/// The steps of a staged copy, one call per chunk each, as the exercise's schedule (stage_chunks in
/// dot.cu, which Stager::h2d runs) sees them. Stager::h2d makes them CUDA calls on its own buffers,
/// events, pool and stream, inlined (no virtual call); a host test implements this interface with a
/// recorder instead and runs the same schedule through on_host::stage_chunks, without a GPU.
class StagingSteps {
 public:
  virtual ~StagingSteps() = default;
  /// Staging buffer `slot` (0 <= slot < buffers): chunk_bytes of pinned host memory.
  virtual unsigned char* buffer(int slot) = 0;
  /// Returns once the last copy recorded out of buffer `slot` (its event) has finished
  /// (cudaEventSynchronize); at once when its event was never recorded.
  virtual void wait(int slot) = 0;
  /// The host threads copy [from, from + len) to `to` (the pool: parallel_memcpy); returns when done.
  virtual void fill(unsigned char* to, const unsigned char* from, std::size_t len) = 0;
  /// Enqueues the copy engine's copy of [from, from + len), pinned memory, to device memory `to` on
  /// `stream` (cudaMemcpyAsync); returns at once, the copy reads `from` later.
  virtual void send(unsigned char* to, const unsigned char* from, std::size_t len, cudaStream_t stream) = 0;
  /// Records buffer `slot`'s event on `stream` (cudaEventRecord): it completes once everything
  /// enqueued on `stream` before it has.
  virtual void record(int slot, cudaStream_t stream) = 0;
};

namespace on_host {
/// The exercise's schedule (stage_chunks, dot.cu) with `steps`: the copy of `bytes` from h_src to
/// d_dst in chunks of chunk_bytes through `buffers` staging buffers, on `stream`.
void stage_chunks(StagingSteps& steps, unsigned char* d_dst, const unsigned char* h_src, std::size_t bytes,
                  std::size_t chunk_bytes, int buffers, cudaStream_t stream);
}  // namespace on_host

/// Copies pageable host memory to the device through `buffers` reused pinned buffers of
/// `chunk_bytes` each: host threads copy chunk k+1 into a free pinned buffer while the copy
/// engine sends chunk k. The answer when the caller's memory cannot be pinned.
class Stager {
 public:
  Stager(course::Context& ctx, unsigned threads, std::size_t chunk_bytes, int buffers = 4);
  /// Waits for every copy still reading a staging buffer, then frees them: destroying a Stager
  /// while copies are in flight loses nothing.
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  /// Enqueues the copy of `bytes` from pageable `h_src` to `d_dst` on `stream`. Returns once the
  /// last chunk has been staged: the caller may overwrite `h_src` then; `d_dst` is complete when
  /// the stream reaches this point.
  void h2d(void* d_dst, const void* h_src, std::size_t bytes, cudaStream_t stream);

  std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }
  int buffers() const noexcept { return static_cast<int>(slots_.size()); }
  unsigned threads() const noexcept { return pool_.size(); }

 private:
  struct Slot {
    course::PinnedBuffer<unsigned char> host;
    course::Event done{cudaEventDisableTiming};  // recorded after the copy out of `host`: the buffer is free again
  };
  /// The pool's threads copy [src, src + bytes) to dst, each a contiguous slice.
  void parallel_copy(void* dst, const void* src, std::size_t bytes);

  course::Context& ctx_;
  std::size_t chunk_bytes_;
  std::vector<Slot> slots_;
  course::ThreadPool pool_;
};

/// Host memory `bytes` long copied with all of `pool`'s threads (the staged path's other ceiling).
void parallel_memcpy(course::ThreadPool& pool, void* dst, const void* src, std::size_t bytes);

/// Exercise 2 (*think*): the predicted time of a staged copy, host only. `bytes` travel in chunks of
/// `chunk_bytes` (the last one shorter). The host fills a chunk in per_chunk_us µs plus its length
/// at `host_gbps`, then hands it to the link and starts the next; the link sends a chunk at
/// `link_gbps` once the host has filled it and the link has sent the previous one. As in Stager,
/// a buffer is refilled only after the link has sent the chunk in it: with two buffers, chunk i+2
/// waits for chunk i's copy (the answer is the same with the Stager's four). Milliseconds from the
/// first host copy to the last byte on the device; 0 for no bytes. Throws UsageError for
/// chunk_bytes 0, a rate that is not positive or a negative per_chunk_us.
double staged_copy_ms(std::size_t bytes, std::size_t chunk_bytes, double host_gbps, double link_gbps, double per_chunk_us);

/// One way from host memory to the device. `prepare(max_bytes)` allocates, once, what the path
/// keeps; then src()/dst() are the caller's host arrays, and the copies and the dot use them.
class Path {
 public:
  virtual ~Path() = default;
  /// Allocates everything for transfers of up to `max_bytes` (and a dot of up to max_bytes / 8
  /// elements: x and y in the first and second half of src()).
  virtual void prepare(std::size_t max_bytes) = 0;
  /// The host memory data comes from and goes back to (each max_bytes long).
  virtual unsigned char* src() = 0;
  virtual unsigned char* dst() = 0;
  /// Host → device: src()[0, bytes) to the device buffer, on `stream`.
  virtual void h2d(std::size_t bytes, cudaStream_t stream) = 0;
  /// Device → host: the device buffer's first `bytes` to dst(), on `stream`.
  virtual void d2h(std::size_t bytes, cudaStream_t stream) = 0;
  /// The device buffer the copies use (max_bytes long).
  virtual unsigned char* device() = 0;
  /// Before a timed h2d (or d2h): put the data back where a caller's would be (managed memory
  /// migrates, so each sample starts from the host again). Never timed.
  virtual void reset(bool for_h2d, cudaStream_t stream) { (void)for_h2d; (void)stream; }
  /// The dot of x = src() and y = src() + max_bytes/2 (n floats each), result on the host, every
  /// cost counted: the copies (or what stands for them), the device dot, the result back.
  virtual float dot(std::size_t n) = 0;
  /// Copies are asynchronous (the stream can be held while they are queued; see the driver).
  virtual bool asynchronous() const { return true; }
  /// The path has a device → host direction of its own.
  virtual bool has_d2h() const { return true; }
  /// Bytes prepare() was given.
  std::size_t max_bytes() const noexcept { return max_bytes_; }

 protected:
  explicit Path(course::Context& ctx) : ctx_(ctx), h_result_(1) {}
  /// Checks `bytes` against prepare()'s size (UsageError otherwise).
  void require_prepared(std::size_t bytes, const char* what) const;
  course::Context& ctx_;
  std::size_t max_bytes_ = 0;
  course::PinnedBuffer<float> h_result_;  // where every path's dot lands on the host
};

/// Makes a path bound to a context.
using PathFactory = std::unique_ptr<Path> (*)(course::Context& ctx);

/// The chapter's registry: the floor (speed_of_light) first, then pageable (what a plain program
/// does), then the pinned paths.
const std::vector<course::Version<PathFactory>>& versions();

/// True for the speed-of-light row: not a path a caller would take for a dot but the floor every
/// path is held to, timed beside them. Its memory and copies are the pinned path's (page-locked
/// data read by the copy engine, x and y one copy each); its dot(n) stops there: no kernel, no
/// result back (it returns NaN once x and y have landed). The driver and the tests check the bytes
/// it moved (check_link_floor), never a result; it runs beside any --kernel.
bool is_speed_of_light(const course::Version<PathFactory>& version);

/// The check of a path's dot(n) that computes nothing (the speed-of-light row): fills path's
/// device buffer with NaN on ctx's stream (the path's context), runs path.dot(n) with x and y
/// where the driver puts them (src() and src() + max_bytes()/2), then reads the two halves of the
/// device buffer without waiting for ctx's stream (a dot that returned before its copies landed
/// shows the poison) and compares them with x and y byte for byte. ok when every byte moved;
/// rel_error is NaN (no result to compare). Throws UsageError when 2n floats exceed prepare()'s size.
course::Verdict check_link_floor(course::Context& ctx, Path& path, std::size_t n);

/// The deterministic device dot of n floats at d_x, d_y (device, mapped or managed pointers), on
/// the context's stream; copies the result to `h_result` (pinned) and waits for it. Uses the
/// context's scratch arena (reserve device_dot_scratch_bytes() first).
float device_dot(course::Context& ctx, const float* d_x, const float* d_y, std::size_t n, float* h_result);

/// Scratch bytes device_dot needs (reserve them once at set-up).
std::size_t device_dot_scratch_bytes(const course::Context& ctx);

/// A kernel that spins until *flag != 0 (pinned host memory) or `timeout_ns` pass: it holds a
/// stream while the host queues copies behind it, so that events time the copies, not their
/// enqueueing (NVIDIA's nvbandwidth does the same).
void hold_stream(const volatile int* flag, long long timeout_ns, cudaStream_t stream);

/// The host link as the driver reports it (NVML, loaded at run time; all zero when unavailable).
struct LinkInfo {
  int generation = 0;        ///< PCIe generation the device and the system support
  int width = 0;             ///< lanes
  int current_generation = 0;
  int current_width = 0;
  double gbps = 0;           ///< payload rate per direction after line coding (GB/s, 1e9 B/s)
  std::string text;          ///< "PCIe Gen5 x16: 63.0 GB/s per direction" or why it is unknown
};
LinkInfo link_info(int device);

}  // namespace ch08
