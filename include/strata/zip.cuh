// zip: several distributed ranges of one layout, walked together by the element-wise algorithms
// (transform, for_each, for_each_segment) and by transform_reduce.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>

#include <cuda/std/tuple>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace strata {

/// Several distributed ranges of the same size, device_set and partition, viewed side by side:
/// element i of a zip is the i-th element of every range. Made by strata::zip; holds spans (it
/// does not own the data, and is invalidated as they are). Element-wise algorithms given a zip
/// call their function with one argument per range: `transform(zip(a, b, c), out, f)` writes
/// `out[i] = f(a[i], b[i], c[i])`, `for_each(zip(a, b), f)` calls `f(a[i], b[i])` with references.
template <class... Spans>
class zip_range {
  static_assert(sizeof...(Spans) >= 1, "strata::zip needs at least one range");

 public:
  /// The spans, in the order given to zip.
  using spans_type = std::tuple<Spans...>;
  /// Number of zipped ranges.
  static constexpr std::size_t arity = sizeof...(Spans);

  /// Internal: made by strata::zip, which checks the layouts.
  explicit zip_range(Spans... spans) : spans_(std::move(spans)...) {}

  /// The zipped spans.
  const spans_type& spans() const noexcept { return spans_; }
  /// The first range's span (all share its size, places and partition).
  const auto& first() const noexcept { return std::get<0>(spans_); }
  /// Number of elements (of every range).
  std::uint64_t size() const noexcept { return first().size(); }
  /// The device_set shared by every range.
  const device_set& places() const { return first().places(); }
  /// The partition shared by every range.
  const strata::partition& partition() const noexcept { return first().partition(); }

 private:
  spans_type spans_;
};

/// Zips distributed ranges (distributed_vector or distributed_span, const or not) and lazy ranges
/// (strata::counting, strata::transformed: read-only) that have the same size, device_set and
/// partition: `transform(zip(counting(0, x), x), out, f)` passes every element with its index. Throws std::invalid_argument, naming the first range
/// that differs, before any device work.
template <class... Rs, class = std::enable_if_t<(is_readable_range_v<Rs> && ...)>>
zip_range<span_of_t<Rs>...> zip(Rs&&... ranges);

namespace detail {
/// strata::zip for the algorithm `name` (which names itself in the layout errors).
template <class... Rs>
zip_range<span_of_t<Rs>...> zip_for(const char* name, Rs&&... ranges) {
  zip_range<span_of_t<Rs>...> z(as_span(ranges)...);
  std::apply([name](const auto& first, const auto&... rest) { (require_same_layout(name, first, rest), ...); }, z.spans());
  return z;
}
}  // namespace detail

template <class... Rs, class>
zip_range<span_of_t<Rs>...> zip(Rs&&... ranges) {
  return detail::zip_for("strata::zip", ranges...);
}

namespace detail {

template <class Z>
struct is_zip_impl : std::false_type {};
template <class... S>
struct is_zip_impl<zip_range<S...>> : std::true_type {};

/// The segment pointers of place i of every zipped range, as a cuda::std::tuple (what CUB's
/// DeviceTransform takes for several inputs).
template <class... S>
auto zip_pointers(const zip_range<S...>& z, std::size_t i) {
  return std::apply([i](const auto&... s) { return ::cuda::std::make_tuple(s.segment_at(i).data...); }, z.spans());
}

/// Calls `f(p0[i], p1[i], ...)` for pointers held in a tuple: element i of every zipped range.
template <class F, class Ptrs>
struct zip_apply {
  Ptrs ptrs;
  F f;
  template <class I>
  __host__ __device__ decltype(auto) operator()(I i) const {
    return ::cuda::std::apply([&](auto... p) -> decltype(auto) { return f(p[i]...); }, ptrs);
  }
};
template <class F, class Ptrs>
zip_apply<F, Ptrs> make_zip_apply(const Ptrs& ptrs, F f) {
  return {ptrs, f};
}

}  // namespace detail

/// True for the ranges strata::zip makes.
template <class Z>
inline constexpr bool is_zip_range_v = detail::is_zip_impl<std::remove_cv_t<std::remove_reference_t<Z>>>::value;

}  // namespace strata
