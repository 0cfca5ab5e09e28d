// Scans over sets spanning the ranks: sums (the reduce path) and a non-commutative operator.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

TEST(NcclSpanning, ScansKeepTheGlobalOrder) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    std::vector<std::int64_t> inc(h.size()), exc(h.size());
    std::int64_t acc = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      exc[i] = acc + 5;
      acc += h[i];
      inc[i] = acc;
    }
    strata::distributed_vector<std::int64_t> x(h, set, policy);
    strata::distributed_vector<std::int64_t> y(n, std::int64_t{-77}, set, policy);
    strata::inclusive_scan(x, y, cuda::std::plus<std::int64_t>{});
    EXPECT_TRUE(y.to_std_vector() == inc) << "inclusive";
    strata::exclusive_scan(x, x, std::int64_t{5}, cuda::std::plus<std::int64_t>{});  // in place
    EXPECT_TRUE(x.to_std_vector() == exc) << "exclusive, in place";

    const mat2 init{2, 7, 1, 8};
    const auto [m, minc, mexc] = mat2_scans(n, seed, init);
    strata::distributed_vector<mat2> a(m, set, policy);
    strata::distributed_vector<mat2> b(n, mat2{9, 9, 9, 9}, set, policy);
    strata::inclusive_scan(a, b, mat2_mul{});
    EXPECT_TRUE(b.to_std_vector() == minc) << "inclusive, not commutative";
    strata::exclusive_scan(a, b, init, mat2_mul{});
    EXPECT_TRUE(b.to_std_vector() == mexc) << "exclusive, not commutative";
  });
}

// adjacent_difference across ranks: each share's first element takes its neighbour from the
// previous rank's (or place's) last; a non-commutative operator and in place.
TEST(NcclSpanning, AdjacentDifferenceTakesNeighboursAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    std::vector<std::int64_t> want(n), want3(n);
    std::adjacent_difference(h.begin(), h.end(), want.begin());
    for (std::uint64_t i = 0; i < n; ++i) want3[i] = i == 0 ? h[0] : 3 * h[i] - h[i - 1];
    strata::distributed_vector<std::int64_t> x(h, set, policy);
    strata::distributed_vector<std::int64_t> y(n, std::int64_t{-77}, set, policy);
    strata::adjacent_difference(x, y, three_a_minus_b{});
    EXPECT_TRUE(y.to_std_vector() == want3) << "3a - b";
    strata::adjacent_difference(x, x);
    EXPECT_TRUE(x.to_std_vector() == want) << "in place";
  });
}
