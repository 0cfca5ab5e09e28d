// Every device and pinned-host allocation Strata makes goes through here: errors name the
// device, and tests can count allocations to prove a warm steady state allocates nothing.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace strata::detail {

/// Counters of Strata's own cudaMalloc/cudaFree/cudaHostAlloc/cudaFreeHost calls.
struct allocation_counters {
  std::atomic<std::uint64_t> device_allocs{0};
  std::atomic<std::uint64_t> device_frees{0};
  std::atomic<std::uint64_t> host_allocs{0};
  std::atomic<std::uint64_t> host_frees{0};
};

inline allocation_counters& counters() noexcept {
  static allocation_counters c;
  return c;
}

/// Allocates `bytes` on `device` (made current for the call). Throws strata::cuda_error naming
/// the device and the size on failure. Returns nullptr for 0 bytes.
inline void* device_allocate(int device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  device_guard g(device);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    const std::string call = "cudaMalloc(" + std::to_string(bytes) + " bytes)";
    throw_cuda_error(e, call.c_str(), device, __FILE__, __LINE__);
  }
  counters().device_allocs.fetch_add(1, std::memory_order_relaxed);
  return p;
}

/// Frees a pointer from device_allocate with its device current. Never throws (used by
/// destructors); an error here means the context is already broken.
inline void device_free(int device, void* p) noexcept {
  if (p == nullptr) return;
  quiet_device_switch on(device);
  (void)cudaFree(p);
  counters().device_frees.fetch_add(1, std::memory_order_relaxed);
}

/// A device allocation owned by one call (scratch space): freed, with its device current, when it
/// goes out of scope, after waiting for `stream`, the one stream whose work uses it (so an
/// exception thrown while that work is queued cannot free memory a kernel still reads). Move-only.
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(int device, std::size_t bytes, cudaStream_t stream)
      : device_(device), stream_(stream), p_(device_allocate(device, bytes)) {}
  device_buffer(device_buffer&& o) noexcept { swap(o); }
  device_buffer& operator=(device_buffer&& o) noexcept {
    device_buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() {
    if (p_ == nullptr) return;
    quiet_device_switch on(device_);
    (void)cudaStreamSynchronize(stream_);
    device_free(device_, p_);
  }
  void* get() const noexcept { return p_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(p_);
  }

 private:
  void swap(device_buffer& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(stream_, o.stream_);
    std::swap(p_, o.p_);
  }
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  void* p_ = nullptr;
};

/// Pinned host memory, portable to every device and mapped into the unified address space, so
/// kernels on any device read and write it directly (the host-staging path of the merge).
inline void* pinned_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  STRATA_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  counters().host_allocs.fetch_add(1, std::memory_order_relaxed);
  return p;
}

inline void pinned_free(void* p) noexcept {
  if (p == nullptr) return;
  (void)cudaFreeHost(p);
  counters().host_frees.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace strata::detail
