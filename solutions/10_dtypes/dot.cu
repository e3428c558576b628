// Chapter 10 — the dot of any two types, at the speed of their bytes.
//
// Pairs (ch10::versions(); one with `10_dtypes --kernel NAME --n 2^28`, the report with `10_dtypes`):
//   f32_f32    float32 · float32   -> float32 accumulator   10_dtypes --kernel f32_f32
//   f64_f64    float64 · float64   -> float64               10_dtypes --kernel f64_f64
//   f32_f64    float32 · float64   -> float64               10_dtypes --kernel f32_f64
//   f32_bool   float32 · bool      -> float32               10_dtypes --kernel f32_bool
//   f32_i8     float32 · int8      -> float32               10_dtypes --kernel f32_i8
//   f32_f16    float32 · float16   -> float32               10_dtypes --kernel f32_f16
//   f16_f16    float16 · float16   -> float32 (not float16) 10_dtypes --kernel f16_f16
//   bf16_bf16  bfloat16 · bfloat16 -> float32               10_dtypes --kernel bf16_bf16
//   i8_i8      int8 · int8         -> int64, exact          10_dtypes --kernel i8_i8
// One kernel family, dot<X, Y, Acc>: chapter 06's version 12 (single pass, tagged partials,
// deterministic) with each input read at its own width. The library baselines live in baselines.cu.
//
// Exercises: (1) the generic thread loop, thread_dot; (2) the promotion rule, Promote<X, Y>;
// (3) the int8 · int8 loop, thread_dot_i8, exact for every n.
//
// Chapter 06's tagged-partials single pass (dot_kernel12 there) and its block reduction come from the
// kit (common/course/kernels/tagged_pass.cuh), generic over the accumulator: this chapter's kernel is
// its own thread loop (the exercises) followed by the kit's combine.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "course/check.hpp"
#include "course/kernels/typed_dot.cuh"
#include "dot.hpp"

namespace ch10 {

// [split_packs]
// Exercise 1's index arithmetic (and exercise 3's): which elements a thread loop reads one by one,
// and which as whole packs. __host__ __device__, so the host tests check it without a GPU.
COURSE_HOST_DEVICE PackSplit split_packs(std::size_t n, long long head, int V) {
  // BEGIN SOLUTION
  if (head < 0) return PackSplit{n, 0, n};  // no index starts a pack in both inputs: all one by one
  PackSplit s;
  s.head_end = static_cast<std::size_t>(head);
  s.packs = (n - s.head_end) / static_cast<std::size_t>(V);  // whole packs only: rounded down
  s.tail = s.head_end + s.packs * static_cast<std::size_t>(V);
  return s;
  // STUB
  //> // TODO(student): exercise 1 (its index arithmetic). Return the split dot.hpp states above
  //> // split_packs: the elements before head one by one, then as many whole packs of V as fit
  //> // in [0, n), then the rest one by one; with head < 0 no pack, and the head is every element
  //> // (head_end == tail == n). Test: "ch10 split_packs: *" (host only: runs without a GPU).
  //> (void)n;
  //> (void)head;
  //> (void)V;
  //> return PackSplit{};
  // END SOLUTION
}
// [split_packs]

namespace {

using bf16 = __nv_bfloat16;
using i8 = std::int8_t;

// The thread loops below are __host__ __device__: the kernel runs them on the GPU, and the host tests
// run the very same code on the host, thread by thread ("ch10 thread loops on the host: *"). Their two
// device intrinsics get stand-ins in the host compilation only, with the GPU's semantics: __ldg is a
// plain load, and __dp4a adds the four byte products (signed for int lanes, unsigned for unsigned
// ones, as the GPU's two overloads do) to c, wrapping as the 32-bit hardware add does. The GPU
// compilation never sees them: the kernels' code is what it was.
#ifndef __CUDA_ARCH__
template <class T>
inline T host_ldg(const T* p) {
  return *p;
}
inline int host_dp4a(int a, int b, int c) {
  std::uint32_t sum = static_cast<std::uint32_t>(c);
  for (int k = 0; k < 4; ++k)
    sum += static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int8_t>((a >> (8 * k)) & 0xFF)) *
                                      static_cast<std::int8_t>((b >> (8 * k)) & 0xFF));
  return static_cast<int>(sum);
}
inline unsigned host_dp4a(unsigned a, unsigned b, unsigned c) {
  for (int k = 0; k < 4; ++k) c += ((a >> (8 * k)) & 0xFFu) * ((b >> (8 * k)) & 0xFFu);
  return c;
}
#define __ldg host_ldg
#define __dp4a host_dp4a
#endif

template <class T, class Acc>
COURSE_HOST_DEVICE __forceinline__ Acc widen(T v) {
  return static_cast<Acc>(v);
}
// float16 and bfloat16 reach any accumulator through float32 (exact). ([[maybe_unused]]: a pair's
// accumulator decides which of these a build calls, and the host compilation warns of the others.)
template <>
[[maybe_unused]] COURSE_HOST_DEVICE __forceinline__ float widen<__half, float>(__half v) { return __half2float(v); }
template <>
[[maybe_unused]] COURSE_HOST_DEVICE __forceinline__ float widen<bf16, float>(bf16 v) { return __bfloat162float(v); }

template <class Acc>
COURSE_HOST_DEVICE __forceinline__ Acc zero() {
  return static_cast<Acc>(0.0f);
}

// [pack]
// A pack: V consecutive elements read by one load instruction. V is set by the wider input: 16 bytes
// of it (4 float32, 2 float64, 8 float16, 16 int8); the narrower input's pack is then 4 or 8 bytes
// (4 bools, 4 int8, 4 float16 beside 4 float32), still one load per pack.
template <class X, class Y>
constexpr int kPack = 16 / static_cast<int>(sizeof(X) > sizeof(Y) ? sizeof(X) : sizeof(Y));
// Packs of x and of y each thread has in flight per trip: at least 64 bytes (chapter 06's version 12
// had two float4 of each input), at most 4 packs.
template <class X, class Y>
constexpr int kUnroll = std::min(4, std::max(1, 64 / (kPack<X, Y> * static_cast<int>(sizeof(X) + sizeof(Y)))));

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T e[V];
};

template <class T, int V>
COURSE_HOST_DEVICE __forceinline__ Pack<T, V> load_pack(const Pack<T, V>* p) {
  constexpr std::size_t bytes = sizeof(Pack<T, V>);
  static_assert(bytes == 4 || bytes == 8 || bytes == 16, "a pack is one 4-, 8- or 16-byte load");
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
// [pack]

// [thread_dot]
// This thread's share of Σ x[i]·y[i] in the accumulator Acc. The launcher found `head`: the first
// index at which both x and y start a whole pack (−1: none does, because x and y are misaligned
// differently, and a scalar loop reads everything). Elements before `head` and after the last whole
// pack are read one by one; the rest a pack at a time, kUnroll packs of x and of y in flight before
// any is used. Every element is widened to Acc before it is multiplied.
template <class X, class Y, class Acc>
COURSE_HOST_DEVICE __forceinline__ Acc thread_dot(const X* __restrict__ x, const Y* __restrict__ y, std::size_t n,
                                                  long long head, std::size_t thread, std::size_t threads) {
  constexpr int V = kPack<X, Y>;
  constexpr int U = kUnroll<X, Y>;
  Acc sum = zero<Acc>();
  // BEGIN SOLUTION
  const PackSplit split = split_packs(n, head, V);
  const std::size_t packs = split.packs;
  for (std::size_t i = thread; i < split.head_end; i += threads) sum += widen<X, Acc>(x[i]) * widen<Y, Acc>(y[i]);
  for (std::size_t i = split.tail + thread; i < n; i += threads) sum += widen<X, Acc>(x[i]) * widen<Y, Acc>(y[i]);
  const auto* px = reinterpret_cast<const Pack<X, V>*>(x + split.head_end);
  const auto* py = reinterpret_cast<const Pack<Y, V>*>(y + split.head_end);
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
      for (int e = 0; e < V; ++e) sum += widen<X, Acc>(a[u].e[e]) * widen<Y, Acc>(b[u].e[e]);
  }
  for (; p < packs; p += threads) {
    const Pack<X, V> a = load_pack(px + p);
    const Pack<Y, V> b = load_pack(py + p);
#pragma unroll
    for (int e = 0; e < V; ++e) sum += widen<X, Acc>(a.e[e]) * widen<Y, Acc>(b.e[e]);
  }
  // STUB
  //> // TODO(student): exercise 1. Return this thread's share of Σ x[i]·y[i] in Acc. What must hold:
  //> // over threads 0 … threads−1, every index in [0, n) is read exactly once, and nothing outside
  //> // it; each element is widened to Acc before the multiply (widen<T, Acc>); a pack is read with
  //> // one load_pack, and only where it is legal: at x + head + k·V and y + head + k·V for whole packs
  //> // inside [0, n) (head < 0: nowhere; split_packs, below, says where: "ch10 split_packs: *"
  //> // checks it without a GPU); the sum depends only on n, head, thread and threads (the
  //> // same bits on every run); at least U packs of each input are in flight before any is used.
  //> // Tests: "ch10 thread loops on the host: *" (this code run on the host, no GPU), "ch10 <pair>:
  //> // matches the reference at awkward sizes and alignments" (five offset pairs, guard bytes around
  //> // the inputs), "ch10 <pair>: the same bits on every run", "ch10 <pair>: follows its input (new
  //> // values in the same buffers)".
  //> (void)x; (void)y; (void)n; (void)head; (void)thread; (void)threads; (void)V; (void)U;
  // END SOLUTION
  return sum;
}
// [thread_dot]

// [promote]
// The promotion rule: the type a pair accumulates in. Narrow inputs (bool, int8, float16, bfloat16)
// are exactly representable in float32, so they count as float32; then C++'s usual arithmetic
// conversions pick the wider of the two (float32 · float64 -> float64). One exception: two integer
// inputs accumulate in a 64-bit integer, so the answer is exact (the text says why not int32).
template <class T>
struct AsFloat {
  using type = float;  // bool, int8, float16, bfloat16: every value is a float32
};
template <>
struct AsFloat<double> {
  using type = double;
};

template <class X, class Y>
struct Promote {
  // BEGIN SOLUTION
  using type = std::conditional_t<std::is_integral_v<X> && std::is_integral_v<Y>, long long,
                                  decltype(typename AsFloat<X>::type{} * typename AsFloat<Y>::type{})>;
  // STUB
  //> // TODO(student): exercise 2. `type` must be the accumulator the chapter's promotion rule gives
  //> // the pair (X, Y), for every pair of input types (X, Y in bool, int8, __half, __nv_bfloat16,
  //> // float, double), decided at compile time. Checked for every pair of the registry by
  //> // "ch10 promotion: every pair accumulates in the type the rule gives" (host only); the pair
  //> // tests then hold each pair to the error bound of that accumulator. The 64-bit integer is
  //> // `long long`, as in thread_dot_i8 (std::int64_t is `long` on Linux: another type).
  //> using type = X;
  // END SOLUTION
};
// [promote]

// [thread_dot_i8]
// int8 · int8, exact for every n. __dp4a(a, b, c) adds the four products of the int8 lanes of a and
// b to the int32 c in one instruction: four elements per instruction. A product is at most
// (−128)·(−128) = 2^14, and int32 holds 2^31 − 1.
[[maybe_unused]] COURSE_HOST_DEVICE __forceinline__
long long thread_dot_i8(const i8* __restrict__ x, const i8* __restrict__ y, std::size_t n,
                        long long head, std::size_t thread, std::size_t threads) {
  constexpr int V = kPack<i8, i8>;  // 16: one uint4 of each input
  constexpr int U = kUnroll<i8, i8>;
  long long total = 0;
  // BEGIN SOLUTION
  // A pack's 16 products sum to at most 2^18 in magnitude, so one trip's U packs stay far inside
  // int32 (U·2^18 ≤ 2^20); the trip's sum is added to the 64-bit total. Elements read one by one go
  // straight into the total.
  auto scalar = [&](std::size_t i) { total += static_cast<int>(x[i]) * static_cast<int>(y[i]); };
  const PackSplit split = split_packs(n, head, V);
  const std::size_t packs = split.packs;
  for (std::size_t i = thread; i < split.head_end; i += threads) scalar(i);
  for (std::size_t i = split.tail + thread; i < n; i += threads) scalar(i);
  const auto* px = reinterpret_cast<const uint4*>(x + split.head_end);
  const auto* py = reinterpret_cast<const uint4*>(y + split.head_end);
  auto dp16 = [](uint4 a, uint4 b, int c) {
    c = __dp4a(static_cast<int>(a.x), static_cast<int>(b.x), c);
    c = __dp4a(static_cast<int>(a.y), static_cast<int>(b.y), c);
    c = __dp4a(static_cast<int>(a.z), static_cast<int>(b.z), c);
    return __dp4a(static_cast<int>(a.w), static_cast<int>(b.w), c);
  };
  std::size_t p = thread;
  for (; p + (U - 1) * threads < packs; p += U * threads) {
    uint4 a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      a[u] = __ldg(px + p + u * threads);
      b[u] = __ldg(py + p + u * threads);
    }
    int trip = 0;
#pragma unroll
    for (int u = 0; u < U; ++u) trip = dp16(a[u], b[u], trip);
    total += trip;
  }
  for (; p < packs; p += threads) total += dp16(__ldg(px + p), __ldg(py + p), 0);
  // STUB
  //> // TODO(student): exercise 3 (think). Return this thread's share of Σ x[i]·y[i], exact for
  //> // every n and every grid size, with the same contract as thread_dot (every index once, packs
  //> // only where legal: split_packs), the whole packs through __dp4a, whose sum is an int32. A uint4's lanes are
  //> // unsigned: see the text before you call __dp4a on them. Tests: "ch10 i8_i8: exact where the
  //> // sum leaves int32 (worst case)", "ch10 i8_i8: exact when one thread's share leaves int32 (one
  //> // block)", the i8_i8 pair tests, and on the host (no GPU) "ch10 thread loops on the host: *".
  //> (void)x; (void)y; (void)n; (void)head; (void)thread; (void)threads; (void)V; (void)U;
  // END SOLUTION
  return total;
}
// [thread_dot_i8]

#ifndef __CUDA_ARCH__
#undef __ldg
#undef __dp4a
#endif

template <class X, class Y, class Acc>
COURSE_HOST_DEVICE __forceinline__ Acc thread_share(const X* __restrict__ x, const Y* __restrict__ y, std::size_t n,
                                                    long long head, std::size_t thread, std::size_t threads) {
  if constexpr (std::is_same_v<X, i8> && std::is_same_v<Y, i8> && std::is_same_v<Acc, long long>)
    return thread_dot_i8(x, y, n, head, thread, threads);
  else
    return thread_dot<X, Y, Acc>(x, y, n, head, thread, threads);
}

// The kernel's thread loop on the host (Pair::host_loops): head as the launcher finds it, then every
// thread's share in thread order, added in the accumulator as the kernel's combine would.
template <class X, class Y, class Acc>
double host_loops(const void* x, const void* y, std::size_t n, std::size_t threads) {
  const long long head = course::kernels::vector_head(x, sizeof(X), y, sizeof(Y), kPack<X, Y>, n);
  Acc total = zero<Acc>();
  for (std::size_t t = 0; t < threads; ++t)
    total += thread_share<X, Y, Acc>(static_cast<const X*>(x), static_cast<const Y*>(y), n, head, t, threads);
  if constexpr (std::is_same_v<Acc, __half>) return __half2float(total);
  else if constexpr (std::is_same_v<Acc, bf16>) return __bfloat162float(total);
  else return static_cast<double>(total);
}


// [dot_kernel]
// Chapter 06's version 12 for any pair: every block but the last publishes its partial with the
// call's tag and exits; the last block waits for every slot to carry the tag and adds them in a fixed
// order (deterministic). A partial of 8 bytes (a double, an int64) takes two tagged words, each
// (tag << 32 | 32 bits): each word is one 8-byte store, seen whole or not at all, so no fence is
// needed. The result is written as a double: exact for every accumulator here. The combine is the
// kit's (course::kernels::tagged_single_pass); this chapter's part is the thread loop before it.
template <class X, class Y, class Acc>
__global__ void __launch_bounds__(kBlock, 2)
    dot_kernel(const X* __restrict__ x, const Y* __restrict__ y, std::size_t n, long long head,
               unsigned long long* tagged, unsigned tag, double* __restrict__ result) {
  const std::size_t thread = blockIdx.x * std::size_t{kBlock} + threadIdx.x;
  const Acc sum = thread_share<X, Y, Acc>(x, y, n, head, thread, std::size_t{gridDim.x} * kBlock);
  course::kernels::tagged_single_pass<kBlock, 2>(sum, tagged, tag, result,
                                                 [](Acc v) { return course::kernels::to_double(v); });
}
// [dot_kernel]

// ---------------------------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------------------------

// [launch]
template <class X, class Y, class Acc>
void launch(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream) {
  ws.require(n);
  constexpr int V = kPack<X, Y>;
  if (n > 0 && ((reinterpret_cast<std::uintptr_t>(d_x) % sizeof(X)) || (reinterpret_cast<std::uintptr_t>(d_y) % sizeof(Y))))
    throw course::UsageError("ch10: x or y is not aligned to its element size");
  const long long head = course::kernels::vector_head(d_x, sizeof(X), d_y, sizeof(Y), V, n);
  const unsigned blocks = ws.grid_for(n, std::size_t{kBlock} * V * kUnroll<X, Y>,
                                     reinterpret_cast<const void*>(dot_kernel<X, Y, Acc>));
  const unsigned tag = ws.next_tag(stream);
  dot_kernel<X, Y, Acc><<<blocks, kBlock, 0, stream>>>(static_cast<const X*>(d_x), static_cast<const Y*>(d_y), n,
                                                       head, ws.tagged.data(), tag, d_result);
  CUDA_CHECK_LAUNCH("ch10::dot_kernel");
}

/// The course kernel of a pair: dot<X, Y, Acc> with Acc from the promotion rule.
template <class X, class Y>
void run_pair(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream) {
  launch<X, Y, typename Promote<X, Y>::type>(d_x, d_y, n, d_result, ws, stream);
}
// [launch]

template <class X, class Y>
Pair make_pair(const char* name, const char* description, const char* library_name, Launcher library,
               double library_extra_bytes, bool exercise) {
  using Acc = typename Promote<X, Y>::type;
  return Pair{name, description, course::dtype_of<X>(), course::dtype_of<Y>(), course::dtype_of<Acc>(),
              run_pair<X, Y>, library_name, library, library_extra_bytes,
              cub_launcher(course::dtype_of<X>(), course::dtype_of<Y>()), exercise,
              speed_of_light_launcher(course::dtype_of<X>(), course::dtype_of<Y>()), host_loops<X, Y, Acc>};
}

}  // namespace

// [registry]
const std::vector<Pair>& versions() {
  static const std::vector<Pair> registry = {
      make_pair<float, float>("f32_f32", "float32 . float32, float32 accumulator (chapter 06's case)", "cublasSdot",
                              run_cublas_f32, 0, true),
      make_pair<double, double>("f64_f64", "float64 . float64, float64 accumulator", "cublasDdot", run_cublas_f64, 0,
                                true),
      make_pair<float, double>("f32_f64", "float32 . float64: the usual conversions give float64",
                               "convert x, cublasDdot", run_convert_cublas_f32_f64, 16, true),
      make_pair<float, bool>("f32_bool", "float32 . bool (a mask): 5 bytes per element", "convert y, cublasSdot",
                             run_convert_cublas_f32_bool, 8, true),
      make_pair<float, i8>("f32_i8", "float32 . int8 (quantized weights)", "convert y, cublasSdot",
                           run_convert_cublas_f32_i8, 8, true),
      make_pair<float, __half>("f32_f16", "float32 . float16", "convert y, cublasSdot", run_convert_cublas_f32_f16, 8,
                               true),
      make_pair<__half, __half>("f16_f16", "float16 . float16, accumulated in float32", "cublasDotEx (16F, fp32 compute)",
                                run_cublas_f16, 0, true),
      make_pair<bf16, bf16>("bf16_bf16", "bfloat16 . bfloat16, accumulated in float32",
                            "cublasDotEx (16BF, fp32 compute)", run_cublas_bf16, 0, true),
      make_pair<i8, i8>("i8_i8", "int8 . int8, exact (int64 accumulator, dp4a)", "convert both, cublasDdot",
                        run_convert_cublas_i8_i8, 32, true),
  };
  return registry;
}
// [registry]

const Pair* find_pair(const std::string& name) {
  for (const auto& p : versions())
    if (p.name == name) return &p;
  return nullptr;
}

std::string pair_dtype(const Pair& p) { return std::string(course::dtype_name(p.x)) + "*" + course::dtype_name(p.y); }

double pair_bytes(const Pair& p) {
  return static_cast<double>(course::dtype_size(p.x) + course::dtype_size(p.y));
}

// [experiments]
// What the text shows before the rule: float16 and bfloat16 accumulated in their own type, and int8
// accumulated in int32 all the way (it wraps past 2^31; signed overflow is undefined in C++ too).
void run_f16_in_f16(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream) {
  launch<__half, __half, __half>(d_x, d_y, n, d_result, ws, stream);
}
void run_bf16_in_bf16(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream) {
  launch<bf16, bf16, bf16>(d_x, d_y, n, d_result, ws, stream);
}
void run_i8_in_i32(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream) {
  launch<i8, i8, int>(d_x, d_y, n, d_result, ws, stream);
}
// [experiments]

// ---------------------------------------------------------------------------------------------
// Workspace
// ---------------------------------------------------------------------------------------------

std::size_t Workspace::bytes_for(std::size_t max_n) {
  return 2 * 4096 * sizeof(unsigned long long) + cub_temp_bytes_for(max_n) + 32 * std::max<std::size_t>(1, max_n) + 64;
}

Workspace::Workspace(course::Context& context, std::size_t max_elements)
    : ctx(context),
      max_n(max_elements),
      grid_max(std::min<int>(static_cast<int>(kBlock), context.facts().sm_count * 2)),
      tagged(2 * static_cast<std::size_t>(std::min<int>(static_cast<int>(kBlock), context.facts().sm_count * 2))),
      cub_temp(std::max<std::size_t>(1, cub_temp_bytes_for(max_elements))),
      converted(32 * std::max<std::size_t>(1, max_elements)),
      lib_result(64) {
  ctx.activate();
  CUDA_CHECK(cudaMemsetAsync(tagged.data(), 0, tagged.bytes(), ctx.stream()));
  ctx.synchronize();
}

void Workspace::require(std::size_t n) const {
  if (n > max_n)
    throw course::UsageError("ch10::Workspace was made for n <= " + std::to_string(max_n) + "; the call has n = " +
                             std::to_string(n));
}

void Workspace::poison(cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(tagged.data(), 0xFF, tagged.bytes(), stream));
}

unsigned Workspace::next_tag(cudaStream_t stream) { return course::kernels::next_tag(tag_, tagged, stream); }

// __launch_bounds__(kBlock, 2) caps the registers so that two blocks may fit; it guarantees no
// residency (shared memory, or a card that holds 1536 threads per SM, can hold fewer). A grid that is
// not all resident would hang the last block, so ask the occupancy API (as chapter 06's version 12 does).
int Workspace::resident_grid(const void* kernel) {
  auto it = resident_.find(kernel);
  if (it == resident_.end()) {
    ctx.activate();
    it = resident_.emplace(kernel, course::kernels::resident_grid(kernel, kBlock, ctx.facts().sm_count, grid_max,
                                                                  "ch10::dot_kernel")).first;
  }
  return it->second;
}

unsigned Workspace::grid_for(std::size_t n, std::size_t elements_per_trip, const void* kernel) {
  const std::size_t wanted = std::max<std::size_t>(1, (n + elements_per_trip - 1) / elements_per_trip);
  std::size_t blocks = std::min<std::size_t>(wanted, static_cast<std::size_t>(resident_grid(kernel)));
  if (grid_limit > 0) blocks = std::min<std::size_t>(blocks, grid_limit);
  return static_cast<unsigned>(blocks);
}

}  // namespace ch10
