// Chapter 07 — memory reuse, and the course's dot as a library.
//
// Versions of the host-array dot (ch07::versions(); one with `07_library --kernel NAME`):
//   speed_of_light  not a dot: x and y from pinned memory, one copy each, nothing else (the floor) 07_library --kernel speed_of_light
//   alloc_per_call  cudaMalloc, copy x, copy y, kernel, copy back, cudaFree on every call    07_library --kernel alloc_per_call
//   reuse           device buffers planned once for n_max and kept; pageable copies          07_library --kernel reuse
//                   (exercise 1: the engine's set-up; exercise 2: the reused dot; exercise 3: n > n_max)
//   reuse_staged    also keeps pinned staging chunks; host threads copy the input into them   07_library --kernel reuse_staged
//                   while the previous chunk is on its way to the GPU
// The device part of every version is the course's final kernel idea: a deterministic two-pass
// dot with float4 loads (launch_dot). The C API (library/src/c_api.cpp) calls these through its one
// seam, library/src/engine.hpp; it never calls speed_of_light, which is the driver's measuring
// stick, not a way to compute a dot.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>

#include "course/check.hpp"
#include "course/kernels/two_pass.cuh"
#include "course/pinned.hpp"
#include "course/thread_pool.hpp"
#include "dot.hpp"

namespace ch07 {
namespace {

// The dot is the kit's two-pass dot (common/course/kernels/two_pass.cuh, chapter 05's lesson):
// pass 1 a grid-stride loop of 16-byte loads (when both arrays are 16-byte aligned) with the scalar
// tail by the first threads, one partial per block, no atomics; pass 2 one block adds the partials in
// a fixed order. The grid depends only on n and the device, so the order of every addition is fixed.
using course::kernels::dot_partials;
using course::kernels::sum_partials;

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

int dot_max_blocks(course::Context& gpu) {
  // The block size is fixed (kDotBlock); as many blocks as the SMs hold at once, at most 1024 so the
  // second pass is short.
  int per_sm = 0;
  gpu.activate();
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dot_partials<kDotBlock, true>, kDotBlock, 0));
  return std::clamp(per_sm * gpu.facts().sm_count, 1, 1024);
}

// [launch_dot]
void launch_dot(const float* d_x, const float* d_y, std::size_t n, float* d_partials, int max_blocks,
                float* d_result, cudaStream_t stream) {
  if (n == 0) {
    CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), stream));
    return;
  }
  const bool vec4 = aligned16(d_x) && aligned16(d_y);
  const std::size_t items = vec4 ? std::max<std::size_t>(n / 4, 1) : n;
  const int grid = static_cast<int>(std::min<std::size_t>(max_blocks, (items + kDotBlock - 1) / kDotBlock));
  if (vec4)
    dot_partials<kDotBlock, true><<<grid, kDotBlock, 0, stream>>>(d_x, d_y, n, d_partials);
  else
    dot_partials<kDotBlock, false><<<grid, kDotBlock, 0, stream>>>(d_x, d_y, n, d_partials);
  CUDA_CHECK_LAUNCH("dot_partials");
  sum_partials<kDotBlock><<<1, kDotBlock, 0, stream>>>(d_partials, grid, d_result);
  CUDA_CHECK_LAUNCH("sum_partials");
}
// [launch_dot]

// ---- The engine: everything planned once for n_max ------------------------------------------

namespace {
// Three quarters of the cores this process may use (its affinity mask, course::usable_cpus: where a
// framework pinned the caller to a few cores, more threads would only take turns), at most 12;
// DOTCOURSE_STAGE_THREADS overrides it. A call stages two vectors at once, which is why 12 and not
// 8, where one vector stops gaining: the chapter's appendix ("The link and the staging threads")
// and 07_library_staging.csv give the measurements.
int default_stage_threads() {
  if (const char* env = std::getenv("DOTCOURSE_STAGE_THREADS"); env != nullptr && std::atoi(env) > 0)
    return std::min(std::atoi(env), 64);
  return static_cast<int>(std::clamp<unsigned>(course::usable_cpus() * 3 / 4, 1, 12));
}

// kChunk floats per pinned chunk; DOTCOURSE_STAGE_CHUNK (floats) overrides it.
std::size_t default_stage_chunk() {
  if (const char* env = std::getenv("DOTCOURSE_STAGE_CHUNK"); env != nullptr && std::atoll(env) > 0)
    return static_cast<std::size_t>(std::atoll(env));
  return kChunk;
}

course::Context make_context(int device) {
  const int count = course::device_count();
  if (count == 0) course::require_gpu();  // throws NoGpuError with the reason
  if (device < 0 || device >= count)
    throw course::NoGpuError("device " + std::to_string(device) + " does not exist: this machine has " +
                             std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s"));
  return course::Context(device);
}
}  // namespace

// [plan_scratch]
// Exercise 1a: the plan. Phase 1 adds up what every call will need, for the largest n and the
// largest grid; Engine::Engine then allocates the total once (phase 2).
ScratchPlan plan_scratch(std::size_t n_max, int max_blocks) {
  ScratchPlan plan;
  // BEGIN SOLUTION
  course::ScratchLayout layout;
  plan.off_x = layout.add(n_max * sizeof(float));
  plan.off_y = layout.add(n_max * sizeof(float));
  plan.off_partials = layout.add(static_cast<std::size_t>(max_blocks) * sizeof(float));
  plan.off_result = layout.add(sizeof(float));
  plan.bytes = layout.bytes();
  // STUB
  //> // TODO(student): exercise 1a, the plan (a design: README §Exercise 1 asks what each call
  //> // needs). What must hold for the plan returned: every region a call of up to n_max elements
  //> // reads or writes on the device, for any grid launch_dot may use, is a region of ONE arena of
  //> // plan.bytes bytes, inside it, disjoint from the others, large enough, and aligned for
  //> // launch_dot's vector loads; bytes == 0 means "not planned". Tests: "ch07 plan on the host: *"
  //> // (no GPU); with a GPU, "ch07 context: *" and every test that computes a dot.
  //> (void)n_max;
  //> (void)max_blocks;
  // END SOLUTION
  return plan;
}
// [plan_scratch]

// [engine]
Engine::Engine(int device, std::size_t n_max, int stage_threads)
    : gpu_(make_context(device)),
      n_max_(n_max),
      max_blocks_(dot_max_blocks(gpu_)),
      stager_(gpu_, stage_threads > 0 ? stage_threads : default_stage_threads(), default_stage_chunk()) {
  if (n_max == 0) throw course::UsageError("n_max must be at least 1");
  if (n_max > std::numeric_limits<std::size_t>::max() / 16)
    throw course::CudaError(cudaErrorMemoryAllocation, "n_max = " + std::to_string(n_max) + " floats cannot be allocated");
  plan_ = plan_scratch(n_max, max_blocks_);
  gpu_.reserve_scratch(plan_.bytes);  // once: no call allocates device memory
  h_result_ = course::PinnedBuffer<float>(1);  // the result comes back to pinned memory
}
// [engine]

namespace {
float* region(const course::Context& gpu, std::size_t bytes, std::size_t offset) {
  if (bytes == 0)
    throw course::UsageError("the engine has no device memory: the plan (plan_scratch, exercise 1a) "
                             "returned bytes = 0");
  return reinterpret_cast<float*>(static_cast<char*>(gpu.scratch(bytes)) + offset);
}
}  // namespace

Engine::~Engine() {
  if (registered_.empty()) return;
  gpu_.activate();
  for (const auto& r : registered_) cudaHostUnregister(const_cast<char*>(r.first));  // a destructor does not throw
}

// [register_host]
// The registration behind the Python binding's cache of arrays it sees again (dotcourse.h says
// who keeps the memory alive). Ranges may not overlap: cudaHostRegister works on whole pages and
// refuses a page registered twice, so two arrays that share a page cannot both be registered.
void Engine::register_host(const void* p, std::size_t bytes) {
  if (p == nullptr || bytes == 0) throw course::UsageError("register_host: an empty range (NULL or 0 bytes)");
  const char* start = static_cast<const char*>(p);
  // Two ranges overlap when each starts before the other ends (a scan: a context holds few ranges).
  const bool overlaps = std::any_of(registered_.begin(), registered_.end(), [&](const auto& r) {
    return r.first < start + bytes && start < r.first + r.second;
  });
  if (overlaps)
    throw course::UsageError("register_host: the range overlaps a range already registered with this context");
  gpu_.activate();
  int read_only = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, gpu_.device()));
  const cudaError_t err =
      cudaHostRegister(const_cast<char*>(start), bytes, read_only ? cudaHostRegisterReadOnly : cudaHostRegisterDefault);
  if (err == cudaErrorHostMemoryAlreadyRegistered) {
    cudaGetLastError();
    throw course::UsageError("register_host: a page of the range is already registered (an array sharing a page "
                             "with a registered one, or memory registered by someone else)");
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw course::CudaError(err, "register_host: cudaHostRegister of " + std::to_string(bytes) + " bytes");
  }
  registered_.emplace(start, bytes);
}
// [register_host]

void Engine::unregister_host(const void* p) {
  const auto it = registered_.find(static_cast<const char*>(p));
  if (it == registered_.end())
    throw course::UsageError("unregister_host: this pointer is not the start of a range registered with this context");
  gpu_.activate();
  CUDA_CHECK(cudaHostUnregister(const_cast<char*>(it->first)));
  registered_.erase(it);
}

bool Engine::is_registered(const void* p, std::size_t bytes) const { return covers(registered_, p, bytes); }

float* Engine::d_h_result() {
  if (d_h_result_ == nullptr) {
    void* d = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&d, h_result(), 0));
    d_h_result_ = static_cast<float*>(d);
  }
  return d_h_result_;
}

float* Engine::d_x() const { return region(gpu_, plan_.bytes, plan_.off_x); }
float* Engine::d_y() const { return region(gpu_, plan_.bytes, plan_.off_y); }
float* Engine::d_partials() const { return region(gpu_, plan_.bytes, plan_.off_partials); }
float* Engine::d_result() const { return region(gpu_, plan_.bytes, plan_.off_result); }
void Engine::replan(std::size_t n_max) {
  if (n_max <= n_max_) return;
  if (n_max > std::numeric_limits<std::size_t>::max() / 16)
    throw course::CudaError(cudaErrorMemoryAllocation, "n_max = " + std::to_string(n_max) + " floats cannot be allocated");
  const ScratchPlan plan = plan_scratch(n_max, max_blocks_);
  try {
    gpu_.reserve_scratch(plan.bytes);  // waits for the stream, frees the old arena, allocates the new one
  } catch (...) {
    cudaGetLastError();                // a failed allocation is not sticky
    gpu_.reserve_scratch(plan_.bytes);  // the old plan's arena again: the engine works as before
    throw;
  }
  plan_ = plan;
  n_max_ = n_max;
}

EngineView Engine::view() {
  return EngineView{n_max_, d_x(), d_y(), d_partials(), max_blocks_, d_result(), h_result(), gpu_.stream()};
}

// ---- The staged copy: pinned chunks, several host threads ------------------------------------

Stager::Stager(course::Context& gpu, int threads, std::size_t chunk)
    : gpu_(gpu), chunk_(std::max<std::size_t>(chunk, 1024)) {
  gpu_.activate();  // the slots' events and pinned chunks belong to this device
  slots_.resize(static_cast<std::size_t>(std::max(1, threads)));
  for (Slot& s : slots_)
    for (auto& c : s.chunk) c = course::PinnedBuffer<float>(chunk_);
  // The parts run on the process's pool, which has no more threads than the process has CPUs;
  // started (or grown) here, so that a thread that cannot be made fails the engine, not a call.
  pool_threads_ = std::min(static_cast<unsigned>(slots_.size()), course::usable_cpus());
  if (pool_threads_ > 1) course::process_pool(pool_threads_);
}

// [stager_work]
// Worker w takes pieces w, w + used, w + 2·used, ...: it waits until the copy that last used its
// chunk has left it (an event), copies the pageable piece into the pinned chunk on the CPU, and
// enqueues the DMA from the chunk. While that DMA runs it already fills its other chunk.
void Stager::work(int w, const std::vector<Piece>& pieces, int used) {
  Slot& s = slots_[static_cast<std::size_t>(w)];
  for (std::size_t i = static_cast<std::size_t>(w); i < pieces.size(); i += static_cast<std::size_t>(used)) {
    const Piece& p = pieces[i];
    const int k = s.next;
    s.next ^= 1;
    CUDA_CHECK(cudaEventSynchronize(s.done[k]));
    std::memcpy(s.chunk[k].data(), p.src, p.count * sizeof(float));
    CUDA_CHECK(cudaMemcpyAsync(p.dst, s.chunk[k].data(), p.count * sizeof(float), cudaMemcpyHostToDevice, gpu_.stream()));
    CUDA_CHECK(cudaEventRecord(s.done[k], gpu_.stream()));
  }
}
// [stager_work]

void Stager::run(const std::vector<Piece>& pieces) {
  const int used = static_cast<int>(std::min<std::size_t>(slots_.size(), pieces.size()));
  if (used <= 1) {
    work(0, pieces, 1);
    return;
  }
  const int device = gpu_.device();
  const std::thread::id caller = std::this_thread::get_id();
  // Returns when every part is done: nobody reads the caller's arrays after this.
  course::process_pool(pool_threads_).run(static_cast<unsigned>(used), [&](unsigned w) {
    // The current device is per host thread: a pool thread may last have staged for another one.
    thread_local int current = -1;
    if (std::this_thread::get_id() != caller && current != device) {
      gpu_.activate();
      current = device;
    }
    work(static_cast<int>(w), pieces, used);
  });
}

// ---- Phase events ------------------------------------------------------------------------------

PhaseEvents::PhaseEvents(cudaStream_t stream) : stream_(stream) {
  events_.reserve(kPhases + 1);
  for (int k = 0; k <= kPhases; ++k) events_.emplace_back();
}
void PhaseEvents::mark(int boundary) { events_[static_cast<std::size_t>(boundary)].record(stream_); }
std::vector<double> PhaseEvents::phase_ms() {
  events_[kPhases].synchronize();
  std::vector<double> ms;
  for (std::size_t k = 0; k < kPhases; ++k) ms.push_back(events_[k + 1].ms_since(events_[k]));
  return ms;
}

// ---- The versions ------------------------------------------------------------------------------

// [reuse_steps]
// Exercise 2, the steps of the reused dot through StreamOps: the engine's make the CUDA calls
// (CudaStreamOps, below); the host tests' record them and play them in stream order.
float reuse_steps(StreamOps& ops, const EngineView& e, const float* x, const float* y, std::size_t n) {
  // BEGIN SOLUTION
  ops.copy_to_device(e.d_x, x, n, e.stream);
  ops.mark(2);
  ops.copy_to_device(e.d_y, y, n, e.stream);
  ops.mark(3);
  ops.dot(e.d_x, e.d_y, n, e.d_partials, e.max_blocks, e.d_result, e.stream);
  ops.mark(4);
  ops.copy_to_host(e.h_result, e.d_result, 1, e.stream);
  ops.mark(5);
  ops.wait(e.stream);
  ops.mark(6);
  return *e.h_result;
  // STUB
  //> // TODO(student): exercise 2. Return the dot of this call's x and y (n >= 1 floats each,
  //> // pageable host memory) through `ops` only, in the engine's planned memory `e`: no allocation,
  //> // no CUDA call of your own. What must hold: every step is on e.stream, in an order that makes
  //> // the kernel read this call's x and y and the value returned this call's result, complete when
  //> // it is read (one wait, after the last step enqueued; a wait in between stalls the pipeline);
  //> // the same inputs give the same bits; new values in the same arrays give the new dot. For the
  //> // phase table, ops.mark(k) at the end of each phase: 2 copy of x, 3 copy of y, 4 kernel, 5 copy
  //> // back, 6 the call's end. Tests: "ch07 reuse on the host: *" (no GPU: a recording StreamOps);
  //> // with a GPU, "ch07 reuse: *".
  //> (void)ops;
  //> (void)e;
  //> (void)x;
  //> (void)y;
  //> (void)n;
  //> return std::numeric_limits<float>::quiet_NaN();
  // END SOLUTION
}
// [reuse_steps]

// [require_fits]
// Exercise 3: a call the plan does not cover. Every host-array path calls require_fits first
// (dot_reuse, dot_reuse_staged, dot_host), before it touches the GPU. The rule needs only n and the
// plan's n_max, so it is a function of the two numbers, which the host tests call without a GPU.
const char* to_string(OverNMax decision) {
  switch (decision) {
    case OverNMax::refuse: return "refuse";
    case OverNMax::grow: return "grow";
    case OverNMax::undecided: break;
  }
  return "undecided";
}

// BEGIN SOLUTION
// Refuse: the context promised to plan once, for n_max; a call past it is the caller's mistake,
// reported at once, and the next call finds the context as it was.
OverNMax over_n_max() { return OverNMax::refuse; }

std::size_t n_max_for(std::size_t n, std::size_t n_max) {
  if (n > n_max)
    throw TooLargeError("n = " + std::to_string(n) + " is larger than this context's n_max = " +
                        std::to_string(n_max) + ": create the context with a larger n_max");
  return n_max;
}
// STUB
//> // TODO(student): exercise 3. Decide what a call with n > n_max does, and say so in over_n_max():
//> // OverNMax::refuse or OverNMax::grow (dot.hpp). Then n_max_for(n, n_max) returns the n_max the
//> // call needs: n_max itself when n <= n_max; past it, refuse throws ch07::TooLargeError whose
//> // message names n and n_max (the C API: DOTCOURSE_ERROR_TOO_LARGE), grow returns the new n_max,
//> // at least n (Engine::replan then re-plans). For either: the result right or the error clear,
//> // nothing past a buffer, nothing leaked, the context usable afterwards. Tests: "ch07 n_max on the
//> // host: *" (no GPU; they read your decision and check its rules), with a GPU "ch07 n_max: *".
//> OverNMax over_n_max() { return OverNMax::undecided; }
//>
//> std::size_t n_max_for(std::size_t n, std::size_t n_max) {
//>   (void)n;
//>   return n_max;
//> }
// END SOLUTION

void require_fits(Engine& e, std::size_t n) {
  const std::size_t need = n_max_for(n, e.n_max());
  // A rule that lets a call past its plan would read and write past the buffers: refused here.
  if (need < n)
    throw course::UsageError("n_max_for(n = " + std::to_string(n) + ", n_max = " + std::to_string(e.n_max()) +
                             ") returned " + std::to_string(need) + ", less than n: the call would run past the "
                             "plan (exercise 3: refuse with TooLargeError, or grow to at least n)");
  if (need > e.n_max()) e.replan(need);
}
// [require_fits]

namespace {

// The engine's StreamOps: each step is the CUDA call, checked; marks go to the call's phase clock.
class CudaStreamOps final : public StreamOps {
 public:
  explicit CudaStreamOps(PhaseEvents* clock) : clock_(clock) {}
  void copy_to_device(float* d_dst, const float* h_src, std::size_t count, cudaStream_t stream) override {
    CUDA_CHECK(cudaMemcpyAsync(d_dst, h_src, count * sizeof(float), cudaMemcpyHostToDevice, stream));
  }
  void dot(const float* d_x, const float* d_y, std::size_t n, float* d_partials, int max_blocks, float* d_result,
           cudaStream_t stream) override {
    launch_dot(d_x, d_y, n, d_partials, max_blocks, d_result, stream);
  }
  void copy_to_host(float* h_dst, const float* d_src, std::size_t count, cudaStream_t stream) override {
    CUDA_CHECK(cudaMemcpyAsync(h_dst, d_src, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
  }
  void wait(cudaStream_t stream) override { CUDA_CHECK(cudaStreamSynchronize(stream)); }
  void mark(int boundary) override { ch07::mark(clock_, boundary); }

 private:
  PhaseEvents* clock_;
};

// [alloc_per_call]
// The first program: every call allocates, copies, computes, copies back and frees. Three
// cudaMalloc and three cudaFree per call, and cudaFree waits for the whole device. The buffers are
// owners (DeviceBuffer): a call that fails half way, out of memory say, frees what it allocated.
float dot_alloc_per_call(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock) {
  if (n == 0) return 0.0f;
  course::Context& gpu = e.gpu();
  cudaStream_t stream = gpu.stream();
  const std::size_t bytes = n * sizeof(float);
  mark(clock, 0);
  course::DeviceBuffer<float> d_x(n), d_y(n), d_scratch(static_cast<std::size_t>(e.max_blocks()) + 1);
  mark(clock, 1);
  CUDA_CHECK(cudaMemcpyAsync(d_x.data(), x, bytes, cudaMemcpyHostToDevice, stream));
  mark(clock, 2);
  CUDA_CHECK(cudaMemcpyAsync(d_y.data(), y, bytes, cudaMemcpyHostToDevice, stream));
  mark(clock, 3);
  launch_dot(d_x.data(), d_y.data(), n, d_scratch.data() + 1, e.max_blocks(), d_scratch.data(), stream);
  mark(clock, 4);
  CUDA_CHECK(cudaMemcpyAsync(e.h_result(), d_scratch.data(), sizeof(float), cudaMemcpyDeviceToHost, stream));
  mark(clock, 5);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  d_x = course::DeviceBuffer<float>();  // the three cudaFree, here, inside the last phase
  d_y = course::DeviceBuffer<float>();
  d_scratch = course::DeviceBuffer<float>();
  mark(clock, 6);
  return *e.h_result();
}
// [alloc_per_call]

// [reuse]
// What changed: the device memory was planned and allocated once, in the engine; a call only
// copies, computes and copies back (reuse_steps, above). Still slow: the copies come from pageable
// memory, which the driver first copies into a pinned buffer of its own, one piece at a time, on
// one CPU thread.
float dot_reuse(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock) {
  require_fits(e, n);
  if (n == 0) return 0.0f;
  mark(clock, 0);
  mark(clock, 1);  // nothing to allocate
  CudaStreamOps ops(clock);
  return reuse_steps(ops, e.view(), x, y, n);
}
// [reuse]

// [reuse_staged]
// What changed: the engine also keeps pinned chunks, and several host threads copy the pageable
// input into them, each enqueuing its chunk's DMA while it fills the next. The CPU copy and the
// PCIe transfer overlap, and several cores share the CPU copy. Chapters 08–09 say why pinned
// memory moves faster, and overlap the kernel too.
float dot_reuse_staged(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock) {
  require_fits(e, n);
  if (n == 0) return 0.0f;
  course::Context& gpu = e.gpu();
  cudaStream_t stream = gpu.stream();
  mark(clock, 0);
  mark(clock, 1);
  std::vector<Stager::Piece> pieces;
  const std::size_t chunk = n >= kLargePieces ? e.stager().chunk() : std::min(e.stager().chunk(), kSmallPiece);
  for (std::size_t i = 0; i < n; i += chunk) pieces.push_back({x + i, e.d_x() + i, std::min(chunk, n - i)});
  for (std::size_t i = 0; i < n; i += chunk) pieces.push_back({y + i, e.d_y() + i, std::min(chunk, n - i)});
  e.stager().run(pieces);
  mark(clock, 2);  // x and y share one pipeline: the breakdown shows both as "copy x" (config says so)
  mark(clock, 3);
  launch_dot(e.d_x(), e.d_y(), n, e.d_partials(), e.max_blocks(), e.d_result(), stream);
  mark(clock, 4);
  CUDA_CHECK(cudaMemcpyAsync(e.h_result(), e.d_result(), sizeof(float), cudaMemcpyDeviceToHost, stream));
  mark(clock, 5);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  mark(clock, 6);
  return *e.h_result();
}
// [reuse_staged]

}  // namespace

// [link_floor]
// Not a dot product: the floor every version is held to, timed beside them. The same 8n bytes cross
// the link the best way this chapter knows: from page-locked memory, by the copy engine, straight
// into the engine's buffers, one copy per array; no staging, no kernel, no result. Whatever a
// version adds to this time is its own: the CPU's copies, the kernel, the result's trip back.
float link_floor(Engine& e, const float* x, const float* y, std::size_t n, PhaseEvents* clock) {
  require_fits(e, n);
  if (n == 0) return std::numeric_limits<float>::quiet_NaN();
  cudaStream_t stream = e.gpu().stream();
  mark(clock, 0);
  mark(clock, 1);
  CUDA_CHECK(cudaMemcpyAsync(e.d_x(), x, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  mark(clock, 2);
  CUDA_CHECK(cudaMemcpyAsync(e.d_y(), y, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  mark(clock, 3);
  mark(clock, 4);  // no kernel
  mark(clock, 5);  // no result
  CUDA_CHECK(cudaStreamSynchronize(stream));
  mark(clock, 6);
  return std::numeric_limits<float>::quiet_NaN();
}
// [link_floor]

course::Verdict check_link_floor(Engine& e, const float* x, const float* y, std::size_t n) {
  course::Verdict v;
  v.got = v.expected = v.error = v.rel_error = std::numeric_limits<double>::quiet_NaN();  // no result to compare
  if (n > 0 && !(course::is_pinned(x) && course::is_pinned(y)))
    throw course::UsageError("speed_of_light: x and y must be page-locked (pinned or registered) host memory: from "
                             "pageable memory the copies would be the pageable path's, not the floor");
  require_fits(e, n);
  cudaStream_t stream = e.gpu().stream();
  if (n > 0) {
    CUDA_CHECK(cudaMemsetAsync(e.d_x(), 0xFF, n * sizeof(float), stream));
    CUDA_CHECK(cudaMemsetAsync(e.d_y(), 0xFF, n * sizeof(float), stream));
  }
  link_floor(e, x, y, n, nullptr);
  // Read back on the legacy default stream, which does not wait for the engine's (non-blocking)
  // stream: what is read is what had landed when link_floor returned.
  std::vector<float> got_x(n), got_y(n);
  if (n > 0) {
    CUDA_CHECK(cudaMemcpy(got_x.data(), e.d_x(), n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got_y.data(), e.d_y(), n * sizeof(float), cudaMemcpyDeviceToHost));
  }
  const bool same_x = n == 0 || std::memcmp(got_x.data(), x, n * sizeof(float)) == 0;
  const bool same_y = n == 0 || std::memcmp(got_y.data(), y, n * sizeof(float)) == 0;
  v.ok = same_x && same_y;
  if (!v.ok)
    v.message = std::string("speed_of_light at n = ") + std::to_string(n) + ": the device copy of " +
                (same_x ? "y" : "x") + " differs from the host's when the call returns (a copy missing, short, "
                "or not waited for)";
  return v;
}

bool is_speed_of_light(const course::Version<HostDot>& version) { return version.name == "speed_of_light"; }

// [registry]
const std::vector<course::Version<HostDot>>& versions() {
  static const std::vector<course::Version<HostDot>> registry = {
      {"speed_of_light", "not a dot: x and y from pinned memory to the GPU, one copy each, nothing else (the floor)",
       link_floor, false},
      {"alloc_per_call", "allocate, copy, compute, copy back and free on every call (the first program)",
       dot_alloc_per_call, false},
      {"reuse", "device memory planned once for n_max and kept; pageable copies", dot_reuse, true},
      {"reuse_staged", "also pinned staging chunks filled by several host threads while the previous chunk copies",
       dot_reuse_staged, false},
  };
  return registry;
}
// [registry]

HostDot fastest(std::size_t n) { return n < kStageMin ? dot_reuse : dot_reuse_staged; }

// [dot_host]
// The C API's host-array dot. A registered array goes straight from the caller's memory to the GPU
// (its DMA is enqueued first, so it runs while the staging threads copy an unregistered one); the
// result is written by the kernel into mapped pinned memory, so no copy back is enqueued.
float dot_host(Engine& e, const float* x, const float* y, std::size_t n) {
  const std::size_t bytes = n * sizeof(float);
  const bool direct_x = n > 0 && e.is_registered(x, bytes), direct_y = n > 0 && e.is_registered(y, bytes);
  if (!direct_x && !direct_y) return fastest(n)(e, x, y, n, nullptr);
  require_fits(e, n);
  cudaStream_t stream = e.gpu().stream();
  if (direct_x) CUDA_CHECK(cudaMemcpyAsync(e.d_x(), x, bytes, cudaMemcpyHostToDevice, stream));
  if (direct_y) CUDA_CHECK(cudaMemcpyAsync(e.d_y(), y, bytes, cudaMemcpyHostToDevice, stream));
  if (!(direct_x && direct_y)) {
    const float* src = direct_x ? y : x;
    float* dst = direct_x ? e.d_y() : e.d_x();
    if (n < kStageMin) {
      CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    } else {
      std::vector<Stager::Piece> pieces;
      const std::size_t chunk = n >= kLargePieces ? e.stager().chunk() : std::min(e.stager().chunk(), kSmallPiece);
      for (std::size_t i = 0; i < n; i += chunk) pieces.push_back({src + i, dst + i, std::min(chunk, n - i)});
      e.stager().run(pieces);
    }
  }
  launch_dot(e.d_x(), e.d_y(), n, e.d_partials(), e.max_blocks(), e.d_h_result(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return *e.h_result();
}
// [dot_host]

// [dot_device]
float dot_device(Engine& e, const float* d_x, const float* d_y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return 0.0f;
  course::Context& gpu = e.gpu();
  gpu.activate();
  for (const float* p : {d_x, d_y}) {
    cudaPointerAttributes attr{};
    CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
    if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
      throw course::UsageError("dot_device: an argument is not device memory (use dotcourse_dot for host arrays)");
    if (attr.device != gpu.device())
      throw course::UsageError("dot_device: an array lives on device " + std::to_string(attr.device) +
                               ", the context on device " + std::to_string(gpu.device()));
  }
  // The kernels go on the caller's stream, after whatever produced x and y there. The engine's
  // scratch is free: every call on this engine waits for its work before it returns.
  // The second pass writes the result into mapped pinned memory: one operation less on the stream
  // than a copy back, a few microseconds of a call that takes about twenty.
  launch_dot(d_x, d_y, n, e.d_partials(), e.max_blocks(), e.d_h_result(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return *e.h_result();
}
// [dot_device]

// [covers]
// Exercise 4 (think): may an array skip staging? dot_host copies an array straight from the
// caller's memory only when all of it lies in ONE registered range: a view into a registered array
// need not start where the registration starts, and two registrations that touch are still two.
bool covers(const std::map<const char*, std::size_t>& ranges, const void* p, std::size_t bytes) {
  // BEGIN SOLUTION
  if (p == nullptr || bytes == 0) return false;
  const char* start = static_cast<const char*>(p);
  // The ranges are disjoint and sorted by their first byte, so the only one that can hold p is the
  // last one starting at or before it: one step back from the first that starts after it.
  const auto next = ranges.upper_bound(start);
  if (next == ranges.begin()) return false;  // every range starts after p
  const auto& r = *std::prev(next);
  // Compare offsets from the range's start, never p + bytes: that sum may lie past the end of
  // any object (or wrap), where pointer arithmetic is undefined.
  const auto offset = reinterpret_cast<std::uintptr_t>(start) - reinterpret_cast<std::uintptr_t>(r.first);
  return offset < r.second && bytes <= r.second - offset;
  // STUB
  //> // TODO(student): exercise 4 (think). Return whether [p, p + bytes) lies entirely inside ONE of
  //> // `ranges` (each entry: a range's first byte -> its length in bytes; no two of them overlap,
  //> // but two may touch). A null p or bytes == 0 is inside none. Engine::is_registered asks this
  //> // on every dot_host call, so the answer must not cost a walk over the whole map (no loop: the
  //> // hole scan, "ch07 integrity: *"). Tests (host only): "ch07 covers: a range inside one
  //> // registration, and none that leaves it", "ch07 covers: agrees with a linear scan on random
  //> // registrations".
  //> (void)ranges;
  //> (void)p;
  //> (void)bytes;
  //> return false;
  // END SOLUTION
}
// [covers]

}  // namespace ch07
