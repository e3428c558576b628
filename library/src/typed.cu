// Chapter 07 — the typed entry points of libdotcourse.so: the dot of any two element types
// (dotcourse_dot_typed, dotcourse_dot_typed_host, dotcourse_accumulator). On a context without a GPU,
// dotcourse_dot_typed_host computes on the CPU instead (typed_cpu.cpp).
//
// The kernel is the kit's typed dot (common/course/kernels/typed_dot.cuh: chapter 10's dot<X, Y, Acc>,
// single pass, tagged partials, deterministic; each input read at its own width; int8 · int8 exact in
// a 64-bit total, through the widening loop of every other pair, not chapter 10's exercise path).
// Chapter 10's text explains it. Its grid comes from the occupancy API (TypedState::resident_grid).
// Per-context state (the tagged slots, a pinned result, the host form's device buffers) is owned by
// the engine (Engine::typed_state), made on a context's first typed call.

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
#include "course/kernels/typed_dot.cuh"
#include "course/pinned.hpp"
#include "dotcourse/dotcourse.h"
#include "typed.hpp"

namespace ch07 {
namespace {

using bf16 = __nv_bfloat16;
using i8 = std::int8_t;
using course::kernels::kTypedBlock;

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
  unsigned next_tag(cudaStream_t stream) { return course::kernels::next_tag(tag, tagged, stream); }
  /// The largest grid of `kernel` whose blocks are all resident at once: the last block spins on the
  /// others' slots, so a block left waiting for an SM would never come. __launch_bounds__(kTypedBlock, 2)
  /// only caps the registers; shared memory, or a card that holds 1536 threads per SM, can hold fewer.
  /// So ask the occupancy API, once per kernel on this engine's device (as chapter 06's version 12 does).
  int resident_grid(const void* kernel) {
    auto it = resident.find(kernel);
    if (it == resident.end())
      it = resident.emplace(kernel, course::kernels::resident_grid(kernel, kTypedBlock, sm_count, grid_max,
                                                                   "typed_dot_kernel")).first;
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

template <class X, class Y>
void launch(TypedState& st, const void* d_x, const void* d_y, std::size_t n, cudaStream_t stream) {
  namespace k = course::kernels;
  constexpr int V = k::kPack<X, Y>;
  const long long head = k::vector_head(d_x, sizeof(X), d_y, sizeof(Y), V, n);
  const std::size_t per_block = std::size_t{kTypedBlock} * V * k::kUnroll<X, Y>;
  const int grid = st.resident_grid(reinterpret_cast<const void*>(k::typed_dot_kernel<X, Y>));
  const unsigned blocks = static_cast<unsigned>(
      std::min<std::size_t>(std::max<std::size_t>(1, (n + per_block - 1) / per_block), static_cast<std::size_t>(grid)));
  const unsigned tag = st.next_tag(stream);
  k::typed_dot_kernel<X, Y><<<blocks, kTypedBlock, 0, stream>>>(static_cast<const X*>(d_x), static_cast<const Y*>(d_y),
                                                                 n, head, st.tagged.data(), tag, st.h_result.data());
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
  return ch07::with_host("dotcourse_dot_typed_host", ctx, [&](ch07::HostAuto& host, ch07::Engine* engine) {
    if (result == nullptr) throw course::UsageError("result is NULL");
    const std::size_t sx = ch07::dtype_size(x_dtype), sy = ch07::dtype_size(y_dtype);
    if (n == 0) {
      *result = 0.0;
      return;
    }
    if (x == nullptr) throw course::UsageError("x is NULL");
    if (y == nullptr) throw course::UsageError("y is NULL");
    if (engine == nullptr) {  // a context without a GPU: the CPU (typed_cpu.cpp), no CUDA call
      if (reinterpret_cast<std::uintptr_t>(x) % sx || reinterpret_cast<std::uintptr_t>(y) % sy)
        throw course::UsageError("x or y is not aligned to its element size");
      *result = ch07::cpu_dot_typed(host.pool(), x, x_dtype, y, y_dtype, n);
      return;
    }
    ch07::Engine& e = *engine;
    ch07::require_fits(e, n);
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
