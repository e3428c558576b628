#include "course/timer.hpp"

namespace course {

EventTimer::EventTimer(cudaStream_t stream) : stream_(stream) {
  CUDA_CHECK(cudaEventCreate(&start_));
  try {
    CUDA_CHECK(cudaEventCreate(&stop_));
  } catch (...) {
    cudaEventDestroy(start_);
    throw;
  }
}

EventTimer::~EventTimer() {
  // Destructors must not throw; a failure to destroy an event leaks a handle, nothing more.
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}

void EventTimer::start() { CUDA_CHECK(cudaEventRecord(start_, stream_)); }

float EventTimer::stop_ms() {
  record_stop();
  return elapsed_ms();
}

void EventTimer::record_stop() { CUDA_CHECK(cudaEventRecord(stop_, stream_)); }

float EventTimer::elapsed_ms() {
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

}  // namespace course
