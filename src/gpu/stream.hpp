#pragma once
/// @file stream.hpp
/// Move-only owners of a CUDA stream and a CUDA event.

#include <cuda_runtime_api.h>

#include <utility>

#include "kernels/cuda_check.hpp"

namespace pagedw2v {

/// A non-blocking stream (it does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream() { PAGEDW2V_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) PAGEDW2V_CUDA_TRY_NO_THROW(cudaStreamDestroy(stream_));
  }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      if (stream_ != nullptr) PAGEDW2V_CUDA_TRY_NO_THROW(cudaStreamDestroy(stream_));
      stream_ = std::exchange(o.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const { PAGEDW2V_CUDA_TRY(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

/// An event; timing is on by default because the backend reports upload and kernel times.
class Event {
 public:
  explicit Event(bool timing = true) {
    PAGEDW2V_CUDA_TRY(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (event_ != nullptr) PAGEDW2V_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      if (event_ != nullptr) PAGEDW2V_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { PAGEDW2V_CUDA_TRY(cudaEventRecord(event_, stream)); }
  void synchronize() const { PAGEDW2V_CUDA_TRY(cudaEventSynchronize(event_)); }
  /// Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0.0f;
    PAGEDW2V_CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace pagedw2v
