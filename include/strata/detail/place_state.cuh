// What Strata keeps for one place: its device, a non-blocking stream, an event, and cached CUB
// temporary storage. Owned by a device_set; never named in user code.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

class place_state {
 public:
  /// A place on `device` with a non-blocking stream of its own, or on `user_stream` where one is
  /// given (the user's: used, never destroyed).
  explicit place_state(int device, cudaStream_t user_stream = nullptr)
      : device_(device), owns_stream_(user_stream == nullptr) {
    device_guard g(device_);
    if (owns_stream_)
      STRATA_CUDA_CHECK_ON(device_, cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    else
      stream_ = user_stream;
    const cudaError_t e = cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      if (owns_stream_) (void)cudaStreamDestroy(stream_);
      throw_cuda_error(e, "cudaEventCreateWithFlags", device_, __FILE__, __LINE__);
    }
  }
  place_state(const place_state&) = delete;
  place_state& operator=(const place_state&) = delete;

  // Runs with the owning device current; waits for the stream so no kernel still uses the
  // temporary storage when it is freed. Never throws.
  ~place_state() {
    quiet_device_switch on(device_);
    if (link != nullptr) {
      try {
        link->wait(stream_);  // never hangs on NCCL work whose peers are gone
      } catch (...) {
      }
    }
    (void)cudaStreamSynchronize(stream_);
    for (void* p : {temp_, scratch_, lookup_})
      if (p != nullptr) {
        (void)cudaFree(p);
        counters().device_frees.fetch_add(1, std::memory_order_relaxed);
      }
    (void)cudaEventDestroy(event_);
    for (cudaEvent_t e : lazy_events_)
      if (e != nullptr) (void)cudaEventDestroy(e);
    if (owns_stream_) (void)cudaStreamDestroy(stream_);
  }

  int device() const noexcept { return device_; }
  cudaStream_t stream() const noexcept { return stream_; }
  cudaEvent_t event() const noexcept { return event_; }

  /// The exchange's events (detail/exchange.cuh): this place's data is ready to be read; this
  /// place has pulled everything it receives; on the root of a set spanning processes, the
  /// transfers between ranks are done; and the per-slot events of the staging ring (0..slots-1: a
  /// chunk was copied out from here; slots..2*slots-1: a chunk was copied in here). Made on first
  /// use. Call with the place's device current.
  cudaEvent_t exchange_ready() { return lazy_event(0); }
  cudaEvent_t exchange_done() { return lazy_event(1); }
  cudaEvent_t ranks_exchanged() { return lazy_event(2); }
  cudaEvent_t staging_event(std::size_t k) { return lazy_event(3 + k); }

  /// Temporary storage of at least `bytes`, valid for work enqueued on this place's stream.
  /// Grown on demand (1.5x, to amortise) and reused across calls: a warm place allocates
  /// nothing. Growing waits for the stream first, since queued kernels may still use the old
  /// buffer. Call with the place's device current.
  void* temp_storage(std::size_t bytes) { return cached(temp_, temp_bytes_, bytes, bytes + bytes / 2); }

  /// Scratch of at least `bytes` for the element buffers of algorithms that need a second copy of
  /// a segment (sort), kept and reused like the temp storage, so that repeated calls allocate
  /// nothing and `nosync` calls need not wait to free it. Growing waits for the stream first.
  /// release_cached() frees it. Call with the place's device current.
  void* scratch(std::size_t bytes) { return cached(scratch_, scratch_bytes_, bytes); }

  /// Device memory of at least `words` 64-bit words for the small tables that kernels index by a
  /// computed position (a partition's offsets, its segments' pointers: detail/by_index.cuh's
  /// upload_table), kept and reused like the scratch. Such a table must not travel by value in a
  /// functor: indexing it there makes every thread copy the whole functor into local memory.
  std::uint64_t* lookup_table(std::size_t words) {
    return static_cast<std::uint64_t*>(cached(lookup_, lookup_bytes_, words * sizeof(std::uint64_t)));
  }
  /// The lookup table as last uploaded (null before the first).
  const std::uint64_t* lookup_table() const noexcept { return static_cast<const std::uint64_t*>(lookup_); }

  std::size_t scratch_bytes() const noexcept { return scratch_bytes_; }

  /// Frees the cached temp storage, scratch and lookup table after waiting for the stream. Call with the
  /// place's device current.
  void release_cached() {
    synchronize();
    device_free(device_, temp_);
    device_free(device_, scratch_);
    device_free(device_, lookup_);
    temp_ = scratch_ = lookup_ = nullptr;
    temp_bytes_ = scratch_bytes_ = lookup_bytes_ = 0;
  }

  std::size_t temp_storage_bytes() const noexcept { return temp_bytes_; }
  const void* temp_storage_pointer() const noexcept { return temp_; }

  /// Waits for the place's stream: cudaStreamSynchronize, or on a set spanning processes the
  /// link's wait, which never hangs on a failed peer (its NCCL work runs on the root's stream).
  /// Call with the place's device current. Throws strata::cuda_error, or the link's error.
  void synchronize() {
    if (link != nullptr)
      link->wait(stream_);
    else
      STRATA_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  /// The transport of a set spanning processes (owned by the set), or null.
  rank_link* link = nullptr;

  /// Set while the place's work is being captured into a graph.
  bool capturing = false;

 private:
  // A buffer of at least `bytes` in `buf` (holding `have`): kept if large enough, else freed after
  // the stream's queued work and `grown` (>= bytes) allocated anew. The one growth rule of the
  // temp storage, the scratch and the lookup table.
  void* cached(void*& buf, std::size_t& have, std::size_t bytes, std::size_t grown) {
    if (bytes <= have) return buf;
    if (capturing) throw capture_abort{};  // cannot synchronise or allocate inside a capture
    synchronize();
    device_free(device_, buf);
    buf = nullptr;
    have = 0;
    buf = device_allocate(device_, grown);
    have = grown;
    return buf;
  }
  void* cached(void*& buf, std::size_t& have, std::size_t bytes) { return cached(buf, have, bytes, bytes); }

  cudaEvent_t lazy_event(std::size_t k) {
    if (k >= lazy_events_.size()) lazy_events_.resize(k + 1, nullptr);
    if (lazy_events_[k] == nullptr)
      STRATA_CUDA_CHECK_ON(device_, cudaEventCreateWithFlags(&lazy_events_[k], cudaEventDisableTiming));
    return lazy_events_[k];
  }

  int device_;
  bool owns_stream_;
  std::vector<cudaEvent_t> lazy_events_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t event_ = nullptr;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  void* lookup_ = nullptr;
  std::size_t lookup_bytes_ = 0;
};

}  // namespace strata::detail
