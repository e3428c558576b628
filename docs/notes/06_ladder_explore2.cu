// Chapter 06, issue 11: second exploration benchmark (not part of the build): thread-block clusters
// for middle n, against version 12's global tagged combine and the atomic baseline, every variant
// timed in turn (round-robin), so that drift falls on all alike. What costs the single pass
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
#include <cooperative_groups.h>
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


namespace cg = cooperative_groups;

// Version 12 (chapter): tagged partials, the last block reads them at once.
template <unsigned Block, int Unroll>
__global__ void __launch_bounds__(Block, 2) k12(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                               unsigned long long* tagged, unsigned tag, float* __restrict__ result) {
  float sum = thread_dot<Unroll>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  const unsigned last = gridDim.x - 1;
  if (blockIdx.x != last) {
    if (threadIdx.x == 0)
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(tagged[blockIdx.x])
          .store(static_cast<unsigned long long>(tag) << 32 | __float_as_uint(sum), cuda::memory_order_relaxed);
    return;
  }
  if (last == 0) {
    if (threadIdx.x == 0) *result = sum;
    return;
  }
  __syncthreads();
  float others = 0.0f;
  for (unsigned b = threadIdx.x; b < last; b += Block) {
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> slot(tagged[b]);
    unsigned long long w = slot.load(cuda::memory_order_relaxed);
    while (static_cast<unsigned>(w >> 32) != tag) w = slot.load(cuda::memory_order_relaxed);
    others += __uint_as_float(static_cast<unsigned>(w));
  }
  others = block_sum<Block>(others);
  if (threadIdx.x == 0) *result = others + sum;
}

// One cluster: the blocks add their totals through distributed shared memory.
template <unsigned Block, int Unroll>
__global__ void __launch_bounds__(Block) kc(const float* __restrict__ x, const float* __restrict__ y, std::size_t n,
                                           float* __restrict__ result) {
  float sum = thread_dot<Unroll>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  sum = block_sum<Block>(sum);
  __shared__ float s_total;
  if (threadIdx.x == 0) s_total = sum;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  if (cluster.block_rank() == 0 && threadIdx.x < kWarp) {
    float v = 0.0f;
    if (threadIdx.x < cluster.num_blocks()) v = *cluster.map_shared_rank(&s_total, threadIdx.x);
    v = warp_sum(v);
    if (threadIdx.x == 0) *result = v;
  }
  cluster.sync();
}

struct Timer {
  cudaEvent_t a, b;
  Timer() { CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
};

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 300;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const std::size_t l2 = prop.l2CacheSize;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  float* result;
  unsigned long long* tagged;
  CK(cudaMalloc(&result, 64));
  CK(cudaMalloc(&tagged, 1 << 16));
  CK(cudaMemset(tagged, 0, 1 << 16));
  unsigned tag = 0;
  int occ_atomic = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_atomic, atomic_kernel<256, 1>, 256, 0));

  struct Variant {
    std::string name;
    std::function<cudaError_t(const float*, const float*, std::size_t)> run;
    bool ok = true;
  };
  std::vector<Variant> vs;
  vs.push_back({"empty", [&](const float*, const float*, std::size_t) {
                  empty_kernel<<<1, 1, 0, st>>>();
                  return cudaGetLastError();
                }});
  vs.push_back({"atomic_u1", [&](const float* x, const float* y, std::size_t n) {
                  const std::size_t want = std::max<std::size_t>(1, (n / 4 + 255) / 256);
                  const unsigned g = static_cast<unsigned>(std::min<std::size_t>(want, std::size_t(occ_atomic) * sms));
                  CK(cudaMemsetAsync(result, 0, 4, st));
                  atomic_kernel<256, 1><<<g, 256, 0, st>>>(x, y, n, result);
                  return cudaGetLastError();
                }});
  vs.push_back({"v12", [&](const float* x, const float* y, std::size_t n) {
                  const unsigned g = static_cast<unsigned>(std::min<std::size_t>(std::max<std::size_t>(1, (n + 8191) / 8192), 2 * sms));
                  if (++tag == 0xffffffffu) tag = 1;
                  k12<1024, 2><<<g, 1024, 0, st>>>(x, y, n, tagged, tag, result);
                  return cudaGetLastError();
                }});
  auto addc = [&](auto kernel, unsigned block, int unroll, int cluster) {
    if (cluster > 8) CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    vs.push_back({"cluster_b" + std::to_string(block) + "_u" + std::to_string(unroll) + "_c" + std::to_string(cluster),
                  [&, kernel, block, cluster](const float* x, const float* y, std::size_t n) {
                    cudaLaunchConfig_t cfg = {};
                    cfg.gridDim = dim3(cluster);
                    cfg.blockDim = dim3(block);
                    cfg.stream = st;
                    cudaLaunchAttribute attr[1];
                    attr[0].id = cudaLaunchAttributeClusterDimension;
                    attr[0].val.clusterDim.x = cluster;
                    attr[0].val.clusterDim.y = 1;
                    attr[0].val.clusterDim.z = 1;
                    cfg.attrs = attr;
                    cfg.numAttrs = 1;
                    return cudaLaunchKernelEx(&cfg, kernel, x, y, n, result);
                  }});
  };
  for (int c : {1, 2, 4, 8, 16}) {
    addc(kc<1024, 2>, 1024, 2, c);
    addc(kc<1024, 4>, 1024, 4, c);
    addc(kc<512, 4>, 512, 4, c);
  }

  Timer tm;
  std::printf("variant,n,median_us,p10_us,p90_us,rel_err\n");
  for (int p : {12, 14, 15, 16, 17, 18, 19, 20}) {
    const std::size_t n = std::size_t{1} << p;
    const std::size_t stride = (n + 63) / 64 * 64;
    const std::size_t sets = std::max<std::size_t>(1, (2 * l2 + 8 * n - 1) / (8 * n));
    float *x, *y;
    CK(cudaMalloc(&x, sets * stride * 4));
    CK(cudaMalloc(&y, sets * stride * 4));
    std::vector<float> hx(n), hy(n);
    double ref = 0;
    uint32_t s = 777u + p;
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
    std::size_t set = 0;
    std::vector<std::vector<double>> t(vs.size());
    std::vector<double> err(vs.size(), 0.0);
    for (int r = -20; r < reps; ++r)
      for (std::size_t i = 0; i < vs.size(); ++i) {
        if (!vs[i].ok) continue;
        set = (set + 1) % sets;
        CK(cudaEventRecord(tm.a, st));
        cudaError_t e = vs[i].run(x + set * stride, y + set * stride, n);
        CK(cudaEventRecord(tm.b, st));
        if (e != cudaSuccess) {
          std::fprintf(stderr, "%s: %s\n", vs[i].name.c_str(), cudaGetErrorString(e));
          vs[i].ok = false;
          continue;
        }
        CK(cudaEventSynchronize(tm.b));
        float ms;
        CK(cudaEventElapsedTime(&ms, tm.a, tm.b));
        if (r >= 0) t[i].push_back(ms * 1e3);
        if (r == reps - 1 && i > 0) {
          float got = 0;
          CK(cudaMemcpy(&got, result, 4, cudaMemcpyDeviceToHost));
          err[i] = std::abs(got - ref) / std::abs(ref);
        }
      }
    for (std::size_t i = 0; i < vs.size(); ++i) {
      if (t[i].empty()) continue;
      std::sort(t[i].begin(), t[i].end());
      std::printf("%s,%zu,%.3f,%.3f,%.3f,%.2e\n", vs[i].name.c_str(), n, t[i][t[i].size() / 2], t[i][t[i].size() / 10],
                  t[i][t[i].size() * 9 / 10], err[i]);
    }
    std::fflush(stdout);
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  return 0;
}
