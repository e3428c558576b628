#include "course/check.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace course {

void check_cuda(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  std::ostringstream msg;
  msg << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
      << cudaGetErrorString(code) << ")";
  throw CudaError(code, msg.str());
}

void check_launch(const char* what, const char* file, int line) {
  check_cuda(cudaGetLastError(), what, file, line);
  static const bool sync = [] {
    const char* env = std::getenv("COURSE_SYNC_LAUNCH");
    return env != nullptr && std::strcmp(env, "0") != 0;
  }();
  if (sync) check_cuda(cudaDeviceSynchronize(), what, file, line);
}

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int u = 0;
  while (value >= 1024.0 && u < 4) {
    value /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", value, units[u]);
  return buf;
}

}  // namespace course
