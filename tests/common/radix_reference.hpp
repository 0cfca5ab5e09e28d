// CUB's radix order written from what it means, not from key bits, as a reference for tests of
// the sort's radix path and top_k (independent of strata::detail::radix_order, which the library
// itself uses): integers by value; floating point with the NaNs whose sign bit is set first (by
// bit pattern, largest first), then the numbers by value (-0.0 and +0.0 equal, as CUB treats
// them), then the other NaNs (by bit pattern, smallest first). Descending reverses the order.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace strata_test {

template <class K, bool Descending = false>
struct radix_reference_less {
  static bool ascending(const K& a, const K& b) {
    if constexpr (std::is_floating_point_v<K>) {
      const auto group = [](const K& x) { return std::isnan(x) ? (std::signbit(x) ? 0 : 2) : 1; };
      const int ga = group(a), gb = group(b);
      if (ga != gb) return ga < gb;
      if (ga == 1) return a < b;  // (IEEE: -0.0 < +0.0 is false both ways)
      std::uint64_t ua = 0, ub = 0;
      std::memcpy(&ua, &a, sizeof(K));
      std::memcpy(&ub, &b, sizeof(K));
      return ga == 0 ? ua > ub : ua < ub;
    } else {
      return a < b;
    }
  }
  bool operator()(const K& a, const K& b) const { return Descending ? ascending(b, a) : ascending(a, b); }
};

}  // namespace strata_test
