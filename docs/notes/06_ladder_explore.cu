// Chapter 06, issue 11: exploration benchmark (not part of the build). What costs the single pass
// at middle n, and which grid and combine remove it. Standalone: nvcc -O3 -std=c++17 -arch=sm_90
// docs/notes/06_ladder_explore.cu -lcublas -o explore && ./explore > explore.csv
//
// Per call timing as the chapter (one event pair per call, host waits between calls, median),
// inputs rotated over copies worth 2 × L2. Variants:
//   empty<<<1,1>>>                       the launch-latency floor's first term
//   atomic<B>  grid-stride float4 + shuffles + one atomicAdd per block, memset first
//   v11        the chapter's single pass (ticket acq_rel, counter reset, grid to 8 machine grids)
//   k12<B,U,M> float4 × U in flight, grid = clamp(ceil(n4 / (B·U·T)), 1, cap·SMs); combine M:
//              0 ticket (v11's), 1 epoch-tagged partials polled by the last block index, 2 ticket
//              against a monotonic target (no reset)
#include <cublas_v2.h>
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

constexpr unsigned kWarp = 32;

__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (unsigned o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
template <unsigned Block>
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float s_warp[Block / kWarp];
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) s_warp[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < Block / kWarp ? s_warp[lane] : 0.0f);
  return v;
}

__global__ void empty_kernel() {}

// The chapter's vec4 loop (aligned inputs here: head 0).
template <int Unroll>
__device__ __forceinline__ float thread_dot(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                            std::size_t thread, std::size_t threads) {
  const std::size_t n4 = n / 4, tail = 4 * n4;
  float sum = 0.0f;
  if (thread < n - tail) sum += x[tail + thread] * y[tail + thread];
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  std::size_t i = thread;
  for (; i + (Unroll - 1) * threads < n4; i += Unroll * threads) {
    float4 a[Unroll], b[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      a[u] = __ldg(x4 + i + u * threads);
      b[u] = __ldg(y4 + i + u * threads);
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) sum += dot4(a[u], b[u]);
  }
  for (; i < n4; i += threads) sum += dot4(__ldg(x4 + i), __ldg(y4 + i));
  return sum;
}

template <unsigned Block, int Unroll>
__global__ void __launch_bounds__(Block) atomic_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                      std::size_t n, float* result) {
  float s = thread_dot<Unroll>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  s = block_sum<Block>(s);
  if (threadIdx.x == 0) atomicAdd(result, s);
}

// v11 as in the chapter.
template <unsigned Block>
__global__ void __launch_bounds__(Block) v11_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                   std::size_t n, float* __restrict__ partials, unsigned* counter,
                                                   float* __restrict__ result) {
  float sum = thread_dot<4>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) *result = sum;
    return;
  }
  __shared__ bool s_is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sum;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> done(*counter);
    s_is_last = done.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1;
  }
  __syncthreads();
  if (!s_is_last) return;
  float t[4] = {0, 0, 0, 0};
  unsigned b = threadIdx.x;
  for (; b + 3 * Block < gridDim.x; b += 4 * Block)
#pragma unroll
    for (int k = 0; k < 4; ++k) t[k] += __ldcg(partials + b + k * Block);
  for (; b < gridDim.x; b += Block) t[0] += __ldcg(partials + b);
  const float total = block_sum<Block>((t[0] + t[1]) + (t[2] + t[3]));
  if (threadIdx.x == 0) {
    *result = total;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*counter).store(0, cuda::memory_order_relaxed);
  }
}

struct K12Args {
  float* partials;
  unsigned long long* slots;
  unsigned* counter;
  unsigned epoch;   // mode 1: tag of this call
  unsigned target;  // mode 2: ticket of the last block
};

template <unsigned Block, int Unroll, int Mode>
__global__ void __launch_bounds__(Block) k12(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                            K12Args a, float* __restrict__ result) {
  float sum = thread_dot<Unroll>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  const unsigned blocks = gridDim.x;
  if (blocks == 1) {
    if (threadIdx.x == 0) *result = sum;
    return;
  }
  if constexpr (Mode == 1) {
    const unsigned last = blocks - 1;
    if (blockIdx.x != last) {
      if (threadIdx.x == 0) {
        const unsigned long long v = (static_cast<unsigned long long>(a.epoch) << 32) | __float_as_uint(sum);
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(a.slots[blockIdx.x]).store(v, cuda::memory_order_relaxed);
      }
      return;
    }
    __shared__ float s_own;
    if (threadIdx.x == 0) s_own = sum;
    __syncthreads();
    float t = 0.0f;
    for (unsigned b = threadIdx.x; b < blocks; b += Block) {
      if (b == last) {
        t += s_own;
      } else {
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> slot(a.slots[b]);
        unsigned long long v;
        do {
          v = slot.load(cuda::memory_order_relaxed);
        } while (static_cast<unsigned>(v >> 32) != a.epoch);
        t += __uint_as_float(static_cast<unsigned>(v));
      }
    }
    const float total = block_sum<Block>(t);
    if (threadIdx.x == 0) *result = total;
  } else {
    __shared__ bool s_is_last;
    if (threadIdx.x == 0) {
      a.partials[blockIdx.x] = sum;
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> done(*a.counter);
      const unsigned ticket = done.fetch_add(1, cuda::memory_order_acq_rel);
      s_is_last = Mode == 0 ? ticket == blocks - 1 : ticket == a.target;
    }
    __syncthreads();
    if (!s_is_last) return;
    float t = 0.0f;
    for (unsigned b = threadIdx.x; b < blocks; b += Block) t += __ldcg(a.partials + b);
    const float total = block_sum<Block>(t);
    if (threadIdx.x == 0) {
      *result = total;
      if (Mode == 0) cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*a.counter).store(0, cuda::memory_order_relaxed);
    }
  }
}

// ---------------------------------------------------------------------------------------------
struct Timer {
  cudaEvent_t a, b;
  Timer() { CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char** argv) {
  int reps_small = argc > 1 ? std::atoi(argv[1]) : 200;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const std::size_t l2 = prop.l2CacheSize;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE);
  cublasSetStream(h, st);

  int occ11 = 0, occ9 = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ11, v11_kernel<256>, 256, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ9, atomic_kernel<256, 4>, 256, 0));
  const int machine_grid = sms * std::min(6, occ11);  // the chapter: min(kernel 9, kernel 11) = 6
  std::fprintf(stderr, "sms %d occ11 %d occ-atomic %d machine_grid %d\n", sms, occ11, occ9, machine_grid);

  float *partials, *result;
  unsigned long long* slots;
  unsigned* counter;
  CK(cudaMalloc(&partials, 1 << 20));
  CK(cudaMalloc(&slots, 1 << 20));
  CK(cudaMalloc(&counter, 64));
  CK(cudaMalloc(&result, 64));
  CK(cudaMemset(slots, 0, 1 << 20));
  CK(cudaMemset(counter, 0, 64));
  unsigned epoch = 0, target_base = 0;

  struct Variant {
    std::string name;
    std::function<void(const float*, const float*, std::size_t)> run;
  };
  std::vector<Variant> vs;
  vs.push_back({"empty", [&](const float*, const float*, std::size_t) { empty_kernel<<<1, 1, 0, st>>>(); }});
  vs.push_back({"empty256", [&](const float*, const float*, std::size_t) { empty_kernel<<<1, 256, 0, st>>>(); }});
  vs.push_back({"cublas", [&](const float* x, const float* y, std::size_t n) {
                  cublasSdot_64(h, static_cast<int64_t>(n), x, 1, y, 1, result);
                }});
  // atomic baselines: grid = ceil(n4 / B) capped at cap_mult × SMs (one float4 per thread per trip)
  for (int cap : {4, 8, 16})
    vs.push_back({"atomic_b256_u1_cap" + std::to_string(cap), [&, cap](const float* x, const float* y, std::size_t n) {
                    const std::size_t want = std::max<std::size_t>(1, (n / 4 + 255) / 256);
                    const unsigned g = static_cast<unsigned>(std::min<std::size_t>(want, std::size_t(cap) * sms));
                    CK(cudaMemsetAsync(result, 0, 4, st));
                    atomic_kernel<256, 1><<<g, 256, 0, st>>>(x, y, n, result);
                  }});
  vs.push_back({"atomic_b256_u4_mg", [&](const float* x, const float* y, std::size_t n) {
                  const std::size_t want = std::max<std::size_t>(1, (n + 4095) / 4096);
                  const unsigned g = static_cast<unsigned>(std::min<std::size_t>(want, machine_grid));
                  CK(cudaMemsetAsync(result, 0, 4, st));
                  atomic_kernel<256, 4><<<g, 256, 0, st>>>(x, y, n, result);
                }});
  vs.push_back({"v11", [&](const float* x, const float* y, std::size_t n) {
                  const std::size_t want = std::max<std::size_t>(1, (n + 4095) / 4096);
                  const unsigned g = static_cast<unsigned>(std::min<std::size_t>(want, 8 * std::size_t(machine_grid)));
                  v11_kernel<256><<<g, 256, 0, st>>>(x, y, n, partials, counter, result);
                }});
  auto add12 = [&](auto kernel, unsigned block, int unroll, int mode) {
    for (int trips : {1, 2})
      for (int cap : {1, 2, 4, 48}) {
        std::string name = "k12_b" + std::to_string(block) + "_u" + std::to_string(unroll) + "_m" + std::to_string(mode) +
                           "_t" + std::to_string(trips) + "_cap" + std::to_string(cap);
        vs.push_back({name, [&, kernel, block, unroll, mode, trips, cap](const float* x, const float* y, std::size_t n) {
                        const std::size_t per = std::size_t(block) * 4 * unroll * trips;
                        const std::size_t want = std::max<std::size_t>(1, (n + per - 1) / per);
                        const unsigned g = static_cast<unsigned>(std::min<std::size_t>(want, std::size_t(cap) * sms));
                        K12Args a{partials, slots, counter, 0, 0};
                        if (mode == 1) {
                          if (++epoch == 0xffffffffu) epoch = 1;
                          a.epoch = epoch;
                        }
                        if (mode == 2) {
                          a.counter = counter + 16;  // its own counter: never reset
                          a.target = target_base + g - 1;
                          if (g > 1) target_base += g;
                        }
                        kernel<<<g, block, 0, st>>>(x, y, n, a, result);
                      }});
      }
  };
  add12(k12<256, 4, 0>, 256, 4, 0);
  add12(k12<256, 4, 1>, 256, 4, 1);
  add12(k12<256, 4, 2>, 256, 4, 2);
  add12(k12<256, 8, 0>, 256, 8, 0);
  add12(k12<256, 8, 1>, 256, 8, 1);
  add12(k12<512, 4, 0>, 512, 4, 0);
  add12(k12<512, 4, 1>, 512, 4, 1);
  add12(k12<512, 8, 1>, 512, 8, 1);
  add12(k12<1024, 4, 1>, 1024, 4, 1);
  add12(k12<1024, 2, 1>, 1024, 2, 1);

  Timer tm;
  std::printf("variant,n,median_us,p10_us,p90_us,rel_err\n");
  for (int p = 10; p <= 28; p += 2) {
    const std::size_t n = std::size_t{1} << p;
    const std::size_t stride = (n + 63) / 64 * 64;
    const std::size_t sets = std::max<std::size_t>(1, (2 * l2 + 8 * n - 1) / (8 * n));
    float *x, *y;
    CK(cudaMalloc(&x, sets * stride * 4));
    CK(cudaMalloc(&y, sets * stride * 4));
    std::vector<float> hx(n), hy(n);
    double ref = 0;
    uint32_t s = 12345u + p;
    for (std::size_t i = 0; i < n; ++i) {
      s = s * 1664525u + 1013904223u;
      hx[i] = (s >> 8) * (2.0f / 16777216.0f) - 1.0f;
      s = s * 1664525u + 1013904223u;
      hy[i] = (s >> 8) * (2.0f / 16777216.0f) - 1.0f;
      ref += double(hx[i]) * hy[i];
    }
    for (std::size_t k = 0; k < sets; ++k) {
      CK(cudaMemcpy(x + k * stride, hx.data(), n * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(y + k * stride, hy.data(), n * 4, cudaMemcpyHostToDevice));
    }
    const int reps = p >= 26 ? 40 : reps_small;
    std::size_t set = 0;
    for (auto& v : vs) {
      for (int w = 0; w < 10; ++w) {
        set = (set + 1) % sets;
        v.run(x + set * stride, y + set * stride, n);
      }
      CK(cudaStreamSynchronize(st));
      std::vector<double> t;
      for (int r = 0; r < reps; ++r) {
        set = (set + 1) % sets;
        CK(cudaEventRecord(tm.a, st));
        v.run(x + set * stride, y + set * stride, n);
        CK(cudaEventRecord(tm.b, st));
        CK(cudaEventSynchronize(tm.b));
        float ms;
        CK(cudaEventElapsedTime(&ms, tm.a, tm.b));
        t.push_back(ms * 1e3);
      }
      CK(cudaGetLastError());
      float got = 0;
      CK(cudaMemcpy(&got, result, 4, cudaMemcpyDeviceToHost));
      double err = v.name.rfind("empty", 0) == 0 ? 0 : std::abs(got - ref) / std::max(1e-30, std::abs(ref));
      std::sort(t.begin(), t.end());
      std::printf("%s,%zu,%.3f,%.3f,%.3f,%.2e\n", v.name.c_str(), n, median(t), t[t.size() / 10], t[t.size() * 9 / 10], err);
    }
    std::fflush(stdout);
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  return 0;
}
