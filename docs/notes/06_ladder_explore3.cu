// Chapter 06, issue 11 (second round): third exploration benchmark (not part of the build). Which
// grid, per n, lets the deterministic single pass beat the atomic baseline from 2^16 to 2^20, and
// how far any kernel that reads the data can get to the launch floor. Standalone:
//   nvcc -O3 -std=c++17 -arch=sm_90 docs/notes/06_ladder_explore3.cu -o explore3
//   ./explore3 [reps] [passes] > explore3.csv     timed sweep (CSV on stdout)
//   ./explore3 once N                             every variant once at N (for ncu)
//
// Per call timing as the chapter (one event pair per call, the host waits between calls, median),
// inputs rotated over copies worth 2 × L2, variants in turn (call r of all before call r + 1 of
// any). Variants:
//   empty                 <<<1, 1>>>, nothing: the first term of the issue's launch floor
//   probe                 <<<1, 1>>>: one thread loads x[0] and y[0] of the rotated copy and
//                         stores the product: the launch plus one trip to DRAM (TLB miss included)
//   atomic                the chapter's baseline: memset, 256 threads, one float4 of x and y each
//   tagged_b<B>_u<U>      version 12's kernel (tagged partials, last block polls) with blocks of B
//                         threads, U float4 of x and of y per thread per trip, and the grid that
//                         puts every byte in flight at once: ceil(n / (4·B·U)) blocks, capped at what
//                         the SMs hold and at 8 slots per thread of the last block
//                         (tagged_b1024_u2 is version 12 as in the reference run)
//   readonly_b<B>_u<U>    the same loop and grid, each thread's sum only (no block reduction, no
//                         combine); one value is written (block 0, thread 0), and any thread whose
//                         sum has one unlikely bit pattern also writes, so no load can be dropped
//   cluster8              8 blocks of 1024 in one cluster declared at compile time
//                         (__cluster_dims__, a plain <<<>>> launch), totals through distributed
//                         shared memory: is the cluster's extra µs the launch API or the cluster?
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace cg = cooperative_groups;
constexpr unsigned kWarp = 32;
constexpr int kMaxPer = 8;  // slots per thread of the last block

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

__global__ void probe_kernel(const float* __restrict__ x, const float* __restrict__ y, float* result) {
  *result = __ldg(x) * __ldg(y);
}

// The chapter's vec4 loop (aligned inputs: head 0).
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

template <unsigned Block>
__global__ void __launch_bounds__(Block) atomic_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                      std::size_t n, float* result) {
  float s = thread_dot<1>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  s = block_sum<Block>(s);
  if (threadIdx.x == 0) atomicAdd(result, s);
}

// Version 12's combine; the last block reads up to kMaxPer slots per thread, all loads issued
// before any is checked.
template <unsigned Block, int Unroll>
__global__ void __launch_bounds__(Block) tagged_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                      std::size_t n, unsigned long long* tagged, unsigned tag,
                                                      float* __restrict__ result) {
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
  unsigned long long w[kMaxPer];
#pragma unroll
  for (int k = 0; k < kMaxPer; ++k) {
    const unsigned b = threadIdx.x + k * Block;
    w[k] = b < last ? cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(tagged[b]).load(
                          cuda::memory_order_relaxed)
                    : static_cast<unsigned long long>(tag) << 32;
  }
  float others = 0.0f;
#pragma unroll
  for (int k = 0; k < kMaxPer; ++k) {
    const unsigned b = threadIdx.x + k * Block;
    while (static_cast<unsigned>(w[k] >> 32) != tag)
      w[k] = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(tagged[b]).load(cuda::memory_order_relaxed);
    others += __uint_as_float(static_cast<unsigned>(w[k]));
  }
  others = block_sum<Block>(others);
  if (threadIdx.x == 0) *result = others + sum;
}

template <unsigned Block, int Unroll>
__global__ void __launch_bounds__(Block) readonly_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                        std::size_t n, float* result) {
  const float sum =
      thread_dot<Unroll>(x, y, n, blockIdx.x * std::size_t{Block} + threadIdx.x, std::size_t{gridDim.x} * Block);
  if ((blockIdx.x == 0 && threadIdx.x == 0) || __float_as_uint(sum) == 0x7fc0dead) *result = sum;
}

__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(1024)
    cluster_kernel(const float* __restrict__ x, const float* __restrict__ y, std::size_t n, float* __restrict__ result) {
  float sum = thread_dot<2>(x, y, n, blockIdx.x * std::size_t{1024} + threadIdx.x, std::size_t{gridDim.x} * 1024);
  sum = block_sum<1024>(sum);
  __shared__ float s_total;
  if (threadIdx.x == 0) s_total = sum;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  if (cluster.block_rank() == 0 && threadIdx.x < kWarp) {
    float v = threadIdx.x < cluster.num_blocks() ? *cluster.map_shared_rank(&s_total, threadIdx.x) : 0.0f;
    v = warp_sum(v);
    if (threadIdx.x == 0) *result = v;
  }
  cluster.sync();  // the peers' shared memory must outlive rank 0's reads
}

struct Variant {
  std::string name;
  std::function<unsigned(const float*, const float*, std::size_t)> run;  // returns the grid
  bool checks = true;                                                      // result is the dot product
};

int main(int argc, char** argv) {
  const bool once = argc > 1 && std::strcmp(argv[1], "once") == 0;
  const int reps = !once && argc > 1 ? std::atoi(argv[1]) : 300;
  const int passes = !once && argc > 2 ? std::atoi(argv[2]) : 2;
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const std::size_t l2 = prop.l2CacheSize;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  float* result;
  unsigned long long* tagged;
  CK(cudaMalloc(&result, 64));
  CK(cudaMalloc(&tagged, 1 << 20));
  CK(cudaMemset(tagged, 0, 1 << 20));
  unsigned tag = 0;

  std::vector<Variant> vs;
  vs.push_back({"empty", [&](const float*, const float*, std::size_t) {
                  empty_kernel<<<1, 1, 0, st>>>();
                  return 1u;
                }, false});
  vs.push_back({"probe", [&](const float* x, const float* y, std::size_t) {
                  probe_kernel<<<1, 1, 0, st>>>(x, y, result);
                  return 1u;
                }, false});
  int occ_atomic = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_atomic, atomic_kernel<256>, 256, 0));
  vs.push_back({"atomic", [&, occ_atomic](const float* x, const float* y, std::size_t n) {
                  const std::size_t want = std::max<std::size_t>(1, (n + 1023) / 1024);
                  const unsigned g = static_cast<unsigned>(std::min<std::size_t>(want, std::size_t(occ_atomic) * sms));
                  CK(cudaMemsetAsync(result, 0, 4, st));
                  atomic_kernel<256><<<g, 256, 0, st>>>(x, y, n, result);
                  return g;
                }});
  auto add = [&](auto tagged_k, auto readonly_k, unsigned block, int unroll, int per_sm_cap) {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, tagged_k, static_cast<int>(block), 0));
    occ = std::min(occ, per_sm_cap);
    const std::size_t cap = std::min<std::size_t>(std::size_t(occ) * sms, std::size_t(kMaxPer) * block);
    const std::size_t per_block = 4 * std::size_t{block} * unroll;
    const std::string suffix = "_b" + std::to_string(block) + "_u" + std::to_string(unroll);
    vs.push_back({"tagged" + suffix, [&, tagged_k, block, per_block, cap](const float* x, const float* y, std::size_t n) {
                    const unsigned g = static_cast<unsigned>(std::min(cap, std::max<std::size_t>(1, (n + per_block - 1) / per_block)));
                    if (++tag == 0xffffffffu) tag = 1;
                    tagged_k<<<g, block, 0, st>>>(x, y, n, tagged, tag, result);
                    return g;
                  }});
    vs.push_back({"readonly" + suffix, [&, readonly_k, block, per_block, cap](const float* x, const float* y, std::size_t n) {
                    const unsigned g = static_cast<unsigned>(std::min(cap, std::max<std::size_t>(1, (n + per_block - 1) / per_block)));
                    readonly_k<<<g, block, 0, st>>>(x, y, n, result);
                    return g;
                  }, false});
  };
  add(tagged_kernel<128, 1>, readonly_kernel<128, 1>, 128, 1, 16);
  add(tagged_kernel<128, 2>, readonly_kernel<128, 2>, 128, 2, 16);
  add(tagged_kernel<256, 1>, readonly_kernel<256, 1>, 256, 1, 8);
  add(tagged_kernel<256, 2>, readonly_kernel<256, 2>, 256, 2, 8);
  add(tagged_kernel<256, 4>, readonly_kernel<256, 4>, 256, 4, 8);
  add(tagged_kernel<512, 1>, readonly_kernel<512, 1>, 512, 1, 4);
  add(tagged_kernel<512, 2>, readonly_kernel<512, 2>, 512, 2, 4);
  add(tagged_kernel<1024, 1>, readonly_kernel<1024, 1>, 1024, 1, 2);
  add(tagged_kernel<1024, 2>, readonly_kernel<1024, 2>, 1024, 2, 2);
  vs.push_back({"cluster8", [&](const float* x, const float* y, std::size_t n) {
                  cluster_kernel<<<8, 1024, 0, st>>>(x, y, n, result);
                  return 8u;
                }});

  std::vector<int> powers = {10, 12, 14, 15, 16, 17, 18, 19, 20, 22, 24};
  if (once) powers = {0};
  if (!once) std::printf("pass,variant,n,grid,median_us,p10_us,p90_us,rel_err\n");
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int pass = 0; pass < (once ? 1 : passes); ++pass)
    for (int p : powers) {
      const std::size_t n = once ? std::strtoull(argv[2], nullptr, 0) : std::size_t{1} << p;
      const std::size_t stride = (n + 63) / 64 * 64;
      const std::size_t sets = once ? 1 : std::max<std::size_t>(1, (2 * l2 + 8 * n - 1) / (8 * n));
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
      if (once) {
        for (auto& v : vs) {
          v.run(x, y, n);
          CK(cudaGetLastError());
          CK(cudaStreamSynchronize(st));
        }
      } else {
        std::size_t set = 0;
        std::vector<std::vector<double>> t(vs.size());
        std::vector<double> err(vs.size(), 0.0);
        std::vector<unsigned> grid(vs.size(), 0);
        for (int r = -30; r < reps; ++r)
          for (std::size_t i = 0; i < vs.size(); ++i) {
            set = (set + 1) % sets;
            CK(cudaEventRecord(a, st));
            grid[i] = vs[i].run(x + set * stride, y + set * stride, n);
            CK(cudaGetLastError());
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            if (r >= 0) t[i].push_back(ms * 1e3);
            if (r == reps - 1 && vs[i].checks) {
              float got = 0;
              CK(cudaMemcpy(&got, result, 4, cudaMemcpyDeviceToHost));
              err[i] = std::abs(got - ref) / std::max(1e-30, std::abs(ref));
            }
          }
        for (std::size_t i = 0; i < vs.size(); ++i) {
          std::sort(t[i].begin(), t[i].end());
          std::printf("%d,%s,%zu,%u,%.3f,%.3f,%.3f,%.2e\n", pass, vs[i].name.c_str(), n, grid[i], t[i][t[i].size() / 2],
                      t[i][t[i].size() / 10], t[i][t[i].size() * 9 / 10], err[i]);
        }
        std::fflush(stdout);
      }
      CK(cudaFree(x));
      CK(cudaFree(y));
    }
  return 0;
}
