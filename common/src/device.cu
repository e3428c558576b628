#include "course/device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <cstdio>
#include <vector>

#include "course/buffer.hpp"
#include "course/check.hpp"
#include "course/context.hpp"
#include "course/stats.hpp"
#include "course/timer.hpp"

namespace course {

namespace {

struct Probe {
  bool ok = false;
  std::string reason;
};

// Asks the driver for its devices without opening a context on any of them: a process that will
// run on device 3 (an MPI rank, --device 3) must not hold memory on device 0, and an exclusive-
// process device 0 that another process holds must not read as "no GPU". cudaGetDeviceCount
// initialises the driver (a broken or missing driver fails here) and creates no context; the
// device's own context is made later, by the Context that selects it.
Probe probe() {
  Probe p;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    p.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ", " + cudaGetErrorString(err);
    cudaGetLastError();  // clear the error so later calls start clean
  } else if (count == 0) {
    p.reason = "cudaGetDeviceCount found no CUDA device";
  } else {
    p.ok = true;
  }
  return p;
}

}  // namespace

bool gpu_available(std::string* why) {
  static const Probe p = probe();  // initialised once, thread-safe (two threads may enter first)
  if (why != nullptr) *why = p.reason;
  return p.ok;
}

std::string no_gpu_message(const std::string& cuda_error) {
  // One plain sentence: "CUDA driver version is insufficient" alone sends people to update a
  // driver on a machine that has no GPU at all. The CUDA error follows, for those who need it.
  return "no NVIDIA GPU or driver found (" + cuda_error + ")";
}

void require_gpu() {
  std::string why;
  if (!gpu_available(&why)) throw NoGpuError(no_gpu_message(why));
}

std::string describe_device(const DeviceFacts& f) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %d SMs, %s L2, %s, peak %.0f GB/s", f.name.c_str(), f.cc_major,
                f.cc_minor, f.sm_count, format_bytes(f.l2_bytes).c_str(), format_bytes(f.global_bytes).c_str(),
                f.peak_gbps);
  return buf;
}

std::size_t parse_byte_size(const std::string& text, const std::string& what) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string suffix = text.substr(digits);
  static const struct { const char* name; int shift; } units[] = {
      {"", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"Ki", 10}, {"Mi", 20}, {"Gi", 30}};
  int shift = -1;
  for (const auto& u : units)
    if (suffix == u.name) shift = u.shift;
  // 19 digits always fit in 64 bits; the shift is checked against the value below.
  if (digits == 0 || digits > 19 || shift < 0)
    throw UsageError(what + " = '" + text + "': expected a number of bytes, optionally with K, M, G, Ki, Mi or Gi (e.g. 15Gi)");
  const unsigned long long value = std::stoull(text.substr(0, digits));
  if (value > (~0ULL >> shift)) throw UsageError(what + " = '" + text + "': too large");
  return static_cast<std::size_t>(value << shift);
}

std::size_t device_memory_limit() {
  const char* text = std::getenv("COURSE_DEVICE_MEMORY_LIMIT");
  if (text == nullptr || *text == '\0') return 0;
  return parse_byte_size(text, "COURSE_DEVICE_MEMORY_LIMIT");
}

std::size_t limited_free_bytes(std::size_t free_bytes, std::size_t total, std::size_t limit) {
  if (limit == 0) return free_bytes;
  const std::size_t used = total > free_bytes ? total - free_bytes : 0;
  return std::min(free_bytes, limit > used ? limit - used : 0);
}

std::size_t free_device_bytes() {
  require_gpu();
  const std::size_t limit = device_memory_limit();  // before the device: a bad value is a usage error
  std::size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return limited_free_bytes(free_bytes, total, limit);
}

void require_fits(std::size_t bytes, const std::string& what) {
  const std::size_t reserve = std::size_t{256} << 20;  // the context, libraries' workspaces
  const std::size_t free_bytes = free_device_bytes();
  if (free_bytes < reserve || bytes > free_bytes - reserve)
    throw DoesNotFitError(what + " needs " + format_bytes(bytes) + " of device memory, but the card has only " +
                          format_bytes(free_bytes) + " free (" + format_bytes(reserve) +
                          " kept in reserve); choose a smaller --n");
}

void require_host_fits(std::size_t bytes, const std::string& what) {
  // Physical memory, not free memory: Linux counts the page cache as used, and overcommits; a run
  // larger than the whole machine is the one that must be refused before it starts.
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;  // unknown: let the allocation decide
  const std::size_t total = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
  if (bytes > total)
    throw DoesNotFitError(what + " needs " + format_bytes(bytes) + " of host memory, but this machine has " +
                          format_bytes(total) + " in all; choose a smaller --n");
}

}  // namespace course
