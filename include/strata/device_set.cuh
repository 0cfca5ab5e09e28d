// Places and device sets: where a distributed range lives and whose streams run its work.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata {

namespace detail {
/// What cudaGetDeviceCount's answer means: `n` devices on success; none when there truly is no
/// device (cudaErrorNoDevice) or no driver at all (cudaErrorInsufficientDriver while the driver
/// version reads 0, as on a machine without the NVIDIA driver). Any other error, a driver older
/// than the runtime among them, is thrown as strata::cuda_error: a machine whose GPUs cannot be
/// used must not pass for one without GPUs.
inline int device_count_from(cudaError_t e, int n, int driver_version, int runtime_version) {
  if (e == cudaSuccess) return n;
  if (e == cudaErrorNoDevice) return 0;
  if (e == cudaErrorInsufficientDriver && driver_version == 0) return 0;
  // The stub libcuda.so that container images and CI machines carry for linking, where no driver
  // is installed: no driver, as far as the caller is concerned.
  if (e == cudaErrorStubLibrary) return 0;
  std::string call = "cudaGetDeviceCount";
  if (e == cudaErrorInsufficientDriver) {
    const auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
    call += " (the driver is too old: it supports CUDA " + version(driver_version) + ", this program needs CUDA " +
            version(runtime_version) + "; update the NVIDIA driver)";
  }
  throw cuda_error(e, call, -1, __FILE__, __LINE__);
}
}  // namespace detail

/// The number of CUDA devices this process can see. Returns 0 where there is no device or no
/// NVIDIA driver at all, so callers can decide to skip GPU work. Throws strata::cuda_error when
/// devices exist but cannot be used, e.g. cudaErrorInsufficientDriver naming both CUDA versions
/// when the driver is older than the runtime Strata was built with.
inline int visible_device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  int driver = 0, runtime = 0;
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
  }
  return detail::device_count_from(e, n, driver, runtime);
}

/// Options for making a device_set.
struct device_set_options {
  /// Enable peer access between every pair of distinct devices that supports it (default).
  bool enable_peer_access = true;
  /// Route every exchange between distinct places through pinned host memory, even where the
  /// places share a device or have peer access. Also forced on by the environment variable
  /// `STRATA_DISABLE_P2P=1`. Meant for testing the fallback path and for broken peer paths.
  bool force_host_staging = false;
  /// After enabling peer access between two devices, move a known pattern across the pair and
  /// read it back; a pair whose copy comes back wrong is treated as having no peer path (host
  /// staging). Peer access can be reported and still be broken, e.g. behind an IOMMU.
  bool verify_peer_access = true;
  /// Replay repeated value-returning calls (same ranges, operators and temp storage) as CUDA
  /// graphs, which cuts the host launch overhead that dominates small multi-place calls. Also
  /// turned off by the environment variable `STRATA_DISABLE_GRAPHS=1`.
  bool use_graphs = true;
  /// Share one set per process: making a set with the same device list and options as a set
  /// that is still alive returns that set (it compares equal, and ranges on either meet in one
  /// call), so `device_set::all()` called in two places of a program gives one set. False makes a
  /// set of its own, with its own streams, that equals only its copies.
  bool shared = true;
  /// Streams of your own, one per place in place order (empty, the default: Strata makes a
  /// non-blocking stream per place). Strata then enqueues all of place i's work on streams[i],
  /// so it is ordered with what you enqueue there, and never destroys them: they must outlive the
  /// set. Each must be a stream you created on place i's device (not the legacy or per-thread
  /// default stream, which CUDA graph capture refuses); enqueue on it from the thread that makes
  /// the Strata calls on the set. A set with streams of its own is never shared (as
  /// `shared = false`). The constructor throws std::invalid_argument for a count that is not the
  /// number of places, a default stream, or a stream of another device.
  std::vector<cudaStream_t> streams;
};

namespace detail {
/// Whether the environment switch `name` is on: set, and neither empty nor "0".
inline bool env_switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}
}  // namespace detail

/// An ordered, shared list of places. A place is one device ordinal plus what Strata keeps for
/// it there: a non-blocking stream and cached temporary storage. A device may appear in several
/// places (each with its own stream). Place 0 is the root: folds of per-place results run
/// there. Copies are cheap and share the places; the last copy destroys them, freeing each
/// place's resources on its own device.
///
/// Making a set validates every ordinal, creates the places and enables peer access between
/// every pair of distinct devices that supports it, recording which pairs have it.
class device_set {
 public:
  /// Every visible device, in ordinal order. Throws strata::cuda_error (cudaErrorNoDevice) if
  /// no device is visible.
  static device_set all(device_set_options options = {}) {
    const int n = visible_device_count();
    if (n == 0)
      throw cuda_error(cudaErrorNoDevice, "strata::device_set::all()", -1, __FILE__,
                       __LINE__);
    std::vector<int> ordinals(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ordinals[static_cast<std::size_t>(i)] = i;
    return device_set(std::move(ordinals), options);
  }

  /// `k` places on device `ordinal`, each with its own stream (how tests run multi-place code
  /// on one GPU). Throws std::invalid_argument if `k == 0` or `k` exceeds the place limit, and
  /// std::out_of_range if `ordinal` is not a visible device.
  static device_set repeat(int ordinal, std::size_t k, device_set_options options = {}) {
    if (k == 0) throw std::invalid_argument("strata::device_set::repeat: the number of places must be positive");
    check_count(k);
    return device_set(std::vector<int>(k, ordinal), options);
  }

  /// Places on the given device ordinals, in the order given (a device may repeat).
  /// Throws std::invalid_argument if the list is empty or longer than 64 places, and
  /// std::out_of_range naming the bad ordinal and the number of visible devices if an ordinal
  /// is not a visible device.
  device_set(std::initializer_list<int> ordinals) : device_set(std::vector<int>(ordinals)) {}

  /// As the initializer-list form, with options.
  explicit device_set(std::vector<int> ordinals, device_set_options options = {}) {
    if (ordinals.empty()) throw std::invalid_argument("strata::device_set: the list of devices is empty");
    check_count(ordinals.size());
    const int n = visible_device_count();
    for (int d : ordinals)
      if (d < 0 || d >= n)
        throw std::out_of_range("strata::device_set: device ordinal " + std::to_string(d) + " is out of range (" +
                                std::to_string(n) + " CUDA device" + (n == 1 ? " is" : "s are") + " visible)");
    if (detail::env_switch_on("STRATA_DISABLE_P2P")) options.force_host_staging = true;
    if (detail::env_switch_on("STRATA_DISABLE_GRAPHS")) options.use_graphs = false;
    if (!options.streams.empty()) {
      check_user_streams(ordinals, options.streams);
      options.shared = false;
    }
    if (!options.shared) {
      state_ = make_state(ordinals, options, n);
      return;
    }
    // The live set with this device list and options, or a new one registered for later calls.
    std::vector<int> key = ordinals;
    for (bool flag : {options.enable_peer_access, options.force_host_staging, options.verify_peer_access,
                      options.use_graphs})
      key.push_back(flag ? -1 : -2);
    auto& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    if (auto live = reg.sets[key].lock()) {
      state_ = std::move(live);
      return;
    }
    for (auto it = reg.sets.begin(); it != reg.sets.end();) it = it->second.expired() ? reg.sets.erase(it) : std::next(it);
    state_ = make_state(ordinals, options, n);
    reg.sets[key] = state_;
  }

  /// Number of places (on a set spanning processes: over all ranks).
  std::size_t size() const noexcept { return state_->size(); }
  /// Device ordinal of place `i`, or -1 for a place of another process (a set spanning
  /// processes). Throws std::out_of_range if `i >= size()`.
  int device(std::size_t i) const {
    check_place(i);
    return state_->local(i) ? state_->places[i]->device() : -1;
  }
  /// True if this set's places span several processes (strata::spanning_set, strata/nccl.cuh).
  bool spans_processes() const noexcept { return state_->link != nullptr; }
  /// This process's rank among those whose places the set spans (0 unless it spans processes).
  int rank() const noexcept { return spans_processes() ? state_->ranks.rank() : 0; }
  /// Number of ranks whose places the set spans (1 unless it spans processes).
  int ranks() const noexcept { return spans_processes() ? state_->ranks.ranks() : 1; }
  /// True if place `i` belongs to this process (always, unless the set spans processes).
  /// Throws std::out_of_range if `i >= size()`.
  bool is_local(std::size_t i) const {
    check_place(i);
    return state_->local(i);
  }
  /// The rank owning place `i` (0 unless the set spans processes). Throws std::out_of_range if
  /// `i >= size()`.
  int owner_rank(std::size_t i) const {
    check_place(i);
    return spans_processes() ? state_->ranks.owner(i) : 0;
  }
  /// The non-blocking stream of place `i` (on its device). Work a user enqueues there is
  /// ordered with Strata's work on that place. Enqueue it from the thread that makes the Strata
  /// calls on this set: from another thread it could land inside a call being captured into a
  /// graph and break it (docs/errors.md, Threads). Throws std::out_of_range if `i >= size()`,
  /// std::invalid_argument for a place of another process.
  cudaStream_t stream(std::size_t i) const { return place(i).stream(); }
  /// The device ordinals of all places, in place order (-1 for places of other processes).
  std::vector<int> devices() const {
    std::vector<int> d;
    for (auto& p : state_->places) d.push_back(p ? p->device() : -1);
    return d;
  }
  /// True if kernels on place `i` read and write place `j`'s memory directly (same device, or
  /// peer access enabled, and host staging not forced). Throws std::out_of_range for a bad place.
  bool direct_access(std::size_t i, std::size_t j) const {
    (void)place(i);
    (void)place(j);
    return state_->direct[i * size() + j] != 0;
  }
  /// True if this set enabled peer access from device `a` to device `b` (distinct ordinals).
  bool peer_access_enabled(int a, int b) const noexcept {
    const int n = state_->visible_devices;
    if (a < 0 || b < 0 || a >= n || b >= n) return false;
    return state_->peer[static_cast<std::size_t>(a) * n + b] != 0;
  }
  /// True if every exchange between places goes through pinned host memory.
  bool host_staging_forced() const noexcept { return state_->force_host_staging; }

  /// Waits until all work Strata enqueued on every place has finished. Takes the set's call lock
  /// (waiting on a stream that another thread's call is capturing would break that capture), so
  /// calls from other threads wait until it returns. Throws strata::cuda_error if any of the work
  /// failed.
  void synchronize() const {
    const detail::call_scope scope(*state_, "strata::device_set::synchronize");
    scope.state().wait_all_places();
  }

  /// Frees the device memory the places keep between calls (CUB's temporary storage and the
  /// sort's scratch segments), after waiting for their work; later calls allocate it again.
  /// Takes the set's call lock. Throws strata::cuda_error if any of the work failed.
  void release_cached_memory() const {
    const detail::call_scope scope(*state_, "strata::device_set::release_cached_memory");
    for (std::size_t i = 0; i < size(); ++i)
      if (scope.state().local(i)) detail::at_place(scope.state(), i, [](detail::place_state& p) { p.release_cached(); });
  }

  /// Two sets are equal when they share the same places: one is a copy of the other, or both were
  /// made with the same devices and options while one was alive (device_set_options::shared).
  friend bool operator==(const device_set& a, const device_set& b) noexcept { return a.state_ == b.state_; }
  /// True if the sets do not share their places.
  friend bool operator!=(const device_set& a, const device_set& b) noexcept { return !(a == b); }

  /// Implementation access for Strata's own algorithms.
  detail::set_state& state() const noexcept { return *state_; }
  /// Internal: the set over an existing state (how strata::spanning_set makes its sets).
  explicit device_set(std::shared_ptr<detail::set_state> state) : state_(std::move(state)) {}
  /// Implementation access for Strata's own algorithms (futures keep the state alive).
  const std::shared_ptr<detail::set_state>& shared_state() const noexcept { return state_; }

 private:
  static void check_count(std::size_t k) {
    if (k > detail::max_places)
      throw std::invalid_argument("strata::device_set: " + std::to_string(k) + " places requested, at most " +
                                  std::to_string(detail::max_places) + " are supported");
  }

  // The sets made with shared = true that are alive, by device list and options.
  struct set_registry {
    std::mutex mutex;
    std::map<std::vector<int>, std::weak_ptr<detail::set_state>> sets;
  };
  static set_registry& registry() {
    static set_registry r;
    return r;
  }

  static std::shared_ptr<detail::set_state> make_state(const std::vector<int>& ordinals, const device_set_options& options,
                                                       int n) {
    auto s = std::make_shared<detail::set_state>();
    s->use_graphs = options.use_graphs;
    s->visible_devices = n;
    s->force_host_staging = options.force_host_staging;
    s->set_root_device(ordinals[0]);
    for (std::size_t i = 0; i < ordinals.size(); ++i)
      s->places.push_back(std::make_unique<detail::place_state>(
          ordinals[i], options.streams.empty() ? cudaStream_t{} : options.streams[i]));
    s->peer.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
    if (options.enable_peer_access) enable_peers(*s, ordinals, options.verify_peer_access);
    const std::size_t k = ordinals.size();
    s->direct.assign(k * k, 0);
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < k; ++j) {
        const bool reach = i == j || (!s->force_host_staging && s->devices_reach(ordinals[i], ordinals[j]));
        s->direct[i * k + j] = reach ? 1 : 0;
      }
    return s;
  }

  // device_set_options::streams: one per place, none a default stream, each on its place's device.
  static void check_user_streams(const std::vector<int>& ordinals, const std::vector<cudaStream_t>& streams) {
    const std::string what = "strata::device_set: device_set_options::streams: ";
    if (streams.size() != ordinals.size())
      throw std::invalid_argument(what + std::to_string(streams.size()) + " streams given for " +
                                  std::to_string(ordinals.size()) + " places");
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const cudaStream_t st = streams[i];
      if (st == nullptr || st == cudaStreamLegacy || st == cudaStreamPerThread)
        throw std::invalid_argument(what + "stream " + std::to_string(i) +
                                    " is a default stream; pass a stream made with cudaStreamCreate");
      int dev = -1;
      const cudaError_t e = cudaStreamGetDevice(st, &dev);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw std::invalid_argument(what + "stream " + std::to_string(i) + " is not a valid stream (" +
                                    cudaGetErrorString(e) + ")");
      }
      if (dev != ordinals[i])
        throw std::invalid_argument(what + "stream " + std::to_string(i) + " belongs to device " + std::to_string(dev) +
                                    " but place " + std::to_string(i) + " is device " + std::to_string(ordinals[i]));
    }
  }

  void check_place(std::size_t i) const {
    if (i >= size())
      throw std::out_of_range("strata::device_set: place " + std::to_string(i) + " is out of range for " +
                              std::to_string(size()) + " places");
  }
  detail::place_state& place(std::size_t i) const {
    check_place(i);
    if (!state_->local(i))
      throw std::invalid_argument("strata::device_set: place " + std::to_string(i) + " belongs to rank " +
                                  std::to_string(state_->ranks.owner(i)) + ", not to this process (rank " +
                                  std::to_string(state_->ranks.rank()) + ")");
    return *state_->places[i];
  }

  // Peer access is a property of a device pair and of the process: enable it once per ordered
  // pair of distinct devices that supports it. A pair already enabled (by another set or by
  // the user) counts as enabled.
  static void enable_peers(detail::set_state& s, const std::vector<int>& ordinals, bool verify) {
    std::vector<int> distinct;
    for (int d : ordinals) {
      bool seen = false;
      for (int e : distinct) seen = seen || e == d;
      if (!seen) distinct.push_back(d);
    }
    const int n = s.visible_devices;
    for (int a : distinct)
      for (int b : distinct) {
        if (a == b) continue;
        int can = 0;
        STRATA_CUDA_CHECK_ON(a, cudaDeviceCanAccessPeer(&can, a, b));
        if (!can) continue;
        detail::device_guard g(a);
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          (void)cudaGetLastError();
        } else if (e != cudaSuccess) {
          // Reported capable but refused (e.g. too many peers): fall back to host staging.
          (void)cudaGetLastError();
          continue;
        }
        if (verify && !peer_path_works(a, b)) continue;
        s.peer[static_cast<std::size_t>(a) * n + b] = 1;
      }
  }

  // A known pattern written on `a`, copied peer to peer into `b`, read back from `b`.
  static bool peer_path_works(int a, int b) {
    constexpr std::size_t words = 1024;
    std::vector<std::uint32_t> pattern(words), back(words, 0);
    for (std::size_t i = 0; i < words; ++i) pattern[i] = 0x9E3779B9u * static_cast<std::uint32_t>(i + 1) ^ 0xA5A5u;
    void* src = detail::device_allocate(a, words * 4);
    void* dst = nullptr;
    bool ok = false;
    try {
      dst = detail::device_allocate(b, words * 4);
      {
        detail::device_guard g(b);
        STRATA_CUDA_CHECK(cudaMemset(dst, 0, words * 4));
        STRATA_CUDA_CHECK(cudaDeviceSynchronize());
      }
      detail::device_guard g(a);
      STRATA_CUDA_CHECK(cudaMemcpy(src, pattern.data(), words * 4, cudaMemcpyHostToDevice));
      STRATA_CUDA_CHECK(cudaMemcpyPeer(dst, b, src, a, words * 4));
      STRATA_CUDA_CHECK(cudaMemcpy(back.data(), dst, words * 4, cudaMemcpyDeviceToHost));
      ok = back == pattern;
    } catch (...) {
      detail::device_free(a, src);
      detail::device_free(b, dst);
      throw;
    }
    detail::device_free(a, src);
    detail::device_free(b, dst);
    return ok;
  }

  std::shared_ptr<detail::set_state> state_;
};

namespace detail {
/// A set whose places span the ranks that `link` joins, seen from this rank: `map` says which
/// rank owns which place; this rank's places (map.count(rank) of them) all live on link's GPU, each
/// with its own stream; the other ranks' places are null. Its root is this rank's first place.
/// Graph replay follows options.use_graphs, which must be the same on every rank (strata::spanning_set
/// agrees on it). Every rank must make it with the same map (strata::spanning_set does). Throws as
/// place creation.
inline device_set make_spanning_set(std::shared_ptr<rank_link> link, rank_map map, device_set_options options) {
  if (env_switch_on("STRATA_DISABLE_P2P")) options.force_host_staging = true;
  auto s = std::make_shared<set_state>();
  const int n = visible_device_count();
  const int dev = link->device();
  s->use_graphs = options.use_graphs;
  s->visible_devices = n;
  s->force_host_staging = options.force_host_staging;
  s->set_root_device(dev);
  s->peer.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
  const std::size_t k = map.places();
  s->root_index = map.first(map.rank());
  for (std::size_t g = 0; g < k; ++g) {
    if (!map.local(g)) {
      s->places.push_back(nullptr);
      continue;
    }
    s->places.push_back(std::make_unique<place_state>(dev));
    s->places.back()->link = link.get();
  }
  s->direct.assign(k * k, 0);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j)
      s->direct[i * k + j] = (i == j || (map.local(i) && map.local(j) && !s->force_host_staging)) ? 1 : 0;
  s->link_set_id = ++link->next_set_id;
  s->link = std::move(link);
  s->ranks = std::move(map);
  return device_set(std::move(s));
}
}  // namespace detail

}  // namespace strata
