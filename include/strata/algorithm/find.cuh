// The first-index algorithms: find, find_if, find_if_not, mismatch, is_sorted_until, is_sorted.
// Each is one CUB min-reduction per segment over the segment's indices and a fold on the root in
// segment order (detail/first_index.cuh), so they run on every place at once, cross places and
// ranks like the reduce family, and replay from CUDA graphs when repeated. Every one reads the
// whole range (no early exit); every one has an `_async` form returning strata::future.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/first_index.cuh>
#include <strata/detail/fold.cuh>
#include <strata/detail/reduce_partials.cuh>
#include <strata/distributed_span.cuh>
#include <strata/views.cuh>
#include <strata/future.cuh>
#include <strata/zip.cuh>

#include <cuda/std/functional>

#include <cstdint>
#include <type_traits>

namespace strata {

namespace detail {

template <class R, class Pred>
future<std::uint64_t> find_impl(const char* name, const R& r_in, Pred pred, bool want) {
  const auto r = as_span(r_in);
  using T = typename decltype(r)::value_type;
  static_assert(detail::callable_v<Pred, T>,
                "strata::find_if / find_if_not: the predicate must take one element and return something "
                "convertible to bool, pred(x) (and be callable on the device: a __device__ or __host__ __device__ "
                "functor or lambda)");
  return reduce_to_future<std::uint64_t, std::uint64_t>(name, require_places(name, r), r.partition(),
                                                        find_partial<decltype(r), Pred>{r, pred, want},
                                                        fold_first_index{r.size()}, r.size());
}

template <class T, class Comp, class S>
const device_set& sorted_span_check(const char* name, const S& r) {
  static_assert(detail::callable_v<Comp, T, T>,
                "strata::is_sorted / is_sorted_until: the comparator must take two elements and return something "
                "convertible to bool, comp(a, b) (true when a goes before b; a strict weak order)");
  return require_places(name, r);
}

}  // namespace detail

/// Asynchronous find_if: the global index of the first element x with `pred(x)` true, or size()
/// if there is none (0 for an empty range). Reads every element. `pred` runs on the device.
/// Throws std::invalid_argument for a range without places, strata::cuda_error if a CUDA call
/// fails (from get()/wait() for failures in the device work).
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
future<std::uint64_t> find_if_async(const R& r, Pred pred) {
  return detail::find_impl("strata::find_if", r, pred, true);
}
/// The global index of the first element with `pred(x)` true, or size() (see find_if_async).
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
std::uint64_t find_if(const R& r, Pred pred) {
  return find_if_async(r, pred).get();
}

/// Asynchronous find_if_not: the global index of the first element with `pred(x)` false, or
/// size() (see find_if_async for the rules and errors).
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
future<std::uint64_t> find_if_not_async(const R& r, Pred pred) {
  return detail::find_impl("strata::find_if_not", r, pred, false);
}
/// The global index of the first element with `pred(x)` false, or size().
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
std::uint64_t find_if_not(const R& r, Pred pred) {
  return find_if_not_async(r, pred).get();
}

/// Asynchronous find: the global index of the first element equal to `value` (operator==), or
/// size() (see find_if_async for the rules and errors).
template <class R, class = std::enable_if_t<is_readable_range_v<R>>>
future<std::uint64_t> find_async(const R& r, const range_value_t<R>& value) {
  return detail::find_impl("strata::find", r, detail::equal_to_value<range_value_t<R>>{value}, true);
}
/// The global index of the first element equal to `value`, or size().
template <class R, class = std::enable_if_t<is_readable_range_v<R>>>
std::uint64_t find(const R& r, const range_value_t<R>& value) {
  return find_async(r, value).get();
}

/// Asynchronous mismatch: the first global index i with !(a[i] == b[i]), or size() if the ranges
/// are equal (std::mismatch's position, as one index since the layouts are the same). The ranges
/// must have the same size, device_set and partition (std::invalid_argument otherwise, before
/// any device work); strata::cuda_error if a CUDA call fails.
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<std::uint64_t> mismatch_async(const RA& a, const RB& b) {
  const auto z = detail::zip_for("strata::mismatch", a, b);
  return detail::reduce_to_future<std::uint64_t, std::uint64_t>("strata::mismatch", z.places(), z.partition(),
                                                                detail::mismatch_partial<decltype(z)>{z},
                                                                detail::fold_first_index{z.size()}, z.size());
}
/// The first global index where the ranges differ, or size() (see mismatch_async).
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
std::uint64_t mismatch(const RA& a, const RB& b) {
  return mismatch_async(a, b).get();
}

/// Asynchronous is_sorted_until: the global index of the first element that `comp` orders before
/// its predecessor (comp(x[i], x[i-1])), or size() if the range is sorted (std::is_sorted_until).
/// The neighbours across a place boundary (or a rank boundary) are compared too: each segment's
/// first and last elements travel with its partial. `comp` must be a strict weak order callable
/// on the device. Throws std::invalid_argument for a range without places, strata::cuda_error if
/// a CUDA call fails.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
future<std::uint64_t> is_sorted_until_async(const R& r_in, Comp comp = {}) {
  const auto r = detail::as_span(r_in);
  using T = range_value_t<R>;
  const device_set& set = detail::sorted_span_check<T, Comp>("strata::is_sorted_until", r);
  return detail::reduce_to_future<std::uint64_t, detail::sorted_run<T>>(
      "strata::is_sorted_until", set, r.partition(), detail::sorted_partial<decltype(r), Comp>{r, comp},
      detail::fold_sorted_until<T, Comp>{r.size(), comp}, r.size());
}
/// The global index of the first out-of-order element, or size() (see is_sorted_until_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
std::uint64_t is_sorted_until(const R& r, Comp comp = {}) {
  return is_sorted_until_async(r, comp).get();
}

/// Asynchronous is_sorted: true if no element is ordered by `comp` before its predecessor
/// (true for 0 or 1 elements). Rules and errors as is_sorted_until_async.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
future<bool> is_sorted_async(const R& r_in, Comp comp = {}) {
  const auto r = detail::as_span(r_in);
  using T = range_value_t<R>;
  const device_set& set = detail::sorted_span_check<T, Comp>("strata::is_sorted", r);
  return detail::reduce_to_future<bool, detail::sorted_run<T>>(
      "strata::is_sorted", set, r.partition(), detail::sorted_partial<decltype(r), Comp>{r, comp},
      detail::fold_is_sorted<T, Comp>{{r.size(), comp}}, true);
}
/// True if the range is sorted under `comp` (see is_sorted_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
bool is_sorted(const R& r, Comp comp = {}) {
  return is_sorted_async(r, comp).get();
}

}  // namespace strata
