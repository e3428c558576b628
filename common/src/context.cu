#include "course/context.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <utility>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/cublas_check.hpp"
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

}  // namespace

DeviceFacts query_device_facts(int device) {
  DeviceFacts f;
  f.id = device;
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
  if (const std::size_t limit = device_memory_limit(); limit != 0) f.global_bytes = std::min(f.global_bytes, limit);
  // CUDA 13 removed memoryClockRate from cudaDeviceProp; the attribute is the way.
  CUDA_CHECK(cudaDeviceGetAttribute(&f.memory_clock_khz, cudaDevAttrMemoryClockRate, f.id));
  CUDA_CHECK(cudaDeviceGetAttribute(&f.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, f.id));
  f.peak_gbps = 2.0 * f.memory_clock_khz * 1e3 * (f.bus_width_bits / 8.0) / 1e9;
  return f;
}

Roofline measure_roofline(Context& ctx) {
  ctx.activate();
  const DeviceFacts& f = ctx.facts();
  cudaStream_t stream = ctx.stream();
  Roofline r;
  // At least 8× L2 so no repetition is served from cache; 1 GiB where memory allows.
  std::size_t bytes = std::max<std::size_t>(std::size_t{1} << 30, 8 * f.l2_bytes);
  bytes = std::min(bytes, free_device_bytes() / 3);
  bytes &= ~std::size_t{255};
  const std::size_t n4 = bytes / sizeof(float4);  // even: the two-stream kernel reads two halves
  DeviceBuffer<float4> buf(n4);
  DeviceBuffer<float4> copy(n4 / 2);
  DeviceBuffer<float> sink(1);
  buf.fill_bytes(0x3C, stream);  // a finite pattern; reading uninitialized memory would be a bug
  copy.fill_bytes(0, stream);
  sink.fill_bytes(0, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));

  // A few shapes, the best kept: the roofline is the most a simple kernel reaches on this card.
  auto try_shape = [&](auto kernel, int block, int waves) {
    int blocks_per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, block, 0));
    const unsigned grid = static_cast<unsigned>(f.sm_count * std::max(1, blocks_per_sm) * waves);
    auto samples = time_gpu_ms(
        [&] {
          kernel<<<grid, block, 0, stream>>>(buf.data(), n4, sink.data());
          CUDA_CHECK_LAUNCH("read_roofline_kernel");
        },
        3, 15, stream);
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
      [&] { CUDA_CHECK(cudaMemcpyAsync(copy.data(), buf.data(), copy_bytes, cudaMemcpyDeviceToDevice, stream)); }, 3, 15, stream);
  r.copy_gbps = 2.0 * static_cast<double>(copy_bytes) / (summarize(samples).median * 1e-3) / 1e9;
  r.bytes = bytes;
  return r;
}


std::size_t ScratchLayout::add(std::size_t bytes, std::size_t align) {
  if (align == 0 || (align & (align - 1)) != 0) throw UsageError("ScratchLayout::add: alignment must be a power of two");
  const std::size_t offset = (total_ + align - 1) & ~(align - 1);
  total_ = offset + bytes;
  return offset;
}

int device_count() {
  if (!gpu_available()) return 0;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

Context::Context(int device) {
  require_gpu();
  const int count = device_count();
  if (device < 0 || device >= count)
    throw UsageError("--device " + std::to_string(device) + ": this machine has " + std::to_string(count) +
                     " CUDA device" + (count == 1 ? "" : "s") + " (ids 0.." + std::to_string(count - 1) + ")");
  device_ = device;
  CUDA_CHECK(cudaSetDevice(device_));
  facts_ = query_device_facts(device_);
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Context::~Context() { release(); }

Context::Context(Context&& other) noexcept { *this = std::move(other); }

Context& Context::operator=(Context&& other) noexcept {
  if (this != &other) {
    release();
    device_ = std::exchange(other.device_, -1);
    stream_ = std::exchange(other.stream_, nullptr);
    facts_ = other.facts_;
    roofline_ = std::move(other.roofline_);
    cublas_ = std::exchange(other.cublas_, nullptr);
    scratch_ = std::exchange(other.scratch_, nullptr);
    scratch_bytes_ = std::exchange(other.scratch_bytes_, 0);
    shapes_ = std::move(other.shapes_);
  }
  return *this;
}

void Context::release() noexcept {
  if (device_ < 0) return;
  // A destructor must not throw: failures while freeing are ignored.
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cublas_ = nullptr;
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  stream_ = nullptr;
  device_ = -1;
}

void Context::activate() const { CUDA_CHECK(cudaSetDevice(device_)); }

void Context::synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

const Roofline& Context::roofline() {
  if (!roofline_) roofline_ = std::make_unique<Roofline>(measure_roofline(*this));
  return *roofline_;
}

cublasContext* Context::cublas() {
  if (cublas_ == nullptr) {
    activate();
    cublasHandle_t handle = nullptr;
    CUBLAS_CHECK(cublasCreate(&handle));
    // Results are written to device memory, asynchronously on the context's stream.
    cublasStatus_t status = cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE);
    if (status == CUBLAS_STATUS_SUCCESS) status = cublasSetStream(handle, stream_);
    if (status != CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
    CUBLAS_CHECK(status);
    cublas_ = handle;
  }
  return cublas_;
}

void Context::reserve_scratch(std::size_t bytes) {
  if (bytes <= scratch_bytes_) return;
  activate();
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // work in flight may still use the old arena
  if (scratch_ != nullptr) CUDA_CHECK(cudaFree(scratch_));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  CUDA_CHECK(cudaMalloc(&scratch_, bytes));
  scratch_bytes_ = bytes;
}

void* Context::scratch(std::size_t bytes) const {
  if (bytes > scratch_bytes_)
    throw UsageError("Context::scratch: " + format_bytes(bytes) + " asked for, but only " +
                     format_bytes(scratch_bytes_) + " were reserved (call reserve_scratch at set-up)");
  return scratch_;
}

// [occupancy]
// The occupancy API asks the compiled kernel (its registers, its shared memory per block) for the
// block size that keeps the most warps resident on an SM; rounded down to a power of two (a tree
// reduction needs one, the others do not mind), then how many such blocks an SM holds. Asked once
// per kernel and per context, then cached: it costs microseconds, a short kernel not many more.
LaunchShape Context::occupancy_of(const void* kernel, std::size_t shared_per_thread) {
  const auto key = std::make_pair(kernel, shared_per_thread);
  if (auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  activate();
  int min_grid = 0, suggested = 0;
  CUDA_CHECK(cudaOccupancyMaxPotentialBlockSizeVariableSMem(
      &min_grid, &suggested, kernel, [shared_per_thread](int block) { return block * shared_per_thread; }));
  LaunchShape s;
  s.block = 1;
  while (s.block * 2 <= suggested) s.block *= 2;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&s.blocks_per_sm, kernel, s.block,
                                                          s.block * shared_per_thread));
  if (s.block < 32 || s.blocks_per_sm < 1)
    throw CudaError(cudaErrorInvalidConfiguration,
                    "occupancy API suggests " + std::to_string(suggested) + " threads per block (" +
                        std::to_string(s.blocks_per_sm) + " per SM); the course's reductions need 32 or more");
  shapes_.emplace(key, s);
  return s;
}
// [occupancy]

}  // namespace course
