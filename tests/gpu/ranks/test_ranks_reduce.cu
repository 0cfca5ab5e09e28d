// The reduce family over sets spanning the ranks, against the host on every rank: sums, counts,
// extrema with global indices (ties resolved as one process would), quantifiers and equal.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

TEST(NcclSpanning, ReduceFamilyAgreesWithTheHostOnEveryRank) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    std::int64_t sum = 0;
    std::uint64_t odds = 0;
    for (auto v : h) {
      sum += v;
      odds += (v & 1) != 0;
    }
    EXPECT_EQ(strata::reduce(x), sum);
    EXPECT_EQ(strata::reduce(x, std::int64_t{-3}), sum - 3);
    EXPECT_EQ(strata::reduce_async(x, std::int64_t{4}, cuda::std::plus<std::int64_t>{}).get(), sum + 4);
    EXPECT_EQ(strata::count_if(x, odd{}), odds);
    EXPECT_EQ(strata::count(x, std::int64_t{7}), static_cast<std::uint64_t>(std::count(h.begin(), h.end(), 7)));
    std::int64_t squares = 0;
    for (auto v : h) squares += v * v;
    EXPECT_EQ(strata::transform_reduce(x, std::int64_t{0}, cuda::std::plus<std::int64_t>{}, square{}), squares);
    const auto lo = strata::min_element(x), hi = strata::max_element(x);
    EXPECT_EQ(lo.index, static_cast<std::uint64_t>(std::min_element(h.begin(), h.end()) - h.begin()));
    EXPECT_EQ(hi.index, static_cast<std::uint64_t>(std::max_element(h.begin(), h.end()) - h.begin()));
    if (n > 0) {
      EXPECT_EQ(lo.value, *std::min_element(h.begin(), h.end()));
      EXPECT_EQ(hi.value, *std::max_element(h.begin(), h.end()));
    }
    const auto mm = strata::minmax(x);  // the first smallest and the last largest
    if (n > 0) {
      EXPECT_EQ(mm.min.index, lo.index);
      const auto last_max = std::max_element(h.rbegin(), h.rend());
      EXPECT_EQ(mm.max.index, static_cast<std::uint64_t>(h.rend() - last_max - 1));
      EXPECT_EQ(mm.max.value, *last_max);
    } else {
      EXPECT_EQ(mm.min.index, 0u);
      EXPECT_EQ(mm.max.index, 0u);
    }
    EXPECT_EQ(strata::none_of(x, odd{}), odds == 0);
    EXPECT_EQ(strata::any_of(x, odd{}), odds > 0);
    EXPECT_EQ(strata::all_of(x, odd{}), odds == n);
    strata::distributed_vector<std::int64_t> y(x);
    EXPECT_TRUE(strata::equal(x, y));
    if (n > 0) {
      strata::transform(y, y, flip_low_bit{});
      EXPECT_FALSE(strata::equal(x, y));
    }
    EXPECT_TRUE(x.to_std_vector() == h) << "every rank receives every element";
  });
}

// Histograms (the array fold across ranks): each rank adds its places' bins, the ranks' arrays are
// all-gathered and added in rank order on every rank, a rank without elements contributing none.
TEST(NcclSpanning, HistogramsAgreeWithTheHostOnEveryRank) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    std::vector<std::uint64_t> even(16, 0), range(3, 0);
    for (std::int64_t v : h) {
      if (v >= -90 && v < 91) ++even[static_cast<std::size_t>((v + 90) * 16 / 181)];
      if (v >= -100 && v < 101) ++range[v < -7 ? 0 : (v < 7 ? 1 : 2)];
    }
    EXPECT_EQ(strata::histogram_even(x, 16, std::int64_t{-90}, std::int64_t{91}), even) << "even";
    EXPECT_EQ(strata::histogram_range(x, std::vector<std::int64_t>{-100, -7, 7, 101}), range) << "range";
  });
}

// A repeated value fold on a spanning set is replayed from graphs: the local half (gather and
// packing) by each rank, the collective half (all-gather and fold) by every rank at the same calls.
// The values follow the data, the initial value and the operator's state on every replay.
TEST(NcclSpanning, RepeatedReducesReplayFromGraphsAndFollowTheData) {
  const auto set = strata::spanning_set(group(), 1 + static_cast<std::size_t>(world_rank() % 3));
  ASSERT_TRUE(set.state().use_graphs) << "graph replay should be on here (STRATA_DISABLE_GRAPHS unset, one rank per process)";
  const std::uint64_t n = 100003;
  strata::distributed_vector<std::int64_t> x(n, std::int64_t{0}, set);
  const auto replays_before = set.state().link->collective_graphs.replays, local_before = set.state().graphs.replays;
  for (std::int64_t k = 0; k < 20; ++k) {
    strata::fill(x, k);
    x.set(x.span().local_range().offset, 0);  // this rank's first element is 0 (every rank's: a collective minimum)
    const std::int64_t want = k * static_cast<std::int64_t>(n - static_cast<std::uint64_t>(world_size())) + 3 * k;
    EXPECT_EQ(strata::reduce(x, 3 * k), want) << "k=" << k;
    const auto lo = strata::min_element(x);
    EXPECT_EQ(lo.value, 0) << "k=" << k;
    EXPECT_EQ(lo.index, 0u) << "k=" << k << ": the first smallest is rank 0's first element";
  }
  EXPECT_GE(set.state().link->collective_graphs.replays - replays_before, 30u) << "the collective half was replayed";
  EXPECT_GE(set.state().graphs.replays - local_before, 30u) << "the local half was replayed";
}

// find, mismatch and sortedness across ranks: a marker in the last rank's share (found only
// through the global segment order), a descent at that share's first element (only the boundary
// check between ranks sees it), on every rank.
TEST(NcclSpanning, FirstIndexAlgorithmsAgreeWithTheHostOnEveryRank) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    auto h = random_vector<std::int64_t>(n, seed);
    std::sort(h.begin(), h.end());
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    EXPECT_TRUE(strata::is_sorted(x));
    EXPECT_EQ(strata::is_sorted_until(x), n);
    EXPECT_EQ(strata::find(x, std::int64_t{1} << 40), n);
    if (n == 0) return;
    std::uint64_t late = 0;
    for (std::size_t i = 0; i < x.partition().places(); ++i)
      if (x.partition().count(i) > 0) late = x.partition().offset(i);
    auto m = h;
    m[late] = std::int64_t{1} << 40;
    m[n - 1] = std::int64_t{1} << 40;
    const strata::distributed_vector<std::int64_t> y(m, set, policy);
    EXPECT_EQ(strata::find(y, std::int64_t{1} << 40), late);
    EXPECT_EQ(strata::find_if(y, odd{}), static_cast<std::uint64_t>(std::find_if(m.begin(), m.end(), odd{}) - m.begin()));
    EXPECT_EQ(strata::mismatch(x, y), late);
    EXPECT_EQ(strata::mismatch(x, x), n);
    if (late > 0) {
      auto d = h;
      d[late] = d[late - 1] - 1;
      const strata::distributed_vector<std::int64_t> z(d, set, policy);
      EXPECT_EQ(strata::is_sorted_until(z), late);
      EXPECT_FALSE(strata::is_sorted(z));
    }
  });
}

// Lazy inputs over a spanning set: a counting range laid out like x (each rank's places count
// from their global offsets) and a transform view of x, read by the reduce family, find and a
// histogram; transform from a counting range writes every rank's elements.
TEST(NcclSpanning, LazyInputsAgreeWithTheHostOnEveryRank) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    const auto c = strata::counting(std::int64_t{-17}, x);
    std::int64_t sum = 0, squares = 0;
    for (std::uint64_t g = 0; g < n; ++g) sum += -17 + static_cast<std::int64_t>(g);
    for (auto v : h) squares += v * v;
    EXPECT_EQ(strata::reduce(c), sum);
    EXPECT_EQ(strata::reduce(strata::transformed(x, square{})), squares);
    EXPECT_EQ(strata::find(c, std::int64_t{-17} + static_cast<std::int64_t>(n / 3)), n > 0 ? n / 3 : 0u);
    EXPECT_EQ(strata::max_element(c).index, n > 0 ? n - 1 : n);
    if (n > 0) {
      std::vector<std::uint64_t> want(4, 0);
      for (std::uint64_t g = 0; g < n; ++g) ++want[static_cast<std::size_t>(g * 4 / n)];
      EXPECT_EQ(strata::histogram_even(c, 4, std::int64_t{-17}, std::int64_t{-17} + static_cast<std::int64_t>(n)), want);
    }
    strata::distributed_vector<std::int64_t> y(n, set, policy);
    strata::transform(strata::counting(std::int64_t{0}, y), y, square{});
    const auto got = y.to_std_vector();
    bool ok = true;
    for (std::uint64_t g = 0; g < n && ok; ++g) ok = got[g] == static_cast<std::int64_t>(g * g);
    EXPECT_TRUE(ok) << "transform(counting) on every rank";
  });
}
