// A kernel for the kit's own tests (test_common.cpp is compiled by g++, which cannot define one):
// Context::occupancy needs a real kernel to ask the occupancy API about.
// (No Catch2 here: nvcc need not compile it. Declared in course_test.hpp.)
#include <cstddef>

namespace course::test {
namespace {

__global__ void probe_kernel(const float* x, std::size_t n, float* out) {
  extern __shared__ float s_probe[];
  float sum = 0.0f;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) sum += x[i];
  s_probe[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) *out = s_probe[0];
}

}  // namespace

const void* probe_kernel_address() { return reinterpret_cast<const void*>(probe_kernel); }

}  // namespace course::test
