#pragma once
/// \file
/// \brief Chapter 04: one block of threads computes a dot product — the race, and atomics.
///
/// Every version has the same shape: device pointers in, the result written to one float in
/// device memory, asynchronously on a stream. The registry, versions(), is the only list of them:
/// the command line, the tests, the benchmark and the text all iterate it.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <vector>

#include "course/context.hpp"
#include "course/random.hpp"  // COURSE_HOST_DEVICE: __host__ __device__ under nvcc, nothing under g++
#include "course/registry.hpp"

namespace ch04 {

/// What a launcher is given and leaves behind: the context of the GPU it runs on (where the
/// occupancy answers are cached), and the shape of its launch for the driver's tables.
/// `ch04::Workspace ws(ctx);` (the context must outlive it)
struct Workspace {
  explicit Workspace(course::Context& context) : ctx(context) {}
  course::Context& ctx;    ///< the GPU's state; launchers normally run on ctx.stream()
  int grid = 0;            ///< blocks of the last launch (1 for every version; the speed-of-light row fills the GPU)
  int block = 0;           ///< threads per block of the last launch
  int floor_resident = 0;  ///< the speed-of-light row's most blocks (every SM's), asked once, 0 until then
};

/// Computes x·y over n elements into *d_result (device memory), asynchronously on `stream`
/// (normally ws.ctx.stream()). The launcher sets *d_result to zero itself (on the stream) before
/// it adds into it.
using Launcher = void (*)(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                          cudaStream_t stream);

/// One entry of the registry: the launcher and what the driver and the tests need to know.
struct GpuDot {
  Launcher launch;
  bool racy = false;  ///< a data race on purpose: shown by the driver, never held to the error bound
  /// Not a dot product: the speed-of-light row, the whole GPU reading the same bytes with the best
  /// access pattern and nothing else (the kit's read-only kernel), timed beside the versions. Its
  /// value only says that it ran (finite): the driver and the tests never hold it to the reference.
  bool floor = false;
};

/// The chapter's registry: the speed-of-light row (the floor) first, then the versions in the order
/// the text tells the story.
const std::vector<course::Version<GpuDot>>& versions();

/// Threads of the one block every version launches: the block size the occupancy API suggests,
/// the smallest over this chapter's kernels (they are alike, so the suggestions agree). Asked once
/// per context, which caches it.
int one_block_threads(course::Context& ctx);

// [for_each_block_stride]
/// Exercise 2: thread `tid`'s share of [0, n) in the block-stride split among `threads` threads.
/// dot_atomic_once calls it on the GPU (visit adds x[i] * y[i] to the thread's sum); the host tests
/// `ch04 index: ...` call it with a recorder, no GPU needed. It is compiled for the host too: use
/// its arguments only, no threadIdx or blockDim.
template <class Visit>
COURSE_HOST_DEVICE inline void for_each_block_stride(unsigned tid, unsigned threads, std::size_t n, Visit visit) {
  // BEGIN SOLUTION
  for (std::size_t i = tid; i < n; i += threads) visit(i);  // 64-bit: n may exceed 2^32
  // STUB
  //> // TODO(student): call visit(i) for i = tid and every other i < n with i % threads == tid: each
  //> // once, in increasing order, nothing at or past n. n may exceed 2^32, so no index may wrap.
  //> // Tests (host, no GPU): `ch04 index: for_each_block_stride *`. See README §One block, many threads.
  //> (void)tid, (void)threads, (void)n, (void)visit;
  // END SOLUTION
}
// [for_each_block_stride]

// [float_bits]
/// A float's 32 bits as an unsigned int, and back, unchanged (exercise 3 compares and swaps the bits):
/// __float_as_uint and __uint_as_float on the GPU, a copy of the bytes on the host.
COURSE_HOST_DEVICE inline unsigned float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  unsigned u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

COURSE_HOST_DEVICE inline float bits_float(unsigned u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
// [float_bits]

/// Exercise 3 (think): the largest product x[i] * y[i] over n elements into *d_result (device
/// memory; -infinity when n is 0), by one block whose threads combine their maxima with
/// atomic_max_float, built from atomicCAS. Asynchronous on `stream`. Not in the registry: it is
/// not a dot product.
void max_product(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                 cudaStream_t stream);

/// The kernels' exercise code (dot.cu's holes 1–3) run on the host, without a GPU: each kernel calls a
/// __host__ __device__ helper for what one thread does, with the GPU's atomic as an argument, and
/// these call the same helpers with the host tests' simulated atomics, one simulated thread of the
/// block player (tests/support/block_player.hpp) per call.
namespace on_host {
/// One word of global memory that every thread of a simulated block updates. A plain read lets the
/// other threads run before its value arrives (`pause`, the player's), as a GPU may: so a plain
/// read-modify-write (`*result += v`) loses the updates made in between. The simulated atomics read
/// and write `value` directly: nothing comes between.
template <class T>
struct Shared {
  T value{};
  std::function<void()> pause;
  operator T() const {  // NOLINT: a plain load, as `*result` on the GPU
    const T v = value;
    if (pause) pause();
    return v;
  }
  Shared& operator=(T v) {  // a plain store
    value = v;
    return *this;
  }
  Shared& operator+=(T v) { return *this = static_cast<T>(*this) + v; }  // load, pause, add, store
};
using AtomicAdd = std::function<void(Shared<float>*, float)>;  ///< atomicAdd(address, v)
/// atomicCAS(address, compare, val): stores val if *address == compare; returns the old value.
using AtomicCas = std::function<unsigned(Shared<unsigned>*, unsigned, unsigned)>;
/// dot_atomic_each's thread tid of `threads`: one atomic_add per product.
void atomic_each(const float* x, const float* y, std::size_t n, Shared<float>* result, unsigned tid,
                 unsigned threads, const AtomicAdd& atomic_add);
/// dot_atomic_once's thread tid of `threads`: a private sum, one atomic_add.
void atomic_once(const float* x, const float* y, std::size_t n, Shared<float>* result, unsigned tid,
                 unsigned threads, const AtomicAdd& atomic_add);
/// atomic_max_float on the float whose bits are *bits.
void atomic_max(Shared<unsigned>* bits, float value, const AtomicCas& atomic_cas);
}  // namespace on_host

}  // namespace ch04
