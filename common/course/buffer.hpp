#pragma once
/// \file buffer.hpp
/// \brief RAII owners of device and pinned host memory.

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "course/check.hpp"

namespace course {

/// Device memory for `n` elements of T, freed on destruction. Moves, never copies.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), n_ * sizeof(T)));
  }
  /// Allocates and copies `host` to the device, synchronously (see upload()). For simple test code.
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  /// Allocates and enqueues the copy of `host` on `stream` (see upload_async): work on the same
  /// stream sees the data; `host` must outlive the copy (synchronize the stream before freeing it).
  DeviceBuffer(const std::vector<T>& host, cudaStream_t stream) : DeviceBuffer(host.size()) {
    upload_async(host.data(), host.size(), stream);
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) { reset(); ptr_ = o.ptr_; n_ = o.n_; o.ptr_ = nullptr; o.n_ = 0; }
    return *this;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

  /// Copies `host` (at most size() elements) to the start of the buffer, on the legacy default
  /// stream, and returns when the copy has landed: a pageable cudaMemcpy may return before its
  /// DMA ends, so this waits for the legacy stream too. Work on any stream may then use the data.
  /// For simple test code; drivers use upload_async on their context's stream.
  void upload(const std::vector<T>& host) {
    if (host.size() > n_) throw UsageError("DeviceBuffer::upload: host vector larger than the buffer");
    if (host.empty()) return;
    CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  /// Copies the whole buffer back to the host on the legacy default stream. It does not wait for
  /// a non-blocking stream (a course::Context's): synchronize the stream that wrote the buffer
  /// first, or use download(stream).
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0) CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  /// Copies the whole buffer back after the work already enqueued on `stream`, and waits for it.
  std::vector<T> download(cudaStream_t stream) const {
    std::vector<T> host(n_);
    download_async(host.data(), n_, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
  }
  /// Copies `count` elements from `host` to the start of the buffer, enqueued on `stream`
  /// (asynchronous only when `host` is pinned; the caller keeps `host` alive until the stream is done).
  void upload_async(const T* host, std::size_t count, cudaStream_t stream) {
    if (count > n_) throw UsageError("DeviceBuffer::upload_async: more elements than the buffer holds");
    if (count > 0) CUDA_CHECK(cudaMemcpyAsync(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  /// Copies the first `count` elements to `host`, enqueued on `stream` (see upload_async).
  void download_async(T* host, std::size_t count, cudaStream_t stream) const {
    if (count > n_) throw UsageError("DeviceBuffer::download_async: more elements than the buffer holds");
    if (count > 0) CUDA_CHECK(cudaMemcpyAsync(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  /// Fills every byte with `byte` (0xFF makes every float a NaN: a poison that an unwritten
  /// result cannot hide behind), asynchronously on `stream`. Pass the stream the work that reads
  /// the buffer runs on (a course::Context's): there is no default, because the legacy default
  /// stream does not order with a context's non-blocking stream.
  void fill_bytes(int byte, cudaStream_t stream) {
    if (n_ > 0) CUDA_CHECK(cudaMemsetAsync(ptr_, byte, bytes(), stream));
  }

 private:
  void reset() noexcept {
    if (ptr_ != nullptr) cudaFree(ptr_);  // a destructor must not throw; a failed free is ignored
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

/// Page-locked host memory for `n` elements of T (cudaMallocHost), freed on destruction.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), n_ * sizeof(T)));
  }
  /// The same with cudaHostAlloc's `flags` (cudaHostAllocMapped: kernels may read it over the link).
  PinnedBuffer(std::size_t n, unsigned flags) : n_(n) {
    if (n_ > 0) CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&ptr_), n_ * sizeof(T), flags));
  }
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr; o.n_ = 0; }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_ != nullptr) cudaFreeHost(ptr_);
      ptr_ = o.ptr_;
      n_ = o.n_;
      o.ptr_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }
  T& operator[](std::size_t i) noexcept { return ptr_[i]; }
  const T& operator[](std::size_t i) const noexcept { return ptr_[i]; }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace course
