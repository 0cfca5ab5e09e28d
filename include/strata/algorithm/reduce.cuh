// The reduce family: reduce, transform_reduce (unary and binary), count, count_if,
// min_element, max_element, minmax, all_of / any_of / none_of, equal, and the reproducible sums.
// Each runs one CUB reduction per segment, gathers the partials on the root place and folds them
// there in segment order (detail/fold.cuh). Every algorithm has an `_async` form returning
// strata::future. The partials and folds are in detail/reduce_partials.cuh.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold.cuh>
#include <strata/detail/reduce_partials.cuh>
#include <strata/detail/repro.cuh>
#include <strata/distributed_span.cuh>
#include <strata/future.cuh>
#include <strata/results.cuh>
#include <strata/tags.cuh>
#include <strata/views.cuh>
#include <strata/zip.cuh>

#include <thrust/iterator/counting_iterator.h>

#include <cuda/std/functional>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>

namespace strata {

namespace detail {

template <class T, class S, class Better>
future<element_result<T>> extremum_async(const char* name, const S& r, Better better) {
  using P = indexed<T>;
  return reduce_to_future<element_result<T>, P>(name, require_places(name, r), r.partition(),
                                                indexed_partial<P, S, Better, index_value<T, segment_iterator_t<S>>>{r, better},
                                                fold_element<T, Better>{better}, element_result<T>{r.size(), T{}});
}

template <class Pred, class R>
future<bool> quantifier_async(const char* name, const R& r_in, Pred pred, quantifier q) {
  const auto r = as_span(r_in);
  return reduce_to_future<bool, std::uint64_t>(
      name, require_places(name, r), r.partition(),
      make_reduce_partial<std::uint64_t>(r, ::cuda::std::plus<std::uint64_t>{}, count_fn<Pred>{pred}),
      fold_quantifier{q, r.size()}, q != quantifier::any);
}

}  // namespace detail

/// Asynchronous transform_reduce: `init op transform(x0) op transform(x1) op ...` over the whole
/// range. `op` must be associative and commutative (CUB reorders operands within a segment);
/// segments are combined in order. Returns `init` for an empty range. The accumulator type is
/// the type of `init`. Throws std::invalid_argument for a range without places,
/// strata::cuda_error if a CUDA call fails (from get()/wait() for failures in the device work).
template <class R, class Acc, class Op, class Tf, class = std::enable_if_t<is_readable_range_v<R>>>
future<Acc> transform_reduce_async(const R& r_in, Acc init, Op op, Tf transform) {
  static_assert(detail::callable_v<Tf, range_value_t<R>>,
                "strata::transform_reduce / count_if: the transform (or predicate) must take one element, f(x)");
  static_assert(detail::callable_v<Op, Acc, Acc>,
                "strata::reduce / transform_reduce: the operator must combine two accumulators, op(acc, acc), the "
                "accumulator being the type of init; the order is reduce(r, init, op) and "
                "transform_reduce(r, init, op, f), as std::transform_reduce");
  const auto r = detail::as_span(r_in);
  return detail::reduce_to_future<Acc, Acc>("strata::transform_reduce", detail::require_places("strata::transform_reduce", r),
                                            r.partition(), detail::make_reduce_partial<Acc>(r, op, transform),
                                            detail::fold_with_init<Acc, Op>{init, op}, init);
}
/// transform_reduce, waiting for the value. See transform_reduce_async.
template <class R, class Acc, class Op, class Tf, class = std::enable_if_t<is_readable_range_v<R>>>
Acc transform_reduce(const R& r, Acc init, Op op, Tf transform) {
  return transform_reduce_async(r, init, op, transform).get();
}

/// Asynchronous n-ary transform_reduce over a zip: `init op f(a0, b0, ...) op f(a1, b1, ...) ...`,
/// with one argument of `f` per zipped range (see strata::zip, which checks the layouts). `op`
/// must be associative and commutative. Returns `init` for empty ranges.
template <class Z, class Acc, class Op, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
future<Acc> transform_reduce_async(const Z& z, Acc init, Op op, F f) {
  return detail::reduce_to_future<Acc, Acc>("strata::transform_reduce", z.places(), z.partition(),
                                            detail::zip_reduce_partial<Acc, Z, Op, F>{z, op, f},
                                            detail::fold_with_init<Acc, Op>{init, op}, init);
}
/// n-ary transform_reduce over a zip, waiting for the value. See the async form.
template <class Z, class Acc, class Op, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
Acc transform_reduce(const Z& z, Acc init, Op op, F f) {
  return transform_reduce_async(z, init, op, f).get();
}

/// Asynchronous binary transform_reduce (inner product): `init op f(a0, b0) op f(a1, b1) ...`.
/// `a` and `b` must have the same size, device_set and partition (std::invalid_argument
/// otherwise, before any device work: strata::copy one onto the other's layout first). `op` must
/// be associative and commutative. Returns `init` for empty ranges.
template <class RA, class RB, class Acc, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<Acc> transform_reduce_async(const RA& a, const RB& b, Acc init, Op op, F f) {
  return transform_reduce_async(detail::zip_for("strata::transform_reduce", a, b), init, op, f);
}
/// Binary transform_reduce, waiting for the value. See the async form.
template <class RA, class RB, class Acc, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
Acc transform_reduce(const RA& a, const RB& b, Acc init, Op op, F f) {
  return transform_reduce_async(a, b, init, op, f).get();
}

/// Asynchronous reduce: `init op x0 op x1 op ...`. `op` must be associative and commutative
/// (as CUB requires); segments are combined in segment order. Returns `init` for an empty range.
/// Throws std::invalid_argument for a range without places, strata::cuda_error for CUDA failures.
template <class R, class Acc, class Op, class = std::enable_if_t<is_readable_range_v<R>>>
future<Acc> reduce_async(const R& r, Acc init, Op op) {
  return transform_reduce_async(r, init, op, detail::identity_fn{});
}
/// Asynchronous sum of the elements plus `init`, accumulated in the type of `init` (as
/// std::reduce(first, last, init)): `reduce_async(r, std::int64_t{0})` sums 32-bit integers in 64
/// bits.
template <class R, class Acc, class = std::enable_if_t<is_readable_range_v<R>>>
future<Acc> reduce_async(const R& r, Acc init) {
  return reduce_async(r, init, ::cuda::std::plus<>{});
}
/// Asynchronous sum of the elements (value-initialised T as the initial value).
template <class R, class = std::enable_if_t<is_readable_range_v<R>>>
future<range_value_t<R>> reduce_async(const R& r) {
  return reduce_async(r, range_value_t<R>{}, ::cuda::std::plus<>{});
}
/// reduce, waiting for the value. See reduce_async.
template <class R, class Acc, class Op, class = std::enable_if_t<is_readable_range_v<R>>>
Acc reduce(const R& r, Acc init, Op op) {
  return reduce_async(r, init, op).get();
}
/// The sum of the elements plus `init`, in the type of `init`, waiting for it (see
/// reduce_async(r, init)).
template <class R, class Acc, class = std::enable_if_t<is_readable_range_v<R>>>
Acc reduce(const R& r, Acc init) {
  return reduce_async(r, init).get();
}
/// The sum of the elements, waiting for it.
template <class R, class = std::enable_if_t<is_readable_range_v<R>>>
range_value_t<R> reduce(const R& r) {
  return reduce_async(r).get();
}

/// Asynchronous count of the elements for which `pred(x)` is true.
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
future<std::uint64_t> count_if_async(const R& r, Pred pred) {
  return transform_reduce_async(r, std::uint64_t{0}, ::cuda::std::plus<std::uint64_t>{}, detail::count_fn<Pred>{pred});
}
/// The number of elements for which `pred(x)` is true.
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
std::uint64_t count_if(const R& r, Pred pred) {
  return count_if_async(r, pred).get();
}
/// Asynchronous count of the elements equal to `value` (compared with ==).
template <class R, class = std::enable_if_t<is_readable_range_v<R>>>
future<std::uint64_t> count_async(const R& r, const range_value_t<R>& value) {
  return count_if_async(r, detail::equal_to_value<range_value_t<R>>{value});
}
/// The number of elements equal to `value`.
template <class R, class = std::enable_if_t<is_readable_range_v<R>>>
std::uint64_t count(const R& r, const range_value_t<R>& value) {
  return count_async(r, value).get();
}

/// Asynchronous min_element: the first smallest element under `comp` (default `<`) and its
/// global index. For an empty range the index is size() and the value is value-initialised.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_readable_range_v<R>>>
future<element_result<range_value_t<R>>> min_element_async(const R& r, Comp comp = {}) {
  return detail::extremum_async<range_value_t<R>>("strata::min_element", detail::as_span(r),
                                                  detail::first_min<Comp>{comp});
}
/// The first smallest element and its global index (see min_element_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_readable_range_v<R>>>
element_result<range_value_t<R>> min_element(const R& r, Comp comp = {}) {
  return min_element_async(r, comp).get();
}
/// Asynchronous max_element: the first largest element under `comp` (default `<`) and its
/// global index. For an empty range the index is size() and the value is value-initialised.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_readable_range_v<R>>>
future<element_result<range_value_t<R>>> max_element_async(const R& r, Comp comp = {}) {
  return detail::extremum_async<range_value_t<R>>("strata::max_element", detail::as_span(r),
                                                  detail::first_max<Comp>{comp});
}
/// The first largest element and its global index (see max_element_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_readable_range_v<R>>>
element_result<range_value_t<R>> max_element(const R& r, Comp comp = {}) {
  return max_element_async(r, comp).get();
}

/// Asynchronous minmax: in one pass, the first smallest and the last largest element under
/// `comp` with their global indices (std::minmax_element's choice). Empty range: both indices
/// equal size().
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_readable_range_v<R>>>
future<minmax_result<range_value_t<R>>> minmax_async(const R& r_in, Comp comp = {}) {
  using T = range_value_t<R>;
  using P = detail::extrema<T>;
  const auto r = detail::as_span(r_in);
  const detail::indexed_partial<P, decltype(r), detail::minmax_op<Comp>, detail::index_value2<T, detail::segment_iterator_t<decltype(r)>>> partial{
      r, detail::minmax_op<Comp>{comp}};
  const element_result<T> none{r.size(), T{}};
  return detail::reduce_to_future<minmax_result<T>, P>("strata::minmax", detail::require_places("strata::minmax", r),
                                                       r.partition(), partial, detail::fold_minmax<T, Comp>{comp},
                                                       minmax_result<T>{none, none});
}
/// The first smallest and last largest elements (see minmax_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_readable_range_v<R>>>
minmax_result<range_value_t<R>> minmax(const R& r, Comp comp = {}) {
  return minmax_async(r, comp).get();
}

/// Asynchronous all_of: true if `pred(x)` holds for every element (true for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
future<bool> all_of_async(const R& r, Pred pred) {
  return detail::quantifier_async("strata::all_of", r, pred, detail::quantifier::all);
}
/// Asynchronous any_of: true if `pred(x)` holds for some element (false for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
future<bool> any_of_async(const R& r, Pred pred) {
  return detail::quantifier_async("strata::any_of", r, pred, detail::quantifier::any);
}
/// Asynchronous none_of: true if `pred(x)` holds for no element (true for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
future<bool> none_of_async(const R& r, Pred pred) {
  return detail::quantifier_async("strata::none_of", r, pred, detail::quantifier::none);
}
/// True if `pred(x)` holds for every element. All three quantifiers read every element.
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
bool all_of(const R& r, Pred pred) {
  return all_of_async(r, pred).get();
}
/// True if `pred(x)` holds for some element.
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
bool any_of(const R& r, Pred pred) {
  return any_of_async(r, pred).get();
}
/// True if `pred(x)` holds for no element.
template <class R, class Pred, class = std::enable_if_t<is_readable_range_v<R>>>
bool none_of(const R& r, Pred pred) {
  return none_of_async(r, pred).get();
}

/// Asynchronous equal: true if a[i] == b[i] for every i. The ranges must have the same size,
/// device_set and partition (std::invalid_argument otherwise, before any device work).
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<bool> equal_async(const RA& a, const RB& b) {
  const auto z = detail::zip_for("strata::equal", a, b);
  return detail::reduce_to_future<bool, std::uint64_t>(
      "strata::equal", z.places(), z.partition(),
      detail::zip_reduce_partial<std::uint64_t, decltype(z), ::cuda::std::plus<std::uint64_t>, detail::not_equal_fn>{
          z, {}, {}},
      detail::fold_quantifier{detail::quantifier::none, z.size()}, true);
}
/// True if the ranges hold equal elements at every index (see equal_async).
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
bool equal(const RA& a, const RB& b) {
  return equal_async(a, b).get();
}

/// Asynchronous reproducible n-ary transform_reduce over a zip: `init + f(a0, b0, ...) + ...`,
/// rounded once, the same bits for any layout (see strata::reproducible); `reproducible` dot
/// products are `transform_reduce(reproducible, zip(a, b), 0.0, mul)`. `T` is float or double; `f`
/// returns something convertible to double. Throws std::invalid_argument for ranges without places
/// or of more than 2^33 elements, strata::cuda_error for CUDA failures.
template <class Z, class T, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
future<T> transform_reduce_async(reproducible_t, const Z& z, T init, F f) {
  detail::require_reproducible<T>("strata::transform_reduce", z.size());
  return detail::reduce_to_future<T, detail::repro_acc>("strata::transform_reduce", z.places(), z.partition(),
                                                       detail::repro_partial<T, Z, F>{z, f},
                                                       detail::fold_repro<T>{detail::repro_of<detail::repro_windows_for<T>>(static_cast<double>(init))}, init);
}
/// Reproducible n-ary transform_reduce over a zip, waiting for the value.
template <class Z, class T, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
T transform_reduce(reproducible_t tag, const Z& z, T init, F f) {
  return transform_reduce_async(tag, z, init, f).get();
}

/// Asynchronous reproducible transform_reduce: `init + f(x0) + f(x1) + ...`, rounded once (see the
/// zip form).
template <class R, class T, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
future<T> transform_reduce_async(reproducible_t tag, const R& r, T init, F f) {
  detail::require_places("strata::transform_reduce", detail::as_span(r));
  return transform_reduce_async(tag, detail::zip_for("strata::transform_reduce", r), init, f);
}
/// Reproducible transform_reduce, waiting for the value (see the async form).
template <class R, class T, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
T transform_reduce(reproducible_t tag, const R& r, T init, F f) {
  return transform_reduce_async(tag, r, init, f).get();
}

/// Asynchronous reproducible binary transform_reduce (a dot product with `f = a * b`):
/// `init + f(a0, b0) + f(a1, b1) + ...`, rounded once. `a` and `b` must have the same size,
/// device_set and partition (std::invalid_argument otherwise).
template <class RA, class RB, class T, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<T> transform_reduce_async(reproducible_t tag, const RA& a, const RB& b, T init, F f) {
  return transform_reduce_async(tag, detail::zip_for("strata::transform_reduce", a, b), init, f);
}
/// Reproducible binary transform_reduce, waiting for the value.
template <class RA, class RB, class T, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
T transform_reduce(reproducible_t tag, const RA& a, const RB& b, T init, F f) {
  return transform_reduce_async(tag, a, b, init, f).get();
}

/// Asynchronous reproducible sum `init + x0 + x1 + ...` of a float or double range, rounded once
/// (see strata::reproducible).
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
future<T> reduce_async(reproducible_t tag, const R& r, T init) {
  return transform_reduce_async(tag, r, init, detail::identity_fn{});
}
/// Reproducible sum with `init`, waiting for it.
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
T reduce(reproducible_t tag, const R& r, T init) {
  return reduce_async(tag, r, init).get();
}
/// Reproducible sum of the elements, in their own type (float or double), waiting for it.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
range_value_t<R> reduce(reproducible_t tag, const R& r) {
  return reduce_async(tag, r, range_value_t<R>{}).get();
}

}  // namespace strata
