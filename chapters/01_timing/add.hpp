#pragma once
// Chapter 01 — timing, and when the GPU wins. Declarations shared by the driver and the tests.

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/registry.hpp"

namespace ch01 {

/// Inputs, output and parameters of one experiment in one precision, on host and device.
template <class T>
struct Problem {
  std::size_t n = 0;
  int iters = 0;  ///< square roots per element in the arithmetic-intensity experiment
  std::vector<T> h_a, h_b, h_out;
  course::DeviceBuffer<T> d_a, d_b, d_out;  ///< empty without a context (the CPU versions need none)
  course::Context* ctx = nullptr;           ///< the GPU's context: its stream orders every copy and fill

  /// Random signed inputs of n elements (seeded) and outputs poisoned with NaN. With a context,
  /// also on its device: uploaded and poisoned on ctx->stream(), which is synchronized once before
  /// returning. Without one (nullptr), host arrays only.
  Problem(std::size_t n, int iters, unsigned long long seed, course::Context* ctx);
  /// Makes every output NaN: on the host at once, on the device enqueued on the context's stream
  /// (work enqueued after it on that stream sees the poison; no wait).
  void poison();
};

/// One way of computing the experiment, in both precisions.
struct Runner {
  void (*f32)(Problem<float>&, cudaStream_t);
  void (*f64)(Problem<double>&, cudaStream_t);
  bool on_gpu;     ///< needs a GPU; timed with CUDA events (else with a host clock)
  bool intensity;  ///< the arithmetic-intensity experiment (else the vector add)
};

/// The chapter's versions, in the order the text discusses them.
const std::vector<course::Version<Runner>>& versions();

/// The vector add on the device: out[i] = a[i] + b[i] for i < n, asynchronous on `stream`.
template <class T>
void launch_add(const T* d_a, const T* d_b, T* d_out, std::size_t n, cudaStream_t stream);

/// What the add and the square-root loop compute for one element, on the host: the reference.
template <class T>
T sqrt_loop(T a, T b, int iters);

/// Exercise 3 (think): the milliseconds that launch_add on n elements of `elem_bytes` bytes each
/// would take if the kernel were limited by memory alone, on a card that moves `gbps` GB/s
/// (10^9 bytes per second). The driver prints it beside the measured time. Throws
/// course::UsageError unless gbps > 0.
double predicted_add_ms(std::size_t n, std::size_t elem_bytes, double gbps);

/// Times whatever `launch` enqueues on `stream` with a pair of CUDA events; returns milliseconds
/// of GPU time (exercise 2).
float time_with_events_ms(const std::function<void()>& launch, cudaStream_t stream);

}  // namespace ch01
