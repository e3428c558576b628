// Chapter 07 — the typed entry points of libdotcourse.so: the dot of any two element types
// (dotcourse_dot_typed, dotcourse_dot_typed_host, dotcourse_accumulator).
//
// The kernel is chapter 10's dot<X, Y, Acc> (single pass, tagged partials, deterministic; each input
// read at its own width; int8 · int8 exact in a 64-bit total), copied here because a chapter depends
// on common/ and on nothing in another chapter. Chapter 10's text explains it; this copy has no
// exercise holes, and none of their answers: int8 · int8 takes the widening loop of every other
// pair, not chapter 10's four-products-per-instruction path (its exercise). Its grid comes from the occupancy API (TypedState::resident_grid).
// Per-context state (the tagged slots, a pinned result, the host form's device buffers) is owned by
// the engine (Engine::typed_state), made on a context's first typed call.

#include <cuda/atomic>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/pinned.hpp"
#include "dotcourse.h"
#include "typed.hpp"

namespace ch07 {
namespace {

using bf16 = __nv_bfloat16;
using i8 = std::int8_t;
// Threads per block of the typed single pass (chapter 06's version 12); the two-pass float dot of
// library.cu has its own, kDotBlock.
constexpr unsigned kTypedBlock = 1024;
constexpr unsigned kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

template <class X, class Y>
using Acc = std::conditional_t<std::is_integral_v<X> && std::is_integral_v<Y>, long long,
                               std::conditional_t<std::is_same_v<X, double> || std::is_same_v<Y, double>, double, float>>;

template <class T, class A>
__device__ __forceinline__ A widen(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<A>(__half2float(v));
  else if constexpr (std::is_same_v<T, bf16>) return static_cast<A>(__bfloat162float(v));
  else return static_cast<A>(v);
}

template <class X, class Y>
constexpr int kPack = 16 / static_cast<int>(sizeof(X) > sizeof(Y) ? sizeof(X) : sizeof(Y));
template <class X, class Y>
constexpr int kUnroll = std::min(4, std::max(1, 64 / (kPack<X, Y> * static_cast<int>(sizeof(X) + sizeof(Y)))));

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T e[V];
};

template <class T, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const Pack<T, V>* p) {
  constexpr std::size_t bytes = sizeof(Pack<T, V>);
  Pack<T, V> r;
  if constexpr (bytes == 16) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    std::memcpy(&r, &v, bytes);
  } else if constexpr (bytes == 8) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    std::memcpy(&r, &v, bytes);
  } else {
    const unsigned v = __ldg(reinterpret_cast<const unsigned*>(p));
    std::memcpy(&r, &v, bytes);
  }
  return r;
}

template <class X, class Y, class A>
__device__ __forceinline__ A thread_dot(const X* __restrict__ x, const Y* __restrict__ y, std::size_t n, long long head,
                                        std::size_t thread, std::size_t threads) {
  constexpr int V = kPack<X, Y>;
  constexpr int U = kUnroll<X, Y>;
  A sum = 0;
  if (head < 0) {
    for (std::size_t i = thread; i < n; i += threads) sum += widen<X, A>(x[i]) * widen<Y, A>(y[i]);
    return sum;
  }
  const std::size_t h = static_cast<std::size_t>(head);
  const std::size_t packs = (n - h) / V;
  const std::size_t tail = h + packs * V;
  for (std::size_t i = thread; i < h; i += threads) sum += widen<X, A>(x[i]) * widen<Y, A>(y[i]);
  for (std::size_t i = tail + thread; i < n; i += threads) sum += widen<X, A>(x[i]) * widen<Y, A>(y[i]);
  const auto* px = reinterpret_cast<const Pack<X, V>*>(x + h);
  const auto* py = reinterpret_cast<const Pack<Y, V>*>(y + h);
  std::size_t p = thread;
  for (; p + (U - 1) * threads < packs; p += U * threads) {
    Pack<X, V> a[U];
    Pack<Y, V> b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      a[u] = load_pack(px + p + u * threads);
      b[u] = load_pack(py + p + u * threads);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int e = 0; e < V; ++e) sum += widen<X, A>(a[u].e[e]) * widen<Y, A>(b[u].e[e]);
  }
  for (; p < packs; p += threads) {
    const Pack<X, V> a = load_pack(px + p);
    const Pack<Y, V> b = load_pack(py + p);
#pragma unroll
    for (int e = 0; e < V; ++e) sum += widen<X, A>(a.e[e]) * widen<Y, A>(b.e[e]);
  }
  return sum;
}

template <class T>
__device__ __forceinline__ T shfl_down(T v, unsigned offset) {
  if constexpr (sizeof(T) <= 4) {
    unsigned u = 0;
    std::memcpy(&u, &v, sizeof(T));
    u = __shfl_down_sync(kFullMask, u, offset);
    std::memcpy(&v, &u, sizeof(T));
  } else {
    unsigned long long u = 0;
    std::memcpy(&u, &v, sizeof(T));
    u = __shfl_down_sync(kFullMask, u, offset);
    std::memcpy(&v, &u, sizeof(T));
  }
  return v;
}

template <class A>
__device__ __forceinline__ A block_sum(A v) {
  __shared__ alignas(8) unsigned char s_raw[kTypedBlock / kWarp * 8];
  A* s_warp = reinterpret_cast<A*>(s_raw);
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
#pragma unroll
  for (unsigned o = kWarp / 2; o > 0; o /= 2) v += shfl_down(v, o);
  if (lane == 0) s_warp[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kTypedBlock / kWarp ? s_warp[lane] : A(0);
#pragma unroll
    for (unsigned o = kWarp / 2; o > 0; o /= 2) v += shfl_down(v, o);
  }
  return v;
}

template <class X, class Y>
__global__ void __launch_bounds__(kTypedBlock, 2)
    typed_dot_kernel(const X* __restrict__ x, const Y* __restrict__ y, std::size_t n, long long head,
                     unsigned long long* tagged, unsigned tag, double* __restrict__ result) {
  using A = Acc<X, Y>;
  constexpr int kWords = sizeof(A) <= 4 ? 1 : 2;
  const std::size_t thread = blockIdx.x * std::size_t{kTypedBlock} + threadIdx.x, threads = std::size_t{gridDim.x} * kTypedBlock;
  A sum;
  // Every pair, int8 · int8 included, goes through the one widening loop: chapter 10's exercise
  // teaches a faster int8 path, and the student's tree must not ship its answer here.
  sum = thread_dot<X, Y, A>(x, y, n, head, thread, threads);
  sum = block_sum(sum);
  const unsigned last = gridDim.x - 1;
  if (blockIdx.x != last) {
    if (threadIdx.x == 0) {
      unsigned words[2] = {0, 0};
      std::memcpy(words, &sum, sizeof(A));
      for (int w = 0; w < kWords; ++w)
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(tagged[2 * blockIdx.x + w])
            .store(static_cast<unsigned long long>(tag) << 32 | words[w], cuda::memory_order_relaxed);
    }
    return;
  }
  if (last == 0) {
    if (threadIdx.x == 0) *result = static_cast<double>(sum);
    return;
  }
  __syncthreads();
  A others = 0;
  for (unsigned b = threadIdx.x; b < last; b += kTypedBlock) {
    unsigned words[2] = {0, 0};
    for (int w = 0; w < kWords; ++w) {
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> slot(tagged[2 * b + w]);
      unsigned long long word = slot.load(cuda::memory_order_relaxed);
      while (static_cast<unsigned>(word >> 32) != tag) word = slot.load(cuda::memory_order_relaxed);
      words[w] = static_cast<unsigned>(word);
    }
    A v;
    std::memcpy(&v, words, sizeof(A));
    others += v;
  }
  others = block_sum(others);
  if (threadIdx.x == 0) *result = static_cast<double>(others + sum);
}

/// What one engine's typed calls keep between calls.
struct TypedState {
  explicit TypedState(course::Context& gpu)
      : sm_count(gpu.facts().sm_count),
        grid_max(std::min<int>(static_cast<int>(kTypedBlock), 2 * sm_count)),
        tagged(2 * static_cast<std::size_t>(grid_max)),
        h_result(1) {
    CUDA_CHECK(cudaMemsetAsync(tagged.data(), 0, tagged.bytes(), gpu.stream()));
    gpu.synchronize();
  }
  unsigned next_tag(cudaStream_t stream) {
    if (++tag == 0xFFFFFFFFu || tag == 0) {
      CUDA_CHECK(cudaMemsetAsync(tagged.data(), 0, tagged.bytes(), stream));
      tag = 1;
    }
    return tag;
  }
  /// The largest grid of `kernel` whose blocks are all resident at once: the last block spins on the
  /// others' slots, so a block left waiting for an SM would never come. __launch_bounds__(kTypedBlock, 2)
  /// only caps the registers; shared memory, or a card that holds 1536 threads per SM, can hold fewer.
  /// So ask the occupancy API, once per kernel on this engine's device (as chapter 06's version 12 does).
  int resident_grid(const void* kernel) {
    auto it = resident.find(kernel);
    if (it == resident.end()) {
      int per_sm = 0;
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(kTypedBlock), 0));
      if (per_sm < 1)
        throw course::CudaError(cudaErrorLaunchOutOfResources, "typed_dot_kernel: not one block of " +
                                                                   std::to_string(kTypedBlock) + " threads fits on an SM");
      it = resident.emplace(kernel, std::min(grid_max, std::min(2, per_sm) * sm_count)).first;
    }
    return it->second;
  }
  int sm_count;
  int grid_max;  ///< the most tagged slots: two blocks per SM, at most one per thread of the last block
  std::map<const void*, int> resident;  ///< resident_grid's answers, per kernel
  course::DeviceBuffer<unsigned long long> tagged;
  /// The kernel writes the result here itself: pinned memory is reachable from a kernel through the
  /// same pointer under unified addressing (every 64-bit process), so no copy back is queued.
  course::PinnedBuffer<double> h_result;
  course::DeviceBuffer<unsigned char> d_x, d_y;  ///< the host form's copies, grown on demand
  unsigned tag = 0;
};

// One state per engine, made on its first typed call and owned by the engine, so destroying the
// context frees it (the host form's copies can be n_max elements each). The C API serializes calls
// on an engine (Engine::lock): no other lock is needed.
TypedState& state_of(Engine& e) {
  std::shared_ptr<void>& slot = e.typed_state();
  if (!slot) slot = std::make_shared<TypedState>(e.gpu());
  return *static_cast<TypedState*>(slot.get());
}

std::size_t dtype_size(dotcourse_dtype t) {
  switch (t) {
    case DOTCOURSE_FLOAT64: return 8;
    case DOTCOURSE_FLOAT32: return 4;
    case DOTCOURSE_FLOAT16: case DOTCOURSE_BFLOAT16: return 2;
    case DOTCOURSE_INT8: case DOTCOURSE_BOOL: return 1;
    default: break;
  }
  throw course::UsageError("unknown input dtype " + std::to_string(static_cast<int>(t)));
}

long long vector_head(const void* x, std::size_t sx, const void* y, std::size_t sy, int V, std::size_t n) {
  const auto ax = reinterpret_cast<std::uintptr_t>(x), ay = reinterpret_cast<std::uintptr_t>(y);
  for (int h = 0; h < V; ++h)
    if ((ax + h * sx) % (V * sx) == 0 && (ay + h * sy) % (V * sy) == 0)
      return static_cast<long long>(std::min<std::size_t>(static_cast<std::size_t>(h), n));
  return -1;
}

template <class X, class Y>
void launch(TypedState& st, const void* d_x, const void* d_y, std::size_t n, cudaStream_t stream) {
  constexpr int V = kPack<X, Y>;
  const long long head = vector_head(d_x, sizeof(X), d_y, sizeof(Y), V, n);
  const std::size_t per_block = std::size_t{kTypedBlock} * V * kUnroll<X, Y>;
  const int grid = st.resident_grid(reinterpret_cast<const void*>(typed_dot_kernel<X, Y>));
  const unsigned blocks = static_cast<unsigned>(
      std::min<std::size_t>(std::max<std::size_t>(1, (n + per_block - 1) / per_block), static_cast<std::size_t>(grid)));
  const unsigned tag = st.next_tag(stream);
  typed_dot_kernel<X, Y><<<blocks, kTypedBlock, 0, stream>>>(static_cast<const X*>(d_x), static_cast<const Y*>(d_y), n, head,
                                                        st.tagged.data(), tag, st.h_result.data());
  CUDA_CHECK_LAUNCH("typed_dot_kernel");
}

/// Calls launch<X, Y> for a pair of runtime dtypes.
template <class X>
void dispatch_y(dotcourse_dtype ty, TypedState& st, const void* x, const void* y, std::size_t n, cudaStream_t s) {
  switch (ty) {
    case DOTCOURSE_FLOAT32: return launch<X, float>(st, x, y, n, s);
    case DOTCOURSE_FLOAT64: return launch<X, double>(st, x, y, n, s);
    case DOTCOURSE_FLOAT16: return launch<X, __half>(st, x, y, n, s);
    case DOTCOURSE_BFLOAT16: return launch<X, bf16>(st, x, y, n, s);
    case DOTCOURSE_INT8: return launch<X, i8>(st, x, y, n, s);
    case DOTCOURSE_BOOL: return launch<X, bool>(st, x, y, n, s);
    default: break;
  }
  throw course::UsageError("y_dtype " + std::to_string(static_cast<int>(ty)) + " is not an input dtype");
}

void dispatch(dotcourse_dtype tx, dotcourse_dtype ty, TypedState& st, const void* x, const void* y, std::size_t n,
              cudaStream_t s) {
  switch (tx) {
    case DOTCOURSE_FLOAT32: return dispatch_y<float>(ty, st, x, y, n, s);
    case DOTCOURSE_FLOAT64: return dispatch_y<double>(ty, st, x, y, n, s);
    case DOTCOURSE_FLOAT16: return dispatch_y<__half>(ty, st, x, y, n, s);
    case DOTCOURSE_BFLOAT16: return dispatch_y<bf16>(ty, st, x, y, n, s);
    case DOTCOURSE_INT8: return dispatch_y<i8>(ty, st, x, y, n, s);
    case DOTCOURSE_BOOL: return dispatch_y<bool>(ty, st, x, y, n, s);
    default: break;
  }
  throw course::UsageError("x_dtype " + std::to_string(static_cast<int>(tx)) + " is not an input dtype");
}

void check_device_pointer(const void* p, int device, const char* name) {
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  const bool on_device = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  if (!on_device || attr.device != device)
    throw course::UsageError(std::string(name) + " is not device memory of device " + std::to_string(device) +
                             " (host memory? use dotcourse_dot_typed_host)");
}

double run_typed(Engine& e, const void* d_x, dotcourse_dtype tx, const void* d_y, dotcourse_dtype ty, std::size_t n,
                 cudaStream_t stream) {
  const std::size_t sx = dtype_size(tx), sy = dtype_size(ty);
  if (n == 0) return 0.0;
  if (reinterpret_cast<std::uintptr_t>(d_x) % sx || reinterpret_cast<std::uintptr_t>(d_y) % sy)
    throw course::UsageError("x or y is not aligned to its element size");
  TypedState& st = state_of(e);
  dispatch(tx, ty, st, d_x, d_y, n, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the kernel's write to h_result is visible once it has finished
  return st.h_result.data()[0];
}

}  // namespace
}  // namespace ch07

extern "C" {

DOTCOURSE_API dotcourse_status dotcourse_accumulator(dotcourse_dtype x_dtype, dotcourse_dtype y_dtype, dotcourse_dtype* acc) {
  return ch07::guarded_call("dotcourse_accumulator", [&] {
    if (acc == nullptr) throw course::UsageError("acc is NULL");
    ch07::dtype_size(x_dtype);
    ch07::dtype_size(y_dtype);
    auto integer = [](dotcourse_dtype t) { return t == DOTCOURSE_INT8 || t == DOTCOURSE_BOOL; };
    if (integer(x_dtype) && integer(y_dtype)) *acc = DOTCOURSE_INT64;
    else if (x_dtype == DOTCOURSE_FLOAT64 || y_dtype == DOTCOURSE_FLOAT64) *acc = DOTCOURSE_FLOAT64;
    else *acc = DOTCOURSE_FLOAT32;
  });
}

DOTCOURSE_API dotcourse_status dotcourse_dot_typed(dotcourse_context* ctx, const void* d_x, dotcourse_dtype x_dtype,
                                                   const void* d_y, dotcourse_dtype y_dtype, size_t n, void* stream,
                                                   double* result) {
  return ch07::with_engine("dotcourse_dot_typed", ctx, [&](ch07::Engine& e) {
    if (result == nullptr) throw course::UsageError("result is NULL");
    ch07::dtype_size(x_dtype);
    ch07::dtype_size(y_dtype);
    if (n > 0) {
      if (d_x == nullptr) throw course::UsageError("d_x is NULL");
      if (d_y == nullptr) throw course::UsageError("d_y is NULL");
      ch07::check_device_pointer(d_x, e.gpu().device(), "d_x");
      ch07::check_device_pointer(d_y, e.gpu().device(), "d_y");
    }
    *result = ch07::run_typed(e, d_x, x_dtype, d_y, y_dtype, n, static_cast<cudaStream_t>(stream));
  });
}

DOTCOURSE_API dotcourse_status dotcourse_dot_typed_host(dotcourse_context* ctx, const void* x, dotcourse_dtype x_dtype,
                                                        const void* y, dotcourse_dtype y_dtype, size_t n, double* result) {
  return ch07::with_engine("dotcourse_dot_typed_host", ctx, [&](ch07::Engine& e) {
    if (result == nullptr) throw course::UsageError("result is NULL");
    const std::size_t sx = ch07::dtype_size(x_dtype), sy = ch07::dtype_size(y_dtype);
    if (n == 0) {
      *result = 0.0;
      return;
    }
    if (x == nullptr) throw course::UsageError("x is NULL");
    if (y == nullptr) throw course::UsageError("y is NULL");
    if (n > e.n_max()) throw ch07::TooLargeError("n = " + std::to_string(n) + " is larger than n_max = " + std::to_string(e.n_max()));
    ch07::TypedState& st = ch07::state_of(e);
    cudaStream_t stream = e.gpu().stream();
    if (st.d_x.size() < n * sx) st.d_x = course::DeviceBuffer<unsigned char>(n * sx);
    if (st.d_y.size() < n * sy) st.d_y = course::DeviceBuffer<unsigned char>(n * sy);
    CUDA_CHECK(cudaMemcpyAsync(st.d_x.data(), x, n * sx, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(st.d_y.data(), y, n * sy, cudaMemcpyHostToDevice, stream));
    *result = ch07::run_typed(e, st.d_x.data(), x_dtype, st.d_y.data(), y_dtype, n, stream);
  });
}

}  // extern "C"
