// Lazy inputs: a counting range and a transform view, laid out over a device_set like any
// distributed range but holding no elements, for the algorithms that only read (the reduce family,
// find, the histograms, transform's input, zip). Each place's segment is an iterator (Thrust's counting and
// transform iterators) that CUB reads as it would a pointer: nothing is materialized.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/partition.hpp>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace strata {

/// One place's share of a lazy range: as strata::segment, with an iterator in place of the pointer.
template <class It>
struct view_segment {
  std::size_t place;    ///< index of the place in the device_set
  int device;           ///< device ordinal whose kernels read it
  It data;              ///< iterator to the place's first element (device-readable; nothing behind it in memory)
  std::uint64_t count;  ///< number of elements
  std::uint64_t offset; ///< global index of the first element
};

namespace detail {
/// Throws std::invalid_argument unless first + n - 1 is representable in I (n > 0).
template <class I>
void require_counting_fits(I first, std::uint64_t n) {
  using U = std::make_unsigned_t<I>;
  // max - first, exactly (it lies in [0, 2^bits - 1], which U holds; unsigned wrap-around is exact).
  const std::uint64_t room = static_cast<U>(static_cast<U>(std::numeric_limits<I>::max()) - static_cast<U>(first));
  if (n > 0 && n - 1 > room)
    throw std::invalid_argument("strata::counting: " + std::to_string(n) + " values from " + std::to_string(first) +
                                " do not fit the value type");
}
/// first + offset in I, for an offset that require_counting_fits admitted.
template <class I>
__host__ __device__ I counting_at(I first, std::uint64_t offset) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(static_cast<U>(first) + static_cast<U>(offset)));
}
}  // namespace detail

/// The integers first, first + 1, ..., first + n - 1 over the places of a device_set, without
/// memory (as thrust::counting_iterator): element g is `first + g`, laid out by a partition like a
/// container's. Made by strata::counting. Cheap to copy; read-only: accepted wherever an algorithm
/// only reads its input (docs/api.md, "Lazy inputs"). `I` is an integer type.
template <class I>
class counting_range {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "strata::counting: the values must be integers");

 public:
  /// The element type.
  using value_type = I;
  /// The element type as viewed (read-only).
  using element_type = const I;
  /// The iterator of a place's segment.
  using iterator = thrust::counting_iterator<I>;

  /// Internal: made by strata::counting, which checks the arguments.
  counting_range(device_set set, strata::partition p, I first) : set_(std::move(set)), partition_(std::move(p)), first_(first) {}

  /// Number of elements.
  std::uint64_t size() const noexcept { return partition_.size(); }
  /// True if there are no elements.
  bool empty() const noexcept { return size() == 0; }
  /// Always true: a counting range is made on a device_set.
  bool has_places() const noexcept { return true; }
  /// The device_set.
  const device_set& places() const noexcept { return set_; }
  /// The layout over the places.
  const strata::partition& partition() const noexcept { return partition_; }
  /// Number of segments (the number of places).
  std::size_t segment_count() const noexcept { return partition_.places(); }
  /// The first value.
  I first() const noexcept { return first_; }
  /// Segment `i`: its iterator starts at first + (the segment's global offset).
  view_segment<iterator> segment_at(std::size_t i) const {
    const std::uint64_t off = partition_.offset(i);
    return {i, set_.device(i), iterator(detail::counting_at(first_, off)), partition_.count(i), off};
  }

 private:
  device_set set_;
  strata::partition partition_;
  I first_;
};


/// The integers first, first + 1, ..., first + n - 1, laid out over `set` by `policy` (as a
/// distributed_vector of n elements would be), holding no memory. Throws std::invalid_argument if
/// the last value does not fit I, or as the policy does for the set (e.g. weights for another
/// number of places). Requires a device_set with places (strata::device_set has them).
template <class I>
counting_range<I> counting(I first, std::uint64_t n, const device_set& set, const partition_policy& policy = partition_policy::even()) {
  detail::require_counting_fits(first, n);
  return counting_range<I>(set, policy.apply(n, set.size()), first);
}

/// The integers first, first + 1, ... with the size, device_set and partition of `like` (any
/// distributed range or lazy range), so that it zips or transforms alongside it:
/// `count_if(counting(0, v) ...)`. Throws std::invalid_argument if `like` has no device_set or the
/// last value does not fit I.
template <class I, class R, class = std::enable_if_t<is_readable_range_v<R>>>
counting_range<I> counting(I first, const R& like) {
  const auto l = detail::as_span(like);
  if (!l.has_places()) throw std::invalid_argument("strata::counting: the range given for the layout has no device_set");
  detail::require_counting_fits(first, l.size());
  return counting_range<I>(l.places(), l.partition(), first);
}

/// `f(x)` for every element x of a readable range, computed as it is read (as
/// thrust::transform_iterator): a view with the base's size, device_set and partition. Made by
/// strata::transformed. Holds a span (or the lazy range) of the base, not the elements: it is
/// invalidated as the base is. `V` is the element type the algorithms see.
template <class Base, class F, class V>
class transformed_range {
  using base_iterator = decltype(std::declval<const Base&>().segment_at(0).data);

 public:
  /// The element type.
  using value_type = V;
  /// The element type as viewed (read-only).
  using element_type = const V;
  /// The iterator of a place's segment.
  using iterator = thrust::transform_iterator<F, base_iterator, V, V>;

  /// Internal: made by strata::transformed.
  transformed_range(Base base, F f) : base_(std::move(base)), f_(std::move(f)) {}

  /// Number of elements.
  std::uint64_t size() const noexcept { return base_.size(); }
  /// True if there are no elements.
  bool empty() const noexcept { return size() == 0; }
  /// True if the base has a device_set.
  bool has_places() const noexcept { return base_.has_places(); }
  /// The base's device_set (std::invalid_argument if it has none).
  const device_set& places() const { return base_.places(); }
  /// The base's layout.
  const strata::partition& partition() const noexcept { return base_.partition(); }
  /// Number of segments (the number of places).
  std::size_t segment_count() const noexcept { return base_.segment_count(); }
  /// The base range (a span, or a lazy range).
  const Base& base() const noexcept { return base_; }
  /// The function.
  const F& function() const noexcept { return f_; }
  /// Segment `i`: the base's segment i, read through f.
  view_segment<iterator> segment_at(std::size_t i) const {
    const auto s = base_.segment_at(i);
    return {s.place, s.device, iterator(s.data, f_), s.count, s.offset};
  }

 private:
  Base base_;
  F f_;
};

namespace detail {
/// What a transform view holds of its base: a span of a container, the lazy range itself.
template <class R>
auto base_of(const R& r) {
  if constexpr (is_lazy_range_v<R>)
    return r;
  else
    return as_span(r);
}
}  // namespace detail

/// A view of `f(x)` for every element x of `r` (a distributed range, or another lazy range), with
/// r's layout, computed as an algorithm reads it: `reduce(transformed(x, square{}))` reads x once
/// and makes no temporary. The element type is `V` when given (`transformed<float>(x, f)`), else
/// f's result type. `f` is a `__host__ __device__` functor or lambda; an extended `__device__`
/// lambda needs V stated (host code cannot ask it for its result type: a static_assert says so).
/// The view holds a span of r: use it while r lives and keeps its layout. Throws nothing itself;
/// the algorithm given the view checks it as it checks r.
template <class V = void, class R, class F, class = std::enable_if_t<is_readable_range_v<R>>>
auto transformed(const R& r, F f) {
  using Base = decltype(detail::base_of(r));
  using X = typename Base::value_type;
  static_assert(!std::is_void_v<V> || !detail::is_device_lambda_v<F>,
                "strata::transformed: an extended __device__ lambda's result type cannot be deduced on the host: "
                "state it, strata::transformed<T>(r, f), or mark the lambda __host__ __device__");
  if constexpr (std::is_void_v<V>) {
    static_assert(std::is_invocable_v<const F&, const X&>, "strata::transformed: f must take one element, f(x)");
    using W = std::remove_cv_t<std::remove_reference_t<std::invoke_result_t<const F&, const X&>>>;
    static_assert(std::is_trivially_copyable_v<W>, "strata::transformed: f's result must be trivially copyable");
    return transformed_range<Base, F, W>(detail::base_of(r), f);
  } else {
    static_assert(std::is_trivially_copyable_v<V>, "strata::transformed: the element type must be trivially copyable");
    using G = decltype(detail::stated_result<V>(f));
    return transformed_range<Base, G, V>(detail::base_of(r), detail::stated_result<V>(f));
  }
}

}  // namespace strata
