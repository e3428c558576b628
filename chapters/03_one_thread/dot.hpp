// Generated from solutions/03_one_thread/dot.hpp by tools/make_exercises.py. Fill the TODO(student) holes: your code
// goes between each `// [hole N begin]` and `// [hole N end]` line (keep those lines). Only that
// code is graded; the rest of the file is taken from the course.
#pragma once
/// \file
/// \brief Chapter 03: one GPU thread, and the round trip around it.
///
/// A version is a launcher: it computes x·y from inputs already on the device and leaves the
/// result in device memory, asynchronously, like every later chapter. round_trip() wraps any
/// version in the program everyone writes first: allocate, copy in, launch, copy back, free.
/// What belongs to the GPU (its stream, the cuBLAS handle) lives in a course::Context, one per
/// device, which every launcher is given.

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "course/context.hpp"
#include "course/random.hpp"  // COURSE_HOST_DEVICE: __host__ __device__ under nvcc, nothing under g++
#include "course/registry.hpp"

namespace ch03 {

/// Writes x·y over n elements to *d_result; all pointers are device memory. Asynchronous on
/// `stream` (normally ctx.stream(); any stream of ctx's device works, one at a time).
using Launcher = void (*)(const float* d_x, const float* d_y, std::size_t n, float* d_result, course::Context& ctx,
                          cudaStream_t stream);

// [one_thread_sum]
/// Exercise 1: what the one thread of dot_kernel_one_thread computes, x·y over [begin, end). The
/// kernel calls it with x and y in device memory and [0, n); the host tests (`ch03 one_thread_sum:
/// ...`, no GPU needed) call the same function with host arrays, and with arrays that only pretend to
/// be 2^32 elements long and start near the end, so that an index that wraps in 32 bits is seen
/// without 32 GB of inputs. X and Y are anything indexed by std::size_t (`const float*` in the kernel).
template <class X, class Y>
COURSE_HOST_DEVICE inline float one_thread_sum(const X& x, const Y& y, std::size_t begin, std::size_t end) {
  // [hole 1 begin]
  // TODO(student): return the sum of x[i] * y[i] over every i with begin <= i < end, each product
  // added once, in float, in index order (chapter 02's plain loop), for every range: empty too,
  // and past 2^32 (no index or intermediate may wrap in 32 bits). Tests: `ch03 one_thread_sum: *`
  // (host), then `ch03 one_thread: *`. See README §Exercise 1.
  (void)x, (void)y, (void)begin, (void)end;
  return 0.0f;
  // [hole 1 end]
}
// [one_thread_sum]

/// The chapter's registry: the cuBLAS baseline (version 0), the speed-of-light row, then the
/// one-thread kernel.
const std::vector<course::Version<Launcher>>& versions();

/// True for the speed-of-light row: not a dot product but the floor every version is held to, the
/// whole GPU reading x and y with the kit's read-only kernel (course/kernels/read_floor.cuh) and
/// writing one value, which only says that it ran (finite). The driver and the tests never hold
/// it to the reference, and the driver times it on resident data only (no round trip).
bool is_speed_of_light(const course::Version<Launcher>& version);

/// Where the time of one round trip went, in milliseconds. The steps that run on the GPU (the
/// copies, the kernel) are timed with CUDA events; cudaMalloc and cudaFree, which block the host,
/// with the host clock.
struct Phases {
  double allocate_ms = 0;   ///< cudaMalloc of x, y and the result
  double copy_x_ms = 0;     ///< x, host to device
  double copy_y_ms = 0;     ///< y, host to device
  double kernel_ms = 0;     ///< the version's launch, until the GPU has finished it
  double copy_back_ms = 0;  ///< the result, device to host
  double free_ms = 0;       ///< cudaFree of all three
  double total_ms = 0;      ///< the whole call, host clock: what the caller waits
};

/// One dot product the way a first CUDA program does it: allocate device memory, copy x and y
/// to it, launch `version`, copy the result back, free everything, all on the legacy default
/// stream, on ctx's device. Returns x·y. Fills `phases` (when not null) with the time of each step.
float round_trip(Launcher version, course::Context& ctx, const float* h_x, const float* h_y, std::size_t n,
                 Phases* phases = nullptr);

/// Splitting the work among threads the CPU's way (chapter 02): T threads, each one contiguous
/// chunk of [0, n). Thread t takes [chunk_begin(t, T, n), chunk_begin(t + 1, T, n)); the chunks'
/// sizes differ by at most one, and the first n % T chunks are the longer ones. t may equal T
/// (the end, n). Throws course::UsageError when threads is 0 or t > threads.
std::size_t chunk_begin(std::size_t t, std::size_t threads, std::size_t n);

/// Exercise 3 (think): the thread whose chunk holds element i (i < n), in constant time (no loop
/// over threads, no search). Throws course::UsageError when threads is 0 or i >= n.
std::size_t chunk_owner(std::size_t i, std::size_t threads, std::size_t n);

}  // namespace ch03
