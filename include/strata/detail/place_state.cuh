// What Strata keeps for one place: its device, a non-blocking stream, an event, and cached CUB
// temporary storage. Owned by a device_set; never named in user code.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/memory.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>

namespace strata::detail {

class place_state {
 public:
  explicit place_state(int device) : device_(device) {
    device_guard g(device_);
    STRATA_CUDA_CHECK_ON(device_, cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const cudaError_t e = cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      (void)cudaStreamDestroy(stream_);
      throw_cuda_error(e, "cudaEventCreateWithFlags", device_, __FILE__, __LINE__);
    }
  }
  place_state(const place_state&) = delete;
  place_state& operator=(const place_state&) = delete;

  // Runs with the owning device current; waits for the stream so no kernel still uses the
  // temporary storage when it is freed. Never throws.
  ~place_state() {
    int previous = -1;
    (void)cudaGetDevice(&previous);
    if (previous != device_) (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);
    if (temp_ != nullptr) {
      (void)cudaFree(temp_);
      counters().device_frees.fetch_add(1, std::memory_order_relaxed);
    }
    (void)cudaEventDestroy(event_);
    (void)cudaStreamDestroy(stream_);
    if (previous >= 0 && previous != device_) (void)cudaSetDevice(previous);
  }

  int device() const noexcept { return device_; }
  cudaStream_t stream() const noexcept { return stream_; }
  cudaEvent_t event() const noexcept { return event_; }

  /// Temporary storage of at least `bytes`, valid for work enqueued on this place's stream.
  /// Grown on demand (1.5x, to amortise) and reused across calls: a warm place allocates
  /// nothing. Growing waits for the stream first, since queued kernels may still use the old
  /// buffer. Call with the place's device current.
  void* temp_storage(std::size_t bytes) {
    if (bytes <= temp_bytes_) return temp_;
    if (capturing) throw capture_abort{};  // cannot synchronise or allocate inside a capture
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream_));
    const std::size_t grown = bytes + bytes / 2;
    void* fresh = device_allocate(device_, grown);
    device_free(device_, temp_);
    temp_ = fresh;
    temp_bytes_ = grown;
    return temp_;
  }

  std::size_t temp_storage_bytes() const noexcept { return temp_bytes_; }
  const void* temp_storage_pointer() const noexcept { return temp_; }

  /// Set while the place's work is being captured into a graph.
  bool capturing = false;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t event_ = nullptr;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
};

}  // namespace strata::detail
