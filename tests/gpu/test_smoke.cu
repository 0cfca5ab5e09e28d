// The GPU tests of the default build (README's test command): every family once, on one place,
// three places and three places with host staging, at sizes 0, 1, 1009 and 100003, against host
// references on fresh random data, outputs poisoned first. The full suite, one binary per family
// with every set, size and type, is built with -DSTRATA_DEVELOPER=ON (CI and scripts/gpu-check.sh).
#include "test_util.cuh"

#include <algorithm>
#include <functional>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

namespace {

struct is_odd {
  __host__ __device__ bool operator()(std::int32_t x) const { return (x & 1) != 0; }
};
struct twice {
  __host__ __device__ std::int32_t operator()(std::int32_t x) const { return 2 * x; }
};

std::vector<named_set> smoke_sets() {
  return {{"1 place on GPU 0", strata::device_set::repeat(0, 1)},
          {"3 places on GPU 0", strata::device_set::repeat(0, 3)},
          {"3 places on GPU 0, host staging", staged_set(3)}};
}

}  // namespace

// What the device-lambda calls below give, for comparison with the host.
struct lambda_results {
  std::vector<std::int32_t> tripled;
  std::int64_t squares = 0;
  std::int32_t largest = 0;
  std::uint64_t positive = 0, first_above_50 = 0;
  bool descending = false;
  std::vector<std::int64_t> sums, doubled_sums, keyed_sums, bounds;
  std::vector<std::int64_t> segment_sums;
};

// The algorithms called with extended __device__ lambdas, the most common way CUDA code passes
// an operation (host code cannot call such a lambda or see its result type, and Strata's checks
// once refused them). A free function with external linkage: where nvcc allows such lambdas.
lambda_results run_with_device_lambdas(const strata::distributed_vector<std::int32_t>& v,
                                       const strata::distributed_vector<std::int32_t>& sorted) {
  const std::uint64_t n = v.size();
  const auto& set = v.places();
  lambda_results r;
  strata::distributed_vector<std::int32_t> t(n, set);
  poison(t);
  strata::transform(v, t, [] __device__(std::int32_t x) { return 3 * x; });
  r.tripled = t.to_std_vector();
  r.squares = strata::transform_reduce(v, std::int64_t{0}, cuda::std::plus<>{},
                                       [] __device__(std::int32_t x) { return static_cast<std::int64_t>(x) * x; });
  r.largest = strata::reduce(v, std::int32_t{-1000}, [] __device__(std::int32_t a, std::int32_t b) { return a < b ? b : a; });
  r.positive = strata::count_if(v, [] __device__(std::int32_t x) { return x > 0; });
  r.first_above_50 = strata::find_if(v, [] __device__(std::int32_t x) { return x > 50; });
  r.descending = strata::is_sorted(v, [] __device__(std::int32_t a, std::int32_t b) { return a > b; });
  strata::distributed_vector<std::int64_t> y(n, set);
  poison(y);
  strata::inclusive_scan(v, y, [] __device__(std::int64_t a, std::int64_t b) { return a + b; });
  r.sums = y.to_std_vector();
  poison(y);
  strata::transform_inclusive_scan(v, y, cuda::std::plus<>{}, [] __device__(std::int32_t x) { return 2 * x; });
  r.doubled_sums = y.to_std_vector();
  strata::distributed_vector<std::int32_t> keys(n, set);
  strata::transform(v, keys, [] __device__(std::int32_t x) { return x / 40; });
  poison(y);
  strata::inclusive_scan_by_key(keys, v, y, [] __device__(std::int64_t a, std::int64_t b) { return a + b; });
  r.keyed_sums = y.to_std_vector();
  strata::distributed_vector<std::uint64_t> at(n, set);
  strata::lower_bound(sorted, v, at, [] __device__(std::int32_t a, std::int32_t b) { return a < b; });
  for (const auto x : at.to_std_vector()) r.bounds.push_back(static_cast<std::int64_t>(x));
  const std::vector<std::uint64_t> offsets{0, n / 3, n};
  for (const auto x : strata::segmented_reduce(v, offsets, std::int32_t{0},
                                               [] __device__(std::int32_t a, std::int32_t b) { return a + b; }))
    r.segment_sums.push_back(x);
  return r;
}

TEST(Smoke, DeviceLambdasAreAcceptedEverywhere) {
  for (const auto& s : smoke_sets())
    for (std::uint64_t n : {1ull, 1009ull, 100003ull}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto h = random_vector<std::int32_t>(n, seed);  // in [-100, 100]
      auto hs = h;
      std::sort(hs.begin(), hs.end());
      const strata::distributed_vector<std::int32_t> v(h, s.set), sorted(hs, s.set);
      const lambda_results r = run_with_device_lambdas(v, sorted);
      std::vector<std::int32_t> tripled(n);
      std::int64_t squares = 0, sum = 0, doubled = 0, keyed = 0;
      std::vector<std::int64_t> sums(n), doubled_sums(n), keyed_sums(n), bounds(n);
      for (std::uint64_t i = 0; i < n; ++i) {
        tripled[i] = 3 * h[i];
        squares += static_cast<std::int64_t>(h[i]) * h[i];
        sums[i] = sum += h[i];
        doubled_sums[i] = doubled += 2 * h[i];
        keyed = i > 0 && h[i] / 40 == h[i - 1] / 40 ? keyed + h[i] : h[i];
        keyed_sums[i] = keyed;
        bounds[i] = std::lower_bound(hs.begin(), hs.end(), h[i]) - hs.begin();
      }
      EXPECT_EQ(r.tripled, tripled) << "transform";
      EXPECT_EQ(r.squares, squares) << "transform_reduce";
      EXPECT_EQ(r.largest, *std::max_element(h.begin(), h.end())) << "reduce";
      EXPECT_EQ(r.positive, static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), [](std::int32_t x) { return x > 0; })));
      EXPECT_EQ(r.first_above_50,
                static_cast<std::uint64_t>(std::find_if(h.begin(), h.end(), [](std::int32_t x) { return x > 50; }) - h.begin()));
      EXPECT_EQ(r.descending, std::is_sorted(h.begin(), h.end(), std::greater<>{}));
      EXPECT_EQ(r.sums, sums) << "inclusive_scan";
      EXPECT_EQ(r.doubled_sums, doubled_sums) << "transform_inclusive_scan";
      EXPECT_EQ(r.keyed_sums, keyed_sums) << "inclusive_scan_by_key";
      EXPECT_EQ(r.bounds, bounds) << "lower_bound";
      const auto third = static_cast<std::ptrdiff_t>(n / 3);
      EXPECT_EQ(r.segment_sums, (std::vector<std::int64_t>{std::accumulate(h.begin(), h.begin() + third, std::int64_t{0}),
                                                           std::accumulate(h.begin() + third, h.end(), std::int64_t{0})}))
          << "segmented_reduce";
    }
}

TEST(Smoke, EveryFamilyAgreesWithTheHost) {
  for (const auto& s : smoke_sets())
    for (std::uint64_t n : {0ull, 1ull, 1009ull, 100003ull}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto h = random_vector<std::int32_t>(n, seed);  // in [-100, 100]
      const strata::distributed_vector<std::int32_t> v(h, s.set);

      // The reduce family and the searches.
      EXPECT_EQ(strata::reduce(v, std::int64_t{0}), std::accumulate(h.begin(), h.end(), std::int64_t{0}));
      EXPECT_EQ(strata::count_if(v, is_odd{}), static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), is_odd{})));
      EXPECT_EQ(strata::min_element(v).index, static_cast<std::uint64_t>(std::min_element(h.begin(), h.end()) - h.begin()));
      EXPECT_EQ(strata::find_if(v, is_odd{}), static_cast<std::uint64_t>(std::find_if(h.begin(), h.end(), is_odd{}) - h.begin()));
      EXPECT_EQ(strata::is_sorted(v), std::is_sorted(h.begin(), h.end()));

      // A scan into a wider type (it adds in 64 bits).
      std::vector<std::int64_t> sums(n);
      std::int64_t acc = 0;
      for (std::uint64_t i = 0; i < n; ++i) sums[i] = acc += h[i];
      strata::distributed_vector<std::int64_t> y(n, s.set);
      poison(y);
      strata::inclusive_scan(v, y);
      EXPECT_TRUE(y.to_std_vector() == sums) << "inclusive_scan";

      // Element-wise, and a neighbour from the previous place.
      std::vector<std::int32_t> doubled(n), diffs(n);
      std::transform(h.begin(), h.end(), doubled.begin(), twice{});
      std::adjacent_difference(h.begin(), h.end(), diffs.begin());
      strata::distributed_vector<std::int32_t> t(n, s.set);
      poison(t);
      strata::transform(v, t, twice{});
      EXPECT_TRUE(t.to_std_vector() == doubled) << "transform";
      poison(t);
      strata::adjacent_difference(v, t);
      EXPECT_TRUE(t.to_std_vector() == diffs) << "adjacent_difference";

      // Compaction, a histogram, a copy onto another layout, a sort.
      std::vector<std::int32_t> odd;
      std::copy_if(h.begin(), h.end(), std::back_inserter(odd), is_odd{});
      EXPECT_TRUE(strata::copy_if(v, is_odd{}).to_std_vector() == odd) << "copy_if";
      std::vector<std::uint64_t> bins(4, 0);
      for (auto x : h) ++bins[static_cast<std::size_t>((x + 100) * 4 / 201)];
      EXPECT_EQ(strata::histogram_even(v, 4, -100, 101), bins) << "histogram_even";
      std::vector<double> weights(s.set.size());
      for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = 1.0 + static_cast<double>(i);
      strata::distributed_vector<std::int32_t> w(n, s.set, strata::partition_policy::weighted(weights));
      poison(w);
      strata::copy(v, w);
      EXPECT_TRUE(w.to_std_vector() == h) << "copy onto a weighted layout";
      strata::sort(w);
      auto sorted = h;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_TRUE(w.to_std_vector() == sorted) << "sort";
      EXPECT_TRUE(strata::is_sorted(w));
    }
}
