// The order a multi-place sort follows: which keys and comparators take CUB's radix path, and CUB's
// radix order written as a comparison (for the splitter search and the merges of runs), so that
// every phase agrees with the local radix sorts bit for bit.
#pragma once

#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

namespace strata::detail {

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

}  // namespace strata::detail
