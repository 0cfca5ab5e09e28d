// Partition math, checked by properties over many sizes, place counts and weights.
#include <strata/partition.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using strata::partition;
using strata::partition_policy;

std::mt19937_64& rng() {
  static std::mt19937_64 g{std::random_device{}()};
  return g;
}

// The segments tile [0, n) exactly, in order, and owner() agrees with them.
void expect_tiles(const partition& p, std::uint64_t n, std::size_t k) {
  ASSERT_EQ(p.size(), n);
  ASSERT_EQ(p.places(), k);
  std::uint64_t next = 0;
  for (std::size_t i = 0; i < k; ++i) {
    EXPECT_EQ(p.offset(i), next) << "place " << i;
    next += p.count(i);
  }
  EXPECT_EQ(next, n);
  for (std::size_t i = 0; i < k; ++i) {
    if (p.count(i) == 0) continue;
    EXPECT_EQ(p.owner(p.offset(i)), i);
    EXPECT_EQ(p.owner(p.offset(i) + p.count(i) - 1), i);
  }
}

TEST(Partition, EvenTilesAndBalances) {
  const std::vector<std::uint64_t> sizes = {0, 1, 2, 3, 7, 8, 63, 64, 65, 997, 1000003, (1ull << 31) + 11,
                                            (1ull << 40) + 3};
  for (std::uint64_t n : sizes)
    for (std::size_t k : {1, 2, 3, 4, 5, 7, 8, 13, 64}) {
      const partition p = partition::even(n, k);
      expect_tiles(p, n, k);
      for (std::size_t i = 0; i < k; ++i) {
        const std::uint64_t expect = n / k + (i < n % k ? 1 : 0);
        EXPECT_EQ(p.count(i), expect) << "n=" << n << " k=" << k << " i=" << i;
      }
    }
}

TEST(Partition, EvenFewerElementsThanPlaces) {
  const partition p = partition::even(3, 8);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(p.count(i), i < 3 ? 1u : 0u);
  EXPECT_EQ(p.owner(2), 2u);
}

TEST(Partition, WeightedWithinOneOfProportional) {
  std::uniform_int_distribution<int> kd(1, 12);
  std::uniform_real_distribution<double> wd(0.0, 10.0);
  std::uniform_int_distribution<std::uint64_t> nd(0, 5000000);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t k = static_cast<std::size_t>(kd(rng()));
    std::vector<double> w(k);
    for (auto& x : w) x = (rng()() % 5 == 0) ? 0.0 : wd(rng());
    if (std::all_of(w.begin(), w.end(), [](double x) { return x == 0; })) w[0] = 1.0;
    const std::uint64_t n = trial % 10 == 0 ? (1ull << 33) + nd(rng()) : nd(rng());
    const partition p = partition::weighted(n, w);
    expect_tiles(p, n, k);
    double total = 0;
    for (double x : w) total += x;
    for (std::size_t i = 0; i < k; ++i) {
      const double quota = static_cast<double>(n) * (w[i] / total);
      EXPECT_LT(std::fabs(static_cast<double>(p.count(i)) - quota), 1.0 + quota * 1e-12)
          << "n=" << n << " place " << i << " weight " << w[i];
      if (w[i] == 0) EXPECT_EQ(p.count(i), 0u);
    }
  }
}

TEST(Partition, WeightedExactShares) {
  const partition p = partition::weighted(10, {1, 1, 3});
  EXPECT_EQ(p.count(0), 2u);
  EXPECT_EQ(p.count(1), 2u);
  EXPECT_EQ(p.count(2), 6u);
  const partition q = partition::weighted(3, {1, 1, 1, 1});  // remainder ties go to lower places
  EXPECT_EQ(q.counts(), (std::vector<std::uint64_t>{1, 1, 1, 0}));
}

TEST(Partition, ExplicitSizes) {
  const partition p = partition::explicit_sizes(10, {0, 4, 0, 6});
  expect_tiles(p, 10, 4);
  EXPECT_EQ(p.owner(0), 1u);
  EXPECT_EQ(p.owner(3), 1u);
  EXPECT_EQ(p.owner(4), 3u);
  EXPECT_EQ(p.owner(9), 3u);
}

TEST(Partition, Equality) {
  EXPECT_EQ(partition::even(10, 3), partition::explicit_sizes(10, {4, 3, 3}));
  EXPECT_NE(partition::even(10, 3), partition::explicit_sizes(10, {3, 4, 3}));
}

// Every invalid input throws std::invalid_argument whose message names the problem.
void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Partition, InvalidArguments) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_invalid([] { partition::even(5, 0); }, "number of places must be positive");
  expect_invalid([] { partition::weighted(5, {}); }, "weight list is empty");
  expect_invalid([] { partition::weighted(5, {0, 0}); }, "at least one weight must be positive");
  expect_invalid([] { partition::weighted(5, {1, -1}); }, "weight 1 is negative");
  expect_invalid([&] { partition::weighted(5, {1, nan}); }, "weight 1 is NaN");
  expect_invalid([&] { partition::weighted(5, {inf, 1}); }, "weight 0 is infinite");
  expect_invalid([] { partition::explicit_sizes(5, {}); }, "size list is empty");
  expect_invalid([] { partition::explicit_sizes(5, {1, 2}); }, "sum to 3, not to the 5");
  expect_invalid([] { partition::explicit_sizes(5, {UINT64_MAX, 2}); }, "overflow");
  expect_invalid([] { partition_policy::weighted({1, 2}).apply(10, 3); }, "2 weights given for 3 places");
  expect_invalid([] { partition_policy::explicit_sizes({10}).apply(10, 2); }, "1 sizes given for 2 places");
}

TEST(Partition, OutOfRangeQueries) {
  const partition p = partition::even(10, 2);
  EXPECT_THROW(p.owner(10), std::out_of_range);
  EXPECT_THROW(p.count(2), std::out_of_range);
  EXPECT_THROW(p.offset(2), std::out_of_range);
  try {
    p.owner(12);
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("index 12 is out of range for 10 elements"), std::string::npos);
  }
}

TEST(PartitionPolicy, AppliesEachKind) {
  EXPECT_EQ(partition_policy::even().apply(7, 2), partition::even(7, 2));
  EXPECT_EQ(partition_policy::weighted({1, 3}).apply(8, 2), partition::explicit_sizes(8, {2, 6}));
  EXPECT_EQ(partition_policy::explicit_sizes({5, 2}).apply(7, 2), partition::explicit_sizes(7, {5, 2}));
}

}  // namespace
