#pragma once
/// \file typed_dot.cuh
/// \brief The typed dot, dot<X, Y, Acc> of any two element types: taught in chapter 10 (its packs,
/// its thread loop and its promotion rule are that chapter's exercises), kept here once for the
/// library of chapter 07 (dotcourse_dot_typed).
///
/// Chapter 06's tagged single pass (tagged_pass.cuh) with each input read at its own width. This
/// copy holds answers to chapter 10's exercises 1 and 2: its thread_dot is exercise 1's thread loop
/// (with its split into head, packs and tail) and TypedAcc is exercise 2's promotion rule. Calling
/// them from a hole is refused by the hole scan (`ch10 integrity`); reading them is not prevented.
/// Only exercise 3 is absent: int8 · int8 takes the same loop as every other pair (exact in a
/// 64-bit total), not chapter 10's four-products-per-instruction path.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "course/kernels/tagged_pass.cuh"

namespace course::kernels {

/// Threads per block of the typed single pass (chapter 06's version 12: 1024, two blocks per SM).
constexpr unsigned kTypedBlock = 1024;

/// The promotion rule (chapter 10): two integer inputs accumulate in a 64-bit integer (exact); a
/// float64 input in float64; everything else in float32.
template <class X, class Y>
using TypedAcc = std::conditional_t<std::is_integral_v<X> && std::is_integral_v<Y>, long long,
                                    std::conditional_t<std::is_same_v<X, double> || std::is_same_v<Y, double>, double, float>>;

/// An element widened to the accumulator A (float16 and bfloat16 through float32: exact).
template <class T, class A>
__device__ __forceinline__ A widen(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<A>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return static_cast<A>(__bfloat162float(v));
  else return static_cast<A>(v);
}

/// Elements per pack: 16 bytes of the wider input. Packs of each input in flight per trip: at least
/// 64 bytes, at most 4.
template <class X, class Y>
constexpr int kPack = 16 / static_cast<int>(sizeof(X) > sizeof(Y) ? sizeof(X) : sizeof(Y));
template <class X, class Y>
constexpr int kUnroll = std::min(4, std::max(1, 64 / (kPack<X, Y> * static_cast<int>(sizeof(X) + sizeof(Y)))));

/// V consecutive elements read by one load instruction.
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
  } else if constexpr (bytes == 4) {
    const unsigned v = __ldg(reinterpret_cast<const unsigned*>(p));
    std::memcpy(&r, &v, bytes);
  } else {
    // Two bytes: the narrow input beside a float64 (bool or int8, two per pack). A 4-byte load here
    // would be misaligned at every other pack.
    static_assert(bytes == 2, "a pack is one 2-, 4-, 8- or 16-byte load");
    const unsigned short v = __ldg(reinterpret_cast<const unsigned short*>(p));
    std::memcpy(&r, &v, bytes);
  }
  return r;
}

/// This thread's share of Σ x[i]·y[i] in A: elements before `head` (the first index where both x and
/// y start a whole pack; −1: none does, a scalar loop reads everything) and after the last whole pack
/// one by one, the rest a pack at a time, kUnroll packs of each input in flight.
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

/// Any accumulator as the double the result is written in (exact for every accumulator here).
template <class A>
__device__ __forceinline__ double to_double(A v) {
  if constexpr (std::is_same_v<A, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<A, __nv_bfloat16>) return __bfloat162float(v);
  else return static_cast<double>(v);
}

/// The typed single pass: *result = Σ x[i]·y[i] in TypedAcc<X, Y>, as a double. Tagged partials take
/// two words per block (`tagged` holds 2 × grid words); launch kTypedBlock threads per block on at
/// most resident_grid(...) blocks, with a tag from next_tag.
template <class X, class Y>
__global__ void __launch_bounds__(kTypedBlock, 2)
    typed_dot_kernel(const X* __restrict__ x, const Y* __restrict__ y, std::size_t n, long long head,
                     unsigned long long* tagged, unsigned tag, double* __restrict__ result) {
  using A = TypedAcc<X, Y>;
  const std::size_t thread = blockIdx.x * std::size_t{kTypedBlock} + threadIdx.x;
  const A sum = thread_dot<X, Y, A>(x, y, n, head, thread, std::size_t{gridDim.x} * kTypedBlock);
  tagged_single_pass<kTypedBlock, 2>(sum, tagged, tag, result, [](A v) { return to_double(v); });
}

/// The first index at which x and y (elements of sx and sy bytes) both start a whole pack of V
/// elements, or −1 when no index below V does (then none does: x and y are misaligned
/// differently). At most n.
inline long long vector_head(const void* x, std::size_t sx, const void* y, std::size_t sy, int V, std::size_t n) {
  const auto ax = reinterpret_cast<std::uintptr_t>(x), ay = reinterpret_cast<std::uintptr_t>(y);
  for (int h = 0; h < V; ++h)
    if ((ax + h * sx) % (V * sx) == 0 && (ay + h * sy) % (V * sy) == 0)
      return static_cast<long long>(std::min<std::size_t>(static_cast<std::size_t>(h), n));
  return -1;
}

}  // namespace course::kernels
