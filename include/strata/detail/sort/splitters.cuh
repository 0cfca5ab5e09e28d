// The exact splitter search of a multi-place sort: host-driven rounds in which every open window of
// an output boundary proposes pivots, every place counts by binary search how many of its sorted
// elements precede each, and the windows narrow, until every place's share of the output is known
// to the element. Across ranks the pivots and counts cross by all-gathers (rank_collectives.cuh).
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/detail/sort/buffers.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::detail {

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
        if (lo[b][i] > hi[b][i]) throw std::logic_error("strata::sort: inconsistent splitter windows (is the comparator a strict weak order?)");
  }
  // Each place's splits must not go back from one boundary to the next: with a comparator that is
  // no order, the windows of two boundaries narrow independently and can cross, and the exchange
  // would then send a place more elements than its share holds (the exchange skips a negative
  // piece, so the others add up to more than the place's count).
  for (std::size_t b = 1; b <= k; ++b)
    for (std::size_t i = 0; i < k; ++i)
      if (lo[b][i] < lo[b - 1][i])
        throw std::logic_error("strata::sort: the splits of place " + std::to_string(i) + " go back from boundary " +
                               std::to_string(part.offset(b - 1)) + " to " + std::to_string(part.offset(b)) +
                               " (is the comparator a strict weak order?)");
  for (std::size_t b = 1; b < k; ++b) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < k; ++i) total += lo[b][i];
    if (total != part.offset(b))
      throw std::logic_error("strata::sort: the splitters select " + std::to_string(total) + " elements for boundary " +
                             std::to_string(part.offset(b)) + " (is the comparator a strict weak order?)");
  }
  return lo;
}

}  // namespace strata::detail
