// Chapter 01's event timer checked without a GPU: this program replaces the CUDA runtime's event
// and stream calls with a model whose GPU has a clock per stream (the same mechanism as chapter
// 03's tests/test_03_one_thread_host_calls.cpp: the shared runtime, and definitions here that take
// the place of its functions for every caller in the program). Work "runs" when a test enqueues it:
// its stream's clock moves on by the work's milliseconds at once, while the host's clock does not
// move at all. An event recorded into a stream is stamped with that stream's clock; it is complete
// once the host has waited for it (or its stream, or the device); the time between two events can
// be read only when both are complete. So a timer that reads a host clock, records on another
// stream, records in the wrong place, reads before the GPU is done, or leaks its events fails here
// as it would on a GPU, without one. A CUDA call the model does not know goes to the real runtime,
// which finds no GPU and fails: the test then says so.

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "add.hpp"
#include "support/course_test.hpp"

namespace {

struct Event {
  bool timing = true;
  bool recorded = false;
  bool complete = false;
  cudaStream_t stream = nullptr;
  double at_ms = 0;
  long order = 0;  // when it was recorded: a stream reaches its events in this order
  bool queried = false;
};

struct FakeGpu {
  std::map<cudaStream_t, double> clock_ms;  // each stream's GPU clock: where its queue ends
  std::map<cudaEvent_t, Event> events;
  int created = 0;
  int fail_call = -1;  // the number of the event call (create, record, synchronize, elapsed) that fails
  int event_calls = 0;
  long records = 0;
  bool fails_now() { return event_calls++ == fail_call; }
  // The host waited for `ev`: it and every event its stream reached before it are complete.
  void complete_up_to(const Event& ev) {
    for (auto& [e, other] : events)
      if (other.recorded && other.stream == ev.stream && other.order <= ev.order) other.complete = true;
  }
  void complete_stream(cudaStream_t s) {
    for (auto& [e, ev] : events)
      if (ev.recorded && ev.stream == s) ev.complete = true;
  }
};

FakeGpu g_gpu;
std::uintptr_t g_next_event = 0x7000;

cudaStream_t canonical(cudaStream_t s) { return s == cudaStreamLegacy ? nullptr : s; }

// A stream of the test's own, as ctx.stream() would be.
const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(0x5001);

// Work that takes `ms` on the GPU, enqueued on `stream`: the stream's clock moves on at once.
void enqueue(cudaStream_t stream, double ms) { g_gpu.clock_ms[canonical(stream)] += ms; }

struct Timed {
  float ms = NAN;
  std::string error;
};

Timed time_it(const std::function<void()>& launch, cudaStream_t stream, int fail_call = -1) {
  g_gpu = FakeGpu{};
  g_gpu.fail_call = fail_call;
  Timed t;
  try {
    t.ms = ch01::time_with_events_ms(launch, stream);
  } catch (const std::exception& e) {
    t.error = e.what();
  }
  return t;
}

const char* const kHint =
    "Hint: two CUDA events recorded into `stream` around launch(), the host waiting for the second before "
    "it reads the time between them, both destroyed; every call checked (CUDA_CHECK). This host test "
    "models cudaEventCreate(WithFlags), cudaEventRecord, cudaEventSynchronize, cudaEventQuery, "
    "cudaEventElapsedTime, cudaEventDestroy and the stream and device synchronisations; another call finds "
    "no GPU here. See time_with_events_ms, README §Exercise 2.";

}  // namespace

// ---- the model's CUDA runtime: these definitions take the place of libcudart's ------------------

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (g_gpu.fails_now()) return cudaErrorMemoryAllocation;
  *event = reinterpret_cast<cudaEvent_t>(g_next_event += 0x10);
  Event ev;
  ev.timing = (flags & cudaEventDisableTiming) == 0;
  g_gpu.events[*event] = ev;
  ++g_gpu.created;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (g_gpu.fails_now()) return cudaErrorLaunchFailure;
  const auto it = g_gpu.events.find(event);
  if (it == g_gpu.events.end()) return cudaErrorInvalidResourceHandle;
  it->second.recorded = true;
  it->second.complete = false;
  it->second.stream = canonical(stream);
  it->second.at_ms = g_gpu.clock_ms[canonical(stream)];
  it->second.order = ++g_gpu.records;
  return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned) {
  return cudaEventRecord(event, stream);
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (g_gpu.fails_now()) return cudaErrorLaunchFailure;
  const auto it = g_gpu.events.find(event);
  if (it == g_gpu.events.end()) return cudaErrorInvalidResourceHandle;
  if (it->second.recorded) g_gpu.complete_up_to(it->second);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  const auto it = g_gpu.events.find(event);
  if (it == g_gpu.events.end()) return cudaErrorInvalidResourceHandle;
  if (!it->second.recorded || it->second.complete) return cudaSuccess;
  // Not there yet the first time it is asked; a host that keeps asking finds the GPU done.
  if (std::exchange(it->second.queried, true)) g_gpu.complete_up_to(it->second);
  return it->second.complete ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  if (g_gpu.fails_now()) return cudaErrorLaunchFailure;
  const auto a = g_gpu.events.find(start), b = g_gpu.events.find(stop);
  if (a == g_gpu.events.end() || b == g_gpu.events.end()) return cudaErrorInvalidResourceHandle;
  if (!a->second.timing || !b->second.timing) return cudaErrorInvalidResourceHandle;
  if (!a->second.recorded || !b->second.recorded) return cudaErrorInvalidResourceHandle;
  if (!a->second.complete || !b->second.complete) return cudaErrorNotReady;  // the GPU may not be there yet
  *ms = static_cast<float>(b->second.at_ms - a->second.at_ms);
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime_v2(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  return cudaEventElapsedTime(ms, start, stop);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {  // never fails here: a destructor may ignore its result
  return g_gpu.events.erase(event) == 1 ? cudaSuccess : cudaErrorInvalidResourceHandle;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  g_gpu.complete_stream(canonical(stream));
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  for (auto& [e, ev] : g_gpu.events)
    if (ev.recorded) ev.complete = true;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }

}  // extern "C"

// ---- the tests -------------------------------------------------------------------------------

TEST_CASE("ch01 time_with_events_ms on the host: the GPU time of the work launch() enqueues on the stream",
          "[ch01][exercise][hole:timing.cu:1]") {
  for (double work_ms : {5.0, 0.25, 40.0}) {
    int launches = 0;
    const Timed t = time_it([&] { ++launches; enqueue(kStream, work_ms); }, kStream);
    INFO((t.error.empty() ? std::string() : "time_with_events_ms threw: " + t.error + "\n") << kHint);
    REQUIRE(t.error.empty());
    INFO("launch() was called " << launches << " time(s): once");
    CHECK(launches == 1);
    INFO("the work took " << work_ms << " ms on the stream's GPU clock and no time on the host's; "
         "time_with_events_ms reported " << t.ms << " ms (0: a host clock, or events on another stream)");
    CHECK(std::fabs(t.ms - work_ms) <= 1e-3 * work_ms);
  }
}

TEST_CASE("ch01 time_with_events_ms on the host: counts only the work between its events, on its own stream",
          "[ch01][exercise][hole:timing.cu:1]") {
  // Work already queued on the stream before the call, and work on another stream during it, are
  // not the launch's: 7 ms before, 11 ms on the default stream, 3 ms of the launch's own.
  const Timed t = time_it([&] { enqueue(nullptr, 11.0); enqueue(kStream, 3.0); }, kStream);
  INFO((t.error.empty() ? std::string() : "time_with_events_ms threw: " + t.error + "\n") << kHint);
  REQUIRE(t.error.empty());
  CHECK(std::fabs(t.ms - 3.0f) <= 3e-3f);
  g_gpu = FakeGpu{};
  enqueue(kStream, 7.0);  // before the call
  float ms = NAN;
  std::string error;
  try {
    ms = ch01::time_with_events_ms([&] { enqueue(kStream, 3.0); }, kStream);
  } catch (const std::exception& e) {
    error = e.what();
  }
  INFO("7 ms already queued on the stream before the call, then 3 ms launched: reported " << ms << " ms"
       << (error.empty() ? "" : " (threw: " + error + ")") << "\n" << kHint);
  CHECK(std::fabs(ms - 3.0f) <= 3e-3f);
}

TEST_CASE("ch01 time_with_events_ms on the host: final when it returns, every event destroyed",
          "[ch01][exercise][hole:timing.cu:1]") {
  const Timed t = time_it([&] { enqueue(kStream, 2.0); }, kStream);
  INFO((t.error.empty() ? std::string() : "time_with_events_ms threw: " + t.error +
        " (cudaErrorNotReady: the time was read before the host waited for the second event)\n") << kHint);
  REQUIRE(t.error.empty());
  INFO(g_gpu.created << " event(s) created, " << g_gpu.events.size() << " still alive when it returned");
  CHECK(g_gpu.created >= 2);
  CHECK(g_gpu.events.empty());
}

TEST_CASE("ch01 time_with_events_ms on the host: a CUDA call that fails is reported",
          "[ch01][exercise][hole:timing.cu:1]") {
  const Timed ok = time_it([&] { enqueue(kStream, 1.0); }, kStream);
  REQUIRE(ok.error.empty());
  const int calls = g_gpu.event_calls;
  INFO("a timing makes " << calls << " event call(s) here (create, record, synchronize, elapsed)");
  CHECK(calls >= 6);
  for (int k = 0; k < calls; ++k) {
    const Timed t = time_it([&] { enqueue(kStream, 1.0); }, kStream, k);
    INFO("event call " << k + 1 << " of " << calls << " failed, and time_with_events_ms "
         << (t.error.empty() ? "returned " + std::to_string(t.ms) + " as if it had not" : "threw: " + t.error)
         << "\nHint: check every CUDA call (CUDA_CHECK): a failure is reported, never ignored.");
    CHECK(!t.error.empty());
  }
}
