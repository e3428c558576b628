#pragma once
/// \file cpu_dot.hpp
/// \brief course::cpu_dot: the threaded CPU dot of chapter 02 (threads_partials), the kit's one copy.
///
/// Chapter 02 teaches it as an exercise (its own copy, with holes); from chapter 07 on, a program
/// that wants the CPU's answer for host data uses this one. Two changes from the lesson: the
/// threads are a course::ThreadPool started once (starting 16 threads per call costs more than a
/// dot of 2^16 floats), and each thread accumulates in double (the products of two floats are exact
/// in double), in 16 independent lanes so that the compiler vectorizes without -ffast-math. The
/// serial loop is compiled for several x86-64 levels (SSE2, AVX2, AVX-512) and the CPU's best is
/// chosen once, as NumPy does; every level gives the same bits. The threads' partials are added in
/// part order: the same inputs and the same pool size give the same bits on every call.

#include <cstddef>
#include <functional>
#include <vector>

#include "course/thread_pool.hpp"

namespace course {

/// The fewest elements a part of cpu_dot takes: waking a thread for fewer costs more than it saves
/// (one thread sums 2^16 floats from its caches in under 10 us; waking a parked thread can cost more).
/// So n elements run in min(pool parts, n / kCpuDotMinPerPart) parts, at least one: one thread below
/// 2^17, every part from parts x 2^16. The count depends on n and the pool's parts only, never on
/// the host: the same n and parts give the same bits everywhere.
constexpr std::size_t kCpuDotMinPerPart = std::size_t{1} << 16;

/// How many parts cpu_dot splits n elements into on a pool of `pool_parts` parts (min_per_part 0:
/// all of them).
constexpr unsigned cpu_dot_parts(std::size_t n, unsigned pool_parts,
                                 std::size_t min_per_part = kCpuDotMinPerPart) noexcept {
  if (pool_parts <= 1) return 1;
  if (min_per_part == 0) return pool_parts;
  const std::size_t by_size = n / min_per_part;
  return by_size <= 1 ? 1u : by_size < pool_parts ? static_cast<unsigned>(by_size) : pool_parts;
}

/// x·y over [0, n) on one thread, in double: 16 lanes, combined pairwise, then the tail; compiled
/// for the CPU level cpu_dot_level().
double cpu_dot_serial(const float* x, const float* y, std::size_t n) noexcept;

/// The instruction-set levels the serial dot is compiled for (x86-64 with GCC; elsewhere only
/// baseline, the build's own flags).
enum class CpuLevel { baseline, avx2, avx512 };
/// The levels this CPU and OS run, lowest first; baseline always.
std::vector<CpuLevel> cpu_dot_levels();
/// The level cpu_dot_serial uses: the last of cpu_dot_levels().
CpuLevel cpu_dot_level() noexcept;
const char* cpu_level_name(CpuLevel level) noexcept;
/// cpu_dot_serial compiled for `level`, which must be one of cpu_dot_levels() (the tests compare
/// the levels' bits).
double cpu_dot_serial_at(CpuLevel level, const float* x, const float* y, std::size_t n) noexcept;

/// Chunks per part of a threaded cpu_dot: the parts take chunks as they finish the last one, so
/// that a thread the host slows down holds up no one (the others take its chunks).
constexpr unsigned kCpuDotChunksPerPart = 4;
/// The fewest elements of a chunk (64 KiB of each vector): below it, fewer chunks.
constexpr std::size_t kCpuDotMinPerChunk = std::size_t{1} << 14;

/// How many chunks a threaded cpu_dot of n elements on `parts` parts sums: kCpuDotChunksPerPart
/// per part, fewer where a chunk would be under kCpuDotMinPerChunk, at least one per part. A
/// function of n and parts only: their bounds, and so the bits, are the same on every host.
constexpr unsigned cpu_dot_chunks(std::size_t n, unsigned parts) noexcept {
  const std::size_t most = static_cast<std::size_t>(parts) * kCpuDotChunksPerPart;
  const std::size_t by_size = n / kCpuDotMinPerChunk;
  const std::size_t c = by_size < most ? by_size : most;
  return static_cast<unsigned>(c < parts ? parts : c);
}

/// x·y over [0, n) on cpu_dot_parts(n, pool.size(), min_per_part) parts of the pool, in
/// cpu_dot_chunks() contiguous chunks that the parts take in turn, added in chunk order; one part
/// runs on the calling thread alone.
double cpu_dot(ThreadPool& pool, const float* x, const float* y, std::size_t n,
               std::size_t min_per_part = kCpuDotMinPerPart);

/// x·y over [0, n) on the pool's threads but the caller's, while the calling thread runs
/// `alongside()` (chapter 07 copies the other part of a vector to the GPU there). A pool of one
/// thread computes after alongside() returns. Rethrows what alongside() or a part threw.
double cpu_dot_alongside(ThreadPool& pool, const float* x, const float* y, std::size_t n,
                         const std::function<void()>& alongside);

}  // namespace course
