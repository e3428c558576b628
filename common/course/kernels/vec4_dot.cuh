#pragma once
/// \file vec4_dot.cuh
/// \brief A thread's share of a float dot with 16-byte loads: taught in chapter 06 (version 9's
/// loop, vec4_loop there), kept here once for the chapters and kernels after it.

#include <cstddef>
#include <cstdint>

namespace course::kernels {

// [vec4_loop]
__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

// This thread's share of Σ x[i]·y[i], with 16-byte loads where the pointers allow them. A float4
// load needs an address that is a multiple of 16 bytes. The first `head` elements (0 to 3) come
// before x's first such address and are read one by one, as is the `tail` after the last whole
// float4; the rest is read four floats at a time, Unroll float4 of x and of y in flight before
// any is used. When x and y are misaligned differently (x + 1 and y + 2, say) no common head
// aligns both, and a plain scalar loop reads everything.
template <int Unroll>
__device__ __forceinline__ float thread_dot_vec4(const float* __restrict__ x, const float* __restrict__ y,
                                                 std::size_t n, std::size_t thread, std::size_t threads) {
  const auto x_off = reinterpret_cast<std::uintptr_t>(x) % 16;
  const auto y_off = reinterpret_cast<std::uintptr_t>(y) % 16;
  float sum = 0.0f;
  if (x_off != y_off) {
    for (std::size_t i = thread; i < n; i += threads) sum += x[i] * y[i];
    return sum;
  }
  const std::size_t to_boundary = (16 - x_off) % 16 / sizeof(float);
  const std::size_t head = n < to_boundary ? n : to_boundary;
  const std::size_t n4 = (n - head) / 4;
  const std::size_t tail = head + 4 * n4;
  if (thread < head) sum += x[thread] * y[thread];
  if (thread < n - tail) sum += x[tail + thread] * y[tail + thread];

  const float4* x4 = reinterpret_cast<const float4*>(x + head);
  const float4* y4 = reinterpret_cast<const float4*>(y + head);
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
// [vec4_loop]

}  // namespace course::kernels
