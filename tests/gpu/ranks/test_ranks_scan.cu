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
