// A measured topology: each place's memory bandwidth and, for every ordered pair of places, the
// bandwidth and latency of the path the exchange uses between them (a copy within a device, a peer
// copy, or host staging); and the partition policy that weights places by what was measured.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/device_set.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace strata {

/// What `measure_topology` found for a device_set. Bandwidths count the bytes moved per second
/// (a copy of B bytes moves B); `memory_gbps` counts a copy within the device as read plus write
/// (2B), as the benchmarks do.
struct topology {
  /// The device of each place (its ordinal in the process that owns the place).
  std::vector<int> devices;
  /// The rank that owns each place: all 0 unless the set spans processes.
  std::vector<int> ranks;
  /// Per place: its device's copy bandwidth within the device, GB/s (read + write).
  std::vector<double> memory_gbps;
  /// Per ordered pair (i * places + j): bandwidth of a large copy from place i to place j over
  /// the exchange's path, GB/s. For i == j, the device's copy within itself (bytes moved). On a
  /// set spanning processes, 0 for two places of different ranks (not measured: the exchange
  /// moves their data through NCCL).
  std::vector<double> copy_gbps;
  /// Per ordered pair: time of a 4-byte copy over that path, microseconds (0 where copy_gbps is).
  std::vector<double> latency_us;
  /// Per ordered pair: 1 where the pair has direct access (one device, or peer access), 0 where
  /// the exchange stages through pinned host memory or the places lie on different ranks.
  std::vector<char> direct;
  /// Wall time the measurement took, seconds.
  double seconds = 0;

  /// Number of places.
  std::size_t places() const noexcept { return devices.size(); }
  /// Copy bandwidth from place i to place j, GB/s. Throws std::out_of_range for a bad place.
  double copy(std::size_t i, std::size_t j) const { return copy_gbps.at(index(i, j)); }
  /// Small-copy latency from place i to place j, microseconds. Throws std::out_of_range.
  double latency(std::size_t i, std::size_t j) const { return latency_us.at(index(i, j)); }

 private:
  std::size_t index(std::size_t i, std::size_t j) const {
    if (i >= places() || j >= places()) throw std::out_of_range("strata::topology: place out of range");
    return i * places() + j;
  }
};

/// How much `measure_topology` copies.
struct topology_options {
  /// Bytes of each bandwidth copy (the best of `repeats` is kept).
  std::size_t bandwidth_bytes = std::size_t{256} << 20;
  /// Timed repetitions of each copy.
  int repeats = 3;
  /// Measure again even if the set has cached figures.
  bool refresh = false;
};

namespace detail {

/// Checks measure_topology's options before any device work: a bandwidth copy of at least 4
/// bytes (the size of the latency copy: a smaller one measures nothing but latency) and at least
/// one timed repetition. Throws std::invalid_argument naming the bad field otherwise.
inline void check_topology_options(const topology_options& o) {
  if (o.bandwidth_bytes < 4)
    throw std::invalid_argument("strata::measure_topology: bandwidth_bytes is " + std::to_string(o.bandwidth_bytes) +
                                "; at least 4 bytes are needed (the default is 256 MiB)");
  if (o.repeats < 1)
    throw std::invalid_argument("strata::measure_topology: repeats is " + std::to_string(o.repeats) +
                                "; at least one timed repetition is needed");
}

/// Place weights proportional to the throughput each place can expect: its device's measured
/// bandwidth shared evenly by the places on that device (of the same rank: `ranks[i]` owns
/// place i, and two ranks' device 0 are different GPUs). Pure math (host tests exercise it).
/// Throws std::invalid_argument if the lists differ in length or a bandwidth is not positive.
inline std::vector<double> throughput_weights(const std::vector<int>& ranks, const std::vector<int>& devices,
                                              const std::vector<double>& gbps) {
  if (devices.size() != gbps.size() || ranks.size() != gbps.size())
    throw std::invalid_argument("strata: " + std::to_string(gbps.size()) + " bandwidths for " +
                                std::to_string(devices.size()) + " places (" + std::to_string(ranks.size()) + " owners)");
  std::map<std::pair<int, int>, int> sharing;
  for (std::size_t i = 0; i < devices.size(); ++i) ++sharing[{ranks[i], devices[i]}];
  std::vector<double> w(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!(gbps[i] > 0)) throw std::invalid_argument("strata: place " + std::to_string(i) + " has no positive bandwidth");
    w[i] = gbps[i] / sharing[{ranks[i], devices[i]}];
  }
  return w;
}

/// throughput_weights of places all in one process.
inline std::vector<double> throughput_weights(const std::vector<int>& devices, const std::vector<double>& gbps) {
  return throughput_weights(std::vector<int>(devices.size(), 0), devices, gbps);
}

/// What one rank measured of its own places, as the one value measure_topology all-gathers on a
/// set spanning processes: each of its places' device, and the figures of every pair of its own
/// places (index i * places + j; zero elsewhere).
struct rank_topology {
  int devices[max_places];
  double copy_gbps[max_places * max_places];
  double latency_us[max_places * max_places];
  char direct[max_places * max_places];
};

/// The topology of a set spanning processes from every rank's own figures (`all[r]`: rank r's;
/// place i owned by rank `t.ranks[i]`, `t` sized for its places): each place's device, and each
/// pair of places of one rank, from that rank; pairs of places of different ranks stay 0. The
/// same on every rank, since every rank merges the same values. Pure (host tests exercise it).
/// Throws std::invalid_argument if an owner has no figures or there are more than max_places.
inline void merge_rank_topologies(topology& t, const std::vector<rank_topology>& all) {
  const std::size_t k = t.ranks.size();
  if (k > max_places) throw std::invalid_argument("strata: a topology of more than max_places places");
  t.devices.assign(k, -1);
  t.copy_gbps.assign(k * k, 0);
  t.latency_us.assign(k * k, 0);
  t.direct.assign(k * k, 0);
  t.memory_gbps.assign(k, 0);
  for (std::size_t i = 0; i < k; ++i) {
    const int r = t.ranks[i];
    if (r < 0 || static_cast<std::size_t>(r) >= all.size())
      throw std::invalid_argument("strata: place " + std::to_string(i) + " is owned by rank " + std::to_string(r) +
                                  ", which gave no figures");
    t.devices[i] = all[static_cast<std::size_t>(r)].devices[i];
    for (std::size_t j = 0; j < k; ++j) {
      if (t.ranks[j] != r) continue;
      const rank_topology& m = all[static_cast<std::size_t>(r)];
      t.copy_gbps[i * k + j] = m.copy_gbps[i * k + j];
      t.latency_us[i * k + j] = m.latency_us[i * k + j];
      t.direct[i * k + j] = m.direct[i * k + j];
    }
    t.memory_gbps[i] = 2 * t.copy_gbps[i * k + i];
  }
}

// Seconds of the best of `repeats` runs of `enqueue(stream)` on a stream of `device`.
template <class Enqueue>
double best_time(int device, cudaStream_t stream, int repeats, Enqueue&& enqueue) {
  device_guard g(device);
  cudaEvent_t start = nullptr, stop = nullptr;
  STRATA_CUDA_CHECK(cudaEventCreate(&start));
  const cudaError_t e = cudaEventCreate(&stop);
  if (e != cudaSuccess) {
    (void)cudaEventDestroy(start);
    throw_cuda_error(e, "cudaEventCreate", device, __FILE__, __LINE__);
  }
  double best = 1e30;
  try {
    enqueue(stream);  // warm up (and page in staging memory)
    STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int r = 0; r < repeats; ++r) {
      STRATA_CUDA_CHECK(cudaEventRecord(start, stream));
      enqueue(stream);
      STRATA_CUDA_CHECK(cudaEventRecord(stop, stream));
      STRATA_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      STRATA_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      best = std::min(best, static_cast<double>(ms) / 1e3);
    }
  } catch (...) {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
    throw;
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return best;
}

// One copy of `bytes` from (src on device a) to (dst on device b) over the exchange's path: a
// device copy, a peer copy, or device -> pinned host -> device, all on `stream` (of device b).
inline void path_copy(void* dst, int b, const void* src, int a, std::size_t bytes, bool direct, void* pinned,
                      cudaStream_t stream) {
  if (direct)
    copy_direct(dst, b, src, a, bytes, stream);
  else {
    STRATA_CUDA_CHECK(cudaMemcpyAsync(pinned, src, bytes, cudaMemcpyDeviceToHost, stream));
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, stream));
  }
}

}  // namespace detail

namespace detail {

// Measures the pairs of `set`'s places that are both this process's into `t` (sized for the set):
// copy_gbps, latency_us and direct. Throws strata::cuda_error.
inline void measure_local_pairs(const device_set& set, set_state& s, const topology_options& options, topology& t) {
  const std::size_t k = set.size();
  const std::size_t big = options.bandwidth_bytes;
  // Two buffers per device of this process's places, and pinned staging, made once.
  std::map<int, std::pair<device_buffer, device_buffer>> buffers;
  for (std::size_t i = 0; i < k; ++i) {
    if (!s.local(i)) continue;
    const int d = set.device(i);
    if (buffers.count(d) != 0) continue;
    buffers.emplace(d, std::make_pair(device_buffer(d, big, set.stream(i)), device_buffer(d, big, set.stream(i))));
    // The copies read the source: give it defined bytes (compute-sanitizer's initcheck).
    device_guard g(d);
    STRATA_CUDA_CHECK(cudaMemsetAsync(buffers.at(d).first.get(), 0, big, set.stream(i)));
    STRATA_CUDA_CHECK(cudaStreamSynchronize(set.stream(i)));
  }
  struct pinned_block {
    void* p;
    explicit pinned_block(std::size_t b) : p(pinned_allocate(b)) {}
    pinned_block(const pinned_block&) = delete;
    pinned_block& operator=(const pinned_block&) = delete;
    ~pinned_block() { pinned_free(p); }
  } pinned(big);
  std::map<std::tuple<int, int, bool>, std::pair<double, double>> measured;  // (a, b, direct) -> (GB/s, us)
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j) {
      if (!s.local(i) || !s.local(j)) continue;  // another rank's place: its rank measures it
      const int a = set.device(i), b = set.device(j);
      const bool direct = places_reach(s, i, s, j);
      t.direct[i * k + j] = direct ? 1 : 0;
      const auto key = std::make_tuple(a, b, direct);
      if (measured.count(key) == 0) {
        void* dst = (a == b ? buffers.at(b).second : buffers.at(b).first).get();
        const void* src = buffers.at(a).first.get();
        cudaStream_t stream = set.stream(j);
        const double t_big = best_time(b, stream, options.repeats, [&](cudaStream_t st) {
          path_copy(dst, b, src, a, big, direct, pinned.p, st);
        });
        const double t_small = best_time(b, stream, options.repeats, [&](cudaStream_t st) {
          path_copy(dst, b, src, a, 4, direct, pinned.p, st);
        });
        measured[key] = {static_cast<double>(big) / t_big / 1e9, t_small * 1e6};
      }
      t.copy_gbps[i * k + j] = measured[key].first;
      t.latency_us[i * k + j] = measured[key].second;
    }
}

}  // namespace detail

/// Measures `set`: every device's copy bandwidth, and for every ordered pair of places the
/// bandwidth and latency of the exchange's path between them (pairs of places with the same
/// devices and path are measured once). The figures are cached in the set (all copies of it share
/// them); later calls return them unless `options.refresh`. Takes the set's call lock and runs
/// its copies on the places' streams after waiting for their work. Cost: about `repeats + 1`
/// copies of `bandwidth_bytes` per distinct device and per distinct (device, device, path), plus
/// small copies; tens of milliseconds per pair on NVLink, more over PCIe or host staging. Needs
/// `2 * bandwidth_bytes` free on each device and as much pinned host memory.
///
/// On a set spanning processes it is a collective (every rank calls it, with the same
/// `options.refresh`): each rank measures its own places and their pairs, then one all-gather
/// gives every rank the same figures for all places; pairs of places of different ranks are not
/// measured (0; see topology). Throws strata::cuda_error if a CUDA call or an allocation fails;
/// across ranks the ranks first agree, so if one rank fails every rank throws strata::cuda_error
/// (that rank its own, the others one naming it), and the link's error (strata::nccl_error) if a
/// rank does not take part. Throws std::invalid_argument, before any device work, for
/// `bandwidth_bytes` under 4 or `repeats` under 1 (zero figures would be cached otherwise).
inline const topology& measure_topology(const device_set& set, topology_options options = {}) {
  detail::check_topology_options(options);
  const detail::call_scope scope(set.state(), "strata::measure_topology");
  detail::set_state& s = scope.state();
  if (s.measured_topology && !options.refresh) return *std::static_pointer_cast<const topology>(s.measured_topology);
  const auto t0 = std::chrono::steady_clock::now();
  s.wait_all_places();
  const std::size_t k = set.size();
  const bool spans = s.link != nullptr;
  auto topo = std::make_shared<topology>();
  topo->devices = set.devices();
  for (std::size_t i = 0; i < k; ++i) topo->ranks.push_back(set.owner_rank(i));
  topo->memory_gbps.assign(k, 0);
  topo->copy_gbps.assign(k * k, 0);
  topo->latency_us.assign(k * k, 0);
  topo->direct.assign(k * k, 0);
  // Every rank measures its own places; across ranks they then agree on whether all could
  // (a rank out of memory makes every rank throw, none waits for it), and the figures cross in
  // one all-gather, whose buffers are reserved with the measurement.
  if (spans) detail::reserve_all_gather(s, sizeof(detail::rank_verdict));
  std::exception_ptr failed;
  try {
    if (spans) detail::reserve_all_gather(s, sizeof(detail::rank_topology));
    detail::measure_local_pairs(set, s, options, *topo);
  } catch (...) {
    failed = std::current_exception();
  }
  detail::throw_if_any_rank_failed(s, failed, "strata::measure_topology", "measuring its places", [] {});
  if (spans) {  // every rank's figures to every rank
    auto mine = std::make_unique<detail::rank_topology>();
    for (std::size_t i = 0; i < k; ++i) mine->devices[i] = topo->devices[i];
    std::copy(topo->copy_gbps.begin(), topo->copy_gbps.end(), mine->copy_gbps);
    std::copy(topo->latency_us.begin(), topo->latency_us.end(), mine->latency_us);
    std::copy(topo->direct.begin(), topo->direct.end(), mine->direct);
    detail::merge_rank_topologies(*topo, detail::all_gather_to_host(s, *mine, "strata::measure_topology"));
  } else {
    for (std::size_t i = 0; i < k; ++i) topo->memory_gbps[i] = 2 * topo->copy_gbps[i * k + i];
  }
  topo->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.measured_topology = topo;
  return *topo;
}

/// A layout policy weighting every place by its measured throughput: its device's memory
/// bandwidth (measure_topology, cached in the set) shared evenly among the places on that
/// device, so GPUs of different speed, or sharing a GPU, finish element-wise work together. For
/// your own calibration (GPUs with other work), pass your figures to partition_policy::weighted.
/// On a set spanning processes every rank gets the same policy (a collective, as measure_topology).
/// Throws as measure_topology.
inline partition_policy measured_partition_policy(const device_set& set) {
  const topology& t = measure_topology(set);
  return partition_policy::weighted(detail::throughput_weights(t.ranks, t.devices, t.memory_gbps));
}

}  // namespace strata
