#include "course/random.hpp"

#include <algorithm>
#include <thread>

#include "course/check.hpp"

namespace course {
namespace {

__global__ void fill_random_kernel(float* __restrict__ out, std::size_t n, std::uint64_t seed, float lo, float hi) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = random_at(seed, i, lo, hi);
}

}  // namespace

std::size_t fill_threads(std::size_t n, unsigned hardware_threads) {
  // hardware_concurrency() may return 0 ("unknown"): one thread then, never zero (zero threads
  // would leave the vector as it was allocated: all zeros).
  if (n < (std::size_t{1} << 22)) return 1;
  return std::max<std::size_t>(1, std::min<std::size_t>(8, hardware_threads));
}

std::vector<float> random_vector(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  // Each value depends only on (seed, i), so threads can fill disjoint ranges.
  const std::size_t chunks = fill_threads(n, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  for (std::size_t c = 0; c < chunks; ++c)
    workers.emplace_back([&, c] {
      const std::size_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      for (std::size_t i = begin; i < end; ++i) v[i] = random_at(seed, i, lo, hi);
    });
  for (auto& w : workers) w.join();
  return v;
}

void fill_random_device(float* d_out, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  const int block = 256;
  const std::size_t blocks = std::min<std::size_t>((n + block - 1) / block, 65535);
  fill_random_kernel<<<static_cast<unsigned>(blocks), block, 0, stream>>>(d_out, n, seed, lo, hi);
  CUDA_CHECK_LAUNCH("fill_random_kernel");
}

}  // namespace course
