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
#include <unordered_set>
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

/// Allocates `bytes` on `device` (made current for the call). Throws strata::cuda_error naming
/// the device and the size on failure. Returns nullptr for 0 bytes. Out of memory while the
/// container cache holds memory on the device: the cache is released and the call tried again.
inline void* device_allocate(int device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  device_guard g(device);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation && release_cached_on(device)) {
    (void)cudaGetLastError();
    e = cudaMalloc(&p, bytes);
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

/// The container memory cache (strata::set_memory_caching): one CUDA memory pool per device that
/// keeps what containers free (release threshold: never), so a new container of a size seen
/// before is carved out of memory already mapped instead of a fresh cudaMalloc (about 0.27 ms per
/// GiB on an H200). Allocations run on the cache's own stream per device, which nothing else
/// uses, and are complete before any container sees them (one stream synchronisation per device
/// and call), so any stream may use them at once. A free first waits for the device to finish its
/// work, as cudaFree does, then returns the block to the pool. Peers that can access the device
/// get access to its pool, as enabled peer access gives them to cudaMalloc memory. Off by default
/// (or on with STRATA_MEMORY_CACHING=1 in the environment).
class container_cache {
 public:
  static container_cache& get() {
    // Never destroyed: containers freed during static destruction still find it, and the CUDA
    // context may be gone by then (the driver reclaims the pools at exit).
    static container_cache* c = new container_cache;
    return *c;
  }
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  void enable(bool on) noexcept {
    enabled_.store(on, std::memory_order_relaxed);
    if (!on) release_all();
  }

  /// One allocation per (devices[i], bytes[i]) (nullptr for 0 bytes), from the cache when it is
  /// on, else with cudaMalloc. On failure, frees what it made and throws strata::cuda_error
  /// naming the device and the size.
  std::vector<void*> allocate(const std::vector<int>& devices, const std::vector<std::size_t>& bytes) {
    std::vector<void*> out(devices.size(), nullptr);
    try {
      if (!enabled()) {
        for (std::size_t i = 0; i < devices.size(); ++i) out[i] = device_allocate(devices[i], bytes[i]);
        return out;
      }
      std::vector<cudaStream_t> to_sync;
      std::vector<int> sync_devices;
      for (std::size_t i = 0; i < devices.size(); ++i) {
        if (bytes[i] == 0) continue;
        const pool& dp = pool_on(devices[i]);
        device_guard g(devices[i]);
        cudaError_t e = cudaMallocFromPoolAsync(&out[i], bytes[i], dp.handle, dp.stream);
        if (e == cudaErrorMemoryAllocation) {  // what the pool keeps unused goes back, then once more
          (void)cudaGetLastError();
          (void)cudaStreamSynchronize(dp.stream);
          (void)cudaMemPoolTrimTo(dp.handle, 0);
          e = cudaMallocFromPoolAsync(&out[i], bytes[i], dp.handle, dp.stream);
        }
        if (e != cudaSuccess) {
          out[i] = nullptr;
          const std::string call = "cudaMallocFromPoolAsync(" + std::to_string(bytes[i]) + " bytes)";
          throw_cuda_error(e, call.c_str(), devices[i], __FILE__, __LINE__);
        }
        {
          std::lock_guard<std::mutex> lock(m_);
          pooled_.insert(out[i]);
        }
        counters().device_allocs.fetch_add(1, std::memory_order_relaxed);
        bool seen = false;
        for (cudaStream_t s : to_sync) seen = seen || s == dp.stream;
        if (!seen) {
          to_sync.push_back(dp.stream);
          sync_devices.push_back(devices[i]);
        }
      }
      for (std::size_t j = 0; j < to_sync.size(); ++j) STRATA_CUDA_CHECK_ON(sync_devices[j], cudaStreamSynchronize(to_sync[j]));
      return out;
    } catch (...) {
      for (std::size_t i = 0; i < devices.size(); ++i) free(devices[i], out[i]);
      throw;
    }
  }

  /// Frees a pointer from allocate() (to the pool if it came from there). Never throws.
  void free(int device, void* p) noexcept {
    if (p == nullptr) return;
    cudaStream_t stream = nullptr;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (pooled_.erase(p) == 0) stream = nullptr;
      else stream = pools_.at(device).stream;
    }
    if (stream == nullptr) {
      device_free(device, p);
      return;
    }
    quiet_device_switch on(device);
    (void)cudaDeviceSynchronize();  // as cudaFree: no kernel may still use the block
    (void)cudaFreeAsync(p, stream);
    counters().device_frees.fetch_add(1, std::memory_order_relaxed);
    if (!enabled()) (void)release(device);  // caching was turned off while the block lived
  }

  /// Returns what the pools keep unused to CUDA; true if some pool existed on `device` (-1: every
  /// device). Never throws.
  bool release(int device) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    bool any = false;
    for (auto& [d, dp] : pools_) {
      if (device >= 0 && d != device) continue;
      quiet_device_switch on(d);
      (void)cudaStreamSynchronize(dp.stream);
      (void)cudaMemPoolTrimTo(dp.handle, 0);
      any = true;
    }
    return any;
  }
  void release_all() noexcept { (void)release(-1); }

  /// Bytes the pools hold that no container uses (every device).
  std::size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(m_);
    std::size_t total = 0;
    for (auto& [d, dp] : pools_) {
      std::uint64_t reserved = 0, used = 0;
      STRATA_CUDA_CHECK_ON(d, cudaMemPoolGetAttribute(dp.handle, cudaMemPoolAttrReservedMemCurrent, &reserved));
      STRATA_CUDA_CHECK_ON(d, cudaMemPoolGetAttribute(dp.handle, cudaMemPoolAttrUsedMemCurrent, &used));
      total += static_cast<std::size_t>(reserved - used);
    }
    return total;
  }

 private:
  struct pool {
    cudaMemPool_t handle = nullptr;
    cudaStream_t stream = nullptr;
  };
  container_cache() {
    const char* env = std::getenv("STRATA_MEMORY_CACHING");
    enabled_.store(env != nullptr && env[0] == '1', std::memory_order_relaxed);
  }
  const pool& pool_on(int device) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = pools_.find(device);
    if (it != pools_.end()) return it->second;
    device_guard g(device);
    pool dp;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    STRATA_CUDA_CHECK_ON(device, cudaMemPoolCreate(&dp.handle, &props));
    try {
      std::uint64_t keep = ~std::uint64_t{0};
      STRATA_CUDA_CHECK_ON(device, cudaMemPoolSetAttribute(dp.handle, cudaMemPoolAttrReleaseThreshold, &keep));
      int count = 0;
      STRATA_CUDA_CHECK_ON(device, cudaGetDeviceCount(&count));
      for (int peer = 0; peer < count; ++peer) {
        int can = 0;
        if (peer == device || cudaDeviceCanAccessPeer(&can, peer, device) != cudaSuccess || !can) continue;
        cudaMemAccessDesc desc{};
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = peer;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        STRATA_CUDA_CHECK_ON(device, cudaMemPoolSetAccess(dp.handle, &desc, 1));
      }
      STRATA_CUDA_CHECK_ON(device, cudaStreamCreateWithFlags(&dp.stream, cudaStreamNonBlocking));
    } catch (...) {
      (void)cudaMemPoolDestroy(dp.handle);
      throw;
    }
    return pools_.emplace(device, dp).first->second;
  }

  std::atomic<bool> enabled_{false};
  std::mutex m_;
  std::map<int, pool> pools_;  // (std::map: references stay valid as pools are added)
  std::unordered_set<void*> pooled_;
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
