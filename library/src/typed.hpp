#pragma once
// Chapter 07 — the typed entry points of libdotcourse.so (chapter 10's pairs): declarations shared
// by c_api.cpp (the one hook below) and typed.cu (everything else).

#include <cstddef>
#include <functional>

#include "course/thread_pool.hpp"
#include "dotcourse/dotcourse.h"
#include "engine.hpp"
#include "host_auto.hpp"

namespace ch07 {

/// Runs `body` on the engine of a live context, under its lock, on its device, with every exception
/// mapped to a status and a message exactly as the other C API functions do (defined in c_api.cpp,
/// where the handle table lives).
dotcourse_status with_engine(const char* function, dotcourse_context* ctx, const std::function<void(Engine&)>& body) noexcept;

/// Runs `body(host, engine)` on a live context, under its lock, with the same mapping: `engine` is
/// null on a context without a GPU (dotcourse_create_cpu), else it is active on this thread (defined
/// in c_api.cpp). dotcourse_dot_typed_host takes the CPU through it on a CPU-only context.
dotcourse_status with_host(const char* function, dotcourse_context* ctx,
                           const std::function<void(HostAuto&, Engine*)>& body) noexcept;

/// x·y of two host arrays of any two input dtypes on `pool`'s threads (library/src/typed_cpu.cpp):
/// the accumulator's value as dotcourse_dot_typed gives it, deterministic for one pool size. No CUDA.
double cpu_dot_typed(course::ThreadPool& pool, const void* x, dotcourse_dtype x_dtype, const void* y,
                     dotcourse_dtype y_dtype, std::size_t n);

/// Runs `body` with the C API's exception mapping, for functions that take no context.
dotcourse_status guarded_call(const char* function, const std::function<void()>& body) noexcept;

}  // namespace ch07
