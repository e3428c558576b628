#pragma once
/// \file device.hpp
/// \brief Facts about the GPU, and its measured bandwidth roofline.
///
/// The datasheet bandwidth is a promise; the roofline is what a kernel can actually reach. Every
/// table of the course reports bandwidth as a percentage of the measured read roofline, so that
/// numbers from different cards compare.

#include <cstddef>
#include <string>

namespace course {

/// What the course needs to know about the current device.
struct DeviceFacts {
  int id = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  std::size_t shared_per_block = 0;  ///< bytes of static shared memory a block may use
  std::size_t l2_bytes = 0;
  std::size_t global_bytes = 0;
  int memory_clock_khz = 0;
  int bus_width_bits = 0;
  double peak_gbps = 0;  ///< 2 × memory clock × bus width / 8 (GB/s, 1e9 bytes)
};

/// The bandwidth a simple, well-built kernel reaches on this card (GB/s, 1e9 bytes per second).
struct Roofline {
  double read_gbps = 0;  ///< a read-only streaming kernel: the ceiling of a dot product
  double copy_gbps = 0;  ///< device-to-device copy, bytes read plus bytes written
  std::size_t bytes = 0; ///< size of the buffer the read was measured on
};

/// True when the driver reports a CUDA device. Opens no context (so it costs no device memory and
/// touches no device but the one a program later selects); thread-safe. Never throws; on false,
/// `why` (if given) says why.
bool gpu_available(std::string* why = nullptr);

/// The one sentence every program says without a GPU: "no NVIDIA GPU or driver found (CUDA error)".
std::string no_gpu_message(const std::string& cuda_error);

/// Throws NoGpuError with no_gpu_message(reason) when no CUDA device can be used.
void require_gpu();

/// One line: "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 50 MiB L2, 79.2 GiB, peak 3352 GB/s".
std::string describe_device(const DeviceFacts& facts);

/// Free memory of the current device in bytes (cudaMemGetInfo). A course::Context makes its
/// device current when it is made (and on activate()). With COURSE_DEVICE_MEMORY_LIMIT set, the
/// card reads as one of that many bytes: see device_memory_limit().
std::size_t free_device_bytes();

/// COURSE_DEVICE_MEMORY_LIMIT, in bytes (a whole number, or with a suffix K, M, G, Ki, Mi, Gi:
/// "15Gi" is a T4's 15 GiB); 0 when unset or empty. It makes a large card behave as a small one,
/// so that a test or driver's "does not fit" path runs where students meet it. Throws UsageError
/// on a value that is not a size.
std::size_t device_memory_limit();

/// Parses a size as device_memory_limit() reads it; throws UsageError naming `what` otherwise.
std::size_t parse_byte_size(const std::string& text, const std::string& what);

/// What a card of `limit` bytes would have free when this process sees `free_bytes` of `total`
/// free: the memory in use (total - free) counts against the limit, so that what a program
/// allocates still shows as a drop in free memory. A limit of 0 is no limit.
std::size_t limited_free_bytes(std::size_t free_bytes, std::size_t total, std::size_t limit);

/// Throws DoesNotFitError, naming both sizes, when `bytes` exceed the device's free memory
/// (minus a small reserve). Call it before allocating, with everything the run will allocate.
void require_fits(std::size_t bytes, const std::string& what);

/// Throws DoesNotFitError, naming both sizes, when `bytes` exceed the host's physical memory
/// (sysconf). Call it before allocating host buffers whose size comes from the command line.
void require_host_fits(std::size_t bytes, const std::string& what);

}  // namespace course
