#pragma once
// Chapter 07 — the typed entry points of libdotcourse.so (chapter 10's pairs): declarations shared
// by c_api.cpp (the one hook below) and typed.cu (everything else).

#include <functional>

#include "dotcourse.h"
#include "dot.hpp"

namespace ch07 {

/// Runs `body` on the engine of a live context, under its lock, on its device, with every exception
/// mapped to a status and a message exactly as the other C API functions do (defined in c_api.cpp,
/// where the handle table lives).
dotcourse_status with_engine(const char* function, dotcourse_context* ctx, const std::function<void(Engine&)>& body) noexcept;

/// Runs `body` with the C API's exception mapping, for functions that take no context.
dotcourse_status guarded_call(const char* function, const std::function<void()>& body) noexcept;

}  // namespace ch07
