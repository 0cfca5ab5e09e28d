// The GPU tests of the default build (README's test command): every family once, on one place,
// three places and three places with host staging, at sizes 0, 1, 1009 and 100003, against host
// references on fresh random data, outputs poisoned first. The full suite, one binary per family
// with every set, size and type, is built with -DSTRATA_DEVELOPER=ON (CI and scripts/gpu-check.sh).
#include "test_util.cuh"

#include <algorithm>
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
