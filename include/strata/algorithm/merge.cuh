// merge: two sorted distributed ranges into one, stable (equal elements of the first range come
// before those of the second), as thrust::merge.
//
// Where one place holds all three ranges, that is one cub::DeviceMerge call there. Elsewhere every
// element's place in the output is its index plus the number of elements of the other range that
// go before it (a search of the other range: lower_bound for the first range, upper_bound for the
// second, so ties keep the first range first), and a scatter puts it there: the searches and
// scatters of search.cuh and gather.cuh, on places and across ranks alike. That costs two
// searches and two scatters (8 bytes of positions per element of each input, in containers of the
// memory cache), where a merge-path split and one exchange would move each element once: the
// faster design, not built yet.
#pragma once

#include <strata/algorithm/gather.cuh>
#include <strata/algorithm/search.cuh>
#include <strata/algorithm/transform.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>

#include <cub/device/device_merge.cuh>

#include <cuda/std/cstdint>
#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace strata {

namespace detail {

/// Adds an element's global index to it (a merge position: index plus the other range's count).
struct add_global_index {
  __host__ __device__ void operator()(std::uint64_t i, std::uint64_t& x) const { x += i; }
};

/// The place that holds the whole of `r` (every element), or -1 if none does (several places, or
/// an empty range: then any place would do, and the caller needs none).
template <class S>
int sole_place(const S& r) {
  const partition& part = r.partition();
  for (std::size_t i = 0; i < part.places(); ++i)
    if (part.count(i) == r.size() && r.size() > 0) return static_cast<int>(i);
  return -1;
}

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

}  // namespace detail

/// Merges the sorted ranges `a` and `b` into `dst` (a.size() + b.size() elements): dst is sorted
/// by `comp` and holds every element of both, an element of `a` before an equal one of `b` and each
/// range's equal elements in their order (stable), as thrust::merge. `a` and `b` must be sorted by
/// `comp` (strata::sort leaves them so; otherwise the result is unspecified). All three ranges are
/// on one device_set, in any layouts; `dst` shares no memory with `a` or `b`. Where one place
/// holds all three, one cub::DeviceMerge call there; otherwise two searches (strata::lower_bound,
/// strata::upper_bound) and two scatters (strata::scatter), with 8 bytes of positions per input
/// element in the memory cache (see the top of this header). Elements of at most 16 bytes (the
/// searches'); `comp` callable on the device. The one-place merge is waited for; otherwise the host
/// waits inside the searches and scatters as they do, and the second scatter's moves are enqueued
/// and not waited for (later calls on the set are ordered after them, as after strata::scatter).
/// Throws std::invalid_argument (dst's size not the sum, different device_sets, dst overlapping an
/// input) before any device work, strata::cuda_error for CUDA failures; on a set spanning
/// processes it is a collective and throws the process group's error if a rank fails or leaves.
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
  // One place holds everything (an input may be empty): one CUB merge there. (In one process
  // only: on a set spanning processes every rank takes the same path, the collective one.)
  const int pd = detail::sole_place(dst);
  const int pa = a.size() == 0 ? pd : detail::sole_place(a), pb = b.size() == 0 ? pd : detail::sole_place(b);
  if (pd >= 0 && pa == pd && pb == pd && dst.places().state().link == nullptr) {
    detail::call_scope scope(dst.places().state(), name);
    const auto i = static_cast<std::size_t>(pd);
    detail::at_place(scope.state(), i, [&](detail::place_state& p) {
      const T* ad = a.size() > 0 ? a.segment_at(i).data : dst.segment_at(i).data;
      const T* bd = b.size() > 0 ? b.segment_at(i).data : dst.segment_at(i).data;
      detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
        return cub::DeviceMerge::MergeKeys(temp, bytes, ad, static_cast<::cuda::std::int64_t>(a.size()), bd,
                                           static_cast<::cuda::std::int64_t>(b.size()), dst.segment_at(i).data, comp,
                                           p.stream());
      });
    });
    detail::wait_segments(scope.state(), dst.partition());
    return;
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
