// Compaction over sets spanning the ranks.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

// Compaction over sets spanning the ranks: each place compacts its own segment, the kept counts
// cross ranks in one all-gather (every rank learns the result's global layout), and unique's
// predecessors cross rank boundaries. Against the host, with runs of equal keys that span places
// and ranks, and with rank 1 empty in the weighted layout.
TEST(NcclSpanning, CompactionAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    auto h = random_vector<std::int64_t>(n, seed);
    for (auto& v : h) v = (v % 4 + 4) % 4;  // few distinct values: long runs, across boundaries
    std::vector<std::int64_t> odds, evens, runs;
    for (std::uint64_t i = 0; i < n; ++i) {
      (odd{}(h[i]) ? odds : evens).push_back(h[i]);
      if (i == 0 || h[i] != h[i - 1]) runs.push_back(h[i]);
    }
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    const auto layout_sums = [&](const auto& r, std::uint64_t want) {
      std::uint64_t total = 0;
      for (std::size_t i = 0; i < r.partition().places(); ++i) total += r.partition().count(i);
      return total == want && r.size() == want;
    };
    {
      strata::distributed_vector<std::int64_t> out(n, std::int64_t{-9}, set, policy);
      const auto kept = strata::copy_if(x, out, odd{});
      EXPECT_TRUE(layout_sums(kept, odds.size())) << "copy_if: the layout";
      EXPECT_TRUE(all_of_span(kept) == odds) << "copy_if";
    }
    {
      const auto made = strata::copy_if(x, odd{});
      EXPECT_EQ(made.size(), odds.size());
      EXPECT_TRUE(made.to_std_vector() == odds) << "copy_if into a new container";
      EXPECT_EQ(strata::reduce(made), std::accumulate(odds.begin(), odds.end(), std::int64_t{0}))
          << "a collective over the new container's layout";
    }
    {
      strata::distributed_vector<std::int64_t> y(h, set, policy);
      EXPECT_TRUE(all_of_span(strata::remove_if(y, odd{})) == evens) << "remove_if";
    }
    {
      strata::distributed_vector<std::int64_t> y(h, set, policy);
      EXPECT_EQ(strata::erase_if(y, odd{}), odds.size()) << "erase_if";
      EXPECT_TRUE(y.to_std_vector() == evens) << "erase_if";
    }
    {
      strata::distributed_vector<std::int64_t> y(h, set, policy);
      EXPECT_TRUE(all_of_span(strata::unique(y)) == runs) << "unique";
      strata::distributed_vector<std::int64_t> out(n, std::int64_t{-9}, set, policy);
      EXPECT_TRUE(all_of_span(strata::unique_copy(x, out)) == runs) << "unique_copy";
    }
    {
      strata::distributed_vector<std::int64_t> yes(n, std::int64_t{-9}, set, policy), no(n, std::int64_t{-9}, set, policy);
      const auto [t, f] = strata::partition_copy(x, yes, no, odd{});
      EXPECT_TRUE(all_of_span(t) == odds) << "partition_copy, true part";
      EXPECT_TRUE(all_of_span(f) == evens) << "partition_copy, false part";
    }
  });
}

namespace {
// n keys out of 3, sorted: long runs that straddle places and ranks.
std::vector<std::int64_t> three_sorted_keys(std::uint64_t n, std::mt19937_64& g) {
  std::vector<std::int64_t> hk(n);
  for (auto& x : hk) x = static_cast<std::int64_t>(g() % 3);
  std::sort(hk.begin(), hk.end());
  return hk;
}
}  // namespace

// reduce_by_key over sets spanning the ranks: runs that straddle places and ranks (3 keys in
// long sorted runs; the weighted layout leaves rank 1 empty) are settled by the fold across
// ranks; every rank checks every run, its sum, and the per-place run counts.
TEST(NcclSpanning, ReduceByKeyAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    std::mt19937_64 g(seed);
    const auto hk = three_sorted_keys(n, g);
    const auto hv = random_vector<std::int64_t>(n, seed + 1);
    const strata::distributed_vector<std::int64_t> keys(hk, set, policy), values(hv, set, policy);
    strata::distributed_vector<std::int64_t> keys_out(n, std::int64_t{-7}, set, policy), sums(n, std::int64_t{-7}, set, policy);
    const auto r = strata::reduce_by_key(keys, values, keys_out, sums);
    std::vector<std::int64_t> want_keys, want_sums;
    std::vector<std::uint64_t> want_counts(keys.partition().places(), 0);
    for (std::uint64_t k = 0; k < n; ++k) {
      if (k == 0 || hk[k] != hk[k - 1]) {
        want_keys.push_back(hk[k]);
        want_sums.push_back(hv[k]);
      } else {
        want_sums.back() += hv[k];
      }
      if (k + 1 == n || hk[k + 1] != hk[k]) ++want_counts[keys.partition().owner(k)];
    }
    EXPECT_EQ(r.keys.partition().counts(), want_counts);
    EXPECT_TRUE(all_of_span(r.keys) == want_keys);
    EXPECT_TRUE(all_of_span(r.values) == want_sums);
  });
}

// Keyed scans across ranks: 3 keys in long sorted runs that straddle ranks; inclusive sums and an
// exclusive non-commutative product (the seeds cross ranks in rank order).
TEST(NcclSpanning, ScanByKeyAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    std::mt19937_64 g(seed);
    const auto hk = three_sorted_keys(n, g);
    const auto hv = random_vector<std::int64_t>(n, seed + 1);
    std::vector<mat2> hm(n);
    for (auto& m : hm) m = {static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g())};
    const strata::distributed_vector<std::int64_t> keys(hk, set, policy), values(hv, set, policy);
    const strata::distributed_vector<mat2> mats(hm, set, policy);
    strata::distributed_vector<std::int64_t> sums(n, std::int64_t{-7}, set, policy);
    strata::distributed_vector<mat2> prods(n, mat2{9, 9, 9, 9}, set, policy);
    strata::inclusive_scan_by_key(keys, values, sums);
    const mat2 init{3, 1, 4, 1};
    strata::exclusive_scan_by_key(keys, mats, prods, init, mat2_mul{});
    std::vector<std::int64_t> want_sums(n);
    std::vector<mat2> want_prods(n);
    for (std::uint64_t k = 0; k < n; ++k) {
      const bool head = k == 0 || hk[k] != hk[k - 1];
      want_sums[k] = head ? hv[k] : want_sums[k - 1] + hv[k];
      want_prods[k] = head ? init : mat2_mul{}(want_prods[k - 1], hm[k - 1]);
    }
    EXPECT_TRUE(all_of_span(sums.span()) == want_sums);
    EXPECT_TRUE(all_of_span(prods.span()) == want_prods);
  });
}

// segmented_reduce across ranks: a few long segments that straddle ranks (with a gap and an
// empty one) and many short ones; every rank gets every segment's sum, init applied once.
TEST(NcclSpanning, SegmentedReduceAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    std::mt19937_64 g(seed);
    const auto h = random_vector<std::int64_t>(n, seed + 1);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    for (int kind = 0; kind < 2; ++kind) {
      std::vector<std::uint64_t> offsets;
      if (kind == 0)
        offsets = {n / 7, n / 3, n / 3, n - n / 5};
      else
        for (std::uint64_t o = 0; o <= n; o += 1 + g() % 5) offsets.push_back(o);
      std::vector<std::int64_t> want(offsets.size() - 1, 3);
      for (std::size_t j = 0; j + 1 < offsets.size(); ++j)
        for (std::uint64_t k = offsets[j]; k < offsets[j + 1]; ++k) want[j] += h[k];
      EXPECT_EQ(strata::segmented_reduce(x, offsets, std::int64_t{3}), want) << "offsets of kind " << kind;
    }
  });
}

// top_k over a set spanning the ranks: every rank gets the same k smallest / largest (small
// integers, so ties cross rank boundaries and the lowest global indices must win them), as a
// host stable sort says; k from 1 to the whole range.
TEST(NcclSpanning, TopKAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int32_t>(n, seed);
    const strata::distributed_vector<std::int32_t> x(h, set, policy);
    for (const std::uint64_t k : {std::uint64_t{1}, std::uint64_t{13}, n / 2, n}) {
      if (k == 0 || k > n) continue;
      for (const bool largest : {false, true}) {
        std::vector<std::uint64_t> want(n);
        std::iota(want.begin(), want.end(), std::uint64_t{0});
        std::stable_sort(want.begin(), want.end(),
                         [&](std::uint64_t a, std::uint64_t b) { return largest ? h[b] < h[a] : h[a] < h[b]; });
        want.resize(k);
        const auto got = largest ? strata::top_k(x, k, strata::largest) : strata::top_k(x, k, strata::smallest);
        EXPECT_EQ(got.indices, want) << (largest ? "largest" : "smallest") << ", k=" << k;
        bool values = got.values.size() == k;
        for (std::uint64_t j = 0; values && j < k; ++j) values = got.values[j] == h[want[j]];
        EXPECT_TRUE(values) << (largest ? "largest" : "smallest") << ", k=" << k;
      }
    }
  });
}
