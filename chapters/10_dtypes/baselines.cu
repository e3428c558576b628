// Chapter 10 — the library baselines, measured in the same run as the course kernel.
//
// cuBLAS where it has the pair: cublasSdot_64, cublasDdot_64, and cublasDotEx_64 for float16 and
// bfloat16 (both inputs of one type, a result of that type, computed in float32: the combinations
// its documentation lists). For the pairs it lacks, "convert, then cuBLAS": a kernel writes a copy
// of the narrower input in the wider type (the extra pass and the extra memory a user pays), then
// the cuBLAS dot of that type. And CUB's DeviceReduce::TransformReduce over the same pair, in the
// accumulator the course's rule gives. Every launcher leaves the result as one double on the device.
// Beside them, the speed-of-light row of every pair: not a dot product, the pair's bytes read with
// the best access pattern and nothing else (the floor the course kernel is held to).

#include <cublas_v2.h>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/zip_iterator.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "course/check.hpp"
#include "course/cublas_check.hpp"
#include "dot.hpp"

namespace ch10 {
namespace {

using bf16 = __nv_bfloat16;
using i8 = std::int8_t;

template <class T>
__device__ __forceinline__ float as_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float as_float<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float as_float<bf16>(bf16 v) { return __bfloat162float(v); }

// The baselines' own copy of the rule (an exercise must not change what it is compared with).
template <class X, class Y>
using Accumulator =
    std::conditional_t<std::is_integral_v<X> && std::is_integral_v<Y>, long long,
                       std::conditional_t<std::is_same_v<X, double> || std::is_same_v<Y, double>, double, float>>;

template <class Acc, class T>
__device__ __forceinline__ Acc to_acc(T v) {
  if constexpr (std::is_integral_v<Acc>) return static_cast<Acc>(v);
  else return static_cast<Acc>(as_float(v));
}
template <>
__device__ __forceinline__ double to_acc<double, double>(double v) { return v; }

// [cub_product]
template <class Acc>
struct Product {
  template <class XY>
  __device__ Acc operator()(const XY& xy) const {
    return to_acc<Acc>(thrust::get<0>(xy)) * to_acc<Acc>(thrust::get<1>(xy));
  }
};
// [cub_product]

template <class X, class Y>
void run_cub_t(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream) {
  using Acc = Accumulator<X, Y>;
  ws.require(n);
  std::size_t temp_bytes = ws.cub_temp.bytes();
  // The accumulator is Acc (the type of the init value and of the products); the output iterator is
  // the double: CUB writes the Acc total converted.
  CUDA_CHECK(cub::DeviceReduce::TransformReduce(
      ws.cub_temp.data(), temp_bytes, thrust::make_zip_iterator(static_cast<const X*>(d_x), static_cast<const Y*>(d_y)),
      d_result, n, cuda::std::plus<>{}, Product<Acc>{}, Acc{0}, stream));
  CUDA_CHECK_LAUNCH("cub::DeviceReduce::TransformReduce");
}

template <class X, class Y>
std::size_t cub_temp_t(std::size_t n) {
  using Acc = Accumulator<X, Y>;
  std::size_t temp_bytes = 0;
  const X* nx = nullptr;
  const Y* ny = nullptr;
  CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, thrust::make_zip_iterator(nx, ny),
                                                static_cast<double*>(nullptr), n, cuda::std::plus<>{}, Product<Acc>{},
                                                Acc{0}));
  return temp_bytes;
}

// [widen_result]
// cuBLAS leaves its result in its own type; one thread widens it to the double every launcher writes.
template <class T>
__global__ void widen_result(const T* __restrict__ in, double* __restrict__ out) {
  *out = static_cast<double>(as_float(*in));
}
// [widen_result]

template <class T>
void widen(const void* d_lib, double* d_result, cudaStream_t stream) {
  widen_result<T><<<1, 1, 0, stream>>>(static_cast<const T*>(d_lib), d_result);
  CUDA_CHECK_LAUNCH("widen_result");
}

// [convert_kernel]
// "Convert, then cuBLAS": a full pass that reads the narrow input and writes it in the wide type.
template <class From, class To>
__global__ void convert_kernel(const From* __restrict__ in, To* __restrict__ out, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<To>(as_float(in[i]));
}
template <>
__global__ void convert_kernel<i8, double>(const i8* __restrict__ in, double* __restrict__ out, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<double>(in[i]);
}
// [convert_kernel]

template <class From, class To>
To* convert(const void* d_in, std::size_t n, void* d_out, const Workspace& ws, cudaStream_t stream) {
  if (n == 0) return static_cast<To*>(d_out);
  const std::size_t blocks = std::min<std::size_t>((n + 255) / 256, static_cast<std::size_t>(ws.ctx.facts().sm_count) * 8);
  convert_kernel<From, To><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<const From*>(d_in),
                                                                              static_cast<To*>(d_out), n);
  CUDA_CHECK_LAUNCH("convert_kernel");
  return static_cast<To*>(d_out);
}

/// The context's cuBLAS handle on `stream` for the duration of `body` (pointer mode device).
template <class Body>
void with_cublas(Workspace& ws, cudaStream_t stream, Body&& body) {
  cublasHandle_t handle = ws.ctx.cublas();
  const bool other = stream != ws.ctx.stream();
  if (other) CUBLAS_CHECK(cublasSetStream(handle, stream));
  const cublasStatus_t status = body(handle);
  if (other) CUBLAS_CHECK(cublasSetStream(handle, ws.ctx.stream()));
  CUBLAS_CHECK(status);
}

bool empty(std::size_t n, double* d_result, cudaStream_t stream) {
  if (n != 0) return false;
  CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(double), stream));  // 0.0 is all zero bits
  return true;
}

void sdot(Workspace& ws, const float* x, const float* y, std::size_t n, double* d_result, cudaStream_t stream) {
  float* lib = reinterpret_cast<float*>(ws.lib_result.data());
  with_cublas(ws, stream, [&](cublasHandle_t h) { return cublasSdot_64(h, static_cast<std::int64_t>(n), x, 1, y, 1, lib); });
  widen<float>(lib, d_result, stream);
}

void ddot(Workspace& ws, const double* x, const double* y, std::size_t n, double* d_result, cudaStream_t stream) {
  with_cublas(ws, stream,
              [&](cublasHandle_t h) { return cublasDdot_64(h, static_cast<std::int64_t>(n), x, 1, y, 1, d_result); });
}

template <class T>
void dot_ex(Workspace& ws, const void* x, const void* y, std::size_t n, double* d_result, cudaStream_t stream,
            cudaDataType type) {
  void* lib = ws.lib_result.data();
  with_cublas(ws, stream, [&](cublasHandle_t h) {
    return cublasDotEx_64(h, static_cast<std::int64_t>(n), x, type, 1, y, type, 1, lib, type, CUDA_R_32F);
  });
  widen<T>(lib, d_result, stream);
}

}  // namespace

// [cublas]
void run_cublas_f32(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (!empty(n, r, s)) sdot(ws, static_cast<const float*>(x), static_cast<const float*>(y), n, r, s);
}
void run_cublas_f64(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (!empty(n, r, s)) ddot(ws, static_cast<const double*>(x), static_cast<const double*>(y), n, r, s);
}
void run_cublas_f16(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (!empty(n, r, s)) dot_ex<__half>(ws, x, y, n, r, s, CUDA_R_16F);
}
void run_cublas_bf16(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (!empty(n, r, s)) dot_ex<bf16>(ws, x, y, n, r, s, CUDA_R_16BF);
}
// [cublas]

// [convert_cublas]
void run_convert_cublas_f32_bool(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (empty(n, r, s)) return;
  const float* yf = convert<bool, float>(y, n, ws.converted.data(), ws, s);
  sdot(ws, static_cast<const float*>(x), yf, n, r, s);
}
void run_convert_cublas_f32_i8(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (empty(n, r, s)) return;
  const float* yf = convert<i8, float>(y, n, ws.converted.data(), ws, s);
  sdot(ws, static_cast<const float*>(x), yf, n, r, s);
}
void run_convert_cublas_f32_f16(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (empty(n, r, s)) return;
  const float* yf = convert<__half, float>(y, n, ws.converted.data(), ws, s);
  sdot(ws, static_cast<const float*>(x), yf, n, r, s);
}
void run_convert_cublas_f32_f64(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (empty(n, r, s)) return;
  const double* xd = convert<float, double>(x, n, ws.converted.data(), ws, s);
  ddot(ws, xd, static_cast<const double*>(y), n, r, s);
}
// Both int8 inputs as float64: every product (at most 2^14) and every partial sum below 2^53 is exact
// in float64, so cuBLAS's answer is exact up to n = 2^39; float32 would round past 2^24.
void run_convert_cublas_i8_i8(const void* x, const void* y, std::size_t n, double* r, Workspace& ws, cudaStream_t s) {
  ws.require(n);
  if (empty(n, r, s)) return;
  const double* xd = convert<i8, double>(x, n, ws.converted.data(), ws, s);
  const double* yd = convert<i8, double>(y, n, ws.converted.data() + 8 * n, ws, s);
  ddot(ws, xd, yd, n, r, s);
}
// [convert_cublas]

Launcher cub_launcher(course::Dtype x, course::Dtype y) {
  using D = course::Dtype;
  if (x == D::f32 && y == D::f32) return run_cub_t<float, float>;
  if (x == D::f64 && y == D::f64) return run_cub_t<double, double>;
  if (x == D::f32 && y == D::f64) return run_cub_t<float, double>;
  if (x == D::f32 && y == D::boolean) return run_cub_t<float, bool>;
  if (x == D::f32 && y == D::i8) return run_cub_t<float, i8>;
  if (x == D::f32 && y == D::f16) return run_cub_t<float, __half>;
  if (x == D::f16 && y == D::f16) return run_cub_t<__half, __half>;
  if (x == D::bf16 && y == D::bf16) return run_cub_t<bf16, bf16>;
  if (x == D::i8 && y == D::i8) return run_cub_t<i8, i8>;
  throw course::UsageError(std::string("ch10: no CUB baseline for ") + course::dtype_name(x) + "*" + course::dtype_name(y));
}

namespace {

// [speed_of_light]
// Not a dot product: the floor of a pair. Both inputs read as bytes, each with 16-byte loads (a
// scalar head up to the first 16-byte boundary, a scalar tail), four loads in flight per thread,
// on the course kernel's grid: one trip per thread while that fits on the SMs at once, then the
// resident blocks, each looping. Nothing else: the words are folded with xor only so that the
// compiler cannot drop a load, and one value is written (thread 0 of block 0, or a thread whose fold
// has one unlikely bit pattern). Its time is the launch, the first trip to DRAM and the pair's bytes.
__device__ __forceinline__ unsigned fold_bytes(const unsigned char* __restrict__ p, std::size_t bytes,
                                               std::size_t thread, std::size_t threads) {
  constexpr int kUnroll = 4;
  const std::size_t to_boundary = (16 - reinterpret_cast<std::uintptr_t>(p) % 16) % 16;
  const std::size_t head = bytes < to_boundary ? bytes : to_boundary;
  const std::size_t n16 = (bytes - head) / 16;
  const std::size_t tail = head + 16 * n16;
  unsigned fold = 0;
  if (thread < head) fold ^= p[thread];          // threads >= 1024 > 15: one pass covers the head
  if (thread < bytes - tail) fold ^= p[tail + thread];  // and the tail
  const uint4* p16 = reinterpret_cast<const uint4*>(p + head);
  std::size_t i = thread;
  for (; i + (kUnroll - 1) * threads < n16; i += kUnroll * threads) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(p16 + i + u * threads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) fold ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += threads) {
    const uint4 v = __ldg(p16 + i);
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  return fold;
}

__global__ void __launch_bounds__(kBlock, 2)
    speed_of_light_kernel(const unsigned char* __restrict__ x, std::size_t x_bytes, const unsigned char* __restrict__ y,
                          std::size_t y_bytes, double* __restrict__ result) {
  const std::size_t thread = blockIdx.x * std::size_t{kBlock} + threadIdx.x;
  const std::size_t threads = std::size_t{gridDim.x} * kBlock;
  const unsigned fold = fold_bytes(x, x_bytes, thread, threads) ^ fold_bytes(y, y_bytes, thread, threads);
  if ((blockIdx.x == 0 && threadIdx.x == 0) || fold == 0x7fc0deadu) *result = static_cast<double>(fold);
}
// [speed_of_light]

template <std::size_t SX, std::size_t SY>
void run_speed_of_light_t(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws,
                          cudaStream_t stream) {
  ws.require(n);
  // The course kernel's trip: 64 bytes of the wider input per thread.
  constexpr std::size_t kWider = SX > SY ? SX : SY;
  const unsigned blocks =
      ws.grid_for(n, std::size_t{kBlock} * 64 / kWider, reinterpret_cast<const void*>(speed_of_light_kernel));
  speed_of_light_kernel<<<blocks, kBlock, 0, stream>>>(static_cast<const unsigned char*>(d_x), n * SX,
                                                      static_cast<const unsigned char*>(d_y), n * SY, d_result);
  CUDA_CHECK_LAUNCH("ch10::speed_of_light_kernel");
}

template <std::size_t SX>
Launcher speed_of_light_for(std::size_t sy) {
  switch (sy) {
    case 1: return run_speed_of_light_t<SX, 1>;
    case 2: return run_speed_of_light_t<SX, 2>;
    case 4: return run_speed_of_light_t<SX, 4>;
    case 8: return run_speed_of_light_t<SX, 8>;
  }
  return nullptr;
}

}  // namespace

Launcher speed_of_light_launcher(course::Dtype x, course::Dtype y) {
  Launcher l = nullptr;
  switch (course::dtype_size(x)) {
    case 1: l = speed_of_light_for<1>(course::dtype_size(y)); break;
    case 2: l = speed_of_light_for<2>(course::dtype_size(y)); break;
    case 4: l = speed_of_light_for<4>(course::dtype_size(y)); break;
    case 8: l = speed_of_light_for<8>(course::dtype_size(y)); break;
  }
  if (l == nullptr)
    throw course::UsageError(std::string("ch10: no speed-of-light kernel for ") + course::dtype_name(x) + "*" +
                             course::dtype_name(y));
  return l;
}

std::size_t cub_temp_bytes_for(std::size_t n) {
  return std::max({cub_temp_t<float, float>(n), cub_temp_t<double, double>(n), cub_temp_t<float, double>(n),
                   cub_temp_t<float, bool>(n), cub_temp_t<float, i8>(n), cub_temp_t<float, __half>(n),
                   cub_temp_t<__half, __half>(n), cub_temp_t<bf16, bf16>(n), cub_temp_t<i8, i8>(n)});
}

}  // namespace ch10
