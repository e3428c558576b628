// Generated from solutions/08_pinned/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 08 — pinned memory: every path from host memory to the GPU.
//
// Paths (ch08::versions(); one with `08_pinned --kernel NAME`, all with `08_pinned`):
//   speed_of_light    not a dot: the pinned path's two copies, no kernel, no result  08_pinned --kernel speed_of_light
//                     (the floor every path is held to; it runs beside any --kernel)
//   pageable          cudaMemcpy from std::vector: the driver stages it for you     08_pinned --kernel pageable
//   pinned            the data lives in cudaMallocHost memory: DMA straight from it 08_pinned --kernel pinned
//   registered        the caller's std::vector page-locked with cudaHostRegister    08_pinned --kernel registered
//   mapped            zero-copy: a kernel reads pinned host memory over the link    08_pinned --kernel mapped
//   staged            pageable data copied by host threads into reused pinned       08_pinned --kernel staged
//                     buffers while the previous chunk is on the link (exercise)
//   managed           cudaMallocManaged, the kernel's page faults move the data     08_pinned --kernel managed
//   managed_prefetch  the same, moved ahead with cudaMemPrefetchAsync               08_pinned --kernel managed_prefetch
//
// The driver sweeps transfers from 4 KiB to 256 MiB (1 GiB with --full) in both directions and
// both at once, fits t = α + S/β per path, measures what pinning costs, and runs the dot of host
// data end to end on every path.

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "course/check.hpp"
#include "course/device.hpp"
#include "course/kernels/two_pass.cuh"
#include "dot.hpp"

namespace ch08 {
namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ long long global_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_kernel(const volatile int* flag, long long timeout_ns) {
  const long long t0 = global_ns();
  while (*flag == 0 && global_ns() - t0 < timeout_ns) __nanosleep(2000);
}

// [sm_copy_kernel]
// An SM-driven copy: the threads themselves load and store, 16 bytes each, whichever side is
// host memory (mapped) or device memory. Over the link, each warp's 512 bytes become a few PCIe
// read requests; many warps keep enough of them in flight to fill the link.
__global__ void sm_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, std::size_t n16) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride)
    dst[i] = src[i];
}
// [sm_copy_kernel]

__global__ void byte_copy_kernel(unsigned char* dst, const unsigned char* src, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

// The dot itself is the kit's two-pass dot (chapter 05's two-level reduction): one partial per
// block, a fixed grid, then one block adds the partials in a fixed order, so the same inputs give
// the same bits.
using course::kernels::dot_partials;
using course::kernels::sum_partials;

int dot_grid(const course::Context& ctx, std::size_t n) {
  const std::size_t full = static_cast<std::size_t>(ctx.facts().sm_count) * 8;  // 8 blocks of 256 per SM
  return static_cast<int>(std::max<std::size_t>(1, std::min(full, (n + kBlock - 1) / kBlock)));
}

void sm_copy(void* dst, const void* src, std::size_t bytes, const course::Context& ctx, cudaStream_t stream) {
  const std::size_t n16 = bytes / 16;
  if (n16 > 0) {
    const int grid = ctx.facts().sm_count * 8;
    sm_copy_kernel<<<grid, kBlock, 0, stream>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16);
    CUDA_CHECK_LAUNCH("sm_copy_kernel");
  }
  const std::size_t tail = bytes - n16 * 16;
  if (tail > 0) {
    byte_copy_kernel<<<1, kBlock, 0, stream>>>(static_cast<unsigned char*>(dst) + n16 * 16,
                                               static_cast<const unsigned char*>(src) + n16 * 16, tail);
    CUDA_CHECK_LAUNCH("byte_copy_kernel");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Kit of the chapter: registration, the pinned check, the hold, the device dot.

Registration::Registration(void* ptr, std::size_t bytes, unsigned flags) {
  const cudaError_t code = cudaHostRegister(ptr, bytes, flags);
  if (code != cudaSuccess) {
    cudaGetLastError();  // the error is not sticky: clear it, so that no later check reports it
    throw course::CudaError(code, std::string("cudaHostRegister of ") + course::format_bytes(bytes) +
                                      " failed: " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) +
                                      "); the memory is unchanged and still pageable");
  }
  ptr_ = ptr;
  bytes_ = bytes;
}

Registration::~Registration() {
  if (ptr_ != nullptr) cudaHostUnregister(ptr_);  // a destructor must not throw
}

Registration::Registration(Registration&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

Registration& Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) cudaHostUnregister(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void Registration::release() {
  if (ptr_ == nullptr) return;
  void* p = std::exchange(ptr_, nullptr);
  bytes_ = 0;
  const cudaError_t code = cudaHostUnregister(p);
  if (code != cudaSuccess) {
    cudaGetLastError();
    throw course::CudaError(code, std::string("cudaHostUnregister failed: ") + cudaGetErrorName(code));
  }
}

void hold_stream(const volatile int* flag, long long timeout_ns, cudaStream_t stream) {
  hold_kernel<<<1, 1, 0, stream>>>(flag, timeout_ns);
  CUDA_CHECK_LAUNCH("hold_kernel");
}

std::size_t device_dot_scratch_bytes(const course::Context& ctx) {
  course::ScratchLayout layout;
  layout.add(static_cast<std::size_t>(ctx.facts().sm_count) * 8 * sizeof(float));
  layout.add(sizeof(float));
  return layout.bytes();
}

float device_dot(course::Context& ctx, const float* d_x, const float* d_y, std::size_t n, float* h_result) {
  course::ScratchLayout layout;
  const std::size_t partials_at = layout.add(static_cast<std::size_t>(ctx.facts().sm_count) * 8 * sizeof(float));
  const std::size_t result_at = layout.add(sizeof(float));
  auto* base = static_cast<unsigned char*>(ctx.scratch(layout.bytes()));
  auto* d_partials = reinterpret_cast<float*>(base + partials_at);
  auto* d_result = reinterpret_cast<float*>(base + result_at);
  const int grid = dot_grid(ctx, n);
  dot_partials<kBlock><<<grid, kBlock, 0, ctx.stream()>>>(d_x, d_y, n, d_partials);
  CUDA_CHECK_LAUNCH("dot_partials");
  sum_partials<kBlock><<<1, kBlock, 0, ctx.stream()>>>(d_partials, grid, d_result);
  CUDA_CHECK_LAUNCH("sum_partials");
  CUDA_CHECK(cudaMemcpyAsync(h_result, d_result, sizeof(float), cudaMemcpyDeviceToHost, ctx.stream()));
  ctx.synchronize();
  return *h_result;
}

void parallel_memcpy(course::ThreadPool& pool, void* dst, const void* src, std::size_t bytes) {
  const unsigned parts = pool.size();
  // Slices of whole pages (the system's size: not 4 KiB everywhere), so no two threads write one page.
  const std::size_t page = course::host_page_bytes();
  const std::size_t pages = (bytes + page - 1) / page;
  pool.run([&](unsigned part) {
    const std::size_t begin = std::min(bytes, pages * part / parts * page);
    const std::size_t end = std::min(bytes, pages * (part + 1) / parts * page);
    if (end > begin)
      std::memcpy(static_cast<unsigned char*>(dst) + begin, static_cast<const unsigned char*>(src) + begin, end - begin);
  });
}

// ---------------------------------------------------------------------------------------------
// The staged copy (the exercise).

Stager::Stager(course::Context& ctx, unsigned threads, std::size_t chunk_bytes, int buffers)
    : ctx_(ctx), chunk_bytes_(chunk_bytes), pool_(threads) {
  if (chunk_bytes == 0 || buffers < 2)
    throw course::UsageError("Stager: chunk_bytes must be > 0 and buffers >= 2 (one filling, one on the link)");
  ctx_.activate();
  slots_.resize(static_cast<std::size_t>(buffers));  // each slot's event is made here (course::Event)
  for (auto& s : slots_) s.host = course::PinnedBuffer<unsigned char>(chunk_bytes);
}

Stager::~Stager() {
  // The last copy out of each buffer has finished reading it before the buffer is freed.
  for (auto& s : slots_) cudaEventSynchronize(s.done);
}

void Stager::parallel_copy(void* dst, const void* src, std::size_t bytes) { parallel_memcpy(pool_, dst, src, bytes); }

// [staged_chunk]
// Exercise 1's arithmetic: where chunk k of a staged copy starts, how long it is, and which buffer
// it travels through. Host only, so a test can check it without a GPU.
StagedChunk staged_chunk(std::size_t bytes, std::size_t chunk_bytes, int buffers, std::size_t k) {
  if (chunk_bytes == 0 || buffers < 1)
    throw course::UsageError("staged_chunk: chunk_bytes " + std::to_string(chunk_bytes) + ", buffers " +
                             std::to_string(buffers) + " (need both > 0)");
  // [hole 1 begin]
  // TODO(student): exercise 1 (its arithmetic). Return chunk k as dot.hpp states above
  // staged_chunk: where it starts, how long it is (the last one shorter), which buffer it uses,
  // and len 0 once k is past the last chunk, for any bytes up to SIZE_MAX. Test: "ch08
  // staged_chunk: *" (host only: runs without a GPU).
  (void)bytes;
  (void)k;
  return StagedChunk{};
  // [hole 1 end]
}
// [staged_chunk]

// [staged_h2d]
// Exercise 1, the staged copy's schedule. It reaches the pinned buffers, the pool, the stream and
// the events only through `steps`, one call per chunk each: Stager::h2d (below) passes the CUDA
// calls themselves (inlined: no virtual call), a host test passes a recorder (StagingSteps, dot.hpp).
template <class Steps>
void stage_chunks(Steps& steps, unsigned char* d_dst, const unsigned char* h_src, std::size_t bytes,
                  std::size_t chunk_bytes, int buffers, cudaStream_t stream) {
  // [hole 2 begin]
  // TODO(student): the staged copy, through `steps` (StagingSteps in dot.hpp says what each
  // step does; Stager::h2d below makes them CUDA calls). What must hold:
  //   - for any bytes (0, 1, a chunk +- 1, many chunks, the last one short), d_dst holds exactly
  //     h_src's bytes once `stream` reaches the point where this returns, and h_src may be
  //     overwritten as soon as it returns;
  //   - a copy engine reads only pinned memory: every byte travels through a staging buffer
  //     (steps.buffer), chunk k's bytes and buffer given by staged_chunk (exercise 1's
  //     arithmetic, above: "ch08 staged_chunk: *" checks it without a GPU), the chunks in order;
  //   - every copy and event on `stream`, the one given;
  //   - a buffer is never refilled while a copy out of it may still be reading it, yet the host
  //     fills the next buffer while the link sends the previous one (the overlap is what the
  //     performance rule measures).
  //   Tests: "ch08 staged schedule: *" (host only: a recorder plays the copy engine as late as
  //   it may and says which step broke what), "ch08 staged: *" (bytes at awkward sizes, the dot,
  //   the same bits, new input) and "ch08 stager: *" (two 4 KiB buffers over 50 chunks;
  //   destroyed with copies in flight; the stream given). Before a buffer's first use its event
  //   was never recorded: the chapter says what waiting on such an event does.
  (void)steps;
  (void)d_dst;
  (void)h_src;
  (void)bytes;
  (void)chunk_bytes;
  (void)buffers;
  (void)stream;
  // [hole 2 end]
}

void Stager::h2d(void* d_dst, const void* h_src, std::size_t bytes, cudaStream_t stream) {
  // The steps of stage_chunks as CUDA calls on this Stager's buffers, events and pool.
  struct Steps {
    Stager& s;
    unsigned char* buffer(int slot) { return s.slots_[static_cast<std::size_t>(slot)].host.data(); }
    void wait(int slot) { CUDA_CHECK(cudaEventSynchronize(s.slots_[static_cast<std::size_t>(slot)].done)); }
    void fill(unsigned char* to, const unsigned char* from, std::size_t len) { s.parallel_copy(to, from, len); }
    void send(unsigned char* to, const unsigned char* from, std::size_t len, cudaStream_t on) {
      CUDA_CHECK(cudaMemcpyAsync(to, from, len, cudaMemcpyHostToDevice, on));
    }
    void record(int slot, cudaStream_t on) { CUDA_CHECK(cudaEventRecord(s.slots_[static_cast<std::size_t>(slot)].done, on)); }
  } steps{*this};
  stage_chunks(steps, static_cast<unsigned char*>(d_dst), static_cast<const unsigned char*>(h_src), bytes, chunk_bytes_,
               buffers(), stream);
}
// [staged_h2d]

// [staged_copy_ms]
// Exercise 2 (*think*): how long a staged copy takes, as a two-stage pipeline of host and link.
double staged_copy_ms(std::size_t bytes, std::size_t chunk_bytes, double host_gbps, double link_gbps, double per_chunk_us) {
  if (chunk_bytes == 0 || !(host_gbps > 0) || !(link_gbps > 0) || !(per_chunk_us >= 0))
    throw course::UsageError("staged_copy_ms: chunk_bytes " + std::to_string(chunk_bytes) + ", host_gbps " +
                             std::to_string(host_gbps) + ", link_gbps " + std::to_string(link_gbps) + ", per_chunk_us " +
                             std::to_string(per_chunk_us) + " (need chunk_bytes > 0, positive rates, per_chunk_us >= 0)");
  // [hole 3 begin]
  // TODO(student): the time from the first host copy to the last byte on the device, in ms,
  // for the model dot.hpp states above staged_copy_ms; 0 for no bytes. Test: "ch08
  // staged_copy_ms: matches a chunk-by-chunk simulation" (many sizes, chunk sizes, rates and
  // per-chunk costs; the last chunk shorter or not; the host faster and slower than the link).
  (void)bytes;
  return -1.0;
  // [hole 3 end]
}
// [staged_copy_ms]

namespace on_host {
void stage_chunks(StagingSteps& steps, unsigned char* d_dst, const unsigned char* h_src, std::size_t bytes,
                  std::size_t chunk_bytes, int buffers, cudaStream_t stream) {
  ch08::stage_chunks(steps, d_dst, h_src, bytes, chunk_bytes, buffers, stream);
}
}  // namespace on_host

// ---------------------------------------------------------------------------------------------
// The paths.

void Path::require_prepared(std::size_t bytes, const char* what) const {
  if (bytes > max_bytes_)
    throw course::UsageError(std::string(what) + ": " + course::format_bytes(bytes) + " asked for, but prepare() was given " +
                             course::format_bytes(max_bytes_));
}

namespace {

// Device buffer and pinned result, shared by every path.
class DeviceSide : public Path {
 public:
  explicit DeviceSide(course::Context& ctx) : Path(ctx) {}

 protected:
  void prepare_device(std::size_t max_bytes) {
    max_bytes_ = max_bytes;
    ctx_.activate();
    course::require_fits(max_bytes + device_dot_scratch_bytes(ctx_), "the device buffer of " + course::format_bytes(max_bytes));
    d_buf_ = course::DeviceBuffer<unsigned char>(max_bytes);
    ctx_.reserve_scratch(device_dot_scratch_bytes(ctx_));
  }
  unsigned char* device() override { return d_buf_.data(); }
  // x and y, as the dot sees them, where the copies put them: the two halves of the device buffer.
  float dot_from_device(std::size_t n) {
    const auto* d_x = reinterpret_cast<const float*>(d_buf_.data());
    const auto* d_y = reinterpret_cast<const float*>(d_buf_.data() + max_bytes_ / 2);
    return device_dot(ctx_, d_x, d_y, n, h_result_.data());
  }
  course::DeviceBuffer<unsigned char> d_buf_;
};

// Copies x (first n floats of src) and y (at src + max/2) with the path's h2d, halves apart.
template <class CopyHalf>
void copy_xy(std::size_t n, std::size_t max_bytes, CopyHalf&& copy_half) {
  copy_half(0, n * sizeof(float));
  copy_half(max_bytes / 2, n * sizeof(float));
}

// [pageable_path]
// What every first program does: cudaMemcpy from ordinary memory. The driver cannot DMA from
// pages the OS may move, so it copies through its own small pinned buffers, chunk by chunk, and
// the call returns only when the data is on the device.
class Pageable : public DeviceSide {
 public:
  using DeviceSide::DeviceSide;
  void prepare(std::size_t max_bytes) override {
    prepare_device(max_bytes);
    src_.assign(max_bytes, 0);
    dst_.assign(max_bytes, 0);
  }
  unsigned char* src() override { return src_.data(); }
  unsigned char* dst() override { return dst_.data(); }
  void h2d(std::size_t bytes, cudaStream_t stream) override { copy_in(0, bytes, stream); }
  void d2h(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "d2h");
    if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(dst_.data(), d_buf_.data(), bytes, cudaMemcpyDeviceToHost, stream));
  }
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    copy_xy(n, max_bytes_, [&](std::size_t at, std::size_t b) { copy_in(at, b, ctx_.stream()); });
    return dot_from_device(n);
  }
  bool asynchronous() const override { return false; }

 private:
  void copy_in(std::size_t at, std::size_t bytes, cudaStream_t stream) {
    require_prepared(at + bytes, "h2d");
    if (bytes > 0)
      CUDA_CHECK(cudaMemcpyAsync(d_buf_.data() + at, src_.data() + at, bytes, cudaMemcpyHostToDevice, stream));
  }
  std::vector<unsigned char> src_, dst_;
};
// [pageable_path]

// Pinned: the caller keeps its data in cudaMallocHost memory from the start.
class Pinned : public DeviceSide {
 public:
  using DeviceSide::DeviceSide;
  void prepare(std::size_t max_bytes) override {
    prepare_device(max_bytes);
    src_ = course::PinnedBuffer<unsigned char>(max_bytes);
    dst_ = course::PinnedBuffer<unsigned char>(max_bytes);
    std::memset(src_.data(), 0, max_bytes);  // touch every page now, not in a timed copy
    std::memset(dst_.data(), 0, max_bytes);
  }
  unsigned char* src() override { return src_.data(); }
  unsigned char* dst() override { return dst_.data(); }
  void h2d(std::size_t bytes, cudaStream_t stream) override { copy_in(0, bytes, stream); }
  void d2h(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "d2h");
    if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(dst(), d_buf_.data(), bytes, cudaMemcpyDeviceToHost, stream));
  }
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    copy_xy(n, max_bytes_, [&](std::size_t at, std::size_t b) { copy_in(at, b, ctx_.stream()); });
    return dot_from_device(n);
  }

 protected:
  void copy_in(std::size_t at, std::size_t bytes, cudaStream_t stream) {
    require_prepared(at + bytes, "h2d");
    if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(d_buf_.data() + at, src() + at, bytes, cudaMemcpyHostToDevice, stream));
  }

 private:
  course::PinnedBuffer<unsigned char> src_, dst_;
};

// [speed_of_light_path]
// Not a path a caller would choose for a dot: the floor every path is held to, timed beside them.
// The pinned path's memory and copies, the best this chapter knows (page-locked data, read by the
// copy engine at the link's rate), and nothing after them: no kernel, no result back. Whatever a
// path adds to this time is its own.
class SpeedOfLight : public Pinned {
 public:
  explicit SpeedOfLight(course::Context& ctx) : Pinned(ctx) {}
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    copy_xy(n, max_bytes_, [&](std::size_t at, std::size_t b) { copy_in(at, b, ctx_.stream()); });
    ctx_.synchronize();
    return std::numeric_limits<float>::quiet_NaN();  // not a dot: no result
  }
};
// [speed_of_light_path]

// [registered_path]
// The caller's own std::vector, page-locked where it lies. The sweep registers it once (prepare);
// the dot registers the two arrays on every call and unregisters them after, and counts it: a
// library that is handed pageable memory cannot keep it locked behind the caller's back.
class Registered : public DeviceSide {
 public:
  using DeviceSide::DeviceSide;
  void prepare(std::size_t max_bytes) override {
    prepare_device(max_bytes);
    src_.assign(max_bytes, 0);
    dst_.assign(max_bytes, 0);
    reg_src_ = Registration(src_.data(), max_bytes);
    reg_dst_ = Registration(dst_.data(), max_bytes);
  }
  unsigned char* src() override { return src_.data(); }
  unsigned char* dst() override { return dst_.data(); }
  void h2d(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "h2d");
    if (reg_src_.data() == nullptr) reg_src_ = Registration(src_.data(), max_bytes_);
    if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(d_buf_.data(), src_.data(), bytes, cudaMemcpyHostToDevice, stream));
  }
  void d2h(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "d2h");
    if (bytes > 0) CUDA_CHECK(cudaMemcpyAsync(dst_.data(), d_buf_.data(), bytes, cudaMemcpyDeviceToHost, stream));
  }
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    reg_src_.release();  // the sweep's registration; from here on, per call
    if (n == 0) return dot_from_device(0);
    const std::size_t bytes = n * sizeof(float);
    // x and y, each registered where it lies; one registration for both when they share a page
    // (a page is locked once: a second registration of it fails).
    unsigned char* y = src_.data() + max_bytes_ / 2;
    const std::uintptr_t page = course::host_page_bytes();
    const bool share_page = reinterpret_cast<std::uintptr_t>(src_.data() + bytes - 1) / page >=
                            reinterpret_cast<std::uintptr_t>(y) / page;
    Registration rx(src_.data(), share_page ? max_bytes_ / 2 + bytes : bytes);
    Registration ry = share_page ? Registration() : Registration(y, bytes);
    CUDA_CHECK(cudaMemcpyAsync(d_buf_.data(), src_.data(), bytes, cudaMemcpyHostToDevice, ctx_.stream()));
    CUDA_CHECK(cudaMemcpyAsync(d_buf_.data() + max_bytes_ / 2, src_.data() + max_bytes_ / 2, bytes,
                               cudaMemcpyHostToDevice, ctx_.stream()));
    return dot_from_device(n);  // waits for the stream before rx and ry unregister
  }

 private:
  std::vector<unsigned char> src_, dst_;
  Registration reg_src_, reg_dst_;
};
// [registered_path]

// [mapped_path]
// Zero-copy: the kernel's loads go over the link to pinned host memory; no copy, no device
// buffer for the inputs. The dot reads x and y where they lie; the "transfers" are SM-driven
// copies between mapped host memory and the device buffer.
class Mapped : public DeviceSide {
 public:
  using DeviceSide::DeviceSide;
  void prepare(std::size_t max_bytes) override {
    prepare_device(max_bytes);
    // Owners, not raw pointers: a second prepare() frees the first one's memory, a failed one leaks nothing.
    src_ = course::PinnedBuffer<unsigned char>(max_bytes, cudaHostAllocMapped);
    dst_ = course::PinnedBuffer<unsigned char>(max_bytes, cudaHostAllocMapped);
    std::memset(src_.data(), 0, max_bytes);
    std::memset(dst_.data(), 0, max_bytes);
    CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_src_), src_.data(), 0));
    CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_dst_), dst_.data(), 0));
  }
  unsigned char* src() override { return src_.data(); }
  unsigned char* dst() override { return dst_.data(); }
  void h2d(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "h2d");
    sm_copy(d_buf_.data(), d_src_, bytes, ctx_, stream);
  }
  void d2h(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "d2h");
    sm_copy(d_dst_, d_buf_.data(), bytes, ctx_, stream);
  }
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    return device_dot(ctx_, reinterpret_cast<const float*>(d_src_), reinterpret_cast<const float*>(d_src_ + max_bytes_ / 2),
                      n, h_result_.data());
  }

 private:
  course::PinnedBuffer<unsigned char> src_, dst_;
  unsigned char* d_src_ = nullptr;
  unsigned char* d_dst_ = nullptr;
};
// [mapped_path]

// Staged: pageable data, a Stager with one thread per core, 8 MiB chunks, 4 pinned buffers.
class Staged : public Pageable {
 public:
  explicit Staged(course::Context& ctx) : Pageable(ctx) {}
  void prepare(std::size_t max_bytes) override {
    Pageable::prepare(max_bytes);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    stager_ = std::make_unique<Stager>(ctx_, threads, kChunk, 4);
  }
  void h2d(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "h2d");
    stager_->h2d(d_buf_.data(), src(), bytes, stream);
  }
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    copy_xy(n, max_bytes_, [&](std::size_t at, std::size_t b) { stager_->h2d(d_buf_.data() + at, src() + at, b, ctx_.stream()); });
    return dot_from_device(n);
  }
  bool has_d2h() const override { return false; }
  static constexpr std::size_t kChunk = std::size_t{8} << 20;

 private:
  std::unique_ptr<Stager> stager_;
};

// Managed memory: one pointer for host and device; pages move on demand (a fault per page) or
// ahead of time (prefetch). Allocated only after checking the card's free memory: managed memory
// beyond it would oversubscribe the card.
class Managed : public DeviceSide {
 public:
  Managed(course::Context& ctx, bool prefetch) : DeviceSide(ctx), prefetch_(prefetch) {}
  void prepare(std::size_t max_bytes) override {
    prepare_device(max_bytes);
    course::require_fits(max_bytes, "managed memory of " + course::format_bytes(max_bytes));
    CUDA_CHECK(cudaMallocManaged(reinterpret_cast<void**>(&managed_), max_bytes));
    std::memset(managed_, 0, max_bytes);  // first touch on the host: the pages start there
    dst_.assign(max_bytes, 0);
  }
  ~Managed() override {
    if (managed_ != nullptr) cudaFree(managed_);
  }
  unsigned char* src() override { return managed_; }
  unsigned char* dst() override { return prefetch_ ? managed_ : dst_.data(); }
  void h2d(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "h2d");
    if (prefetch_) {
      if (bytes > 0) CUDA_CHECK(cudaMemPrefetchAsync(managed_, bytes, location(ctx_.device()), 0, stream));
    } else {
      sm_copy(d_buf_.data(), managed_, bytes, ctx_, stream);  // the loads fault, the pages move
    }
  }
  void d2h(std::size_t bytes, cudaStream_t stream) override {
    require_prepared(bytes, "d2h");
    if (prefetch_) {
      if (bytes > 0) CUDA_CHECK(cudaMemPrefetchAsync(managed_, bytes, host_location(), 0, stream));
    } else {
      CUDA_CHECK(cudaMemcpyAsync(dst_.data(), d_buf_.data(), bytes, cudaMemcpyDeviceToHost, stream));
    }
  }
  void reset(bool for_h2d, cudaStream_t stream) override {
    // Before an h2d the data must be back on the host; before a d2h (prefetch) on the device.
    const cudaMemLocation where = for_h2d ? host_location() : location(ctx_.device());
    CUDA_CHECK(cudaMemPrefetchAsync(managed_, max_bytes_, where, 0, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  float dot(std::size_t n) override {
    require_prepared(2 * n * sizeof(float), "dot");
    const auto* x = reinterpret_cast<const float*>(managed_);
    const auto* y = reinterpret_cast<const float*>(managed_ + max_bytes_ / 2);
    if (prefetch_ && n > 0) {
      CUDA_CHECK(cudaMemPrefetchAsync(x, n * sizeof(float), location(ctx_.device()), 0, ctx_.stream()));
      CUDA_CHECK(cudaMemPrefetchAsync(y, n * sizeof(float), location(ctx_.device()), 0, ctx_.stream()));
    }
    return device_dot(ctx_, x, y, n, h_result_.data());
  }
  bool asynchronous() const override { return false; }
  bool has_d2h() const override { return prefetch_; }

 private:
  static cudaMemLocation location(int device) {
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = device;
    return loc;
  }
  static cudaMemLocation host_location() {
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeHost;
    loc.id = 0;
    return loc;
  }
  bool prefetch_;
  unsigned char* managed_ = nullptr;
  std::vector<unsigned char> dst_;
};

template <class P>
std::unique_ptr<Path> make(course::Context& ctx) {
  return std::make_unique<P>(ctx);
}
std::unique_ptr<Path> make_managed(course::Context& ctx) { return std::make_unique<Managed>(ctx, false); }
std::unique_ptr<Path> make_managed_prefetch(course::Context& ctx) { return std::make_unique<Managed>(ctx, true); }

}  // namespace

const std::vector<course::Version<PathFactory>>& versions() {
  static const std::vector<course::Version<PathFactory>> registry = {
      {"speed_of_light", "not a dot: x and y from pinned memory to the GPU, one copy each, nothing else (the floor)",
       make<SpeedOfLight>},
      {"pageable", "cudaMemcpy from std::vector: the driver stages it through its own pinned buffers", make<Pageable>},
      {"pinned", "the data lives in cudaMallocHost memory: the copy engine reads it directly", make<Pinned>},
      {"registered", "the caller's std::vector page-locked with cudaHostRegister (per call in the dot)", make<Registered>},
      {"mapped", "zero-copy: kernels read and write pinned host memory over the link", make<Mapped>},
      {"staged", "pageable data copied by host threads into reused pinned buffers, chunk by chunk", make<Staged>, true},
      {"managed", "cudaMallocManaged; the kernel's page faults move the data", make_managed},
      {"managed_prefetch", "cudaMallocManaged, moved ahead with cudaMemPrefetchAsync", make_managed_prefetch},
  };
  return registry;
}

bool is_speed_of_light(const course::Version<PathFactory>& version) { return version.name == "speed_of_light"; }

course::Verdict check_link_floor(course::Context& ctx, Path& path, std::size_t n) {
  course::Verdict v;
  v.got = v.expected = v.error = v.rel_error = std::numeric_limits<double>::quiet_NaN();  // no result to compare
  const std::size_t bytes = n * sizeof(float), half = path.max_bytes() / 2;
  if (bytes > half)
    throw course::UsageError("check_link_floor: n = " + std::to_string(n) + " floats each for x and y, but prepare() was given " +
                             course::format_bytes(path.max_bytes()));
  ctx.activate();
  CUDA_CHECK(cudaMemsetAsync(path.device(), 0xFF, path.max_bytes(), ctx.stream()));  // before the path's copies
  path.dot(n);
  // Read back on the legacy default stream, which does not wait for the context's (non-blocking)
  // stream: what is read is what had landed when dot() returned.
  std::vector<unsigned char> back(2 * bytes);
  if (bytes > 0) {
    CUDA_CHECK(cudaMemcpy(back.data(), path.device(), bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(back.data() + bytes, path.device() + half, bytes, cudaMemcpyDeviceToHost));
  }
  const bool same_x = bytes == 0 || std::memcmp(back.data(), path.src(), bytes) == 0;
  const bool same_y = bytes == 0 || std::memcmp(back.data() + bytes, path.src() + half, bytes) == 0;
  v.ok = same_x && same_y;
  if (!v.ok)
    v.message = "speed_of_light at n = " + std::to_string(n) + ": the device copy of " + (same_x ? "y" : "x") +
                " differs from the host's when dot() returns (a copy missing, short, or not waited for)";
  return v;
}

// ---------------------------------------------------------------------------------------------
// The link's theoretical rate, from NVML loaded at run time (a build without the driver's NVML,
// or a machine without a GPU, still runs).

LinkInfo link_info(int device) {
  LinkInfo info;
  info.text = "link rate unknown (NVML not available)";
  char bus_id[64] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    cudaGetLastError();
    return info;
  }
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return info;
  using Init = int (*)();
  using ByBus = int (*)(const char*, void**);
  using Get = int (*)(void*, unsigned*);
  auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<Init>(dlsym(lib, "nvmlShutdown"));
  auto by_bus = reinterpret_cast<ByBus>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto max_gen = reinterpret_cast<Get>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration"));
  auto max_width = reinterpret_cast<Get>(dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth"));
  auto cur_gen = reinterpret_cast<Get>(dlsym(lib, "nvmlDeviceGetCurrPcieLinkGeneration"));
  auto cur_width = reinterpret_cast<Get>(dlsym(lib, "nvmlDeviceGetCurrPcieLinkWidth"));
  if (init && shutdown && by_bus && max_gen && max_width && cur_gen && cur_width && init() == 0) {
    void* dev = nullptr;
    unsigned g = 0, w = 0, cg = 0, cw = 0;
    if (by_bus(bus_id, &dev) == 0 && max_gen(dev, &g) == 0 && max_width(dev, &w) == 0) {
      cur_gen(dev, &cg);
      cur_width(dev, &cw);
      info.generation = static_cast<int>(g);
      info.width = static_cast<int>(w);
      info.current_generation = static_cast<int>(cg);
      info.current_width = static_cast<int>(cw);
      // Per lane and direction: GT/s × line-code efficiency / 8 bits. Gen1–2 use 8b/10b, Gen3 on
      // 128b/130b. These are the bytes on the wire after line coding; packet headers (TLPs) take
      // a further ~5–15% of it, so no transfer of payload bytes reaches this.
      const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
      const double code = g <= 2 ? 0.8 : 128.0 / 130.0;
      if (g >= 1 && g <= 6) info.gbps = gts[g] * code / 8.0 * w;
      char text[160];
      std::snprintf(text, sizeof text, "PCIe Gen%u x%u: %.1f GB/s per direction after line coding (now Gen%u x%u)", g, w,
                    info.gbps, cg, cw);
      info.text = text;
    }
    shutdown();
  }
  dlclose(lib);
  return info;
}

}  // namespace ch08
