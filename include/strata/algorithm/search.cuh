// Vectorised searches into a sorted range: lower_bound, upper_bound and binary_search of a range
// of queries, with global indices out. The sorted range's segments are ordered, so a query's
// answer lies in one segment, found from the segments' first elements (read once onto the host,
// and across ranks onto every host); there a binary search gives the local position and the
// segment's offset makes it global. Where every place reaches every other's memory each query
// place searches the owners' segments directly with one kernel; elsewhere the queries travel to
// their owners through the exchange, bucketed by owner, and the answers come back
// (detail/by_index.cuh), as for gather.
#pragma once

#include <strata/detail/by_index.cuh>
#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/host_counts.cuh>
#include <strata/distributed_span.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_transform.cuh>

#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

enum class search_kind { lower, upper, contains };

/// The first elements of a sorted range's non-empty segments and the place each belongs to (in a
/// place's lookup table, or any memory): the owner of a query is the segment its answer lies in. For lower_bound,
/// the last segment whose first element is below the query (elements before it all are); for
/// upper_bound and binary_search, the last whose first element is not above it (if the query is
/// present at all, it is present there). With none, the first segment (the answer is then 0, or
/// not found).
template <class T, class Comp, search_kind Kind>
struct search_owner {
  const T* first;
  const std::uint8_t* place;
  int count;
  Comp comp;
  __host__ __device__ std::uint8_t operator()(const T& q) const {
    int lo = 0, hi = count;  // the number of segments whose first element goes before q
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      const bool before = Kind == search_kind::lower ? comp(first[mid], q) : !comp(q, first[mid]);
      if (before)
        lo = mid + 1;
      else
        hi = mid;
    }
    return place[lo == 0 ? 0 : lo - 1];
  }
};

/// A query's answer in one sorted segment of `count` elements at global `offset`: the global lower
/// or upper bound, or for binary_search 1 if an element equivalent to q is there, else 0.
template <class T, class Comp, search_kind Kind>
__host__ __device__ std::uint64_t search_segment(const T* data, std::uint64_t count, std::uint64_t offset, const T& q,
                                                 const Comp& comp) {
  std::uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const bool before = Kind == search_kind::upper ? !comp(q, data[mid]) : comp(data[mid], q);
    if (before)
      lo = mid + 1;
    else
      hi = mid;
  }
  if constexpr (Kind == search_kind::contains) return lo < count && !comp(q, data[lo]) ? 1 : 0;
  return offset + lo;
}

/// The direct search: owner, then that segment, read where it lies.
template <class T, class Comp, search_kind Kind>
struct search_direct {
  search_owner<T, Comp, Kind> owner;
  segment_lookup<const T> sorted;
  __host__ __device__ std::uint64_t operator()(const T& q) const {
    const int o = owner(q);
    return search_segment<T, Comp, Kind>(sorted.data(o), sorted.t.offset[o + 1] - sorted.t.offset[o], sorted.t.offset[o], q,
                                         owner.comp);
  }
};

/// The owner's search of the queries it was sent, in its own segment.
template <class T, class Comp, search_kind Kind>
struct search_local {
  const T* data;
  std::uint64_t count, offset;
  Comp comp;
  __host__ __device__ std::uint64_t operator()(const T& q) const {
    return search_segment<T, Comp, Kind>(data, count, offset, q, comp);
  }
};

template <class O>
struct constant_of {
  O value;
  template <class T>
  __host__ __device__ O operator()(const T&) const {
    return value;
  }
};

/// The first elements of the non-empty segments of `r`, in place order, on every rank's host (one
/// wait; across ranks one all-gather), with their places.
template <class T, class S>
void segment_firsts(set_state& s, const S& r, std::vector<T>& firsts, std::vector<std::uint8_t>& places) {
  constexpr std::size_t words = (sizeof(T) + 7) / 8;
  const partition& part = r.partition();
  const std::size_t k = part.places();
  const std::vector<std::uint64_t> w = kept_counts(s, part, words, [&](std::uint64_t* host) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) {
      const auto* from = reinterpret_cast<const char*>(r.segment_at(i).data);
      for (std::size_t b = 0; b < words; ++b)  // word b of the element (the last one may be short)
        STRATA_CUDA_CHECK(cudaMemcpyAsync(host + b * k + i, from + 8 * b, b + 1 < words ? 8 : sizeof(T) - 8 * b,
                                          cudaMemcpyDefault, p.stream()));
    });
  });
  for (std::size_t i = 0; i < k; ++i) {
    if (part.count(i) == 0) continue;
    char bytes[words * 8];
    for (std::size_t b = 0; b < words; ++b) std::memcpy(bytes + 8 * b, &w[b * k + i], 8);
    T v;
    std::memcpy(&v, bytes, sizeof(T));
    firsts.push_back(v);
    places.push_back(static_cast<std::uint8_t>(i));
  }
}

template <search_kind Kind, class Sorted, class Queries, class Out, class Comp>
void search_impl(const char* name, const Sorted& sorted_r, const Queries& queries_r, Out&& out_r, Comp comp) {
  using T = range_value_t<Sorted>;
  using O = range_value_t<Out>;
  static_assert(std::is_same_v<T, range_value_t<Queries>>,
                "strata::lower_bound / upper_bound / binary_search: the queries must have the sorted range's element type");
  static_assert(sizeof(T) <= 16 && std::is_trivially_copyable_v<T>,
                "strata::lower_bound / upper_bound / binary_search: elements of at most 16 bytes (trivially copyable); "
                "search a key column and gather the rest");
  static_assert(detail::callable_r_v<bool, Comp, T, T>,
                "strata::lower_bound / upper_bound / binary_search: comp(a, b) must order two elements (a __device__ or "
                "__host__ __device__ functor or lambda)");
  static_assert(Kind == search_kind::contains ? std::is_constructible_v<O, bool>
                                              : std::is_integral_v<O> && !std::is_same_v<O, bool>,
                "strata::lower_bound / upper_bound write integer indices; strata::binary_search writes bool");
  require_mutable<Out>(name);
  const distributed_span<const T> sorted = as_span(sorted_r);
  const distributed_span<const T> queries = as_span(queries_r);
  const distributed_span<O> out = as_span(out_r);
  require_same_layout(name, queries, out);
  require_places(name, sorted);
  if (sorted.places() != queries.places())
    throw std::invalid_argument(std::string(name) +
                                ": the sorted range and the queries live on different device_sets; strata::copy one onto "
                                "the other's set first");
  require_disjoint(name, sorted, out);
  require_disjoint(name, queries, out);
  if (queries.size() == 0) return;
  call_scope scope(queries.places().state(), name);
  set_state& s = scope.state();
  if (sorted.size() == 0) {  // nothing to find: every answer is 0 (or false)
    for_each_segment(s, queries.partition(), [&](std::size_t i, place_state& p) {
      STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(queries.segment_at(i).data, out.segment_at(i).data,
                                                        queries.segment_at(i).count, constant_of<O>{O{}}, p.stream()));
    });
    return;
  }
  // Every query place's lookup table: the sorted range's segment_table, its segments' first
  // elements, their places.
  std::vector<std::uint64_t> table = segment_table(sorted);
  int count = 0;
  std::size_t first_at = 0, place_at = 0;
  {
    std::vector<T> firsts;
    std::vector<std::uint8_t> places;
    segment_firsts(s, sorted, firsts, places);
    count = static_cast<int>(firsts.size());
    first_at = append_table(table, firsts);
    place_at = append_table(table, places);
  }
  for_each_segment(s, queries.partition(), [&](std::size_t, place_state& p) { (void)upload_table(p, table); });
  const auto owner_at = [&](place_state& p) {
    const std::uint64_t* t = p.lookup_table();
    return search_owner<T, Comp, Kind>{reinterpret_cast<const T*>(t + first_at),
                                       reinterpret_cast<const std::uint8_t*>(t + place_at), count, comp};
  };
  const partition& owners_part = sorted.partition();
  if (owners_reached(s, queries.partition(), owners_part)) {  // no counts needed: nothing moves
    with_direct_access(s, queries.partition(), owners_part, [&](std::size_t i, place_state& p) {
      const search_direct<T, Comp, Kind> search{owner_at(p), {{p.lookup_table(), static_cast<int>(owners_part.places())}}};
      STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(queries.segment_at(i).data, out.segment_at(i).data,
                                                        queries.segment_at(i).count, search, p.stream()));
    });
    return;
  }
  const std::size_t owners = owners_part.places();
  const std::vector<std::uint64_t> counts = count_owners(s, queries, owners, owner_at);
  owner_requests r = request_owners(
      name, s, queries, owner_at, owners, counts, sizeof(T), sizeof(std::uint64_t),
      [&](std::size_t i, place_state& p, const std::uint64_t* pos, const std::uint8_t*, void* payload) {
        STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(pos, static_cast<T*>(payload), queries.segment_at(i).count,
                                                          read_local<T>{queries.segment_at(i).data}, p.stream()));
      });
  exchange(s, const_pointers(r.payload), s, r.served, sizeof(T), r.to_owners);
  for_each_owner(s, r, [&](std::size_t j, place_state& p) {  // every owner searches its segment for what it was sent
    const auto seg = sorted.segment_at(j);
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(
        static_cast<const T*>(r.served[j]), static_cast<std::uint64_t*>(r.served_values[j]), r.served_count[j],
        search_local<T, Comp, Kind>{seg.data, seg.count, sorted.partition().offset(j), comp}, p.stream()));
  });
  exchange(s, const_pointers(r.served_values), s, r.sent, sizeof(std::uint64_t), r.from_owners);
  for_each_segment(s, queries.partition(), [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
        queries.segment_at(i).count,
        write_local<O, std::uint64_t>{out.segment_at(i).data, r.pos[i], static_cast<const std::uint64_t*>(r.sent[i])},
        p.stream()));
  });
}

}  // namespace detail

/// For every query q = queries[k]: out[k] = the global index of the first element of `sorted` that
/// does not go before q (comp(x, q) false), or sorted.size() if none, as thrust::lower_bound's
/// vectorised form. `sorted` must be sorted by `comp` across its whole range (strata::sort leaves
/// it so; otherwise the answers are unspecified). `queries` may have any layout on the same
/// device_set; `out` (integers) shares the queries' layout. Elements of at most 16 bytes. Waits
/// once where every place reaches every other's memory (the host reads the segments' first
/// elements), twice elsewhere (then the count of queries per owning segment); the searches are
/// enqueued after that and not waited for. Where every place reaches
/// every other's memory, each query place searches the owners' segments with one kernel; else the
/// queries travel to their owners through the exchange (host staging, NCCL across ranks) and the
/// answers come back, in the places' cached scratch (about 26 + sizeof(T) bytes per query).
/// Throws std::invalid_argument for mismatched layouts, different sets or an `out` sharing memory
/// with an input, strata::cuda_error for CUDA failures and allocations (with nothing written); on a
/// set spanning processes it is a collective and throws the process group's error if a rank fails.
template <class Sorted, class Queries, class Out, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<Sorted> && is_distributed_range_v<Queries> &&
                                   is_distributed_range_v<Out>>>
void lower_bound(const Sorted& sorted, const Queries& queries, Out&& out, Comp comp = {}) {
  detail::search_impl<detail::search_kind::lower>("strata::lower_bound", sorted, queries, out, comp);
}

/// As strata::lower_bound, with the first element that goes after q (comp(q, x) true): out[k] is
/// the global index one past the last element equivalent to q.
template <class Sorted, class Queries, class Out, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<Sorted> && is_distributed_range_v<Queries> &&
                                   is_distributed_range_v<Out>>>
void upper_bound(const Sorted& sorted, const Queries& queries, Out&& out, Comp comp = {}) {
  detail::search_impl<detail::search_kind::upper>("strata::upper_bound", sorted, queries, out, comp);
}

/// As strata::lower_bound, writing whether `sorted` holds an element equivalent to each query
/// (neither goes before the other) into `out` (bool, or a type constructible from bool).
template <class Sorted, class Queries, class Out, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<Sorted> && is_distributed_range_v<Queries> &&
                                   is_distributed_range_v<Out>>>
void binary_search(const Sorted& sorted, const Queries& queries, Out&& out, Comp comp = {}) {
  detail::search_impl<detail::search_kind::contains>("strata::binary_search", sorted, queries, out, comp);
}

}  // namespace strata
