// Chapter 03's round trip checked without a GPU: this program replaces the CUDA runtime's calls
// that round_trip and course::Context make (cudaMalloc, cudaMemcpy, cudaFree, ...) with a model
// in host memory. The executable links the shared CUDA runtime, and a function defined here takes
// the place of the runtime's for every caller in the program (ELF symbol interposition), so the
// student's own CUDA calls in the holes run against the model: which buffers were allocated and
// how large, what was copied where, which stream the version was given, what was freed. A CUDA
// call the model does not know goes to the real runtime, which finds no GPU and fails: the test
// then says so. It is its own executable (test_03_one_thread_host_calls): the other tests of the
// chapter need the real runtime.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/context.hpp"
#include "course/reference.hpp"
#include "dot.hpp"
#include "support/course_test.hpp"

namespace {

// ---- the model of the GPU ----------------------------------------------------------------------

struct Copy {
  void* dst;
  const void* src;
  std::size_t bytes;
  cudaMemcpyKind kind;
  bool default_stream;
};

struct FakeGpu {
  std::map<void*, std::size_t> live;  // device allocations: start -> bytes
  std::vector<std::size_t> allocated; // every allocation's size, in order
  std::size_t frees = 0;
  std::vector<Copy> copies;
  int fail_call = -1;                 // the number of the memory call (malloc, memcpy, memset, free) that fails
  int memory_calls = 0;
  int streams = 0;

  void reset() {
    for (const auto& [start, size] : live) std::free(start);
    *this = FakeGpu{};
  }
  // The allocation [p, p + bytes) lies in, or nullptr.
  void* owner(const void* p, std::size_t bytes) const {
    const auto* c = static_cast<const unsigned char*>(p);
    for (const auto& [start, size] : live) {
      const auto* s = static_cast<const unsigned char*>(start);
      if (c >= s && c + bytes <= s + size) return start;
    }
    return nullptr;
  }
  bool fails_now() { return memory_calls++ == fail_call; }
};

FakeGpu g_gpu;

bool is_default(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }

cudaError_t fake_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, bool default_stream) {
  if (g_gpu.fails_now()) return cudaErrorIllegalAddress;
  const bool to_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool from_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (dst == nullptr || src == nullptr || (to_device && !g_gpu.owner(dst, bytes)) ||
      (from_device && !g_gpu.owner(src, bytes)) || (!to_device && g_gpu.owner(dst, 1)) ||
      (!from_device && g_gpu.owner(src, 1)) || kind == cudaMemcpyHostToHost)
    return cudaErrorInvalidValue;  // a direction that does not match the pointers, or past an allocation
  std::memcpy(dst, src, bytes);
  g_gpu.copies.push_back({dst, src, bytes, kind, default_stream});
  return cudaSuccess;
}

// ---- the version the round trip is given ------------------------------------------------------

struct Launch {
  int calls = 0;
  const float* x = nullptr;
  const float* y = nullptr;
  std::size_t n = 0;
  float* result = nullptr;
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x1234);
  bool inputs_on_device = false;
};
Launch g_launch;

// A "kernel" on the model: reads the device copies (host memory here) and writes x·y to d_result,
// as any registry version does on a GPU.
void model_version(const float* d_x, const float* d_y, std::size_t n, float* d_result, course::Context&,
                   cudaStream_t stream) {
  ++g_launch.calls;
  g_launch.x = d_x;
  g_launch.y = d_y;
  g_launch.n = n;
  g_launch.result = d_result;
  g_launch.stream = stream;
  const std::size_t bytes = n * sizeof(float);
  g_launch.inputs_on_device = g_gpu.owner(d_x, bytes) && g_gpu.owner(d_y, bytes) && g_gpu.owner(d_result, 4);
  if (!g_launch.inputs_on_device) return;  // a GPU would fault; the test reports it
  *d_result = static_cast<float>(course::reference_dot(d_x, d_y, n).value);
}

const char* const kHint =
    "Hint: round_trip's holes are CUDA runtime calls on the default stream: device memory for x, y and the "
    "result, each copy in whole, the version given launched once on the device copies, the result copied "
    "back, everything freed, every call checked (CUDA_CHECK). This host test models cudaMalloc(Async), "
    "cudaMemcpy(Async), cudaMemset, cudaFree(Async) and synchronisation; another call finds no GPU here. "
    "See round_trip, README §Exercise 2.";

struct Run {
  float result = NAN;
  std::string error;
};

Run run_round_trip(std::size_t n, const std::vector<float>& x, const std::vector<float>& y, int fail_call = -1) {
  g_gpu.reset();
  g_gpu.fail_call = fail_call;
  g_launch = Launch{};
  Run r;
  try {
    course::Context ctx;  // on the model: device 0, its facts, a stream
    r.result = ch03::round_trip(model_version, ctx, x.data(), y.data(), n);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

std::vector<float> values(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 23) - 11.0f;
  return v;
}

// A round trip on the model that must not throw: its inputs (whose addresses the copies are
// checked against) and what it returned.
struct Checked {
  std::vector<float> x, y;
  float result = NAN;
};
Checked round_trip_ok(std::size_t n) {
  Checked c{values(n, 0.5f), values(n, -0.25f)};
  const Run r = run_round_trip(n, c.x, c.y);
  INFO("n = " << n << (r.error.empty() ? "" : ": round_trip threw: " + r.error) << "\n" << kHint);
  REQUIRE(r.error.empty());
  c.result = r.result;
  return c;
}

}  // namespace

// ---- the model's CUDA runtime: these definitions take the place of libcudart's ------------------

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  *prop = cudaDeviceProp{};
  std::strcpy(prop->name, "the host test's model of a GPU");
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->l2CacheSize = 50 << 20;
  prop->totalGlobalMem = std::size_t{80} << 30;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  *value = attr == cudaDevAttrMemoryClockRate ? 2619000 : attr == cudaDevAttrGlobalMemoryBusWidth ? 5120 : 0;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(0x5000 + ++g_gpu.streams));
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  if (g_gpu.fails_now()) return cudaErrorMemoryAllocation;
  *p = std::malloc(bytes == 0 ? 1 : bytes);
  g_gpu.live[*p] = bytes;
  g_gpu.allocated.push_back(bytes);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, std::size_t bytes, cudaStream_t stream) {
  return is_default(stream) ? cudaMalloc(p, bytes) : cudaErrorInvalidResourceHandle;
}
cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  if (g_gpu.fails_now()) return cudaErrorIllegalAddress;
  const auto it = g_gpu.live.find(p);
  if (it == g_gpu.live.end()) return cudaErrorInvalidValue;
  std::free(p);
  g_gpu.live.erase(it);
  ++g_gpu.frees;
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  return is_default(stream) ? cudaFree(p) : cudaErrorInvalidResourceHandle;
}
cudaError_t cudaMemset(void* p, int value, std::size_t bytes) {
  if (g_gpu.fails_now()) return cudaErrorIllegalAddress;
  if (!g_gpu.owner(p, bytes)) return cudaErrorInvalidValue;
  std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  return fake_copy(dst, src, bytes, kind, true);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  return fake_copy(dst, src, bytes, kind, is_default(stream));
}

}  // extern "C"

// ---- the tests: each hole of round_trip, its stub and its typical mistakes fail here ----------

TEST_CASE("ch03 round_trip on the host: device memory for x, y and the result, all of it freed",
          "[ch03][exercise][hole:dot.cu:1][hole:dot.cu:6]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{4097}}) {
    round_trip_ok(n);
    std::vector<std::size_t> want = {n * sizeof(float), n * sizeof(float), sizeof(float)};
    std::vector<std::size_t> got = g_gpu.allocated;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    INFO("device allocations of " << got.size() << " buffer(s): x and y need n floats each (n * sizeof(float) "
         "bytes), the result one float");
    CHECK(got == want);
    INFO("device buffers still allocated when round_trip returned: " << g_gpu.live.size());
    CHECK(g_gpu.live.empty());
  }
}

TEST_CASE("ch03 round_trip on the host: x and y copied in whole to the device before the version runs",
          "[ch03][exercise][hole:dot.cu:2][hole:dot.cu:3]") {
  const std::size_t n = 3001;
  const Checked r = round_trip_ok(n);
  bool x_in = false, y_in = false;
  for (const Copy& c : g_gpu.copies) {
    if (c.kind != cudaMemcpyHostToDevice) continue;
    x_in = x_in || (c.src == r.x.data() && c.bytes == n * sizeof(float) && c.dst == g_launch.x && c.default_stream);
    y_in = y_in || (c.src == r.y.data() && c.bytes == n * sizeof(float) && c.dst == g_launch.y && c.default_stream);
  }
  INFO("x: every one of its n floats copied host to device, into the buffer the version reads, on the default "
       "stream: " << (x_in ? "yes" : "no") << "; y: " << (y_in ? "yes" : "no"));
  CHECK(x_in);
  CHECK(y_in);
}

TEST_CASE("ch03 round_trip on the host: the version given runs once, on the device copies and the default stream",
          "[ch03][exercise][hole:dot.cu:4]") {
  const std::size_t n = 2048;
  round_trip_ok(n);
  INFO("the version was called " << g_launch.calls << " time(s); it must run once");
  REQUIRE(g_launch.calls == 1);
  CHECK(g_launch.n == n);
  INFO("its x, y and result must be the device buffers of this call (not h_x, h_y or a host float)");
  CHECK(g_launch.inputs_on_device);
  INFO("its stream must be the default one (nullptr), the one the phase clock times; ctx.stream() is not");
  CHECK(is_default(g_launch.stream));
}

TEST_CASE("ch03 round_trip on the host: returns the result the version wrote, copied back",
          "[ch03][exercise][hole:dot.cu:5]") {
  const std::size_t n = 777;
  const Checked r = round_trip_ok(n);
  const float want = static_cast<float>(course::reference_dot(r.x.data(), r.y.data(), n).value);
  bool back = false;
  for (const Copy& c : g_gpu.copies)
    back = back || (c.kind == cudaMemcpyDeviceToHost && c.src == g_launch.result && c.bytes == sizeof(float));
  INFO("the version's result copied device to host (one float from the buffer it wrote): " << (back ? "yes" : "no")
       << "; round_trip returned " << r.result << ", the version wrote " << want);
  CHECK(back);
  CHECK(r.result == want);
}

TEST_CASE("ch03 round_trip on the host: a CUDA call that fails is reported, and the call does not go on",
          "[ch03][exercise][hole:dot.cu:1][hole:dot.cu:2][hole:dot.cu:3][hole:dot.cu:5][hole:dot.cu:6]") {
  const std::size_t n = 100;
  const auto x = values(n, 0.5f), y = values(n, -0.25f);
  // The memory calls of a correct round trip, in order: 3 allocations, the poison memset, 2 copies
  // in, 1 copy back, 3 frees. Each one fails in its turn; round_trip must throw (CUDA_CHECK).
  const Run ok = run_round_trip(n, x, y);
  REQUIRE(ok.error.empty());
  const int calls = g_gpu.memory_calls;
  INFO("a round trip makes " << calls << " memory call(s) here: allocations, the poison memset, copies, frees");
  CHECK(calls >= 10);
  for (int k = 0; k < calls; ++k) {
    const Run r = run_round_trip(n, x, y, k);
    INFO("memory call " << k + 1 << " of " << calls << " failed, and round_trip "
         << (r.error.empty() ? "returned " + std::to_string(r.result) + " as if it had not" : "threw: " + r.error)
         << "\nHint: check every CUDA call (CUDA_CHECK): a failure is reported, never ignored.");
    CHECK(!r.error.empty());
  }
}
