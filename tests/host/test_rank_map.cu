// Which rank owns which place of a set spanning processes (detail::rank_map): the host logic of
// strata::spanning_set, the same on every rank, checked without a GPU.
#include <strata/detail/rank_link.cuh>
#include <strata/partition.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

using strata::detail::rank_map;

TEST(RankMap, PlacesComeInRankOrder) {
  const std::vector<std::size_t> places{2, 1, 3};
  for (int r = 0; r < 3; ++r) {
    const rank_map m(places, r, 64);
    EXPECT_EQ(m.ranks(), 3);
    EXPECT_EQ(m.rank(), r);
    EXPECT_EQ(m.places(), 6u);
    EXPECT_EQ(m.most(), 3u);
    const std::vector<int> owner{0, 0, 1, 2, 2, 2};
    for (std::size_t g = 0; g < 6; ++g) {
      EXPECT_EQ(m.owner(g), owner[g]);
      EXPECT_EQ(m.local(g), owner[g] == r);
    }
    EXPECT_EQ(m.first(0), 0u);
    EXPECT_EQ(m.first(1), 2u);
    EXPECT_EQ(m.first(2), 3u);
    EXPECT_EQ(m.first(3), 6u);
    EXPECT_EQ(m.count(2), 3u);
  }
}

// A global partition over the map's places gives every rank a contiguous share, and the shares
// tile [0, n) in rank order, for every policy (empty ranks included).
TEST(RankMap, EveryRanksShareIsContiguousAndTheSharesTileTheRange) {
  const std::vector<std::size_t> places{2, 1, 3};
  const std::vector<double> weights{1, 2, 0, 3, 0, 1};
  for (std::uint64_t n : {0ull, 1ull, 5ull, 6ull, 1000003ull})
    for (const auto& policy : {strata::partition_policy::even(), strata::partition_policy::weighted(weights)}) {
      std::uint64_t next = 0;
      for (int r = 0; r < 3; ++r) {
        const rank_map m(places, r, 64);
        const strata::partition p = policy.apply(n, m.places());
        for (std::size_t g = m.first(r); g < m.first(r + 1); ++g) {
          EXPECT_EQ(p.offset(g), next) << "n=" << n << " rank " << r;
          next += p.count(g);
        }
      }
      EXPECT_EQ(next, n);
    }
}

TEST(RankMap, RejectsBadArguments) {
  EXPECT_THROW(rank_map({}, 0, 64), std::invalid_argument);
  EXPECT_THROW(rank_map({1, 0, 2}, 0, 64), std::invalid_argument);
  EXPECT_THROW(rank_map({1, 2}, 2, 64), std::invalid_argument);
  EXPECT_THROW(rank_map({1, 2}, -1, 64), std::invalid_argument);
  EXPECT_THROW(rank_map({40, 30}, 0, 64), std::invalid_argument);
  EXPECT_NO_THROW(rank_map({32, 32}, 1, 64));
}
