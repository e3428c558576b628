#pragma once
/// \file pinned.hpp
/// \brief is_pinned / require_pinned: page-locked host memory, checked before it is relied on.
///
/// cudaMemcpyAsync from pageable memory does not fail: it quietly becomes a synchronous copy, and
/// every overlap a program was built for disappears. A pinned buffer that was freed (or a
/// registration that was released) is pageable again. Checking the pointer turns both into a
/// clear error at the call that relies on it.

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "course/check.hpp"

namespace course {

/// True when `ptr` lies in page-locked host memory the GPU can reach (cudaMallocHost,
/// cudaHostAlloc, or a range registered with cudaHostRegister). Never throws.
inline bool is_pinned(const void* ptr) {
  if (ptr == nullptr) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();  // not sticky; do not leave it for the next check to find
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

/// Throws UsageError, naming `what`, unless `ptr` is pinned (see is_pinned).
inline void require_pinned(const void* ptr, const std::string& what) {
  if (!is_pinned(ptr))
    throw UsageError(what + ": the host memory is not page-locked (pinned). An asynchronous copy from it would "
                            "silently be a synchronous one. Was its PinnedBuffer destroyed or moved from, or its "
                            "registration released?");
}

/// Bytes per page of host memory, asked of the system once (4 KiB on most x86 Linux hosts, but
/// 16 or 64 KiB on some ARM ones, Grace included): page locking and page ownership follow it.
inline std::size_t host_page_bytes() {
  static const std::size_t bytes = [] {
#if defined(__unix__) || defined(__APPLE__)
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) return static_cast<std::size_t>(page);
#endif
    return std::size_t{4096};
  }();
  return bytes;
}

}  // namespace course
