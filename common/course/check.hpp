#pragma once
/// \file check.hpp
/// \brief CUDA_CHECK and CUDA_CHECK_LAUNCH: every CUDA call and every launch is checked.
///
/// (Not plain CHECK: that name belongs to Catch2, and the tests include both.)
///
/// A failed check throws course::CudaError carrying the call as text, file, line, error name and
/// message. Library code never exits: a test can assert on the exception, and only main() (through
/// course::App) decides the exit code.

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace course {

/// Exit codes shared by every executable of the course.
enum ExitCode : int {
  kExitOk = 0,          ///< ran and validated
  kExitFailure = 1,     ///< a CUDA error or a result that failed validation
  kExitUsage = 2,       ///< bad command line or bad input
  kExitNoGpu = 3,       ///< no CUDA-capable GPU present
  kExitDoesNotFit = 4,  ///< the requested size does not fit in the card's free memory
};

/// A failing CUDA runtime call.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  /// The CUDA error code that was returned.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Bad input: a size, an alignment, a name that is not in a registry.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// No CUDA-capable device could be used.
class NoGpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The requested buffers do not fit in the device's free memory.
class DoesNotFitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws CudaError when `code` is not cudaSuccess (what CUDA_CHECK calls). A function, so a debugger can step into it.
void check_cuda(cudaError_t code, const char* call, const char* file, int line);

/// Checks the launch that just happened (cudaGetLastError). With the environment variable
/// COURSE_SYNC_LAUNCH=1 it also synchronizes, so an error inside the kernel is reported here and
/// not at some later, unrelated call.
void check_launch(const char* what, const char* file, int line);

/// Formats a byte count for people: "1.50 GiB".
std::string format_bytes(std::size_t bytes);

}  // namespace course

/// Checks a CUDA runtime call: `CUDA_CHECK(cudaMalloc(&p, bytes));`
#define CUDA_CHECK(call) ::course::check_cuda((call), #call, __FILE__, __LINE__)
/// Checks the kernel launch just before it: `dot_kernel1<<<g, b>>>(...); CUDA_CHECK_LAUNCH("dot_kernel1");`
#define CUDA_CHECK_LAUNCH(what) ::course::check_launch((what), __FILE__, __LINE__)
