#pragma once
/// \file cublas_check.hpp
/// \brief CUBLAS_CHECK: cuBLAS calls are checked like CUDA calls (link CUDA::cublas to use it).

#include <cublas_v2.h>

#include <sstream>

#include "course/check.hpp"

namespace course {

/// Throws CudaError (with cudaErrorUnknown as its code) when a cuBLAS call fails, naming the call,
/// file, line and cuBLAS status.
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::ostringstream msg;
  msg << file << ":" << line << ": " << call << " failed: " << cublasGetStatusName(status) << " ("
      << cublasGetStatusString(status) << ")";
  throw CudaError(cudaErrorUnknown, msg.str());
}

}  // namespace course

/// Checks a cuBLAS call: `CUBLAS_CHECK(cublasSdot(handle, n, x, 1, y, 1, result));`
#define CUBLAS_CHECK(call) ::course::check_cublas((call), #call, __FILE__, __LINE__)
