// The public tags and traits that select an algorithm's behaviour: `strata::nosync` (return once
// the work is enqueued), `strata::reproducible` (the same float/double sum bits for any layout), `strata::smallest` /
// `strata::largest` (top_k's order) and
// `strata::is_commutative<Op>` (the faster scan path). Included by every algorithm header; users
// name them directly.
#pragma once

#include <cuda/functional>
#include <cuda/std/functional>

#include <type_traits>

namespace strata {

/// Tag for element-wise algorithms: return once the work is enqueued on every place instead of
/// waiting for it. Later Strata calls on the same places are ordered after it (stream order);
/// synchronise (device_set::synchronize) before reading the data any other way.
struct nosync_t {
  explicit constexpr nosync_t() = default;
};
/// The nosync tag value.
inline constexpr nosync_t nosync{};

/// Tag asking a floating-point sum for the same bits whatever the layout: `reduce(reproducible,
/// r)` and the `transform_reduce(reproducible, ...)` forms return the same value for any
/// device_set size, any partition (even, weighted, with empty places, explicit), graph replay or
/// not, run after run and on any GPU, for the same elements. Every element is deposited
/// into integer sums of four 30-bit windows of a fixed grid of the binary exponent range, the top
/// window set by the largest element of the whole range (docs/design.md); threads, places and the
/// root add window sums exactly and the sum is rounded once, to nearest. Covers sums (`+`) of
/// `float` and `double`, the elements or `f`'s results widened to double (exactly for float, so a
/// float dot product `f = a * b` in double is exact per term). Error against the exact sum of the
/// (transformed) elements: at most N * 2^-90 * max|x| (double sums; float sums keep one window fewer:
/// N * 2^-60 * max|x|) plus half an ulp of the result; elements below 2^-1073 in magnitude count
/// as zero. Infinities and NaNs give the IEEE sum's special
/// value; a zero sum is +0. At most 2^33 elements per call (the integer windows could overflow beyond).
struct reproducible_t {
  explicit constexpr reproducible_t() = default;
};
/// The reproducible tag value.
inline constexpr reproducible_t reproducible{};

/// Tag of top_k: the k smallest elements, smallest first.
struct smallest_t {
  explicit constexpr smallest_t() = default;
};
/// The smallest tag value: `top_k(r, k, strata::smallest)`.
inline constexpr smallest_t smallest{};

/// Tag of top_k: the k largest elements, largest first.
struct largest_t {
  explicit constexpr largest_t() = default;
};
/// The largest tag value: `top_k(r, k, strata::largest)`.
inline constexpr largest_t largest{};

/// Whether a binary operator is commutative. Strata computes the per-segment totals of a
/// multi-place scan with CUB's reduction (which reorders operands) when this is true, and
/// with an order-preserving scan pass otherwise. True for the standard arithmetic, bitwise,
/// logical, min and max function objects; specialise it (`: std::true_type`) for your own
/// commutative operators to get the faster path.
template <class Op>
struct is_commutative : std::false_type {};
template <class T>
struct is_commutative<::cuda::std::plus<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::multiplies<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::bit_and<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::bit_or<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::bit_xor<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::logical_and<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::logical_or<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::minimum<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::maximum<T>> : std::true_type {};

namespace detail {
/// True unless `T` is the nosync tag: keeps a trailing `strata::nosync` from binding to an
/// operator, comparator or initial value parameter.
template <class T>
inline constexpr bool not_nosync_v = !std::is_same_v<std::decay_t<T>, nosync_t>;
}  // namespace detail

}  // namespace strata
