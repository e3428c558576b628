#include "course/device.hpp"

#include <unistd.h>

#include <algorithm>
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

std::size_t free_device_bytes() {
  require_gpu();
  std::size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
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
