// merge: two sorted distributed ranges into one, stable (equal elements of the first range come
// before those of the second), as thrust::merge.
//
// Where every place of the output reaches every place of the inputs directly (one process; one
// device or peer access), the merge path is split: one small kernel finds, by binary searches
// that read the inputs where they lie, the splits (i, j) of the merge path (the first i elements
// of a and the first j of b are the first i + j of the output) at every output segment's start
// and at every input segment's start; the host reads them (one wait) and every output place then
// runs one cub::DeviceMerge per stretch between two splits, reading its pieces of a and b
// straight from their places. Each element is read once and written once, as in one CUB merge.
// Elsewhere (host staging, sets spanning processes) every element's place in the output is its
// index plus the number of elements of the other range that go before it (a search of the other
// range: lower_bound for the first range, upper_bound for the second, so ties keep the first
// range first), and a scatter puts it there: the searches and scatters of search.cuh and
// gather.cuh, which move every element through the exchange.
#pragma once

#include <strata/algorithm/gather.cuh>
#include <strata/algorithm/search.cuh>
#include <strata/algorithm/transform.cuh>
#include <strata/detail/by_index.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>

#include <cub/device/device_merge.cuh>

#include <cuda/std/cstdint>
#include <cuda/std/functional>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

/// Adds an element's global index to it (a merge position: index plus the other range's count).
struct add_global_index {
  __host__ __device__ void operator()(std::uint64_t i, std::uint64_t& x) const { x += i; }
};

/// Every element of `r`'s output position: its global index plus, per `Kind`, how many elements
/// of `other` go before it (lower: those strictly before it; upper: those not after it).
template <search_kind Kind, class T, class Comp>
distributed_vector<std::uint64_t> merge_positions(const distributed_span<const T>& r, const distributed_span<const T>& other,
                                                  Comp comp) {
  distributed_vector<std::uint64_t> pos(r.size(), r.places(), partition_policy::explicit_sizes(r.partition().counts()),
                                        no_init);
  search_impl<Kind>(Kind == search_kind::lower ? "strata::merge (positions of the first range)"
                                               : "strata::merge (positions of the second range)",
                    other, r, pos, comp);
  for_each_indexed(pos, add_global_index{});
  return pos;
}

/// One split of the merge path: the first `i` elements of a and the first `j` of b are the first
/// i + j elements of the merge (ties: a's first).
struct merge_split {
  std::uint64_t i, j;
};

/// What merge_path asks about one split, and finds: kind 0, the split at output position v (its
/// diagonal); kind 1, the split where a's element v starts (b's elements before it: those that
/// go strictly before it); kind 2, where b's element v starts (a's elements before it: those that
/// do not go after it). One thread a split, reading a and b where they lie (segment_lookup).
template <class T, class Comp>
struct find_merge_splits {
  segment_lookup<const T> a, b;
  const std::uint64_t* ask;  // kind, v per split (in the lookup table)
  merge_split* found;
  Comp comp;
  __host__ __device__ void operator()(std::uint32_t s) const {
    const std::uint64_t kind = ask[2 * s], v = ask[2 * s + 1];
    const std::uint64_t na = a.t.size(), nb = b.t.size();
    if (kind == 0) {  // the largest i with a[i - 1] not after b[v - i]
      std::uint64_t lo = v > nb ? v - nb : 0, hi = v < na ? v : na;
      while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo + 1) / 2;
        if (comp(b[v - mid], a[mid - 1]))
          hi = mid - 1;
        else
          lo = mid;
      }
      found[s] = {lo, v - lo};
    } else if (kind == 1) {
      const T x = a[v];
      std::uint64_t lo = 0, hi = nb;
      while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (comp(b[mid], x))
          lo = mid + 1;
        else
          hi = mid;
      }
      found[s] = {v, lo};
    } else {
      const T y = b[v];
      std::uint64_t lo = 0, hi = na;
      while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (comp(y, a[mid]))
          hi = mid;
        else
          lo = mid + 1;
      }
      found[s] = {lo, v};
    }
  }
};

/// The inner segment starts of `part` (offsets strictly between 0 and its size), as asks of `kind`.
inline void ask_segment_starts(std::vector<std::uint64_t>& ask, const partition& part, std::uint64_t kind) {
  for (std::size_t i = 1; i < part.places(); ++i)
    if (part.offset(i) > 0 && part.offset(i) < part.size() && part.offset(i) != part.offset(i - 1)) {
      ask.push_back(kind);
      ask.push_back(part.offset(i));
    }
}

/// What merge_path asks find_merge_splits (kind, value per split): the splits at the inner
/// segment starts of the output, of a and of b. Pure host code.
inline std::vector<std::uint64_t> merge_asks(const partition& out, const partition& a, const partition& b) {
  std::vector<std::uint64_t> ask;
  ask_segment_starts(ask, out, 0);
  ask_segment_starts(ask, a, 1);
  ask_segment_starts(ask, b, 2);
  return ask;
}

/// One stretch of the merge path between two splits: dst[at, at + na + nb) is the merge of
/// a[a_at, a_at + na) and b[b_at, b_at + nb), each within one segment (dst's on place `place`,
/// a's on `a_place`, b's on `b_place`; a place of an empty piece is meaningless).
struct merge_stretch {
  std::size_t place, a_place, b_place;
  std::uint64_t at, a_at, na, b_at, nb;
};

/// The stretches between the splits `found` (and the path's two ends) over inputs of `na` and
/// `nb` elements laid out as `a` and `b` and an output laid out as `out`, in output order. Throws
/// std::invalid_argument ("a or b is not sorted by comp") where the path goes back, which sorted
/// inputs never make. Pure host code.
inline std::vector<merge_stretch> merge_stretches(const char* name, std::vector<merge_split> splits, const partition& out,
                                                  const partition& a, const partition& b) {
  splits.push_back({0, 0});
  splits.push_back({a.size(), b.size()});
  std::sort(splits.begin(), splits.end(), [](const merge_split& x, const merge_split& y) {
    return x.i + x.j != y.i + y.j ? x.i + x.j < y.i + y.j : x.i < y.i;
  });
  for (std::size_t k = 1; k < splits.size(); ++k)
    if (splits[k].i < splits[k - 1].i || splits[k].j < splits[k - 1].j)
      throw std::invalid_argument(std::string(name) + ": a or b is not sorted by comp (the merge path goes back at "
                                                       "output position " +
                                  std::to_string(splits[k].i + splits[k].j) + "); nothing was written");
  std::vector<merge_stretch> stretches;
  for (std::size_t k = 1; k < splits.size(); ++k) {
    const merge_split x = splits[k - 1], y = splits[k];
    merge_stretch t{0, 0, 0, x.i + x.j, x.i, y.i - x.i, x.j, y.j - x.j};
    if (t.na + t.nb == 0) continue;
    t.place = out.owner(t.at);
    if (t.na > 0) t.a_place = a.owner(x.i);
    if (t.nb > 0) t.b_place = b.owner(x.j);
    stretches.push_back(t);
  }
  return stretches;
}

/// The merge of a and b into dst by merge-path splits (see the top of this header). Requires one
/// process, every place of dst reaching every place of a and b, and dst non-empty. Throws
/// std::invalid_argument, with dst unwritten, where the splits show an input that is not sorted
/// by comp (not every such input shows).
template <class T, class Comp>
void merge_path(const char* name, const distributed_span<const T>& a, const distributed_span<const T>& b,
                const distributed_span<T>& dst, const partition& inputs, Comp comp) {
  call_scope scope(dst.places().state(), name);
  set_state& s = scope.state();
  const partition& out = dst.partition();
  const std::vector<std::uint64_t> ask = merge_asks(out, a.partition(), b.partition());
  const std::size_t asked = ask.size() / 2;
  std::vector<merge_split> splits;
  if (asked > 0) {
    // One place with output finds every split, after the inputs' earlier work (events).
    std::size_t finder = 0;
    while (out.count(finder) == 0) ++finder;
    std::vector<std::uint64_t> one(out.places(), 0);
    one[finder] = 1;
    std::vector<std::uint64_t> table = segment_table(a);
    const std::size_t b_at = append_table(table, segment_table(b));
    const std::size_t ask_at = append_table(table, ask);
    merge_split* host = reinterpret_cast<merge_split*>(s.host_words(2 * asked));
    with_direct_access(s, partition::explicit_sizes(1, one), inputs, [&](std::size_t, place_state& p) {
      const std::uint64_t* t = upload_table(p, table);
      auto* found = static_cast<merge_split*>(p.temp_storage(asked * sizeof(merge_split)));
      const segment_lookup<const T> at_a{{t, static_cast<int>(a.partition().places())}},
          at_b{{t + b_at, static_cast<int>(b.partition().places())}};
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(static_cast<std::uint32_t>(asked),
                                             find_merge_splits<T, Comp>{at_a, at_b, t + ask_at, found, comp}, p.stream()));
      STRATA_CUDA_CHECK(
          cudaMemcpyAsync(host, found, asked * sizeof(merge_split), cudaMemcpyDeviceToHost, p.stream()));
    });
    wait_segments(s, out);
    splits.insert(splits.end(), host, host + asked);
  }
  // Every stretch between two splits lies in one segment of dst, of a and of b.
  const std::vector<merge_stretch> stretches = merge_stretches(name, std::move(splits), out, a.partition(), b.partition());
  with_direct_access(s, out, inputs, [&](std::size_t i, place_state& p) {
    for (const merge_stretch& t : stretches) {
      if (t.place != i) continue;
      T* to = dst.segment_at(i).data + (t.at - out.offset(i));
      const T* pa = t.na > 0 ? a.segment_at(t.a_place).data + (t.a_at - a.partition().offset(t.a_place)) : to;
      const T* pb = t.nb > 0 ? b.segment_at(t.b_place).data + (t.b_at - b.partition().offset(t.b_place)) : to;
      run_cub(p, [&](void* temp, std::size_t& bytes) {  // (an empty piece's pointer is never read)
        return cub::DeviceMerge::MergeKeys(temp, bytes, pa, static_cast<::cuda::std::int64_t>(t.na), pb,
                                           static_cast<::cuda::std::int64_t>(t.nb), to, comp, p.stream());
      });
    }
  });
}

}  // namespace detail

/// Merges the sorted ranges `a` and `b` into `dst` (a.size() + b.size() elements): dst is sorted
/// by `comp` and holds every element of both, an element of `a` before an equal one of `b` and each
/// range's equal elements in their order (stable), as thrust::merge. `a` and `b` must be sorted by
/// `comp` (strata::sort leaves them so; otherwise the result is unspecified). All three ranges are
/// on one device_set, in any layouts; `dst` shares no memory with `a` or `b`. Where every place of
/// `dst` reaches the places of `a` and `b` directly (one process, one device or peer access), the
/// merge path is split and every output place runs cub::DeviceMerge on its share, reading the
/// inputs where they lie (with several places the host waits once, for the splits; the merges are
/// enqueued and not waited for). Elsewhere (host staging, a set spanning processes) two searches
/// (strata::lower_bound, strata::upper_bound) and two scatters (strata::scatter), with 8 bytes of
/// positions per input element in the memory cache; the host waits inside them as they do, and
/// the second scatter's moves are not waited for. Later calls on the set are ordered after the
/// merge either way. Elements of at most 16 bytes (the searches'); `comp` callable on the device.
/// Throws std::invalid_argument (dst's size not the sum, different device_sets, dst overlapping an
/// input) before any device work, or, with nothing written, where the merge path's splits show an
/// input that is not sorted by `comp` (not every unsorted input shows); strata::cuda_error for
/// CUDA failures; on a set spanning processes it is a collective and throws the process group's
/// error if a rank fails or leaves.
template <class A, class B, class Dst, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<A> && is_distributed_range_v<B> && is_distributed_range_v<Dst>>>
void merge(const A& a_r, const B& b_r, Dst&& dst_r, Comp comp = {}) {
  constexpr const char* name = "strata::merge";
  using T = range_value_t<A>;
  static_assert(std::is_same_v<T, range_value_t<B>> && std::is_same_v<T, range_value_t<Dst>>,
                "strata::merge: a, b and dst must have the same element type");
  static_assert(detail::callable_v<Comp, T, T>,
                "strata::merge: comp(x, y) must compare two elements (a __device__ or __host__ __device__ functor or "
                "lambda)");
  detail::require_mutable<Dst>(name);
  const distributed_span<const T> a = detail::as_span(a_r);
  const distributed_span<const T> b = detail::as_span(b_r);
  const distributed_span<T> dst = detail::as_span(dst_r);
  detail::require_places(name, a);
  detail::require_places(name, b);
  detail::require_places(name, dst);
  if (a.places() != b.places() || a.places() != dst.places())
    throw std::invalid_argument(std::string(name) +
                                ": a, b and dst live on different device_sets; strata::copy them onto one first");
  if (dst.size() != a.size() + b.size())
    throw std::invalid_argument(std::string(name) + ": dst has " + std::to_string(dst.size()) + " elements, not a's " +
                                std::to_string(a.size()) + " plus b's " + std::to_string(b.size()));
  detail::require_disjoint(name, a, dst);
  detail::require_disjoint(name, b, dst);
  if (dst.size() == 0) return;
  // Every output place reaches the inputs' places: the merge path, split (one wait, then the
  // merges enqueued).
  {
    std::vector<std::uint64_t> both(a.partition().places());
    for (std::size_t i = 0; i < both.size(); ++i) both[i] = a.partition().count(i) + b.partition().count(i);
    const partition inputs = partition::explicit_sizes(dst.size(), both);
    if (detail::owners_reached(dst.places().state(), dst.partition(), inputs)) {
      detail::merge_path(name, a, b, dst, inputs, comp);
      return;
    }
  }
  if (a.size() > 0) {
    const auto pos = detail::merge_positions<detail::search_kind::lower>(a, b, comp);
    scatter(a, pos, dst);
  }
  if (b.size() > 0) {
    const auto pos = detail::merge_positions<detail::search_kind::upper>(b, a, comp);
    scatter(b, pos, dst);
  }
}

}  // namespace strata
