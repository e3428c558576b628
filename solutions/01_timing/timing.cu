// Chapter 01, exercise 2: timing a region of GPU work with CUDA events.
//
// A kernel launch returns to the host at once; the GPU runs the kernel later. A host clock read
// around the launch measures the launch (microseconds), not the kernel. An event is a marker that
// the GPU time-stamps when its stream reaches it: two events around the work, then a wait for the
// second, give the GPU time of exactly what was enqueued between them.

#include "course/check.hpp"
#include "add.hpp"

namespace ch01 {

// [time_with_events]
float time_with_events_ms(const std::function<void()>& launch, cudaStream_t stream) {
  // BEGIN SOLUTION
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, stream));
  launch();
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));  // the host waits here until the GPU has passed `stop`
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return ms;
  // STUB
  //> // TODO(student): return the milliseconds the GPU spends on exactly the work launch() enqueues
  //> // on `stream`, read on the GPU's clock (a host clock sees only the enqueue) and final when this
  //> // returns; leak nothing; every CUDA call checked. Tests: ch01 time_with_events_ms on the host: *
  //> // (no GPU: a model of the GPU's clock), then ch01 time_with_events_ms: * (filling 1.5 GiB takes
  //> // at least its bytes over the card's peak bandwidth). See README §Exercise 2.
  //> launch();
  //> return 0.0f;
  // END SOLUTION
}
// [time_with_events]

}  // namespace ch01
