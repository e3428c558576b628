#pragma once
/// \file cublas_check.hpp
/// \brief CUBLAS_CHECK: cuBLAS calls are checked like CUDA calls; CublasOn: a context's cuBLAS
/// handle on a given stream (link CUDA::cublas to use them; course_common does).

#include <cublas_v2.h>

#include <sstream>

#include "course/check.hpp"
#include "course/context.hpp"

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

namespace course {

/// The context's cuBLAS handle (made on first use, pointer mode device), on `stream` for as long
/// as this object lives. The handle is bound to the context's stream; a call on another stream
/// (chapter 03's round trip uses the legacy default one) binds it to that stream here and back to
/// the context's on destruction. Use a handle from one stream at a time: its workspace is shared.
class CublasOn {
 public:
  CublasOn(Context& ctx, cudaStream_t stream)
      : ctx_(ctx), handle_(ctx.cublas()), rebound_(stream != ctx.stream()) {
    if (rebound_) CUBLAS_CHECK(cublasSetStream(handle_, stream));
  }
  ~CublasOn() {
    if (rebound_) cublasSetStream(handle_, ctx_.stream());  // a destructor must not throw
  }
  CublasOn(const CublasOn&) = delete;
  CublasOn& operator=(const CublasOn&) = delete;
  cublasHandle_t get() const noexcept { return handle_; }

 private:
  Context& ctx_;
  cublasHandle_t handle_;
  bool rebound_;
};

}  // namespace course
