// Shared helpers of the GPU tests: the place configurations, the sizes, random data with fresh
// seeds, poisoning, and tolerances.
#pragma once

#include <strata/strata.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace strata_test {

/// STRATA_TEST_QUICK=1 (the sanitizer runs of scripts/gpu-check.sh): fewer sets and sizes, and
/// no test over 2^31 elements, so that tools that slow every kernel down finish.
inline bool quick_mode() {
  const char* e = std::getenv("STRATA_TEST_QUICK");
  return e != nullptr && *e != '\0' && *e != '0';
}

/// The place counts of the sets in quick mode: STRATA_TEST_QUICK_PLACES (a comma-separated list,
/// e.g. "1,3,8": the sanitizer sweep's memcheck adds 8 places), else 1 and 3. A set of 3 places
/// with host staging is always added.
inline std::vector<std::size_t> quick_place_counts() {
  std::vector<std::size_t> k;
  if (const char* e = std::getenv("STRATA_TEST_QUICK_PLACES")) {
    std::string list(e);
    for (std::size_t at = 0; at < list.size();) {
      const std::size_t comma = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, comma - at);
      if (!item.empty()) k.push_back(static_cast<std::size_t>(std::stoul(item)));
      at = comma + 1;
    }
  }
  if (k.empty()) k = {1, 3};
  return k;
}

#define STRATA_SKIP_IF_QUICK() \
  if (::strata_test::quick_mode()) GTEST_SKIP() << "skipped in STRATA_TEST_QUICK mode"

/// Strata's live device and pinned allocations (allocations minus frees): a leak shows as a
/// difference between a snapshot before and one after.
struct live_allocations {
  std::uint64_t device;
  std::uint64_t host;
  static live_allocations now() {
    const auto& c = strata::detail::counters();
    return {c.device_allocs.load() - c.device_frees.load(), c.host_allocs.load() - c.host_frees.load()};
  }
};

/// Expects as many live allocations as in `before`, on the devices and in pinned memory.
inline void expect_no_leak(const live_allocations& before) {
  const live_allocations after = live_allocations::now();
  EXPECT_EQ(after.device, before.device) << "device memory leaked";
  EXPECT_EQ(after.host, before.host) << "pinned memory leaked";
}

/// Allocates a vector of `n` copies of `poison` on `set` and frees it: the allocator is likely to
/// hand that memory to the next vector of the same layout, so an element a fill then skips reads
/// `poison` instead of passing as a lucky stale value.
template <class T>
void leave_poison_behind(std::uint64_t n, const T& poison, const strata::device_set& set) {
  strata::distributed_vector<T> v(n, poison, set);
}

/// `k` places on GPU `device` in a set of their own (device_set_options::shared off): a set that
/// no other live set equals, with fresh caches.
inline strata::device_set private_set_on(int device, std::size_t k, strata::device_set_options options = {}) {
  options.shared = false;
  return strata::device_set::repeat(device, k, options);
}
/// `k` places on GPU 0 in a set of their own.
inline strata::device_set private_set(std::size_t k, strata::device_set_options options = {}) {
  return private_set_on(0, k, options);
}

/// `k` places on GPU 0 whose exchanges all go through pinned host memory (the fallback path).
inline strata::device_set staged_set(std::size_t k) {
  strata::device_set_options options;
  options.force_host_staging = true;
  return strata::device_set::repeat(0, k, options);
}

/// A device_set under test and a name for failure messages.
struct named_set {
  std::string name;
  strata::device_set set;
};

/// 1, 2, 3, 4 and 8 places on device 0, 4 places with host staging forced (the fallback merge
/// path), and every GPU of the machine.
inline const std::vector<named_set>& sets() {
  static const std::vector<named_set> s = [] {
    std::vector<named_set> v;
    if (quick_mode()) {
      for (const std::size_t k : quick_place_counts())
        v.push_back({std::to_string(k) + (k == 1 ? " place" : " places") + " on GPU 0", strata::device_set::repeat(0, k)});
      v.push_back({"3 places on GPU 0, host staging", staged_set(3)});
      return v;
    }
    for (std::size_t k : {1, 2, 3, 4, 8}) v.push_back({std::to_string(k) + " places on GPU 0", strata::device_set::repeat(0, k)});
    v.push_back({"4 places on GPU 0, host staging", staged_set(4)});
    v.push_back({"all " + std::to_string(strata::visible_device_count()) + " GPUs", strata::device_set::all()});
    return v;
  }();
  return s;
}

/// 0, 1, 2, fewer than places, small primes, a size just past a power of two, ~10^7 (prime).
inline const std::vector<std::uint64_t>& sizes() {
  static const std::vector<std::uint64_t> s = quick_mode() ? std::vector<std::uint64_t>{0, 1, 2, 7, 1009, 65537}
                                                           : std::vector<std::uint64_t>{0, 1, 2, 3, 7, 1009, 65537, 1000003, 10000019};
  return s;
}

inline std::uint64_t fresh_seed() {
  static std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

/// Random values suited to exact or well-conditioned checks: small signed integers (sums of
/// 10^7 of them fit in 32 bits), unsigned integers wrap (defined), floats in [0, 1).
template <class T>
std::vector<T> random_vector(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(0.0, 1.0);
    for (auto& x : v) x = static_cast<T>(d(g));
  } else if constexpr (std::is_signed_v<T>) {
    std::uniform_int_distribution<int> d(-100, 100);
    for (auto& x : v) x = static_cast<T>(d(g));
  } else {
    for (auto& x : v) x = static_cast<T>(g());
  }
  return v;
}

/// Fills a container with a byte pattern no algorithm produces by accident, so an element the
/// algorithm failed to write is caught.
template <class T>
void poison(strata::distributed_vector<T>& v) {
  for (auto& s : v.segments())
    if (s.count > 0) ASSERT_EQ(cudaMemset(s.data, 0xA5, s.count * sizeof(T)), cudaSuccess);
  // cudaMemset runs on the legacy default stream, which Strata's non-blocking place streams do
  // not wait for: finish it before the algorithm under test starts.
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

template <class T>
T poison_value() {
  T v;
  std::memset(&v, 0xA5, sizeof(T));
  return v;
}

/// Relative tolerance of a floating sum of n terms of one sign.
inline double sum_tolerance(std::uint64_t n) { return 1e-6 + 1e-7 * std::log2(static_cast<double>(n) + 2); }

template <class T>
void expect_value(T got, double want, std::uint64_t n, const std::string& what) {
  if constexpr (std::is_floating_point_v<T>) {
    const double tol = sum_tolerance(n) * std::max(1.0, std::fabs(want));
    EXPECT_NEAR(static_cast<double>(got), want, tol) << what;
  } else {
    EXPECT_EQ(got, static_cast<T>(want)) << what;
  }
}

/// The trace every check carries: which set, which size, which seed.
inline std::string where(const named_set& s, std::uint64_t n, std::uint64_t seed) {
  return s.name + ", n=" + std::to_string(n) + ", seed=" + std::to_string(seed);
}

/// Runs `check(set, n, seed)` for every set and size with a fresh seed (the trace names the set,
/// size and seed).
template <class Check>
void for_each_set_and_size(Check&& check) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      check(s, n, seed);
    }
}

/// Runs `check(set, n, host, device)` for every set and size on fresh random data: the loop most
/// GPU tests are made of.
template <class T, class Check>
void for_each_case(Check&& check) {
  for_each_set_and_size([&](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    const auto h = random_vector<T>(n, seed);
    strata::distributed_vector<T> v(h, s.set);
    check(s, n, h, v);
  });
}

/// The arithmetic value types of the typed tests (the custom struct has tests of its own).
// 2x2 matrices of uint32 multiplied mod 2^32: associative, not commutative, exact.
struct mat2 {
  std::uint32_t a, b, c, d;
  friend bool operator==(const mat2& x, const mat2& y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }
};
struct mat2_mul {
  __host__ __device__ mat2 operator()(const mat2& x, const mat2& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
  }
};
static_assert(!strata::is_commutative<mat2_mul>::value);

using ValueTypes = ::testing::Types<std::int32_t, std::int64_t, std::uint32_t, float, double>;

/// {float lo, hi}: the custom trivially copyable type of the typed tests, with min/max ops.
struct range2 {
  float lo, hi;
};
struct range2_merge {
  __host__ __device__ range2 operator()(const range2& a, const range2& b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};

}  // namespace strata_test
