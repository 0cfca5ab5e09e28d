// Multi-place sort: sort, stable_sort, sort_by_key, stable_sort_by_key. Every place sorts its
// segment with CUB; an exact splitter search finds, for every place's share of the output, the
// piece of every sorted segment that belongs there; one exchange moves each key once; every place
// merges the sorted runs it received with CUB. The layout does not change. docs/design.md says
// why this algorithm and what it costs.
#pragma once

#include <strata/algorithm/copy.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/distributed_span.cuh>
#include <strata/tags.cuh>

#include <cub/device/device_merge.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/util_type.cuh>

#include <cuda/std/functional>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

// ---- the order ------------------------------------------------------------------------

// 1: a "less" function object, 2: a "greater" one, 0: anything else.
template <class C>
struct comparator_kind : std::integral_constant<int, 0> {};
template <class T>
struct comparator_kind<::cuda::std::less<T>> : std::integral_constant<int, 1> {};
template <class T>
struct comparator_kind<std::less<T>> : std::integral_constant<int, 1> {};
template <class T>
struct comparator_kind<::cuda::std::greater<T>> : std::integral_constant<int, 2> {};
template <class T>
struct comparator_kind<std::greater<T>> : std::integral_constant<int, 2> {};

/// Arithmetic keys ordered by less or greater take the radix path (cub::DeviceRadixSort);
/// everything else the comparison path (cub::DeviceMergeSort).
template <class K, class Comp>
inline constexpr bool radix_path_v =
    std::is_arithmetic_v<K> && !std::is_same_v<K, bool> && comparator_kind<std::decay_t<Comp>>::value != 0;

template <std::size_t N>
struct unsigned_of;
template <>
struct unsigned_of<1> {
  using type = std::uint8_t;
};
template <>
struct unsigned_of<2> {
  using type = std::uint16_t;
};
template <>
struct unsigned_of<4> {
  using type = std::uint32_t;
};
template <>
struct unsigned_of<8> {
  using type = std::uint64_t;
};

/// CUB's radix order as a comparison: keys as order-preserving unsigned bits (sign bit flipped
/// for signed integers; for floats, all bits flipped when negative, the sign bit otherwise), with
/// -0.0 taken as +0.0 (CUB sorts them as equal), so NaNs sort by their bits: negative ones before
/// -inf, positive ones after +inf. Descending reverses the order of the bits, as CUB does.
template <class K, bool Descending>
struct radix_order {
  using bits_t = typename unsigned_of<sizeof(K)>::type;
  __host__ __device__ static bits_t bits(const K& k) {
    bits_t u;
    ::memcpy(&u, &k, sizeof(K));
    constexpr bits_t high = static_cast<bits_t>(bits_t{1} << (8 * sizeof(K) - 1));
    if constexpr (std::is_floating_point_v<K>) {
      if (u == high) u = 0;
      return (u & high) ? static_cast<bits_t>(~u) : static_cast<bits_t>(u | high);
    } else if constexpr (std::is_signed_v<K>) {
      return static_cast<bits_t>(u ^ high);
    } else {
      return u;
    }
  }
  __host__ __device__ bool operator()(const K& a, const K& b) const {
    return Descending ? bits(b) < bits(a) : bits(a) < bits(b);
  }
};

/// The strict weak order the splitter search and the merges use: CUB's radix order on the radix
/// path, the user's comparator otherwise.
template <class K, class Comp>
auto sort_order(const Comp& comp) {
  if constexpr (radix_path_v<K, Comp>)
    return radix_order<K, comparator_kind<std::decay_t<Comp>>::value == 2>{};
  else
    return comp;
}

// ---- per-place buffers ----------------------------------------------------------------

/// Where one place's keys (and values) are during a sort: the user's segment and a scratch
/// buffer of the same size; `cur` says which holds the data now (0: the user's).
struct no_values {};

template <class K, class V>
struct sort_buffers {
  K* keys[2] = {nullptr, nullptr};
  V* values[2] = {nullptr, nullptr};
  std::uint64_t count = 0;
  int cur = 0;

  /// Copies elements [offset, offset + n) (keys, and values if any) from buffer `from` to the
  /// other one, on `stream`.
  void copy_across(int from, std::uint64_t offset, std::uint64_t n, cudaStream_t stream) const {
    const int to = 1 - from;
    STRATA_CUDA_CHECK(cudaMemcpyAsync(keys[to] + offset, keys[from] + offset, n * sizeof(K), cudaMemcpyDeviceToDevice,
                                      stream));
    if constexpr (!std::is_same_v<V, no_values>)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(values[to] + offset, values[from] + offset, n * sizeof(V),
                                        cudaMemcpyDeviceToDevice, stream));
  }
};

/// Phase timings and memory of the last sort on this thread, for the benchmarks' breakdown: the
/// local sorts, the splitter search, and the exchange plus merges (host wall time; each phase
/// ends with a wait), and the most extra device bytes one place needed (scratch + CUB temp; the
/// place's caches may hold more, left from larger calls).
struct sort_profile {
  double local_s = 0, splitters_s = 0, exchange_merge_s = 0;
  int rounds = 0;
  std::uint64_t peak_extra_bytes = 0;
};
inline sort_profile& last_sort_profile() {
  thread_local sort_profile p;
  return p;
}

// ---- kernels of the splitter search ---------------------------------------------------

template <class K>
__global__ void gather_pivots_kernel(const K* sorted, const std::uint64_t* positions, K* out, std::uint64_t n) {
  const std::uint64_t t = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (t < n) out[t] = sorted[positions[t]];
}

/// For every pivot (key, owning place, position there), how many elements of this place's sorted
/// segment precede it in the order (key, place, position): those before its key, plus those equal
/// to it when this place comes first; on the pivot's own place, its position.
template <class K, class Ord>
__global__ void rank_pivots_kernel(const K* sorted, std::uint64_t count, std::size_t place, const K* keys,
                                   const std::uint64_t* owner, const std::uint64_t* position, std::uint64_t* out,
                                   std::uint64_t n, Ord ord) {
  const std::uint64_t t = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
  if (t >= n) return;
  if (owner[t] == place) {
    out[t] = position[t];
    return;
  }
  const K v = keys[t];
  const bool upper = place < owner[t];  // equal keys of an earlier place precede the pivot
  std::uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const bool before = upper ? !ord(v, sorted[mid]) : ord(sorted[mid], v);
    if (before)
      lo = mid + 1;
    else
      hi = mid;
  }
  out[t] = lo;
}

inline unsigned blocks_for(std::uint64_t n) { return static_cast<unsigned>((n + 255) / 256); }

/// Pivots one open splitter window proposes per round (at most).
inline constexpr std::uint64_t pivots_per_window = 127;

/// The splitter search's windows: for every boundary b = 0..k and place i, the split s_i(b) lies
/// in [lo[b][i], hi[b][i]]. Windows only narrow, so the first round proposes the most pivots.
struct splitter_windows {
  std::vector<std::vector<std::uint64_t>> lo, hi;
  explicit splitter_windows(const partition& part) {
    const std::size_t k = part.places();
    lo.assign(k + 1, std::vector<std::uint64_t>(k, 0));
    hi = lo;
    for (std::size_t i = 0; i < k; ++i) {
      lo[k][i] = hi[k][i] = part.count(i);
      for (std::size_t b = 1; b < k; ++b) hi[b][i] = part.count(i);
    }
    for (std::size_t b = 1; b < k; ++b)  // a boundary at 0 or at the end splits nothing
      if (part.offset(b) == 0 || part.offset(b) == part.size()) lo[b] = hi[b] = (part.offset(b) == 0 ? lo[0] : lo[k]);
  }
  /// Pivots window (b, i) proposes this round.
  std::uint64_t proposes(std::size_t b, std::size_t i) const {
    const std::uint64_t w = hi[b][i] - lo[b][i];
    return w < pivots_per_window ? w : pivots_per_window;
  }
  /// Pivots of this round over all windows.
  std::uint64_t pivots() const {
    std::uint64_t n = 0;
    for (std::size_t b = 1; b + 1 < lo.size(); ++b)
      for (std::size_t i = 0; i < lo[b].size(); ++i) n += proposes(b, i);
    return n;
  }
};

/// Pinned host words one round of the splitter search takes for `n` pivots over `k` places:
/// positions, owners, the counts (k per pivot), then the pivots' keys.
template <class K>
std::size_t splitter_host_words(std::uint64_t n, std::size_t k) {
  return 3 * n + k * n + (n * sizeof(K) + 7) / 8;
}

/// Device bytes of the set's rank buffer the search's two all-gathers per round take on a set
/// spanning processes, for at most `n` pivots: the pivots' keys, then every rank's counts.
template <class K>
std::size_t splitter_rank_bytes(const set_state& s, std::uint64_t n) {
  return rank_gather::bytes(s.ranks.ranks(), n * sizeof(K)) + rank_gather::bytes(s.ranks.ranks(), s.ranks.most() * n * 8);
}

/// The exact splitters: for every output boundary R (the first global index of a place's share),
/// the position s_i(R) in every sorted segment such that the s_i(R) first elements of all
/// segments are exactly the R smallest in the order (key, place, position) — equal keys split by
/// place and position, so any number of duplicates divides exactly and the result is stable.
/// Host-driven rounds: every open window [lo_i, hi_i) of a boundary proposes up to
/// `pivots_per_window` evenly spaced elements; every place counts, by binary search in its sorted
/// segment, how many of its elements precede each pivot; the ranks (sums of the counts) narrow
/// every window by that factor. Two waits per round; about log_128(segment size) rounds. On a set
/// spanning processes every rank runs the same rounds (the windows follow from the counts, which
/// every rank then holds): the pivots' keys and the counts each cross ranks in one all-gather
/// (all_gather_regions), and the host waits once per round, for the root.
/// The host words and the rank buffer must hold what the first round takes (splitter_host_words,
/// splitter_rank_bytes): sort_impl reserves them before any element moves.
/// Returns splits[b][i] for the boundaries b = 0..k (boundary 0 is 0, boundary k is the end).
template <class K, class V, class Ord>
std::vector<std::vector<std::uint64_t>> find_splitters(set_state& s, const partition& part,
                                                       const std::vector<sort_buffers<K, V>>& buf, const Ord& ord,
                                                       int& rounds) {
  const std::size_t k = part.places();
  splitter_windows win(part);
  auto& lo = win.lo;
  auto& hi = win.hi;
  const bool spans = s.link != nullptr;
  const std::uint64_t n_first = win.pivots();
  struct pivot {
    std::size_t boundary, place;
    std::uint64_t position;
  };
  for (rounds = 0;; ++rounds) {
    std::vector<pivot> pivots;
    for (std::size_t b = 1; b < k; ++b)
      for (std::size_t i = 0; i < k; ++i) {
        const std::uint64_t w = hi[b][i] - lo[b][i], m = win.proposes(b, i);
        for (std::uint64_t q = 0; q < m; ++q) pivots.push_back({b, i, lo[b][i] + (w * q) / m});
      }
    if (pivots.empty()) break;
    const std::uint64_t n = pivots.size();
    std::uint64_t* words = s.host_words(splitter_host_words<K>(n, k));
    std::uint64_t *position = words, *owner = words + n, *counts = words + 2 * n;
    K* keys = reinterpret_cast<K*>(words + 2 * n + k * n);
    // Each place gathers the keys of its own pivots: its pivots are a contiguous run per place?
    // Not necessarily; gather per place from the positions of its pivots, placed in a per-place
    // order, then scattered back on the host.
    std::vector<std::vector<std::uint64_t>> mine(k);
    for (std::uint64_t t = 0; t < n; ++t) mine[pivots[t].place].push_back(t);
    std::uint64_t at = 0;
    std::vector<std::uint64_t> first(k, 0);
    for (std::size_t i = 0; i < k; ++i) {
      first[i] = at;
      for (std::uint64_t t : mine[i]) {
        position[at] = pivots[t].position;
        owner[at] = i;
        ++at;
      }
    }
    // Each place gathers its own pivots' keys (on a set spanning processes, this rank's places).
    std::vector<std::size_t> writers;
    for (std::size_t i = 0; i < k; ++i) {
      if (mine[i].empty() || !s.local(i)) continue;
      at_place(s, i, [&](place_state& p) {
        const std::uint64_t m = mine[i].size();
        gather_pivots_kernel<<<blocks_for(m), 256, 0, p.stream()>>>(buf[i].keys[buf[i].cur], position + first[i],
                                                                     keys + first[i], m);
        STRATA_CUDA_CHECK(cudaGetLastError());
        STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
      });
      writers.push_back(i);
    }
    // Rank r's places own the pivots [first[first place of r], first[first place of r + 1]):
    // the byte regions of every rank's keys, then of its counts (rows of its places).
    const auto region = [&](std::size_t unit, bool by_pivot) {
      std::vector<std::size_t> at;
      for (int r = 0; r <= s.ranks.ranks(); ++r) {
        const std::size_t g = s.ranks.first(r);
        at.push_back(by_pivot ? (g < k ? first[g] : n) * unit : g * n * unit);
      }
      return at;
    };
    char* rank_keys = spans ? s.rank_buffer(splitter_rank_bytes<K>(s, n_first)) : nullptr;
    char* rank_counts = spans ? rank_keys + rank_gather::bytes(s.ranks.ranks(), n_first * sizeof(K)) : nullptr;
    if (spans) {
      all_gather_regions(s, reinterpret_cast<char*>(keys), region(sizeof(K), true), rank_keys, writers);
      for (std::size_t i = 0; i < k; ++i)  // every local counter reads all ranks' keys
        if (part.count(i) > 0 && s.local(i) && i != s.root_index)
          at_place(s, i, [&](place_state& p) { STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), s.root().event(), 0)); });
    } else {
      wait_segments(s, part);
    }
    writers.clear();
    for (std::size_t i = 0; i < k; ++i) {
      if (part.count(i) == 0) {
        for (std::uint64_t t = 0; t < n; ++t) counts[i * n + t] = 0;
        continue;
      }
      if (!s.local(i)) continue;
      at_place(s, i, [&](place_state& p) {
        rank_pivots_kernel<<<blocks_for(n), 256, 0, p.stream()>>>(buf[i].keys[buf[i].cur], part.count(i), i, keys,
                                                                  owner, position, counts + i * n, n, ord);
        STRATA_CUDA_CHECK(cudaGetLastError());
        STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
      });
      writers.push_back(i);
    }
    if (spans) {
      all_gather_regions(s, reinterpret_cast<char*>(counts), region(sizeof(std::uint64_t), false), rank_counts, writers);
      wait_root(s, "strata::sort (the splitter search)");
    } else {
      wait_segments(s, part);
    }
    // Narrow the windows. Pivot number `at` (in per-place order) is pivots[mine[i][...]].
    at = 0;
    for (std::size_t i = 0; i < k; ++i)
      for (std::uint64_t t : mine[i]) {
        const pivot& pv = pivots[t];
        std::uint64_t rank = 0;
        for (std::size_t j = 0; j < k; ++j) rank += counts[j * n + at];
        const std::uint64_t target = part.offset(pv.boundary);
        auto& l = lo[pv.boundary];
        auto& h = hi[pv.boundary];
        for (std::size_t j = 0; j < k; ++j) {
          const std::uint64_t c = counts[j * n + at];
          if (rank < target) {
            // The pivot itself precedes the boundary element: its place's split is past it.
            const std::uint64_t low = c + (j == i ? 1 : 0);
            if (low > l[j]) l[j] = low;
          } else if (rank == target) {
            l[j] = h[j] = c;
          } else if (c < h[j]) {
            h[j] = c;
          }
        }
        ++at;
      }
    for (std::size_t b = 1; b < k; ++b)
      for (std::size_t i = 0; i < k; ++i)
        if (lo[b][i] > hi[b][i]) throw std::logic_error("strata::sort: inconsistent splitter windows");
  }
  for (std::size_t b = 1; b < k; ++b) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < k; ++i) total += lo[b][i];
    if (total != part.offset(b))
      throw std::logic_error("strata::sort: the splitters select " + std::to_string(total) + " elements for boundary " +
                             std::to_string(part.offset(b)) + " (is the comparator a strict weak order?)");
  }
  return lo;
}

// ---- the sort ---------------------------------------------------------------------------

/// Pre-grows a place's cached CUB temp storage to what every CUB call of the sort may ask for, so
/// that an allocation failure happens before any element moves.
template <class K, class V, class Ord, class LocalSort>
std::size_t reserve_sort_temp(place_state& p, std::uint64_t count, const Ord& ord, const LocalSort& local_sort,
                              sort_buffers<K, V>& b) {
  std::size_t local = 0, merge = 0;
  STRATA_CUDA_CHECK(local_sort(nullptr, local, b));
  const auto n1 = static_cast<::cuda::std::int64_t>(count / 2), n2 = static_cast<::cuda::std::int64_t>(count - count / 2);
  if constexpr (std::is_same_v<V, no_values>)
    STRATA_CUDA_CHECK(cub::DeviceMerge::MergeKeys(nullptr, merge, b.keys[0], n1, b.keys[0], n2, b.keys[1], ord, p.stream()));
  else
    STRATA_CUDA_CHECK(cub::DeviceMerge::MergePairs(nullptr, merge, b.keys[0], b.values[0], n1, b.keys[0], b.values[0], n2,
                                                   b.keys[1], b.values[1], ord, p.stream()));
  (void)p.temp_storage(local > merge ? local : merge);
  return local > merge ? local : merge;
}

/// Merges the sorted runs of one place (offsets `runs`, ascending, last = count) pairwise, left to
/// right, ping-ponging between its two buffers, and leaves the result in the user's buffer.
/// Adjacent runs only, the left one first on ties, so equal keys keep the order of the places
/// they came from.
template <class K, class V, class Ord>
void merge_runs(place_state& p, sort_buffers<K, V>& b, std::vector<std::uint64_t> runs, const Ord& ord) {
  while (runs.size() > 2) {
    const int from = b.cur, to = 1 - b.cur;
    std::vector<std::uint64_t> next{0};
    for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
      const std::uint64_t a0 = runs[r], a1 = runs[r + 1];
      if (r + 2 >= runs.size()) {  // an odd run out: moved along as it is
        b.copy_across(from, a0, a1 - a0, p.stream());
        next.push_back(a1);
        continue;
      }
      const std::uint64_t b1 = runs[r + 2];
      const auto na = static_cast<::cuda::std::int64_t>(a1 - a0), nb = static_cast<::cuda::std::int64_t>(b1 - a1);
      run_cub(p, [&](void* temp, std::size_t& bytes) {
        if constexpr (std::is_same_v<V, no_values>)
          return cub::DeviceMerge::MergeKeys(temp, bytes, b.keys[from] + a0, na, b.keys[from] + a1, nb, b.keys[to] + a0,
                                             ord, p.stream());
        else
          return cub::DeviceMerge::MergePairs(temp, bytes, b.keys[from] + a0, b.values[from] + a0, na, b.keys[from] + a1,
                                              b.values[from] + a1, nb, b.keys[to] + a0, b.values[to] + a0, ord,
                                              p.stream());
      });
      next.push_back(b1);
    }
    runs = std::move(next);
    b.cur = 1 - b.cur;
  }
  if (b.cur != 0) {
    b.copy_across(1, 0, b.count, p.stream());
    b.cur = 0;
  }
}

template <class KS, class VS, class Comp>
void sort_impl(const char* name, const KS& keys, const VS* values, Comp comp, bool sync) {
  using K = typename KS::value_type;
  using V = std::conditional_t<std::is_same_v<VS, void>, no_values, typename std::conditional_t<std::is_same_v<VS, void>, KS, VS>::value_type>;
  constexpr bool has_values = !std::is_same_v<VS, void>;
  const auto ord = sort_order<K>(comp);
  using clock = std::chrono::steady_clock;
  sort_profile& prof = last_sort_profile();
  prof = sort_profile{};
  const auto t0 = clock::now();

  call_scope scope(keys.places().state(), name);
  set_state& s = scope.state();
  const partition& part = keys.partition();
  const std::size_t k = part.places();
  std::size_t nonempty = 0;
  for (std::size_t i = 0; i < k; ++i) nonempty += part.count(i) > 0 ? 1 : 0;
  if (nonempty == 0) return;

  // Scratch first, for every place: an allocation failure leaves the input untouched, and what
  // this call grew is released again.
  std::vector<sort_buffers<K, V>> buf(k);
  std::vector<std::pair<std::size_t, std::size_t>> cached(k);
  for (std::size_t i = 0; i < k; ++i)
    if (s.local(i)) cached[i] = {s.places[i]->temp_storage_bytes(), s.places[i]->scratch_bytes()};
  const auto local_sort = [&](void* temp, std::size_t& bytes, sort_buffers<K, V>& b, cudaStream_t stream) {
    const auto n = static_cast<std::int64_t>(b.count);
    if constexpr (radix_path_v<K, Comp>) {
      constexpr bool desc = comparator_kind<std::decay_t<Comp>>::value == 2;
      cub::DoubleBuffer<K> dk(b.keys[0], b.keys[1]);
      cudaError_t e;
      if constexpr (has_values) {
        cub::DoubleBuffer<V> dv(b.values[0], b.values[1]);
        e = desc ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, dk, dv, n, 0, int(8 * sizeof(K)), stream)
                 : cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, 0, int(8 * sizeof(K)), stream);
      } else {
        e = desc ? cub::DeviceRadixSort::SortKeysDescending(temp, bytes, dk, n, 0, int(8 * sizeof(K)), stream)
                 : cub::DeviceRadixSort::SortKeys(temp, bytes, dk, n, 0, int(8 * sizeof(K)), stream);
      }
      if (temp != nullptr) b.cur = dk.selector;
      return e;
    } else {
      if constexpr (has_values)
        return cub::DeviceMergeSort::StableSortPairs(temp, bytes, b.keys[0], b.values[0], n, comp, stream);
      else
        return cub::DeviceMergeSort::StableSortKeys(temp, bytes, b.keys[0], n, comp, stream);
    }
  };
  // On a set spanning processes every rank takes part in the collectives below, so each first
  // reserves what the verdict takes (a failure there is thrown on its rank alone, and the others'
  // waits run into the link's timeout).
  const bool spans = s.link != nullptr;
  if (spans) reserve_all_gather(s, sizeof(rank_verdict));
  const auto release_grown = [&] {
    for (std::size_t i = 0; i < k; ++i) {
      if (!s.local(i)) continue;
      place_state& p = *s.places[i];
      if (cached[i] == std::make_pair(p.temp_storage_bytes(), p.scratch_bytes())) continue;
      try {
        device_guard g(p.device());
        p.release_cached();
      } catch (...) {  // the first failure is the one to report
      }
    }
  };
  std::exception_ptr failed;
  try {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) {
      sort_buffers<K, V>& b = buf[i];
      b.count = part.count(i);
      b.keys[0] = keys.segment_at(i).data;
      if constexpr (has_values) b.values[0] = values->segment_at(i).data;
      // One place alone needs no scratch on the comparison path (CUB sorts in place).
      const bool needs_scratch = nonempty > 1 || radix_path_v<K, Comp>;
      std::size_t need = 0;  // what this sort needs on the place (the caches may hold more)
      if (needs_scratch) {
        const std::size_t key_bytes = (b.count * sizeof(K) + 255) / 256 * 256;
        need = key_bytes + (has_values ? b.count * sizeof(V) : 0);
        char* sc = static_cast<char*>(p.scratch(need));
        b.keys[1] = reinterpret_cast<K*>(sc);
        if constexpr (has_values) b.values[1] = reinterpret_cast<V*>(sc + key_bytes);
      }
      auto ls = [&](void* temp, std::size_t& bytes, sort_buffers<K, V>& bb) { return local_sort(temp, bytes, bb, p.stream()); };
      if (nonempty > 1)
        need += reserve_sort_temp(p, b.count, ord, ls, b);
      else {
        std::size_t bytes = 0;
        STRATA_CUDA_CHECK(ls(nullptr, bytes, b));
        (void)p.temp_storage(bytes);
        need += bytes;
      }
      if (need > prof.peak_extra_bytes) prof.peak_extra_bytes = need;
    });
    // Then the splitter search's host words and, across ranks, its rank buffer: set-wide caches,
    // grown last so that a place that cannot reserve its memory leaves them as they were.
    if (nonempty > 1) {
      const std::uint64_t n = splitter_windows(part).pivots();
      (void)s.host_words(splitter_host_words<K>(n, k));
      if (spans) (void)s.rank_buffer(splitter_rank_bytes<K>(s, n));
    }
  } catch (...) {
    failed = std::current_exception();
  }
  throw_if_any_rank_failed(s, failed, name, "reserving its sort memory", release_grown);

  // 1. Local sorts.
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    sort_buffers<K, V>& b = buf[i];
    run_cub(p, [&](void* temp, std::size_t& bytes) { return local_sort(temp, bytes, b, p.stream()); });
    if (nonempty == 1) merge_runs(p, b, {0, b.count}, ord);  // one run: back into the user's buffer
  });
  if (nonempty == 1) {
    if (sync) wait_segments(s, part);
    return;
  }
  wait_segments(s, part);
  const auto t1 = clock::now();

  // 2. Exact splitters.
  const auto splits = find_splitters(s, part, buf, ord, prof.rounds);
  const auto t2 = clock::now();

  // 3. One exchange: place j receives, from every place i in place order, the elements of i's
  // sorted segment between the splits of j's boundaries, into the buffer i's data is not in.
  std::vector<piece> pieces;
  std::vector<std::vector<std::uint64_t>> runs(k, std::vector<std::uint64_t>{0});
  for (std::size_t j = 0; j < k; ++j) {
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t from = splits[j][i], to = splits[j + 1][i];
      if (to > from) {
        pieces.push_back({i, from, j, at, to - from});
        at += to - from;
        runs[j].push_back(at);
      }
    }
  }
  std::vector<const void*> src_k(k, nullptr), src_v(k, nullptr);
  std::vector<void*> dst_k(k, nullptr), dst_v(k, nullptr);
  for (std::size_t i = 0; i < k; ++i) {
    if (buf[i].count == 0) continue;
    src_k[i] = buf[i].keys[buf[i].cur];
    dst_k[i] = buf[i].keys[1 - buf[i].cur];
    if constexpr (has_values) {
      src_v[i] = buf[i].values[buf[i].cur];
      dst_v[i] = buf[i].values[1 - buf[i].cur];
    }
  }
  exchange(s, src_k, s, dst_k, sizeof(K), pieces);
  if constexpr (has_values) exchange(s, src_v, s, dst_v, sizeof(V), pieces);
  // 4. Every place merges what it received (after its own segment's readers are done: the
  // exchange ordered them).
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    buf[i].cur = 1 - buf[i].cur;
    merge_runs(p, buf[i], runs[i], ord);
  });
  if (sync) wait_segments(s, part);
  const auto t3 = clock::now();
  prof.local_s = std::chrono::duration<double>(t1 - t0).count();
  prof.splitters_s = std::chrono::duration<double>(t2 - t1).count();
  prof.exchange_merge_s = std::chrono::duration<double>(t3 - t2).count();
}

template <class R, class Comp>
void sort_keys(const char* name, R&& r_in, Comp comp, bool sync) {
  const auto r = as_span(r_in);
  require_sortable(name, r);
  sort_impl<std::decay_t<decltype(r)>, void>(name, r, nullptr, comp, sync);
}

template <class RK, class RV, class Comp>
void sort_pairs(const char* name, RK&& k_in, RV&& v_in, Comp comp, bool sync) {
  const auto keys = as_span(k_in);
  const auto values = as_span(v_in);
  require_sortable(name, keys);
  require_sortable(name, values);
  require_same_layout(name, keys, values);
  require_disjoint(name, keys, values);
  sort_impl(name, keys, &values, comp, sync);
}

}  // namespace detail

/// Sorts the range in place under `comp` (default `<`), across all its places: afterwards every
/// place holds the same number of elements as before (the layout does not change) and the whole
/// range is in order. Arithmetic keys with `cuda::std::less`/`greater` or `std::less`/`greater`
/// take the radix path (cub::DeviceRadixSort) and follow CUB's radix order: `-0.0` and `+0.0` are
/// equal, negative NaNs come before `-inf` and positive NaNs after `+inf`. Any other strict weak
/// order takes the comparison path (cub::DeviceMergeSort); it must be a `__host__ __device__`
/// callable or an extended lambda. Equal elements may end up in any order (see stable_sort).
///
/// Extra device memory per place: one more segment of keys (none on the comparison path with a
/// single non-empty place) plus CUB's temporary storage, both kept by the place for later calls
/// (device_set::release_cached_memory frees them). Waits for the work (the host
/// also waits a few times in the middle, for the splitter search). Throws std::invalid_argument
/// for a range without places; strata::cuda_error if an allocation fails (naming the device:
/// the range is then unchanged and nothing stays allocated) or if a CUDA call fails (the range's
/// contents are then unspecified).
///
/// On a device_set spanning processes the sort is a collective: every rank calls it, with the
/// same comparator, and each sorts, searches and merges on its own places while the splitter
/// search's pivots and counts cross ranks in two all-gathers per round and the elements in one
/// exchange (grouped ncclSend/ncclRecv). Before any element moves the ranks agree that every one
/// of them reserved its memory: if one could not, every rank throws strata::cuda_error (naming
/// that rank, its device and the CUDA error; the range unchanged on every rank). A rank that fails
/// or stops taking part makes the others abort the communicator and throw strata::nccl_error
/// instead of waiting forever.
template <class R, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<R> && detail::not_nosync_v<Comp>>>
void sort(R&& r, Comp comp = {}) {
  detail::sort_keys("strata::sort", r, comp, true);
}
/// As sort(r, comp), returning once the last merges are enqueued (see strata::nosync).
template <class R, class Comp, class = std::enable_if_t<is_distributed_range_v<R>>>
void sort(R&& r, Comp comp, nosync_t) {
  detail::sort_keys("strata::sort", r, comp, false);
}
/// As sort(r), returning once the last merges are enqueued (see strata::nosync).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
void sort(R&& r, nosync_t) {
  detail::sort_keys("strata::sort", r, ::cuda::std::less<>{}, false);
}

/// As sort, and equal elements keep their relative order (as std::stable_sort). Same cost: the
/// local sorts are stable, the splitters break ties by place and position, and the merges take
/// the earlier place's element first.
template <class R, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<R> && detail::not_nosync_v<Comp>>>
void stable_sort(R&& r, Comp comp = {}) {
  detail::sort_keys("strata::stable_sort", r, comp, true);
}
/// As stable_sort(r, comp), returning once the last merges are enqueued (see strata::nosync).
template <class R, class Comp, class = std::enable_if_t<is_distributed_range_v<R>>>
void stable_sort(R&& r, Comp comp, nosync_t) {
  detail::sort_keys("strata::stable_sort", r, comp, false);
}
/// As stable_sort(r), returning once the last merges are enqueued (see strata::nosync).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
void stable_sort(R&& r, nosync_t) {
  detail::sort_keys("strata::stable_sort", r, ::cuda::std::less<>{}, false);
}

/// Sorts `keys` as sort does and applies the same permutation to `values` (as thrust::sort_by_key).
/// `values` must have the keys' size, device_set and partition and must not overlap them. Extra
/// device memory per place: one more segment of keys and one of values, plus CUB's temporary
/// storage. Throws as sort, and std::invalid_argument for mismatched layouts.
template <class RK, class RV, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV> &&
                                   detail::not_nosync_v<Comp>>>
void sort_by_key(RK&& keys, RV&& values, Comp comp = {}) {
  detail::sort_pairs("strata::sort_by_key", keys, values, comp, true);
}
/// As sort_by_key(keys, values, comp), returning once the last merges are enqueued (see strata::nosync).
template <class RK, class RV, class Comp, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void sort_by_key(RK&& keys, RV&& values, Comp comp, nosync_t) {
  detail::sort_pairs("strata::sort_by_key", keys, values, comp, false);
}
/// As sort_by_key(keys, values), returning once the last merges are enqueued (see strata::nosync).
template <class RK, class RV, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void sort_by_key(RK&& keys, RV&& values, nosync_t) {
  detail::sort_pairs("strata::sort_by_key", keys, values, ::cuda::std::less<>{}, false);
}

/// As sort_by_key, and values of equal keys keep their relative order (as thrust::stable_sort_by_key).
template <class RK, class RV, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV> &&
                                   detail::not_nosync_v<Comp>>>
void stable_sort_by_key(RK&& keys, RV&& values, Comp comp = {}) {
  detail::sort_pairs("strata::stable_sort_by_key", keys, values, comp, true);
}
/// As stable_sort_by_key(keys, values, comp), returning once the last merges are enqueued (see
/// strata::nosync).
template <class RK, class RV, class Comp, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void stable_sort_by_key(RK&& keys, RV&& values, Comp comp, nosync_t) {
  detail::sort_pairs("strata::stable_sort_by_key", keys, values, comp, false);
}
/// As stable_sort_by_key(keys, values), returning once the last merges are enqueued (see strata::nosync).
template <class RK, class RV, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void stable_sort_by_key(RK&& keys, RV&& values, nosync_t) {
  detail::sort_pairs("strata::stable_sort_by_key", keys, values, ::cuda::std::less<>{}, false);
}

}  // namespace strata
