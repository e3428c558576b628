// Chapter 04 — one block: the race, and atomics.
//
// Versions (ch04::versions(); one with `04_one_block --kernel NAME`, all with `04_one_block`):
//   speed_of_light  not a dot: every SM reads x and y, nothing else (the floor)     04_one_block --kernel speed_of_light
//   race         every thread adds its products into *result with +=: a data race   04_one_block --kernel race
//   atomic_each  one atomicAdd per product: right, and serialized (exercise 1)      04_one_block --kernel atomic_each
//   atomic_once  a register sum per thread, one atomicAdd each (exercise 2)          04_one_block --kernel atomic_once
//
// All three launch one block, as many threads as the occupancy API suggests; every thread walks
// the vectors with a stride of blockDim.x, so thread t takes elements t, t + blockDim.x, ...
// The speed-of-light row is a baseline, not a dot product: the whole GPU reads the same bytes.

#include <algorithm>
#include <cmath>

#include "course/check.hpp"
#include "course/kernels/read_floor.cuh"
#include "dot.hpp"

namespace ch04 {

// [race_kernel]
// Every thread adds its products straight into the one result. `*result += p` is three steps — a
// load, an add, a store — and nothing stops another thread from storing between this thread's
// load and its store: that other thread's update is overwritten and lost (a data race). The
// answer is wrong, and nothing promises it is the same wrong answer next time. (The compiler may
// also keep *result in a register between iterations: a race is undefined behaviour, so it may
// assume no other thread writes. On the H100 it does, and every run loses the same updates.)
__global__ void dot_race(const float* x, const float* y, std::size_t n, float* result) {
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) *result += x[i] * y[i];
}
// [race_kernel]

// [atomic_each_kernel]
// What changed: atomicAdd makes the load-add-store one indivisible operation, done by the memory
// system, so no update is lost. Still slow: every product is one atomic on the same address, and
// atomics on one address are performed one after another — n of them, in a queue.
// A thread's loop is a __host__ __device__ helper, and the atomic comes in as an argument
// (atomic_add(result, v) is atomicAdd on the GPU): the host tests run every thread of a block on a
// simulated one, where a plain read of *result lets other threads run before the value arrives, so a
// lost update shows without a GPU ("ch04 atomic_each player: *").
COURSE_HOST_DEVICE_TEMPLATE
template <class Result, class AtomicAdd>
COURSE_HOST_DEVICE inline void atomic_each_share(const float* x, const float* y, std::size_t n, Result* result,
                                                 unsigned tid, unsigned threads, AtomicAdd atomic_add) {
  for (std::size_t i = tid; i < n; i += threads) {
    // BEGIN SOLUTION
    atomic_add(result, x[i] * y[i]);
    // STUB
    //> // TODO(student): make x[i] * y[i] reach *result while every other thread updates it too, losing
    //> // no update: after the kernel *result is x·y within the error bound, at every n. The argument
    //> // atomic_add is the GPU's atomicAdd, in the host tests a simulated one. Tests: `ch04 atomic_each
    //> // player: *` (host, no GPU), `ch04 atomic_each: *`. See README §The race and §atomicAdd on every
    //> // product.
    //> (void)result, (void)atomic_add;
    // END SOLUTION
  }
}

__global__ void dot_atomic_each(const float* x, const float* y, std::size_t n, float* result) {
  atomic_each_share(x, y, n, result, threadIdx.x, blockDim.x, [](float* r, float v) { atomicAdd(r, v); });
}
// [atomic_each_kernel]

// [atomic_once_kernel]
// What changed: each thread sums its share in a register — private, so no race and no atomic —
// and adds that sum to the result once: blockDim.x atomics instead of n. Still slow: one block
// runs on one of the GPU's SMs; the others sit idle (chapter 05).
// The same shape as atomic_each: the thread's work in a __host__ __device__ helper, the atomic an
// argument ("ch04 atomic_once player: *" runs it on a simulated block, no GPU).
COURSE_HOST_DEVICE_TEMPLATE
template <class Result, class AtomicAdd>
COURSE_HOST_DEVICE inline void atomic_once_share(const float* x, const float* y, std::size_t n, Result* result,
                                                 unsigned tid, unsigned threads, AtomicAdd atomic_add) {
  // BEGIN SOLUTION
  float sum = 0.0f;
  for_each_block_stride(tid, threads, n, [&](std::size_t i) { sum += x[i] * y[i]; });
  atomic_add(result, sum);
  // STUB
  //> // TODO(student): sum this thread's products, over the indices for_each_block_stride (dot.hpp)
  //> // gives it (tid of `threads`), privately, then make that sum reach *result with atomic_add (the
  //> // GPU's atomicAdd): one atomic per thread, none per product, no update lost. Tests: `ch04
  //> // atomic_once player: *` (host, no GPU), `ch04 atomic_once: *`, `ch04 index: *` (host, the
  //> // indices). See README §A register sum per thread.
  //> (void)x, (void)y, (void)n, (void)result, (void)tid, (void)threads, (void)atomic_add;
  // END SOLUTION
}

__global__ void dot_atomic_once(const float* x, const float* y, std::size_t n, float* result) {
  atomic_once_share(x, y, n, result, threadIdx.x, blockDim.x, [](float* r, float v) { atomicAdd(r, v); });
}
// [atomic_once_kernel]

// [atomic_max]
// Exercise 3 (think): atomicAdd exists for float; atomicMax does not (it exists for integers only).
// Every atomic read-modify-write can be built from one primitive: atomicCAS(address, compare, val)
// stores val at *address only if *address still equals compare, and returns the value *address
// held, all in one indivisible step. Its unsigned int overload works on a float's bits: float_bits
// and bits_float (dot.hpp; __float_as_uint and __uint_as_float on the GPU) reinterpret them without
// changing them. Make the float whose bits are *bits the larger of itself and value, losing no other
// thread's update. atomic_cas(bits, compare, val) is the GPU's atomicCAS; the host tests pass a
// simulated one, and there a plain read of *bits lets other threads run before the value arrives
// ("ch04 max_product player: *", no GPU).
COURSE_HOST_DEVICE_TEMPLATE
template <class Word, class Cas>
COURSE_HOST_DEVICE inline void atomic_max_bits(Word* bits, float value, Cas atomic_cas) {
  // BEGIN SOLUTION
  unsigned seen = *bits;  // a first guess; atomic_cas tells us when it was out of date
  while (bits_float(seen) < value) {
    const unsigned before = atomic_cas(bits, seen, float_bits(value));
    if (before == seen) break;  // ours went in: nobody changed *bits between our read and the swap
    seen = before;              // somebody did: compare again with what is there now
  }
  // STUB
  //> // TODO(student): afterwards *bits holds the larger of its old float and value, for any floats
  //> // (all negative too), and no update of another thread calling this at once is lost.
  //> // atomic_cas is the tool; what if it fails? Tests: `ch04 max_product player: *` (host, no GPU),
  //> // `ch04 max_product: *`. See README §Exercise 3.
  //> (void)bits, (void)value, (void)atomic_cas;
  // END SOLUTION
}

__device__ void atomic_max_float(float* address, float value) {
  atomic_max_bits(reinterpret_cast<unsigned*>(address), value,
                  [](unsigned* word, unsigned compare, unsigned val) { return atomicCAS(word, compare, val); });
}
// [atomic_max]

// The largest single product x[i] * y[i] (what an error bound is scaled by): a register maximum per
// thread, then one atomic_max_float per thread into *result, which the launcher set to -infinity.
__global__ void max_product_kernel(const float* x, const float* y, std::size_t n, float* result) {
  float best = -INFINITY;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) best = fmaxf(best, x[i] * y[i]);
  atomic_max_float(result, best);
}

__global__ void set_kernel(float* where, float value) { *where = value; }

namespace {

// Every launcher: zero the result (it is added into), then one block of one_block_threads().
template <class Kernel>
void launch_one_block(Kernel kernel, const char* name, const float* d_x, const float* d_y, std::size_t n,
                      float* d_result, Workspace& ws, cudaStream_t stream) {
  const int block = one_block_threads(ws.ctx);
  CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), stream));
  kernel<<<1, block, 0, stream>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH(name);
  ws.grid = 1;
  ws.block = block;
}

void run_race(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws, cudaStream_t s) {
  launch_one_block(dot_race, "dot_race", d_x, d_y, n, d_result, ws, s);
}

void run_atomic_each(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                     cudaStream_t s) {
  launch_one_block(dot_atomic_each, "dot_atomic_each", d_x, d_y, n, d_result, ws, s);
}

void run_atomic_once(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                     cudaStream_t s) {
  launch_one_block(dot_atomic_once, "dot_atomic_once", d_x, d_y, n, d_result, ws, s);
}

// [speed_of_light]
// Not a dot product: the floor every version here is held to. Not one block but the whole GPU reads
// the same 8n bytes with the best access pattern the course knows and does nothing else: the kit's
// read-only kernel (chapter 06 builds it), 16-byte loads on a grid of the blocks that every SM holds
// at once, one value written so that the loads cannot be dropped. The distance from one block to
// this row is what chapters 05 and 06 win back.
void run_speed_of_light(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                        cudaStream_t s) {
  namespace k = course::kernels;
  if (ws.floor_resident == 0) ws.floor_resident = k::read_floor_resident(ws.ctx.facts().sm_count);  // once
  k::launch_read_floor(d_x, d_y, n, d_result, ws.floor_resident, s);  // any n, 0 too; any alignment
  // The grid it chose, for the driver's table: one trip of kFloorUnroll float4 per thread while
  // that fits in the resident blocks, else all of them.
  const std::size_t per_block = std::size_t{k::kFloorBlock} * 4 * k::kFloorUnroll;
  ws.grid = static_cast<int>(std::min<std::size_t>(std::max<std::size_t>(1, (n + per_block - 1) / per_block),
                                                   static_cast<std::size_t>(ws.floor_resident)));
  ws.block = static_cast<int>(k::kFloorBlock);
}
// [speed_of_light]

}  // namespace

// Exercise 3's launcher: *d_result = -infinity, then one block finds the largest product.
void max_product(const float* d_x, const float* d_y, std::size_t n, float* d_result, Workspace& ws,
                 cudaStream_t stream) {
  const int block = ws.ctx.occupancy(max_product_kernel).block;
  set_kernel<<<1, 1, 0, stream>>>(d_result, -INFINITY);
  CUDA_CHECK_LAUNCH("set_kernel");
  max_product_kernel<<<1, block, 0, stream>>>(d_x, d_y, n, d_result);
  CUDA_CHECK_LAUNCH("max_product_kernel");
  ws.grid = 1;
  ws.block = block;
}

// [occupancy]
// The block size that keeps the most warps resident on an SM for each kernel (its registers and
// shared memory decide that, not us), from the occupancy API; the context asks once per kernel
// and keeps the answer. For one block, it is also how many threads work at once.
int one_block_threads(course::Context& ctx) {
  return std::min({ctx.occupancy(dot_race).block, ctx.occupancy(dot_atomic_each).block,
                   ctx.occupancy(dot_atomic_once).block});
}
// [occupancy]

// [registry]
const std::vector<course::Version<GpuDot>>& versions() {
  static const std::vector<course::Version<GpuDot>> registry = {
      {"speed_of_light", "not a dot: the whole GPU reads x and y with 16-byte loads, one value written (the floor)",
       {run_speed_of_light, false, true}, false},
      {"race", "one block, every thread does `*result += x[i]*y[i]`: a data race, wrong", {run_race, true}, false},
      {"atomic_each", "one block, one atomicAdd per product: right, serialized", {run_atomic_each}, true},
      {"atomic_once", "one block, a register sum per thread, one atomicAdd per thread", {run_atomic_once}, true},
  };
  return registry;
}
// [registry]

// The host tests' entry points (dot.hpp): the helpers above with host callables. (The callables go
// in as host lambdas that refer to the std::functions: nothing of std::function is copied into, or
// destroyed in, a __host__ __device__ function.)
namespace on_host {
void atomic_each(const float* x, const float* y, std::size_t n, Shared<float>* result, unsigned tid,
                 unsigned threads, const AtomicAdd& atomic_add) {
  atomic_each_share(x, y, n, result, tid, threads, [&atomic_add](Shared<float>* r, float v) { atomic_add(r, v); });
}
void atomic_once(const float* x, const float* y, std::size_t n, Shared<float>* result, unsigned tid,
                 unsigned threads, const AtomicAdd& atomic_add) {
  atomic_once_share(x, y, n, result, tid, threads, [&atomic_add](Shared<float>* r, float v) { atomic_add(r, v); });
}
void atomic_max(Shared<unsigned>* bits, float value, const AtomicCas& atomic_cas) {
  atomic_max_bits(bits, value, [&atomic_cas](Shared<unsigned>* w, unsigned compare, unsigned val) {
    return atomic_cas(w, compare, val);
  });
}
}  // namespace on_host

}  // namespace ch04
