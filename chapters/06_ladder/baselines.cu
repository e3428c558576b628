// Chapter 06 — the library baselines, measured in the same run as the course's kernels.
//
// cuBLAS's dot product (two kernels: per-block partials, then one block adds them) and CUB's
// device-wide reduction over the products (one kernel for small n, two otherwise). Both take the
// same arguments as the course's launchers and leave the result on the device.

#include <cublas_v2.h>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/zip_iterator.h>

#include <cstdint>
#include <string>

#include "course/check.hpp"
#include "course/cublas_check.hpp"
#include "dot.hpp"

namespace ch06 {
namespace {

// [cub_product]
// CUB reduces a sequence; the sequence here is x[i]·y[i], read through a zip iterator (pairs
// (x[i], y[i])) and this transform, so the products are never stored.
struct Product {
  template <class Pair>
  __device__ float operator()(const Pair& xy) const {
    return thrust::get<0>(xy) * thrust::get<1>(xy);
  }
};
// [cub_product]

}  // namespace

// [cublas]
void run_cublas(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                cudaStream_t stream) {
  ws.require(n, 0);
  if (n == 0) {  // the result of an empty sum is 0; do not depend on what the library does then
    CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), stream));
    return;
  }
  // The context's handle: pointer mode device (the result stays on the GPU), bound to the
  // context's stream. A call on another stream borrows the handle for that stream and gives it back.
  cublasHandle_t handle = ws.ctx.cublas();
  const bool other_stream = stream != ws.ctx.stream();
  if (other_stream) CUBLAS_CHECK(cublasSetStream(handle, stream));
  // The _64 entry point takes 64-bit sizes: cublasSdot's `int n` stops at 2^31 − 1 elements.
  const cublasStatus_t status = cublasSdot_64(handle, static_cast<std::int64_t>(n), d_x, 1, d_y, 1, d_result);
  if (other_stream) CUBLAS_CHECK(cublasSetStream(handle, ws.ctx.stream()));
  CUBLAS_CHECK(status);
}
// [cublas]

// [cub]
void run_cub(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
             cudaStream_t stream) {
  ws.require(n, 0);
  std::size_t temp_bytes = ws.cub_temp_bytes;  // reserved once, for the largest n
  CUDA_CHECK(cub::DeviceReduce::TransformReduce(ws.cub_temp(), temp_bytes, thrust::make_zip_iterator(d_x, d_y), d_result,
                                           n, cuda::std::plus<>{}, Product{}, 0.0f, stream));
  CUDA_CHECK_LAUNCH("cub::DeviceReduce::TransformReduce");
}
// [cub]

std::size_t cub_temp_bytes_for(std::size_t n) {
  std::size_t temp_bytes = 0;
  const float* none = nullptr;
  CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, thrust::make_zip_iterator(none, none),
                                           static_cast<float*>(nullptr), n, cuda::std::plus<>{}, Product{}, 0.0f));
  return temp_bytes;
}

}  // namespace ch06
