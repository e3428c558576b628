// Chapter 01 — timing, and when the GPU wins.
//
// Versions (see ch01::versions(); run one with `01_timing --kernel NAME`, all with `01_timing`):
//   add_cpu          the vector add in a plain CPU loop             01_timing --kernel add_cpu
//   add_gpu          the add kernel alone (exercise 1)              01_timing --kernel add_gpu
//   add_gpu_copies   the add with its host<->device copies          01_timing --kernel add_gpu_copies
//   sqrt_cpu         the square-root loop on the CPU                01_timing --kernel sqrt_cpu
//   sqrt_gpu         the square-root loop kernel alone              01_timing --kernel sqrt_gpu
//   sqrt_gpu_copies  the square-root loop with its copies           01_timing --kernel sqrt_gpu_copies
// Exercise 2, time_with_events_ms, lives in timing.cu.

#include <cmath>
#include <limits>
#include <string>

#include "course/check.hpp"
#include "course/device.hpp"
#include "course/random.hpp"
#include "add.hpp"

namespace ch01 {

// [add_kernel]
// One thread per element: thread i adds a[i] and b[i]. The grid may have a few more threads
// than elements (the last block is rounded up), so every thread checks i < n first.
// Still slow: nothing. This kernel reads 2 and writes 1 element per thread and does one add:
// its speed is the memory bandwidth, and it cannot reuse anything.
// What one thread does is a __host__ __device__ helper: the host tests run it for every thread of
// an overshooting grid ("ch01 add on the host: *", no GPU).
template <class T>
COURSE_HOST_DEVICE inline void add_thread(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                          std::size_t n, unsigned block, unsigned block_dim, unsigned tid) {
  const std::size_t i = global_index(block, block_dim, tid);  // add.hpp, exercise 1
  // BEGIN SOLUTION
  if (i < n) out[i] = a[i] + b[i];
  // STUB
  //> // TODO(student): afterwards out[i] == a[i] + b[i] for every i < n, and nothing at or past
  //> // out[n] is written, however far the grid overshoots n. Each thread owns one element, the one
  //> // at its global index i. Tests: `ch01 add on the host: *` (no GPU, every thread of an
  //> // overshooting grid), ch01 add_gpu: * (bitwise at awkward sizes, guard zones, beyond 2^32),
  //> // after ch01 index: * (host). See README §Exercise 1.
  //> (void)a, (void)b, (void)out, (void)n, (void)i;
  // END SOLUTION
}

template <class T>
__global__ void add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, std::size_t n) {
  add_thread(a, b, out, n, blockIdx.x, blockDim.x, threadIdx.x);
}
// [add_kernel]

// [add_launch]
template <class T>
void launch_add(const T* d_a, const T* d_b, T* d_out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;  // a launch with zero blocks is an error, and there is nothing to do
  const LaunchShape shape = launch_shape(n);  // add.hpp, exercise 1
  if (shape.grid > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw course::UsageError("n = " + std::to_string(n) + " needs more blocks than a grid can have");
  add_kernel<T><<<static_cast<unsigned>(shape.grid), shape.block, 0, stream>>>(d_a, d_b, d_out, n);
  CUDA_CHECK_LAUNCH("add_kernel");
}
// [add_launch]

// [sqrt_kernel]
// The same memory traffic as the add, but `iters` dependent square roots per element: the
// arithmetic intensity (operations per byte) grows with iters, and so does the GPU's advantage.
// Its index and its launch shape are exercise 1's (add.hpp): they work here once they work there.
template <class T>
__host__ __device__ T sqrt_loop_impl(T a, T b, int iters) {
  T v = a < 0 ? -a : a;
  const T c = b < 0 ? -b : b;
  for (int k = 0; k < iters; ++k) v = sqrt(v + c);
  return v;
}

template <class T>
__global__ void sqrt_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, std::size_t n,
                            int iters) {
  const std::size_t i = global_index(blockIdx.x, blockDim.x, threadIdx.x);
  if (i < n) out[i] = sqrt_loop_impl(a[i], b[i], iters);
}
// [sqrt_kernel]

template <class T>
T sqrt_loop(T a, T b, int iters) {
  return sqrt_loop_impl(a, b, iters);
}

template <class T>
void launch_sqrt(const T* d_a, const T* d_b, T* d_out, std::size_t n, int iters, cudaStream_t stream) {
  if (n == 0) return;
  const LaunchShape shape = launch_shape(n);
  if (shape.grid > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw course::UsageError("n = " + std::to_string(n) + " needs more blocks than a grid can have");
  sqrt_kernel<T><<<static_cast<unsigned>(shape.grid), shape.block, 0, stream>>>(d_a, d_b, d_out, n, iters);
  CUDA_CHECK_LAUNCH("sqrt_kernel");
}

template <class T>
Problem<T>::Problem(std::size_t n_, int iters_, unsigned long long seed, course::Context* ctx_)
    : n(n_), iters(iters_), h_out(n_), ctx(ctx_) {
  const auto a = course::random_vector(n, seed);
  const auto b = course::random_vector(n, course::seed_y(seed));
  h_a.assign(a.begin(), a.end());
  h_b.assign(b.begin(), b.end());
  if (ctx != nullptr) {  // the CPU versions need no device: without a context, no device buffers
    d_a = course::DeviceBuffer<T>(n);
    d_b = course::DeviceBuffer<T>(n);
    d_out = course::DeviceBuffer<T>(n);
    d_a.upload_async(h_a.data(), n, ctx->stream());
    d_b.upload_async(h_b.data(), n, ctx->stream());
  }
  poison();
  if (ctx != nullptr) ctx->synchronize();  // the copies from pageable h_a, h_b have landed
}

template <class T>
void Problem<T>::poison() {
  std::fill(h_out.begin(), h_out.end(), std::numeric_limits<T>::quiet_NaN());
  if (ctx != nullptr) d_out.fill_bytes(0xFF, ctx->stream());
}

namespace {

template <class T>
void add_cpu(Problem<T>& p, cudaStream_t) {
  for (std::size_t i = 0; i < p.n; ++i) p.h_out[i] = p.h_a[i] + p.h_b[i];
}

// Kernel only: the inputs are already on the device, the output stays there. The driver copies
// the output back once, after timing, to validate it.
template <class T>
void add_gpu(Problem<T>& p, cudaStream_t s) {
  launch_add(p.d_a.data(), p.d_b.data(), p.d_out.data(), p.n, s);
}

// [with_copies]
// What a program that starts and ends on the host pays: both inputs over PCIe, the kernel, the
// output back. The copies move as many bytes as the kernel, over a link far slower than HBM.
template <class T>
void add_gpu_copies(Problem<T>& p, cudaStream_t s) {
  const std::size_t bytes = p.n * sizeof(T);
  CUDA_CHECK(cudaMemcpyAsync(p.d_a.data(), p.h_a.data(), bytes, cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(p.d_b.data(), p.h_b.data(), bytes, cudaMemcpyHostToDevice, s));
  launch_add(p.d_a.data(), p.d_b.data(), p.d_out.data(), p.n, s);
  CUDA_CHECK(cudaMemcpyAsync(p.h_out.data(), p.d_out.data(), bytes, cudaMemcpyDeviceToHost, s));
}
// [with_copies]

template <class T>
void sqrt_cpu(Problem<T>& p, cudaStream_t) {
  for (std::size_t i = 0; i < p.n; ++i) p.h_out[i] = sqrt_loop_impl(p.h_a[i], p.h_b[i], p.iters);
}

template <class T>
void sqrt_gpu(Problem<T>& p, cudaStream_t s) {
  launch_sqrt(p.d_a.data(), p.d_b.data(), p.d_out.data(), p.n, p.iters, s);
}

template <class T>
void sqrt_gpu_copies(Problem<T>& p, cudaStream_t s) {
  const std::size_t bytes = p.n * sizeof(T);
  CUDA_CHECK(cudaMemcpyAsync(p.d_a.data(), p.h_a.data(), bytes, cudaMemcpyHostToDevice, s));
  CUDA_CHECK(cudaMemcpyAsync(p.d_b.data(), p.h_b.data(), bytes, cudaMemcpyHostToDevice, s));
  launch_sqrt(p.d_a.data(), p.d_b.data(), p.d_out.data(), p.n, p.iters, s);
  CUDA_CHECK(cudaMemcpyAsync(p.h_out.data(), p.d_out.data(), bytes, cudaMemcpyDeviceToHost, s));
}

}  // namespace

const std::vector<course::Version<Runner>>& versions() {
  static const std::vector<course::Version<Runner>> registry = {
      {"add_cpu", "vector add, one CPU core, plain loop", {add_cpu<float>, add_cpu<double>, false, false}, false},
      {"add_gpu", "vector add kernel alone, data already on the GPU", {add_gpu<float>, add_gpu<double>, true, false}, true},
      {"add_gpu_copies", "vector add with both inputs copied in and the output copied back",
       {add_gpu_copies<float>, add_gpu_copies<double>, true, false}, true},
      {"sqrt_cpu", "iters dependent square roots per element, one CPU core", {sqrt_cpu<float>, sqrt_cpu<double>, false, true}, false},
      {"sqrt_gpu", "square-root loop kernel alone", {sqrt_gpu<float>, sqrt_gpu<double>, true, true}, false},
      {"sqrt_gpu_copies", "square-root loop with its copies", {sqrt_gpu_copies<float>, sqrt_gpu_copies<double>, true, true}, false},
  };
  return registry;
}

// [predicted_add]
// Exercise 3 (think): predict before you measure. A memory-bound kernel takes (bytes it moves) /
// (bandwidth); the driver prints this prediction, from the card's measured roofline, beside the
// measured time. Nothing here is given away: count the bytes yourself, and mind the units.
double predicted_add_ms(std::size_t n, std::size_t elem_bytes, double gbps) {
  if (!(gbps > 0.0)) throw course::UsageError("predicted_add_ms: gbps must be positive");
  // BEGIN SOLUTION
  // a and b are read, out is written: three arrays of n elements cross the memory bus. In double
  // from the start, so that no integer product can wrap however large n is.
  const double bytes = 3.0 * static_cast<double>(n) * static_cast<double>(elem_bytes);
  return bytes / (gbps * 1e9) * 1e3;
  // STUB
  //> // TODO(student): how many bytes cross the memory bus when launch_add runs on n elements of
  //> // elem_bytes each? Return the milliseconds they take at gbps GB/s (1 GB = 10^9 bytes), exact
  //> // to rounding for every n, past 2^32 too. Test: ch01 predicted_add_ms: * (host only).
  //> // See README §Exercise 3.
  //> (void)n, (void)elem_bytes;
  //> return -1.0;
  // END SOLUTION
}
// [predicted_add]

namespace on_host {
void add_thread(const float* a, const float* b, float* out, std::size_t n, unsigned block, unsigned block_dim,
                unsigned tid) {
  ch01::add_thread(a, b, out, n, block, block_dim, tid);
}
void add_thread(const double* a, const double* b, double* out, std::size_t n, unsigned block, unsigned block_dim,
                unsigned tid) {
  ch01::add_thread(a, b, out, n, block, block_dim, tid);
}
}  // namespace on_host

template struct Problem<float>;
template struct Problem<double>;
template void launch_add<float>(const float*, const float*, float*, std::size_t, cudaStream_t);
template void launch_add<double>(const double*, const double*, double*, std::size_t, cudaStream_t);
template float sqrt_loop<float>(float, float, int);
template double sqrt_loop<double>(double, double, int);

}  // namespace ch01
