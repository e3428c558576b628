// libdotcourse — the C ABI (dotcourse/dotcourse.h) over chapter 07's engine (engine.hpp, the seam).
// Chapter 07 teaches it; no exercise is in it, so it lives once, here in the library.
//
// A boundary: every function catches every exception and turns it into a status code and a
// message (no C++ exception may unwind through a C, Python or Go caller), checks what C can
// check (null pointers, sizes, live handles), and locks the context around its work. A call holds
// the context it works on (live_handles), so destroying it from another thread is safe.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "course/check.hpp"
#include "dotcourse/dotcourse.h"
#include "engine.hpp"
#include "host_auto.hpp"
#include "typed.hpp"

// A GPU context: an Engine, and the CPU side (library/src/host_auto.hpp) for dotcourse_dot_ex. A
// CPU-only context (dotcourse_create_cpu): no Engine, and its own lock for the CPU dot's pool.
struct dotcourse_context {
  std::unique_ptr<ch07::Engine> engine;
  ch07::HostAuto host;
  std::mutex cpu_lock;
  dotcourse_context(int device, std::size_t n_max) : engine(std::make_unique<ch07::Engine>(device, n_max)) {
    host.set_device(ch07::device_name(engine->gpu().device()));
  }
  explicit dotcourse_context(unsigned threads) : host(threads) {}
  // Every call that uses the pool or the engine holds this (one call at a time on a context).
  std::mutex& lock() { return engine ? engine->lock : cpu_lock; }
};

namespace {

thread_local std::string t_last_error;

// [live_handles]
// Every live handle, with the one owner the library keeps of it (ch07::Handles, the chapter's dot.hpp), so that
// a destroyed (or never created) handle is refused instead of used. A call takes a copy of the owner
// (acquire), so a destroy on another thread only removes the table's copy: the context dies when
// the last call that holds it returns, never under a call. A process-wide table is right here:
// handles are process-wide, not per device.
using Owner = std::shared_ptr<dotcourse_context>;
ch07::Handles<dotcourse_context>& live() {
  static ch07::Handles<dotcourse_context> table;
  return table;
}
Owner acquire(const dotcourse_context* ctx) { return live().acquire(ctx); }
// [live_handles]

dotcourse_status fail(dotcourse_status status, const std::string& message) {
  t_last_error = message;
  return status;
}

// [guarded]
// Runs `body`; maps every exception to a status and keeps its message for dotcourse_last_error.
template <class Body>
dotcourse_status guarded(const char* function, Body&& body) noexcept {
  try {
    t_last_error.clear();
    body();
    return DOTCOURSE_OK;
  } catch (const ch07::TooLargeError& e) {
    return fail(DOTCOURSE_ERROR_TOO_LARGE, std::string(function) + ": " + e.what());
  } catch (const course::UsageError& e) {
    return fail(DOTCOURSE_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + e.what());
  } catch (const course::NoGpuError& e) {
    return fail(DOTCOURSE_ERROR_NO_GPU, std::string(function) + ": " + e.what());
  } catch (const course::DoesNotFitError& e) {
    return fail(DOTCOURSE_ERROR_OUT_OF_MEMORY, std::string(function) + ": " + e.what());
  } catch (const course::CudaError& e) {
    cudaGetLastError();  // a failed allocation is not sticky: do not let it fail the next launch check
    const cudaError_t code = e.code();
    if (code == cudaErrorMemoryAllocation)
      return fail(DOTCOURSE_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of memory: " + e.what());
    if (code == cudaErrorNoDevice || code == cudaErrorInsufficientDriver)
      return fail(DOTCOURSE_ERROR_NO_GPU, std::string(function) + ": " + e.what());
    return fail(DOTCOURSE_ERROR_CUDA, std::string(function) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return fail(DOTCOURSE_ERROR_OUT_OF_MEMORY, std::string(function) + ": host memory exhausted");
  } catch (const std::exception& e) {
    return fail(DOTCOURSE_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(DOTCOURSE_ERROR_INTERNAL, std::string(function) + ": unknown exception");
  }
}
// [guarded]

void need(const void* p, const char* function, const char* what) {
  if (p == nullptr) throw course::UsageError(std::string(what) + " is NULL");
  (void)function;
}

// Runs body(context) on a live context, which the call holds until it returns (see live_handles).
// A handle that is NULL or not live is INVALID_HANDLE; everything else maps as guarded does.
template <class Body>
dotcourse_status with_handle(const char* function, const dotcourse_context* ctx, Body&& body) noexcept {
  Owner held;
  try {
    held = acquire(ctx);
  } catch (...) {  // std::system_error from the mutex: nothing else can throw here
    return fail(DOTCOURSE_ERROR_INTERNAL, std::string(function) + ": could not lock the handle table");
  }
  if (!held)
    return fail(DOTCOURSE_ERROR_INVALID_HANDLE,
                std::string(function) + (ctx == nullptr ? ": context is NULL"
                                                        : ": not a live context (destroyed, or never created)"));
  return guarded(function, [&] { body(*held); });
}

// with_handle for the functions that need the GPU: body(engine); a CPU-only context is NO_GPU.
template <class Body>
dotcourse_status with_context(const char* function, const dotcourse_context* ctx, Body&& body) noexcept {
  return with_handle(function, ctx, [&](dotcourse_context& c) {
    if (!c.engine) throw course::NoGpuError("this context has no GPU (it was made by dotcourse_create_cpu)");
    body(*c.engine);
  });
}

// The `where` of an options struct: only the fields the caller's size covers are read.
dotcourse_where where_of(const dotcourse_options* opts) {
  if (opts == nullptr) return DOTCOURSE_WHERE_AUTO;
  if (opts->size == 0) throw course::UsageError("opts->size is 0: set it to sizeof(dotcourse_options)");
  const std::size_t covers_where = offsetof(dotcourse_options, where) + sizeof(opts->where);
  return opts->size >= covers_where ? opts->where : DOTCOURSE_WHERE_AUTO;
}

}  // namespace

// The typed entry points (library/src/typed.cu) share this file's handle table and error mapping.
dotcourse_status ch07::with_engine(const char* function, dotcourse_context* ctx,
                                   const std::function<void(Engine&)>& body) noexcept {
  return with_context(function, ctx, [&](ch07::Engine& e) {
    std::lock_guard<std::mutex> guard(e.lock);
    e.gpu().activate();
    body(e);
  });
}
dotcourse_status ch07::with_host(const char* function, dotcourse_context* ctx,
                                 const std::function<void(HostAuto&, Engine*)>& body) noexcept {
  return with_handle(function, ctx, [&](dotcourse_context& c) {
    std::lock_guard<std::mutex> guard(c.lock());
    if (c.engine) c.engine->gpu().activate();
    body(c.host, c.engine.get());
  });
}
dotcourse_status ch07::guarded_call(const char* function, const std::function<void()>& body) noexcept {
  return guarded(function, body);
}

extern "C" {

// The one version (library/packaging/version.cmake), passed in by the build.
#ifndef DOTCOURSE_VERSION_STRING
#error "DOTCOURSE_VERSION_STRING is not defined: build libdotcourse with its CMake (library/packaging/)"
#endif
DOTCOURSE_API const char* dotcourse_version(void) { return DOTCOURSE_VERSION_STRING; }

DOTCOURSE_API const char* dotcourse_status_string(dotcourse_status status) {
  switch (status) {
    case DOTCOURSE_OK: return "success";
    case DOTCOURSE_ERROR_INVALID_ARGUMENT: return "invalid argument (a NULL pointer or a value out of range)";
    case DOTCOURSE_ERROR_TOO_LARGE: return "n is larger than the context's n_max";
    case DOTCOURSE_ERROR_INVALID_HANDLE: return "invalid context handle (NULL, never created, or destroyed)";
    case DOTCOURSE_ERROR_NO_GPU: return "no usable CUDA GPU";
    case DOTCOURSE_ERROR_OUT_OF_MEMORY: return "out of memory";
    case DOTCOURSE_ERROR_CUDA: return "CUDA error";
    case DOTCOURSE_ERROR_INTERNAL: return "internal error in dotcourse (please report it)";
  }
  return "unknown status code";
}

DOTCOURSE_API const char* dotcourse_last_error(void) { return t_last_error.c_str(); }

DOTCOURSE_API dotcourse_status dotcourse_create(int device, size_t n_max, dotcourse_context** out) {
  if (out == nullptr) return fail(DOTCOURSE_ERROR_INVALID_ARGUMENT, "dotcourse_create: out is NULL");
  *out = nullptr;
  return guarded("dotcourse_create", [&] {
    auto ctx = std::make_shared<dotcourse_context>(device, n_max);
    dotcourse_context* handle = ctx.get();
    live().add(std::move(ctx));
    *out = handle;
  });
}

// [destroy]
DOTCOURSE_API dotcourse_status dotcourse_destroy(dotcourse_context* ctx) {
  if (ctx == nullptr) {
    t_last_error.clear();
    return DOTCOURSE_OK;
  }
  // The table hands over its reference (exercise 1b: Handles::retire in the chapter's dot.hpp).
  Owner doomed;
  try {
    doomed = live().retire(ctx);
  } catch (...) {  // std::system_error from the mutex: nothing else can throw here
    return fail(DOTCOURSE_ERROR_INTERNAL, "dotcourse_destroy: could not lock the handle table");
  }
  if (!doomed)
    return fail(DOTCOURSE_ERROR_INVALID_HANDLE, "dotcourse_destroy: not a live context (destroyed twice?)");
  // The last owner frees the engine (arena, pinned memory, threads, stream): `doomed` here, or a call
  // still running on another thread, which holds its own copy until it returns.
  return guarded("dotcourse_destroy", [&] { doomed.reset(); });
}
// [destroy]

DOTCOURSE_API dotcourse_status dotcourse_n_max(const dotcourse_context* ctx, size_t* n_max) {
  return with_handle("dotcourse_n_max", ctx, [&](dotcourse_context& c) {
    need(n_max, "dotcourse_n_max", "n_max");
    *n_max = c.engine ? c.engine->n_max() : SIZE_MAX;  // a CPU-only context has no limit
  });
}

// [c_dot]
DOTCOURSE_API dotcourse_status dotcourse_dot(dotcourse_context* ctx, const float* x, const float* y, size_t n,
                                             float* result) {
  return with_handle("dotcourse_dot", ctx, [&](dotcourse_context& c) {
    need(result, "dotcourse_dot", "result");
    if (n > 0) {
      need(x, "dotcourse_dot", "x");
      need(y, "dotcourse_dot", "y");
    }
    std::lock_guard<std::mutex> guard(c.lock());  // one call at a time on this context
    if (!c.engine) {                               // a CPU-only context: the CPU
      *result = c.host.dot(nullptr, x, y, n, DOTCOURSE_WHERE_CPU, nullptr);
      return;
    }
    ch07::Engine& e = *c.engine;
    e.gpu().activate();  // this thread may have used another device
    *result = ch07::dot_host(e, x, y, n);
  });
}
// [c_dot]

// [c_register]
DOTCOURSE_API dotcourse_status dotcourse_host_register(dotcourse_context* ctx, const void* p, size_t bytes) {
  return with_context("dotcourse_host_register", ctx, [&](ch07::Engine& e) {
    need(p, "dotcourse_host_register", "p");
    std::lock_guard<std::mutex> guard(e.lock);
    e.register_host(p, bytes);
  });
}

DOTCOURSE_API dotcourse_status dotcourse_host_unregister(dotcourse_context* ctx, const void* p) {
  return with_context("dotcourse_host_unregister", ctx, [&](ch07::Engine& e) {
    need(p, "dotcourse_host_unregister", "p");
    std::lock_guard<std::mutex> guard(e.lock);  // no copy from p is in flight after this
    e.unregister_host(p);
  });
}
// [c_register]

DOTCOURSE_API dotcourse_status dotcourse_dot_device(dotcourse_context* ctx, const float* d_x, const float* d_y,
                                                    size_t n, void* stream, float* result) {
  return with_context("dotcourse_dot_device", ctx, [&](ch07::Engine& e) {
    need(result, "dotcourse_dot_device", "result");
    if (n > 0) {
      need(d_x, "dotcourse_dot_device", "d_x");
      need(d_y, "dotcourse_dot_device", "d_y");
    }
    std::lock_guard<std::mutex> guard(e.lock);
    *result = ch07::dot_device(e, d_x, d_y, n, static_cast<cudaStream_t>(stream));
  });
}

// [c_dot_ex]
DOTCOURSE_API dotcourse_status dotcourse_create_cpu(unsigned threads, dotcourse_context** out) {
  if (out == nullptr) return fail(DOTCOURSE_ERROR_INVALID_ARGUMENT, "dotcourse_create_cpu: out is NULL");
  *out = nullptr;
  return guarded("dotcourse_create_cpu", [&] {
    if (threads > 1024) throw course::UsageError("threads = " + std::to_string(threads) + ": at most 1024");
    auto ctx = std::make_shared<dotcourse_context>(threads);
    dotcourse_context* handle = ctx.get();
    live().add(std::move(ctx));
    *out = handle;
  });
}

DOTCOURSE_API dotcourse_status dotcourse_dot_ex(dotcourse_context* ctx, const float* x, const float* y, size_t n,
                                                const dotcourse_options* opts, float* result,
                                                dotcourse_report* report) {
  return with_handle("dotcourse_dot_ex", ctx, [&](dotcourse_context& c) {
    need(result, "dotcourse_dot_ex", "result");
    if (n > 0) {
      need(x, "dotcourse_dot_ex", "x");
      need(y, "dotcourse_dot_ex", "y");
    }
    const dotcourse_where where = where_of(opts);
    if (report != nullptr && report->size == 0)
      throw course::UsageError("report->size is 0: set it to sizeof(dotcourse_report)");
    std::lock_guard<std::mutex> guard(c.lock());
    *result = c.host.dot(c.engine.get(), x, y, n, where, report);  // makes the device current if it uses it
  });
}
// [c_dot_ex]

DOTCOURSE_API dotcourse_status dotcourse_plan_choose(const dotcourse_plan* plan, size_t n, int registered,
                                                     dotcourse_path* path, size_t* n_gpu) {
  return guarded("dotcourse_plan_choose", [&] {
    need(plan, "dotcourse_plan_choose", "plan");
    need(path, "dotcourse_plan_choose", "path");
    need(n_gpu, "dotcourse_plan_choose", "n_gpu");
    if (plan->size != sizeof(dotcourse_plan))
      throw course::UsageError("plan->size is " + std::to_string(plan->size) + ", not sizeof(dotcourse_plan) = " +
                               std::to_string(sizeof(dotcourse_plan)));
    ch07::check_plan(*plan);
    const ch07::Choice c = ch07::choose(*plan, n, registered != 0);
    *path = c.path;
    *n_gpu = c.n_gpu;
  });
}

DOTCOURSE_API dotcourse_status dotcourse_get_plan(const dotcourse_context* ctx, dotcourse_plan* plan) {
  return with_handle("dotcourse_get_plan", ctx, [&](dotcourse_context& c) {
    need(plan, "dotcourse_get_plan", "plan");
    if (plan->size != sizeof(dotcourse_plan))
      throw course::UsageError("plan->size is " + std::to_string(plan->size) + ", not sizeof(dotcourse_plan) = " +
                               std::to_string(sizeof(dotcourse_plan)));
    std::lock_guard<std::mutex> guard(c.lock());
    *plan = c.host.plan();
  });
}

DOTCOURSE_API dotcourse_status dotcourse_set_plan(dotcourse_context* ctx, const dotcourse_plan* plan) {
  return with_handle("dotcourse_set_plan", ctx, [&](dotcourse_context& c) {
    need(plan, "dotcourse_set_plan", "plan");
    if (plan->size != sizeof(dotcourse_plan))
      throw course::UsageError("plan->size is " + std::to_string(plan->size) + ", not sizeof(dotcourse_plan) = " +
                               std::to_string(sizeof(dotcourse_plan)));
    std::lock_guard<std::mutex> guard(c.lock());
    c.host.set_plan(*plan);
  });
}

DOTCOURSE_API dotcourse_status dotcourse_calibrate(dotcourse_context* ctx, size_t n_limit, dotcourse_plan* plan) {
  return with_handle("dotcourse_calibrate", ctx, [&](dotcourse_context& c) {
    if (plan != nullptr && plan->size != sizeof(dotcourse_plan))
      throw course::UsageError("plan->size is " + std::to_string(plan->size) + ", not sizeof(dotcourse_plan) = " +
                               std::to_string(sizeof(dotcourse_plan)));
    if (!c.engine) throw course::NoGpuError("this context has no GPU (it was made by dotcourse_create_cpu)");
    ch07::Engine& e = *c.engine;
    std::lock_guard<std::mutex> guard(e.lock);
    e.gpu().activate();
    const dotcourse_plan& measured = c.host.calibrate(e, n_limit);
    if (plan != nullptr) *plan = measured;
  });
}

}  // extern "C"
