// Every device and pinned-host allocation Strata makes goes through here: errors name the
// device, and tests can count allocations to prove a warm steady state allocates nothing.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

inline bool release_cached_on(int device) noexcept;

/// cudaMalloc on the current device; under fault injection an allocation the injector fails is
/// given back, so a failure leaves nothing allocated, as a real one does.
inline cudaError_t checked_malloc(void** p, std::size_t bytes) noexcept {
  const cudaError_t e = STRATA_DETAIL_INJECT_ALLOCATION(cudaMalloc(p, bytes));
  if (e != cudaSuccess && *p != nullptr) {
    (void)cudaFree(*p);
    *p = nullptr;
  }
  return e;
}

/// Allocates `bytes` on `device` (made current for the call). Throws strata::cuda_error naming
/// the device and the size on failure. Returns nullptr for 0 bytes. Out of memory while the
/// container cache holds memory on the device: the cache is released and the call tried again.
inline void* device_allocate(int device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  device_guard g(device);
  void* p = nullptr;
  cudaError_t e = checked_malloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation && release_cached_on(device)) {
    (void)cudaGetLastError();
    e = checked_malloc(&p, bytes);
  }
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

/// The container memory cache (strata::set_memory_caching): the blocks containers free are kept
/// per device, by size, and handed to the next container segment that fits (a block serves a
/// request of at least 4/5 of its size, so a kept block is never split and never wastes more than a
/// fifth), so a new container of a size seen before costs a map lookup instead of a cudaMalloc
/// (about 0.27 ms per GiB on an H200). Blocks are plain cudaMalloc memory (peer access and every
/// CUDA API treat them as before); sizes round up to 512 bytes, and to 2 MiB from 1 MiB on. A
/// block is kept only after the device has finished its work (a free waits for the device, as
/// cudaFree does), so whoever gets it next may use it from any stream at once. Out of memory in
/// any Strata allocation returns the device's kept blocks and tries again (device_allocate). Off by
/// default (on with STRATA_MEMORY_CACHING=1 in the environment).
class container_cache {
 public:
  static container_cache& get() {
    // Never destroyed: containers freed during static destruction still find it, and the CUDA
    // context may be gone by then (the driver reclaims device memory at exit).
    static container_cache* c = new container_cache;
    return *c;
  }
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  void enable(bool on) noexcept {
    enabled_.store(on, std::memory_order_relaxed);
    if (!on) release_all();
  }

  /// `bytes` on `device` (nullptr for 0 bytes): a kept block when the cache is on and one fits,
  /// else device_allocate. Throws strata::cuda_error naming the device and the size.
  void* allocate(int device, std::size_t bytes) {
    if (bytes == 0) return nullptr;
    if (!enabled()) return device_allocate(device, bytes);
    std::size_t size = rounded(bytes);
    void* p = take(device, size);  // (size becomes the kept block's)
    if (p == nullptr) p = device_allocate(device, size);
    std::lock_guard<std::mutex> lock(m_);
    live_.emplace(p, size);
    return p;
  }

  /// Frees a pointer from allocate(): kept (once the device is idle) when it came through the
  /// cache and the cache is on, else cudaFree. Never throws.
  void free(int device, void* p) noexcept {
    if (p == nullptr) return;
    std::size_t size = 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      const auto it = live_.find(p);
      if (it != live_.end()) {
        size = it->second;
        live_.erase(it);
      }
    }
    if (size == 0 || !enabled()) {
      device_free(device, p);
      return;
    }
    {
      quiet_device_switch on(device);
      if (cudaDeviceSynchronize() != cudaSuccess) {  // a broken context: nothing to keep
        device_free(device, p);
        return;
      }
    }
    std::lock_guard<std::mutex> lock(m_);
    kept_[device].emplace(size, p);
    kept_bytes_ += size;
  }

  /// Frees the blocks kept for `device` (-1: every device); true if there were any. Never throws.
  bool release(int device) noexcept {
    std::vector<std::pair<int, void*>> gone;
    {
      std::lock_guard<std::mutex> lock(m_);
      for (auto& [d, blocks] : kept_) {
        if (device >= 0 && d != device) continue;
        for (const auto& [size, p] : blocks) {
          gone.emplace_back(d, p);
          kept_bytes_ -= size;
        }
        blocks.clear();
      }
    }
    for (const auto& [d, p] : gone) device_free(d, p);
    return !gone.empty();
  }
  void release_all() noexcept { (void)release(-1); }

  /// Bytes kept, over every device.
  std::size_t cached_bytes() const noexcept {
    std::lock_guard<std::mutex> lock(m_);
    return kept_bytes_;
  }

  /// The size a request of `bytes` takes: up to a multiple of 512 bytes, or of 2 MiB from 1 MiB on.
  static std::size_t rounded(std::size_t bytes) noexcept {
    const std::size_t unit = bytes >= (std::size_t{1} << 20) ? (std::size_t{2} << 20) : 512;
    return (bytes + unit - 1) / unit * unit;
  }
  /// Whether a kept block of `block` bytes serves a (rounded) request of `size` bytes: at least
  /// the size, at most 5/4 of it.
  static bool fits(std::size_t block, std::size_t size) noexcept { return block >= size && block - size <= size / 4; }

 private:
  container_cache() {
    const char* env = std::getenv("STRATA_MEMORY_CACHING");
    enabled_.store(env != nullptr && env[0] == '1', std::memory_order_relaxed);
  }
  // The smallest kept block of at least `size` bytes and at most 5/4 of it (size set to its
  // size), or nullptr.
  void* take(int device, std::size_t& size) {
    std::lock_guard<std::mutex> lock(m_);
    auto d = kept_.find(device);
    if (d == kept_.end()) return nullptr;
    const auto it = d->second.lower_bound(size);
    if (it == d->second.end() || !fits(it->first, size)) return nullptr;
    void* p = it->second;
    size = it->first;
    kept_bytes_ -= it->first;
    d->second.erase(it);
    return p;
  }

  std::atomic<bool> enabled_{false};
  mutable std::mutex m_;
  std::map<int, std::multimap<std::size_t, void*>> kept_;  // device -> (size, block)
  std::map<void*, std::size_t> live_;                        // blocks handed out through the cache
  std::size_t kept_bytes_ = 0;
};

inline bool release_cached_on(int device) noexcept { return container_cache::get().release(device); }

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
/// kernels on any device read and write it directly (the host-staging path of the fold).
inline void* pinned_allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  const cudaError_t e = STRATA_DETAIL_INJECT_ALLOCATION(cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  if (e != cudaSuccess) {
    if (p != nullptr) (void)cudaFreeHost(p);  // failed by the fault injector: nothing is kept
    const std::string call = "cudaHostAlloc(" + std::to_string(bytes) + " bytes)";
    throw_cuda_error(e, call.c_str(), -1, __FILE__, __LINE__);
  }
  counters().host_allocs.fetch_add(1, std::memory_order_relaxed);
  return p;
}

inline void pinned_free(void* p) noexcept {
  if (p == nullptr) return;
  (void)cudaFreeHost(p);
  counters().host_frees.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace strata::detail
