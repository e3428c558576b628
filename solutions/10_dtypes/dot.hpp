#pragma once
/// \file
/// \brief Chapter 10 — the dot of any two types: declarations shared by the driver and the tests.
///
/// One kernel family dot<X, Y, Acc> reads each input at its own width and accumulates in the type the
/// promotion rule picks; the registry lists the pairs. Every launcher writes its result as one double
/// on the device (exact for every accumulator: a float, a double, or an integer below 2^53) and
/// returns without waiting, like chapter 06's versions.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "course/buffer.hpp"
#include "course/context.hpp"
#include "course/dtype.hpp"

namespace ch10 {

/// Threads per block of the course kernel (chapter 06's version 12: 1024 threads, two blocks per SM).
constexpr unsigned kBlock = 1024;

/// Where a thread loop reads packs and where it reads single elements (exercise 1's index
/// arithmetic, and exercise 3's): elements [0, head_end) one by one, then `packs` whole packs of V
/// elements from head_end, then elements [tail, n) one by one.
struct PackSplit {
  std::size_t head_end = 0;
  std::size_t packs = 0;
  std::size_t tail = 0;
};

/// The split of n elements whose first whole pack of V starts at `head` (the launcher's
/// course::kernels::vector_head: 0 <= head <= n, or -1 when x and y never start a pack at the same
/// index). Packs follow each other from head, as many as fit whole in [0, n); the elements before
/// head and after the last whole pack are read one by one. What must hold, as the test "ch10
/// split_packs: *" checks it: with 0 <= head <= n, head_end == head, tail == head_end + packs * V,
/// tail <= n and n - tail < V (no whole pack left after tail); with head -1 (no pack), packs == 0
/// and head_end == tail == n (the head reads every element). No overflow for any n.
/// __host__ __device__: thread_dot and thread_dot_i8 call it on the GPU, the test on the host,
/// without a GPU.
COURSE_HOST_DEVICE PackSplit split_packs(std::size_t n, long long head, int V);

/// Everything a call needs besides its inputs, made once for inputs of up to `max_n` elements: the
/// tagged partial slots of the single pass, CUB's scratch memory, the buffers of "convert, then
/// cuBLAS", and the device's facts and cuBLAS handle (the Context's). One stream at a time.
struct Workspace {
  Workspace(course::Context& context, std::size_t max_n);
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  /// Device bytes a Workspace for `max_n` elements needs, at most (for course::require_fits).
  static std::size_t bytes_for(std::size_t max_n);

  /// Throws course::UsageError when n is larger than the workspace was made for.
  void require(std::size_t n) const;

  /// Fills the tagged slots with a tag no call uses, so a slot nobody wrote is never read as written.
  void poison(cudaStream_t stream);

  /// The tag of the next call (never 0 nor 0xFFFFFFFF; clears the slots when the 32-bit tag wraps).
  unsigned next_tag(cudaStream_t stream);

  /// The grid of `kernel` (an instantiation of the course kernel) for n elements: one trip per thread
  /// while that fits on the SMs at once, then resident_grid(kernel) blocks, each looping; at most
  /// `grid_limit` blocks when that is set (tests use it to give each thread many elements).
  unsigned grid_for(std::size_t n, std::size_t elements_per_trip, const void* kernel);

  /// The most blocks of `kernel` (kBlock threads, no dynamic shared memory) resident on the device at
  /// once, at most grid_max: the kernel's last block waits for all the others, so every block must be
  /// running. Asked of the occupancy API once per kernel and kept.
  int resident_grid(const void* kernel);

  course::Context& ctx;
  std::size_t max_n = 0;
  int grid_max = 0;            ///< tagged slots: two blocks per SM, at most kBlock (one per thread of the last block)
  unsigned grid_limit = 0;     ///< 0, or a smaller grid (tests)
  course::DeviceBuffer<unsigned long long> tagged;  ///< 2 words per block: (tag << 32 | 32 bits of the partial)
  course::DeviceBuffer<unsigned char> cub_temp;
  course::DeviceBuffer<unsigned char> converted;    ///< "convert, then cuBLAS": the converted copies (16 bytes per element)
  course::DeviceBuffer<unsigned char> lib_result;   ///< a library's own result (float, double, half) before widening

 private:
  unsigned tag_ = 0;
  std::map<const void*, int> resident_;  // resident_grid's answers, per kernel
};

/// One implementation of a pair: d_result[0] = Σ x[i]·y[i] as a double, enqueued on `stream`.
/// x and y point to n elements of the pair's types, with any alignment of their type.
using Launcher = void (*)(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws,
                          cudaStream_t stream);

/// One pair of the registry: its types, the accumulator the course's promotion rule picks for it, the
/// course kernel, the library baseline (cuBLAS where it has the pair, else "convert, then cuBLAS") and
/// CUB's TransformReduce over the same pair.
struct Pair {
  std::string name;            ///< "f32_bool": the command line's --kernel
  std::string description;
  course::Dtype x, y;
  course::Dtype acc;           ///< from the promotion rule (Promote<X, Y>) in dot.cu
  Launcher run;                ///< the course kernel dot<X, Y, Acc>
  std::string library_name;    ///< "cublasSdot", "convert+cublasDdot", ...
  Launcher library;
  double library_extra_bytes;  ///< bytes per element the library's conversion writes and reads again (0: none)
  Launcher cub;
  bool exercise = false;
  /// Not a dot product: the pair's bytes read with 16-byte loads on the course kernel's grid and
  /// nothing else, timed beside the others as the speed_of_light row (the floor). Its value only shows
  /// that it ran (finite): it is never held to the reference.
  Launcher speed_of_light = nullptr;
  /// The course kernel's thread loop (thread_dot, or thread_dot_i8 for int8 · int8) run on the host,
  /// without a GPU: x and y host arrays of the pair's types, `threads` threads' shares computed one
  /// after another by the kernel's own code and added in the accumulator, returned as a double (exact
  /// for the accumulators here). The host tests ("ch10 thread loops on the host: *") call it.
  double (*host_loops)(const void* x, const void* y, std::size_t n, std::size_t threads) = nullptr;
};

/// The pairs, in the order the text discusses them.
const std::vector<Pair>& versions();

/// The pair called `name`, or nullptr.
const Pair* find_pair(const std::string& name);

/// "float32*bool": the CSV's dtype column.
std::string pair_dtype(const Pair& p);

/// Bytes per element of the pair (both inputs read once).
double pair_bytes(const Pair& p);

/// The accumulation experiments of the text, not in the registry: half·half and bfloat16·bfloat16
/// accumulated in their own type, and int8·int8 accumulated in int32 everywhere (it wraps).
void run_f16_in_f16(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream);
void run_bf16_in_bf16(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream);
void run_i8_in_i32(const void* d_x, const void* d_y, std::size_t n, double* d_result, Workspace& ws, cudaStream_t stream);

// Baselines (baselines.cu), one per pair; library_result_* widen a library's result to the double.
void run_cublas_f32(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_cublas_f64(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_cublas_f16(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_cublas_bf16(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_convert_cublas_f32_bool(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_convert_cublas_f32_i8(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_convert_cublas_f32_f16(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_convert_cublas_f32_f64(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
void run_convert_cublas_i8_i8(const void*, const void*, std::size_t, double*, Workspace&, cudaStream_t);
/// CUB's DeviceReduce::TransformReduce over the pair (x, y), accumulating in the type the course's
/// rule gives (its own copy of the rule: a baseline does not depend on an exercise).
Launcher cub_launcher(course::Dtype x, course::Dtype y);
/// The speed-of-light kernel for inputs of these types (only their sizes matter).
Launcher speed_of_light_launcher(course::Dtype x, course::Dtype y);
/// Bytes of scratch memory CUB asks for, at most over the registry's pairs, at n elements.
std::size_t cub_temp_bytes_for(std::size_t n);

}  // namespace ch10
