// The shared state behind a device_set: its places, which places reach which directly, the
// fold workspace on the root place and the pool of result slots that futures use.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/nvtx.cuh>
#include <strata/detail/place_state.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::detail {

/// Most places one device_set may hold: the fold passes one pointer per place to a kernel by
/// value, and 64 covers every node built (8-16 GPUs) with room for several places each.
inline constexpr std::size_t max_places = 64;

/// Largest value a fold slot or a future's result slot holds.
inline constexpr std::size_t max_fold_value_bytes = 256;

/// One pinned host slot a future's value is written into by the root, plus the event that
/// marks it written. Recycled through the set's pool.
struct result_slot {
  void* host = nullptr;
  cudaEvent_t done = nullptr;
};

/// The pinned host buffers that staged exchange pieces pass through: `slots` chunks used in turn,
/// each with the event of its last reader (a destination's copy-in), which the next writer waits
/// for. Allocated on first use; owned by a set_state.
struct staging_ring {
  static constexpr std::size_t slots = 4;
  std::size_t chunk_bytes = std::size_t{8} << 20;
  char* memory[slots] = {};
  std::size_t next = 0;
  cudaEvent_t free[slots] = {};
  char* slot(std::size_t k) const noexcept { return memory[k]; }
};

class set_state {
 public:
  set_state() = default;
  set_state(const set_state&) = delete;
  set_state& operator=(const set_state&) = delete;

  ~set_state() {
    // Places first (they drain their streams), then what the root owned.
    places.clear();
    graphs.clear();
    if (link != nullptr) link->collective_graphs.erase_prefix(link_set_key());
    if (!root_events_.empty() || fold_done_ != nullptr) {
      quiet_device_switch on(root_device_);
      for (cudaEvent_t e : root_events_) (void)cudaEventDestroy(e);
      if (fold_done_ != nullptr) (void)cudaEventDestroy(fold_done_);
    }
    for (workspace* w : {&fold_, &array_}) {
      device_free(root_device_, w->dev);
      pinned_free(w->host);
    }
    device_free(root_device_, rank_dev_);
    pinned_free(missing_);
    pinned_free(host_words_);
    for (char* m : staging_.memory) pinned_free(m);
    for (void* chunk : slot_chunks_) pinned_free(chunk);
  }

  /// The places, in place order. On a set spanning processes, the places of other ranks are null
  /// (their entries keep the global place order: see `ranks`).
  std::vector<std::unique_ptr<place_state>> places;
  /// On a set spanning processes: the transport between its ranks and which rank owns which
  /// place; null and empty otherwise.
  std::shared_ptr<rank_link> link;
  rank_map ranks;
  /// The place folds run on: place 0, or on a set spanning processes this rank's first place.
  std::size_t root_index = 0;
  /// True if place `i` is this process's (always, on a set that does not span processes).
  bool local(std::size_t i) const noexcept { return places[i] != nullptr; }
  /// direct[i * k + j]: kernels on place i may read and write place j's device memory
  /// (same device, or peer access enabled and not forced off).
  std::vector<char> direct;
  /// peer[a * n + b] for device ordinals a, b (n = visible devices): peer access from a to b is
  /// enabled by this set.
  std::vector<char> peer;
  int visible_devices = 0;
  bool force_host_staging = false;
  /// Replay repeated value-returning calls as CUDA graphs (device_set_options::use_graphs).
  bool use_graphs = true;
  graph_cache graphs;
  /// Serialises the enqueueing of algorithm calls made through this set from several threads.
  std::mutex call_mutex;
  /// The figures measure_topology found for this set (a strata::topology), cached.
  std::shared_ptr<const void> measured_topology;

  std::size_t size() const noexcept { return places.size(); }
  /// True if memory of device `b` is reached from device `a` without the host: the same device,
  /// or peer access that this set enabled from a to b. (Forced host staging is applied on top, in
  /// `direct` and in the exchange.)
  bool devices_reach(int a, int b) const noexcept {
    return a == b || peer[static_cast<std::size_t>(a) * static_cast<std::size_t>(visible_devices) + b] != 0;
  }
  /// Waits for every place's stream, each with its device current. Call with call_mutex held (a
  /// wait on a stream that another thread's call is capturing would break the capture). Throws
  /// strata::cuda_error if work on a place failed.
  void wait_all_places() {
    for (auto& p : places) {
      if (p == nullptr) continue;
      device_guard g(p->device());
      p->synchronize();
    }
    check_ranks("strata::device_set::synchronize");
  }
  place_state& root() { return *places[root_index]; }
  bool reaches_root(std::size_t p) const noexcept { return direct[p * places.size() + root_index] != 0; }

  /// On a set spanning processes: a word of mapped pinned memory where the folds of collectives
  /// record the first rank that did not contribute (-1: none yet). Sticky: once a rank is
  /// missing, every later wait on the set throws.
  int* missing_rank_word() {
    if (missing_ == nullptr) {
      missing_ = static_cast<int*>(pinned_allocate(sizeof(int)));
      *missing_ = -1;
    }
    return missing_;
  }
  /// After a wait on a set spanning processes: throws (through the link, which aborts) if a
  /// fold found a rank missing. No-op on other sets.
  void check_ranks(const char* who) {
    if (link != nullptr && missing_ != nullptr && *const_cast<volatile int*>(missing_) >= 0)
      link->fail_missing(*missing_, who);
  }
  /// Device memory of `bytes` on the root device for the slots of a collective (all-gathered
  /// partials, a broadcast's chunks). Growing waits for every place first. Call with call_mutex
  /// held.
  char* rank_buffer(std::size_t bytes) {
    if (bytes > rank_bytes_) {
      wait_all_places();
      void* fresh = device_allocate(root_device_, bytes);
      device_free(root_device_, rank_dev_);
      rank_dev_ = fresh;
      rank_bytes_ = bytes;
      ++rank_generation_;
    }
    return static_cast<char*>(rank_dev_);
  }
  /// How often the rank buffer has grown. It grows at the same call on every rank (the sizes it is
  /// asked for are the same everywhere), so this count is the same on every rank, unlike the
  /// buffer's address: what a graph of a collective is keyed by (rank_fold.cuh).
  std::uint64_t rank_buffer_generation() const noexcept { return rank_generation_; }
  /// On a set spanning processes: its id among the sets over its link (the same on every rank),
  /// and the prefix of its keys in the link's collective graphs (rank_fold.cuh).
  std::uint64_t link_set_id = 0;
  std::string link_set_key() const {
    return std::string(reinterpret_cast<const char*>(&link_set_id), sizeof link_set_id);
  }

  /// Fold workspace: `bytes` on the root device and as pinned host memory, for the scalar
  /// partials of folds (ensure_fold_workspace) or for the array partials of array folds
  /// (ensure_array_workspace: a buffer of its own, so that arrays of any size do not grow the
  /// scalar slots). Growing waits for every place, since queued work of earlier calls may still
  /// use the old buffers. Call with call_mutex held.
  void ensure_fold_workspace(std::size_t bytes) { grow(fold_, bytes); }
  void* fold_device_buffer() const noexcept { return fold_.dev; }
  void* fold_host_buffer() const noexcept { return fold_.host; }
  void ensure_array_workspace(std::size_t bytes) { grow(array_, bytes); }
  void* array_device_buffer() const noexcept { return array_.dev; }
  void* array_host_buffer() const noexcept { return array_.host; }

  /// `n` words of pinned, mapped host memory that a call's device work fills and its host then
  /// reads after waiting (the data-dependent sizes of compaction and of the exchange). Grown on
  /// demand; call with call_mutex held, from a call that waits for the writers before it returns.
  std::uint64_t* host_words(std::size_t n) {
    if (n > host_words_n_) {
      void* fresh = pinned_allocate(n * sizeof(std::uint64_t));
      pinned_free(host_words_);
      host_words_ = static_cast<std::uint64_t*>(fresh);
      host_words_n_ = n;
    }
    return host_words_;
  }

  /// The staging ring of the exchange, its pinned memory allocated on first use. Call with
  /// call_mutex held.
  staging_ring& staging() {
    for (auto& m : staging_.memory)
      if (m == nullptr) m = static_cast<char*>(pinned_allocate(staging_.chunk_bytes));
    return staging_;
  }

  /// Event recorded on the root stream once the root has consumed the fold workspace; every
  /// place that writes the workspace waits on it first, so a call never overwrites partials
  /// that an earlier, still queued call has yet to read.
  cudaEvent_t fold_done_event() {
    if (fold_done_ == nullptr) {
      device_guard g(root_device_);
      STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&fold_done_, cudaEventDisableTiming));
    }
    return fold_done_;
  }
  /// Records the fold-done event on the root stream (after whatever the root has enqueued that
  /// reads the fold workspace) and notes that later gathers must wait on it. Every fold ends here.
  void mark_fold_consumed() {
    const cudaEvent_t e = fold_done_event();
    device_guard g(root_device_);
    STRATA_CUDA_CHECK(cudaEventRecord(e, root().stream()));
    fold_used = true;
  }
  bool fold_used = false;
  /// Whether reserve_exchange (exchange.cuh) has made this set's exchange events and staging ring.
  bool exchange_reserved = false;

  /// A free result slot (pinned host memory plus an event on the root device).
  result_slot acquire_slot() {
    std::lock_guard<std::mutex> lock(slot_mutex_);
    if (free_slots_.empty()) grow_slots();
    result_slot s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  void release_slot(result_slot s) noexcept {
    std::lock_guard<std::mutex> lock(slot_mutex_);
    free_slots_.push_back(s);
  }

  void set_root_device(int d) noexcept { root_device_ = d; }
  int root_device() const noexcept { return root_device_; }

 private:
  void grow_slots() {
    constexpr std::size_t per_chunk = 32;
    void* chunk = pinned_allocate(per_chunk * max_fold_value_bytes);
    slot_chunks_.push_back(chunk);
    device_guard g(root_device_);
    for (std::size_t i = 0; i < per_chunk; ++i) {
      cudaEvent_t e = nullptr;
      STRATA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      root_events_.push_back(e);
      free_slots_.push_back({static_cast<char*>(chunk) + i * max_fold_value_bytes, e});
    }
  }

  int root_device_ = 0;
  void* rank_dev_ = nullptr;
  std::size_t rank_bytes_ = 0;
  std::uint64_t rank_generation_ = 0;
  int* missing_ = nullptr;
  // Device memory on the root and pinned host memory of the same size.
  struct workspace {
    void* dev = nullptr;
    void* host = nullptr;
    std::size_t bytes = 0;
  };
  void grow(workspace& w, std::size_t bytes) {
    if (bytes <= w.bytes) return;
    wait_all_places();
    void* dev = device_allocate(root_device_, bytes);
    void* host = nullptr;
    try {
      host = pinned_allocate(bytes);
    } catch (...) {
      device_free(root_device_, dev);
      throw;
    }
    device_free(root_device_, w.dev);
    pinned_free(w.host);
    w = workspace{dev, host, bytes};
  }
  workspace fold_, array_;
  staging_ring staging_;
  std::uint64_t* host_words_ = nullptr;
  std::size_t host_words_n_ = 0;
  cudaEvent_t fold_done_ = nullptr;
  std::mutex slot_mutex_;
  std::vector<void*> slot_chunks_;
  std::vector<cudaEvent_t> root_events_;
  std::vector<result_slot> free_slots_;
};

/// Runs `f(place)` for place `i` of `s` with its device current and the place marked as the one
/// this thread works for (fault injection attributes failures to it): the one way Strata enqueues
/// work on a place.
template <class F>
decltype(auto) at_place(set_state& s, std::size_t i, F&& f) {
  place_state& p = *s.places[i];
  device_guard g(p.device());
  active_place_scope a(static_cast<int>(i));
  return f(p);
}

/// One call on a set (an algorithm, element access, synchronize): an NVTX range named after it
/// and the set's call lock, held while the call's work is enqueued, so calls from several host
/// threads on one set do not interleave and none lands inside another's graph capture.
class call_scope {
 public:
  call_scope(set_state& s, const char* name) : range_(name), state_(s), lock_(s.call_mutex) {}
  set_state& state() const noexcept { return state_; }

 private:
  nvtx_range range_;
  set_state& state_;
  std::lock_guard<std::mutex> lock_;
};

/// A call over two sets (a copy or an exchange from one set's places to another's): the NVTX
/// range and both sets' call locks, taken together without deadlock (one lock when the sets are
/// the same).
class two_set_scope {
 public:
  two_set_scope(set_state& a, set_state& b, const char* name)
      : range_(name), l1_(a.call_mutex, std::defer_lock), l2_(b.call_mutex, std::defer_lock) {
    if (&a == &b)
      l1_.lock();
    else
      std::lock(l1_, l2_);
  }

 private:
  nvtx_range range_;
  std::unique_lock<std::mutex> l1_, l2_;
};

}  // namespace strata::detail
