// The order a multi-place sort follows: which keys and comparators take CUB's radix path, and CUB's
// radix order written as a comparison (for the splitter search and the merges of runs), so that
// every phase agrees with the local radix sorts bit for bit.
#pragma once

#include <strata/detail/place_state.cuh>
#include <strata/error.hpp>

#include <cub/device/device_for.cuh>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
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

/// comp(x, x) for one key: true means `comp` is no strict weak order (e.g. <= for <). (Launched
/// through CUB, whose kernels take user functors from any namespace, anonymous ones too.)
template <class K, class Comp>
struct reflexive_fn {
  const K* key;
  Comp comp;
  int* out;
  __device__ void operator()(int) const { *out = comp(*key, *key) ? 1 : 0; }
};

/// The one check Strata can make that a comparator is a strict weak order before any key moves:
/// comp(x, x) must be false, tried on the first key of place `p`'s segment (the host waits for
/// it). A comparator such as <= passes CUB's merge sort unnoticed on one place but breaks the
/// splitter search across places (which then throws after keys moved), so it is refused first:
/// std::invalid_argument naming `name`. `word` is pinned host memory the kernel writes.
template <class K, class Comp>
void require_irreflexive(const char* name, place_state& p, const K* first, const Comp& comp, std::uint64_t* word) {
  *word = 0;
  STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(1, reflexive_fn<K, Comp>{first, comp, reinterpret_cast<int*>(word)}, p.stream()));
  p.synchronize();
  if (*word != 0)
    throw std::invalid_argument(std::string(name) +
                                ": the comparator is not a strict weak order: comp(x, x) is true for the first key "
                                "(did you pass <= or >= instead of < or >?)");
}

}  // namespace strata::detail
