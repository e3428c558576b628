// Generated from solutions/03_one_thread/dot.cu by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
// Chapter 03: one GPU thread.
//
// Versions (ch03::versions(); `03_one_thread --kernel NAME` runs one, `03_one_thread` all):
//   cublas       version 0, the library: cublasSdot, every SM busy     03_one_thread --kernel cublas
//   speed_of_light  not a dot: every SM reads x and y, nothing else (the floor)   03_one_thread --kernel speed_of_light
//   one_thread   one thread walks all n elements (exercise 1)          03_one_thread --kernel one_thread
// Every version is measured twice: the kernel alone on data already on the GPU, and inside
// round_trip (exercise 2), which allocates, copies in, launches, copies back and frees on every
// call, and times each of those steps. The speed-of-light row is a baseline, not a dot product:
// the driver times it on data already on the GPU only, beside the versions.

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "course/check.hpp"
#include "course/cublas_check.hpp"
#include "course/kernels/read_floor.cuh"
#include "dot.hpp"

namespace ch03 {
namespace {

// What round_trip returns when the result was never copied back: NaN, which no dot product of
// finite inputs is.
constexpr float kUnfilled = std::numeric_limits<float>::quiet_NaN();

// The library's dot product: the baseline every version is compared with. Its launch
// configuration and reduction are cuBLAS's business; it uses the whole GPU. The handle is the
// context's, made on first use and kept (it allocates device memory, so making one per call would
// time cuBLAS's set-up, not its dot product).
// [cublas]
void dot_cublas(const float* d_x, const float* d_y, std::size_t n, float* d_result, course::Context& ctx,
                cudaStream_t stream) {
  if (n == 0) {  // the empty sum: written by us, so it does not depend on what cuBLAS does for n = 0
    CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), stream));
    return;
  }
  const course::CublasOn cublas(ctx, stream);
  // Device pointer mode: the result stays on the device and the call does not wait for it.
  CUBLAS_CHECK(cublasSdot_64(cublas.get(), static_cast<std::int64_t>(n), d_x, 1, d_y, 1, d_result));
}
// [cublas]

// [speed_of_light]
// Not a dot product: the floor every version here is held to. The whole GPU reads the same 8n bytes
// with the best access pattern the course knows and does nothing else: the kit's read-only kernel
// (chapter 06 builds it), 16-byte loads on a grid of the blocks that every SM holds at once, one
// value written so that the loads cannot be dropped. The distance from one thread to this row is
// what chapters 05 and 06 win back. The grid (read_floor_resident) is asked of the occupancy API on
// every call, a host-side computation: this chapter's launchers have nowhere but the context to keep it.
void dot_speed_of_light(const float* d_x, const float* d_y, std::size_t n, float* d_result, course::Context& ctx,
                        cudaStream_t stream) {
  const int resident = course::kernels::read_floor_resident(ctx.facts().sm_count);
  course::kernels::launch_read_floor(d_x, d_y, n, d_result, resident, stream);  // any n, 0 too; any alignment
}
// [speed_of_light]

// The first kernel: one thread does all the work, in the order the CPU loop of chapter 02 does
// (exercise 1 is its loop, one_thread_sum in dot.hpp, which the host tests run too).
// Still slow: it is one thread out of the ~270,000 an H100 can keep resident (132 SMs × 2048),
// so 131 SMs are idle, and each load waits hundreds of cycles for memory with nothing else to
// do in the meantime.
// [one_thread_kernel]
__global__ void dot_kernel_one_thread(const float* x, const float* y, std::size_t n, float* result) {
  *result = one_thread_sum(x, y, 0, n);  // this one thread is the whole grid: it takes [0, n)
}
// [one_thread_kernel]

// [one_thread_launch]
void dot_one_thread(const float* d_x, const float* d_y, std::size_t n, float* d_result, course::Context&,
                    cudaStream_t stream) {
  dot_kernel_one_thread<<<1, 1, 0, stream>>>(d_x, d_y, n, d_result);  // one block of one thread
  CUDA_CHECK_LAUNCH("dot_kernel_one_thread");
}
// [one_thread_launch]

// Times the steps of a round trip one after the other: each lap ends the step that began where
// the previous lap ended. lap_gpu reads the GPU's clock (an event on the default stream, waited
// for); lap_host reads the host's. Does nothing when there is nowhere to write the times.
class PhaseClock {
 public:
  explicit PhaseClock(Phases* phases) : phases_(phases) {
    if (phases_ == nullptr) return;
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
    first_ = Clock::now();
    restart();
  }
  ~PhaseClock() {
    if (start_ != nullptr) cudaEventDestroy(start_);  // a destructor must not throw
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

  void lap_host(double Phases::*step) {
    if (phases_ == nullptr) return;
    phases_->*step = std::chrono::duration<double, std::milli>(Clock::now() - last_).count();
    restart();
  }
  void lap_gpu(double Phases::*step) {
    if (phases_ == nullptr) return;
    CUDA_CHECK(cudaEventRecord(stop_, nullptr));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    phases_->*step = ms;
    restart();
  }
  void finish() {
    if (phases_ != nullptr) phases_->total_ms = std::chrono::duration<double, std::milli>(Clock::now() - first_).count();
  }

 private:
  using Clock = std::chrono::steady_clock;
  void restart() {
    CUDA_CHECK(cudaEventRecord(start_, nullptr));
    last_ = Clock::now();
  }
  Phases* phases_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  Clock::time_point first_, last_;
};

}  // namespace

// The program everyone writes first. Every call pays for three allocations, two copies of n
// floats over PCIe, a launch, a copy back and three frees, whatever the kernel in the middle.
// [round_trip]
float round_trip(Launcher version, course::Context& ctx, const float* h_x, const float* h_y, std::size_t n,
                 Phases* phases) {
  ctx.activate();  // the context's GPU is the one cudaMalloc and the launch use
  const std::size_t bytes = n * sizeof(float);
  float* d_x = nullptr;
  float* d_y = nullptr;
  float* d_result = nullptr;
  float h_result = kUnfilled;  // stays NaN unless the result is copied back
  PhaseClock clock(phases);

  // [hole 1 begin]
  // TODO(student): afterwards d_x and d_y each point to device memory for n floats, and d_result
  // to one float, on ctx's GPU; every CUDA call is checked. Tests: ch03 round_trip on the host:
  // * (no GPU), then ch03 round_trip: *. See README §Exercise 2.
  // [hole 1 end]
  CUDA_CHECK(cudaMemset(d_result, 0xFF, sizeof(float)));  // poison: NaN unless the kernel writes it
  clock.lap_host(&Phases::allocate_ms);

  // [hole 2 begin]
  // TODO(student): afterwards d_x holds the n floats of h_x, the copy ordered on the default
  // stream (the one the clock times). Tests: ch03 round_trip on the host: * (no GPU), then
  // ch03 round_trip: *. See README §Exercise 2.
  // [hole 2 end]
  clock.lap_gpu(&Phases::copy_x_ms);

  // [hole 3 begin]
  // TODO(student): the same for y: d_y holds the n floats of h_y. Tests: ch03 round_trip on the
  // host: * (no GPU), then ch03 round_trip: *.
  // [hole 3 end]
  clock.lap_gpu(&Phases::copy_y_ms);

  // [hole 4 begin]
  // TODO(student): run `version`, whichever of the registry it is (the tests pass cuBLAS's), so that
  // d_result receives the dot product of d_x and d_y; its work goes on the default stream, the one
  // the clock times. Tests: ch03 round_trip on the host: * (no GPU), then ch03 round_trip: *.
  // See README §Exercise 2.
  // [hole 4 end]
  clock.lap_gpu(&Phases::kernel_ms);

  // [hole 5 begin]
  // TODO(student): when this step returns, h_result holds the float the version wrote to d_result
  // (not the NaN poison set above). Tests: ch03 round_trip on the host: * (no GPU), then
  // ch03 round_trip: *. See README §Exercise 2.
  // [hole 5 end]
  clock.lap_gpu(&Phases::copy_back_ms);

  // [hole 6 begin]
  // TODO(student): afterwards this call holds no device memory: repeated round trips leave the
  // card's free memory where it was; every CUDA call checked. Tests: ch03 round_trip on the host: * (no GPU), then
  // ch03 round_trip: frees what it allocates.
  // See README §Exercise 2.
  // [hole 6 end]
  clock.lap_host(&Phases::free_ms);
  clock.finish();
  return h_result;
}
// [round_trip]

// [registry]
const std::vector<course::Version<Launcher>>& versions() {
  static const std::vector<course::Version<Launcher>> registry = {
      {"cublas", "cublasSdot: the library, the whole GPU (version 0)", dot_cublas, false},
      {"speed_of_light", "not a dot: the whole GPU reads x and y with 16-byte loads, one value written (the floor)",
       dot_speed_of_light, false},
      {"one_thread", "one thread walks all n elements", dot_one_thread, true},
  };
  return registry;
}
// [registry]

bool is_speed_of_light(const course::Version<Launcher>& version) { return version.run == dot_speed_of_light; }

// [chunk_begin]
// Contiguous chunks, the way chapter 02's threads split the work: q = n / T elements each, and the
// first r = n % T chunks one more. Chunk t starts after t chunks of q and min(t, r) extra elements.
std::size_t chunk_begin(std::size_t t, std::size_t threads, std::size_t n) {
  if (threads == 0 || t > threads) throw course::UsageError("chunk_begin: needs threads >= 1 and t <= threads");
  const std::size_t q = n / threads, r = n % threads;
  return t * q + std::min(t, r);
}
// [chunk_begin]

// [chunk_owner]
// Exercise 3 (think): the inverse of chunk_begin. When thread t of a one-block kernel walks its own
// chunk, which thread is reading element i at a given moment, and which elements do neighbouring
// threads read at the same moment? This function answers the first question; the chapter's
// "Check yourself" asks the second.
std::size_t chunk_owner(std::size_t i, std::size_t threads, std::size_t n) {
  if (threads == 0 || i >= n) throw course::UsageError("chunk_owner: needs threads >= 1 and i < n");
  // [hole 7 begin]
  // TODO(student): return the t with chunk_begin(t, threads, n) <= i < chunk_begin(t + 1, threads, n),
  // computed directly in constant time (no search), for every split: chunks of two sizes,
  // n < threads, n past 2^32. Tests: ch03 chunk_owner: * (host only). See README §Exercise 3.
  (void)i;
  return threads;
  // [hole 7 end]
}
// [chunk_owner]

}  // namespace ch03
