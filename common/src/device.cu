#include "course/device.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"

namespace course {
namespace {

// The read roofline: every thread streams 16-byte loads, `Unroll` independent ones in flight per
// iteration, and folds them into a sum that is stored only under a condition the compiler cannot
// decide, so no load is optimized away. Nothing is written per element: this is the ceiling for
// a kernel that only reads, like a dot product. Several shapes are measured and the best kept, so
// that no course kernel can beat "the roofline" by having more bytes in flight.
template <int Unroll>
__global__ void read_roofline_kernel(const float4* __restrict__ p, std::size_t n4, float* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (; i + (Unroll - 1) * stride < n4; i += Unroll * stride) {
    float4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) v[u] = __ldg(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < Unroll; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < n4; i += stride) {
    const float4 a = __ldg(p + i);
    acc += a.x + a.y + a.z + a.w;
  }
  if (acc == -1.2345e-30f) *sink = acc;
}

// The same over two streams at once, the access pattern of a dot product (x and y): DRAM serves
// two concurrent sequential streams slightly better than one on some cards (seen on the H100).
template <int Unroll>
__global__ void read2_roofline_kernel(const float4* __restrict__ p, std::size_t n4, float* sink) {
  const std::size_t half = n4 / 2;
  const float4* __restrict__ q = p + half;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  for (; i + (Unroll - 1) * stride < half; i += Unroll * stride) {
    float4 a[Unroll], b[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      a[u] = __ldg(p + i + u * stride);
      b[u] = __ldg(q + i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) acc += (a[u].x + b[u].y) + (a[u].z + b[u].w) + (a[u].y + b[u].x) + (a[u].w + b[u].z);
  }
  for (; i < half; i += stride) {
    const float4 a = __ldg(p + i), b = __ldg(q + i);
    acc += (a.x + b.y) + (a.z + b.w) + (a.y + b.x) + (a.w + b.z);
  }
  if (acc == -1.2345e-30f) *sink = acc;
}

DeviceFacts query_facts() {
  DeviceFacts f;
  CUDA_CHECK(cudaGetDevice(&f.id));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, f.id));
  f.name = prop.name;
  f.cc_major = prop.major;
  f.cc_minor = prop.minor;
  f.sm_count = prop.multiProcessorCount;
  f.warp_size = prop.warpSize;
  f.max_threads_per_block = prop.maxThreadsPerBlock;
  f.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  f.shared_per_block = prop.sharedMemPerBlock;
  f.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  f.global_bytes = prop.totalGlobalMem;
  // CUDA 13 removed memoryClockRate from cudaDeviceProp; the attribute is the way.
  CUDA_CHECK(cudaDeviceGetAttribute(&f.memory_clock_khz, cudaDevAttrMemoryClockRate, f.id));
  CUDA_CHECK(cudaDeviceGetAttribute(&f.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, f.id));
  f.peak_gbps = 2.0 * f.memory_clock_khz * 1e3 * (f.bus_width_bits / 8.0) / 1e9;
  return f;
}

Roofline measure_roofline() {
  const DeviceFacts& f = device_facts();
  Roofline r;
  // At least 8× L2 so no repetition is served from cache; 1 GiB where memory allows.
  std::size_t bytes = std::max<std::size_t>(std::size_t{1} << 30, 8 * f.l2_bytes);
  bytes = std::min(bytes, free_device_bytes() / 3);
  bytes &= ~std::size_t{255};
  const std::size_t n4 = bytes / sizeof(float4);  // even: the two-stream kernel reads two halves
  DeviceBuffer<float4> buf(n4);
  DeviceBuffer<float4> copy(n4 / 2);
  DeviceBuffer<float> sink(1);
  buf.fill_bytes(0x3C);  // a finite pattern; reading uninitialized memory would be a bug
  copy.fill_bytes(0);
  sink.fill_bytes(0);
  CUDA_CHECK(cudaDeviceSynchronize());

  // A few shapes, the best kept: the roofline is the most a simple kernel reaches on this card.
  auto try_shape = [&](auto kernel, int block, int waves) {
    int blocks_per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, block, 0));
    const unsigned grid = static_cast<unsigned>(f.sm_count * std::max(1, blocks_per_sm) * waves);
    auto samples = time_gpu_ms(
        [&] {
          kernel<<<grid, block>>>(buf.data(), n4, sink.data());
          CUDA_CHECK_LAUNCH("read_roofline_kernel");
        },
        3, 15);
    const double gbps = static_cast<double>(bytes) / (summarize(samples).median * 1e-3) / 1e9;
    r.read_gbps = std::max(r.read_gbps, gbps);
  };
  for (int block : {256, 512})
    for (int waves : {1, 4}) {
      try_shape(read_roofline_kernel<4>, block, waves);
      try_shape(read_roofline_kernel<8>, block, waves);
      try_shape(read2_roofline_kernel<4>, block, waves);
    }
  const std::size_t copy_bytes = copy.bytes();
  auto samples = time_gpu_ms(
      [&] { CUDA_CHECK(cudaMemcpyAsync(copy.data(), buf.data(), copy_bytes, cudaMemcpyDeviceToDevice)); }, 3, 15);
  r.copy_gbps = 2.0 * static_cast<double>(copy_bytes) / (summarize(samples).median * 1e-3) / 1e9;
  r.bytes = bytes;
  return r;
}

}  // namespace

bool gpu_available(std::string* why) {
  static int state = -1;  // -1 unknown, 0 no, 1 yes
  static std::string reason;
  if (state < 0) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ", " + cudaGetErrorString(err);
      cudaGetLastError();  // clear the sticky-free error so later calls start clean
      state = 0;
    } else if (count == 0) {
      reason = "cudaGetDeviceCount found no CUDA device";
      state = 0;
    } else {
      const cudaError_t init = cudaFree(nullptr);  // creates the context: fails on a broken driver
      if (init != cudaSuccess) {
        reason = std::string("creating a CUDA context failed: ") + cudaGetErrorName(init) + ", " +
                 cudaGetErrorString(init);
        state = 0;
      } else {
        state = 1;
      }
    }
  }
  if (why != nullptr) *why = reason;
  return state == 1;
}

void require_gpu() {
  std::string why;
  if (!gpu_available(&why)) throw NoGpuError("no usable CUDA GPU: " + why);
}

const DeviceFacts& device_facts() {
  static const DeviceFacts facts = [] {
    require_gpu();
    return query_facts();
  }();
  return facts;
}

std::string describe_device(const DeviceFacts& f) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %d SMs, %s L2, %s, peak %.0f GB/s", f.name.c_str(), f.cc_major,
                f.cc_minor, f.sm_count, format_bytes(f.l2_bytes).c_str(), format_bytes(f.global_bytes).c_str(),
                f.peak_gbps);
  return buf;
}

const Roofline& measured_roofline() {
  static const Roofline roofline = measure_roofline();
  return roofline;
}

std::size_t free_device_bytes() {
  require_gpu();
  std::size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

void require_fits(std::size_t bytes, const std::string& what) {
  const std::size_t reserve = std::size_t{256} << 20;  // the context, libraries' workspaces
  const std::size_t free_bytes = free_device_bytes();
  if (free_bytes < reserve || bytes > free_bytes - reserve)
    throw DoesNotFitError(what + " needs " + format_bytes(bytes) + " of device memory, but the card has only " +
                          format_bytes(free_bytes) + " free (" + format_bytes(reserve) +
                          " kept in reserve); choose a smaller --n");
}

}  // namespace course
