#pragma once
/// \file stream.hpp
/// \brief RAII owners of a CUDA stream and a CUDA event.
///
/// A raw cudaStreamCreate / cudaEventCreate pair leaks as soon as anything between them throws
/// (and CUDA_CHECK throws): these own the handle from the checked creation to the destructor, the
/// way DeviceBuffer owns memory. Create them with the device they belong to current. Each converts
/// to its raw handle (as PyTorch's CUDAStream does), so it drops into CUDA calls and launches where
/// the raw handle was; the handle is valid while the owner lives.

#include <cuda_runtime.h>

#include <utility>

#include "course/check.hpp"

namespace course {

/// A CUDA stream, non-blocking by default (it never waits for the legacy default stream), destroyed
/// with the object. Moves, never copies. Destroying it does not wait: work already enqueued on it
/// still runs (the CUDA rule for cudaStreamDestroy).
class Stream {
 public:
  explicit Stream(unsigned flags = cudaStreamNonBlocking) { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags)); }
  ~Stream() { reset(); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      reset();
      stream_ = std::exchange(o.stream_, nullptr);
    }
    return *this;
  }

  /// The handle, for CUDA calls; nullptr only in a moved-from Stream.
  cudaStream_t get() const noexcept { return stream_; }
  operator cudaStream_t() const noexcept { return stream_; }  // NOLINT(google-explicit-constructor)
  /// Waits until everything enqueued on the stream has finished.
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  void reset() noexcept {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);  // a destructor must not throw
    stream_ = nullptr;
  }
  cudaStream_t stream_ = nullptr;
};

/// A CUDA event (cudaEventDefault: timing on; pass cudaEventDisableTiming for an event that only
/// orders or waits, which is cheaper to record), destroyed with the object. Moves, never copies.
class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }
  ~Event() { reset(); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      reset();
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }

  /// The handle, for CUDA calls; nullptr only in a moved-from Event.
  cudaEvent_t get() const noexcept { return event_; }
  operator cudaEvent_t() const noexcept { return event_; }  // NOLINT(google-explicit-constructor)
  /// Records the event into `stream`.
  void record(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(event_, stream)); }
  /// Waits until the work before the last record() has finished.
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }
  /// Milliseconds from `start` to this event (both recorded, both with timing; waits for neither).
  float ms_since(const Event& start) const {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  void reset() noexcept {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = nullptr;
  }
  cudaEvent_t event_ = nullptr;
};

}  // namespace course
