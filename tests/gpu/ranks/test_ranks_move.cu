// Copies between layouts and redistribute over sets spanning the ranks.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

// Copies between layouts and redistribute on sets spanning the ranks: pieces between places of one
// rank go by the exchange's device copies (or staging), pieces between ranks by NCCL sends and
// receives. Targets: the same set with another policy, and a second spanning set with another
// number of places per rank (even, and weighted with empty places). Outputs poisoned first; every
// rank checks the whole range (to_std_vector) and its own segments (get).
TEST(NcclSpanning, CopyAndRedistributeAcrossRanks) {
  const int rank = world_rank();
  static const strata::device_set other = strata::spanning_set(group(), 1 + static_cast<std::size_t>((rank + 1) % 2));
  std::vector<double> other_weights(other.size());
  for (std::size_t i = 0; i < other_weights.size(); ++i) other_weights[i] = i % 3 == 0 ? 0.0 : static_cast<double>(i);
  if (other.size() == 1) other_weights[0] = 1.0;
  over_spanning([&](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                    std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    std::int64_t sum = 0;
    for (auto v : h) sum += v;
    const auto check = [&](const strata::distributed_vector<std::int64_t>& y, const char* what) {
      EXPECT_EQ(y.size(), n) << what;
      EXPECT_TRUE(y.to_std_vector() == h) << what;
      for (std::size_t i = 0; i < y.partition().places(); ++i) {
        if (!y.places().is_local(i) || y.partition().count(i) == 0) continue;
        const std::uint64_t first = y.partition().offset(i), last = first + y.partition().count(i) - 1;
        EXPECT_EQ(y.get(first), h[first]) << what << ", place " << i;
        EXPECT_EQ(y.get(last), h[last]) << what << ", place " << i;
      }
    };
    struct target {
      const strata::device_set* set;
      strata::partition_policy policy;
      const char* what;
    };
    const std::vector<target> targets = {
        {&set, strata::partition_policy::even(), "same set, even"},
        {&other, strata::partition_policy::even(), "other set, even"},
        {&other, strata::partition_policy::weighted(other_weights), "other set, weighted with empty places"}};
    for (const auto& t : targets) {
      strata::distributed_vector<std::int64_t> y(n, std::int64_t{-77}, *t.set, t.policy);
      strata::copy(x, y);
      check(y, t.what);
      const auto z = strata::redistribute(x, *t.set, t.policy);
      EXPECT_TRUE(z.partition() == y.partition()) << t.what;
      check(z, t.what);
      // And back, without waiting: the reduce that follows is ordered after the moves.
      const auto back = strata::redistribute(z, set, policy, strata::nosync);
      EXPECT_EQ(strata::reduce(back), sum) << t.what << ", back";
      check(back, t.what);
    }
    // Non-trivial elements of 16 bytes, and a copy onto a subspan of the same length.
    const auto [m, minc, mexc] = mat2_scans(n, seed, mat2{1, 0, 0, 1});
    const strata::distributed_vector<mat2> a(m, set, policy);
    strata::distributed_vector<mat2> b(n + 5, mat2{9, 9, 9, 9}, other);
    strata::copy(a, b.span().subspan(3, n));
    const auto got = b.to_std_vector();
    ASSERT_EQ(got.size(), n + 5);
    EXPECT_TRUE(std::equal(m.begin(), m.end(), got.begin() + 3)) << "mat2 onto a subspan";
    EXPECT_TRUE(got[0] == (mat2{9, 9, 9, 9}) && got[n + 4] == (mat2{9, 9, 9, 9})) << "outside the subspan untouched";
  });
}

// gather and scatter on sets spanning the ranks: the map's indices are counted per owner (the
// counts all-gathered), bucketed by owner, and sent with NCCL to the owning ranks, the values
// back (gather) or along (scatter). Every rank checks the whole result; an index out of range
// throws std::out_of_range on every rank, with nothing written.
TEST(NcclSpanning, GatherAndScatterAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const std::uint64_t m = n / 2 + 3;
    std::mt19937_64 g(seed);
    std::vector<std::int64_t> hm(n);
    for (auto& x : hm) x = static_cast<std::int64_t>(g() % m);
    const auto hs = random_vector<std::int64_t>(m, seed + 1);
    const strata::distributed_vector<std::int64_t> map(hm, set, policy);
    const strata::distributed_vector<std::int64_t> src(hs, set);  // even, whatever the map's layout
    strata::distributed_vector<std::int64_t> dst(n, std::int64_t{-77}, set, policy);
    strata::gather(map, src, dst);
    std::vector<std::int64_t> want(n);
    for (std::uint64_t k = 0; k < n; ++k) want[k] = hs[static_cast<std::size_t>(hm[k])];
    EXPECT_TRUE(dst.to_std_vector() == want) << "gather";
    // Scatter by a permutation of 0..n-1 (the same on every rank: the shared seed).
    std::vector<std::int64_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), g);
    const strata::distributed_vector<std::int64_t> pmap(perm, set, policy);
    strata::distributed_vector<std::int64_t> out(n, std::int64_t{-77}, set);
    strata::scatter(dst, pmap, out);
    std::vector<std::int64_t> want_out(n);
    for (std::uint64_t k = 0; k < n; ++k) want_out[static_cast<std::size_t>(perm[k])] = want[k];
    EXPECT_TRUE(out.to_std_vector() == want_out) << "scatter";
    if (n == 0) return;
    hm[n - 1] = static_cast<std::int64_t>(m);  // out of range: the last entry, on one rank's place
    const strata::distributed_vector<std::int64_t> bad(hm, set, policy);
    EXPECT_THROW(strata::gather(bad, src, dst), std::out_of_range);
    EXPECT_TRUE(dst.to_std_vector() == want) << "nothing written";
  });
}

// The searches on sets spanning the ranks: the segments' first elements all-gathered, the queries
// sent to the owning ranks' places (or searched there directly within a rank), answers back.
TEST(NcclSpanning, SearchesAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    auto hs = random_vector<std::int64_t>(n, seed);
    std::sort(hs.begin(), hs.end());
    const strata::distributed_vector<std::int64_t> sorted(hs, set, policy);
    std::mt19937_64 g(seed + 1);
    std::vector<std::int64_t> hq(n / 2 + 5);
    for (auto& q : hq) q = static_cast<std::int64_t>(g() % 230) - 115;
    const strata::distributed_vector<std::int64_t> queries(hq, set);
    strata::distributed_vector<std::uint64_t> lo(hq.size(), 77, set), hi(hq.size(), 77, set);
    strata::distributed_vector<bool> has(hq.size(), set);
    strata::lower_bound(sorted, queries, lo);
    strata::upper_bound(sorted, queries, hi);
    strata::binary_search(sorted, queries, has);
    std::vector<std::uint64_t> want_lo(hq.size()), want_hi(hq.size());
    std::vector<bool> want_has(hq.size());
    for (std::size_t k = 0; k < hq.size(); ++k) {
      want_lo[k] = static_cast<std::uint64_t>(std::lower_bound(hs.begin(), hs.end(), hq[k]) - hs.begin());
      want_hi[k] = static_cast<std::uint64_t>(std::upper_bound(hs.begin(), hs.end(), hq[k]) - hs.begin());
      want_has[k] = std::binary_search(hs.begin(), hs.end(), hq[k]);
    }
    EXPECT_TRUE(lo.to_std_vector() == want_lo) << "lower_bound";
    EXPECT_TRUE(hi.to_std_vector() == want_hi) << "upper_bound";
    EXPECT_TRUE(has.to_std_vector() == want_has) << "binary_search";
  });
}

// merge on sets spanning the ranks: the positions by the cross-rank searches, the elements moved
// by the cross-rank scatters; the result against std::merge on every rank, the output poisoned
// first (filled with a value no input holds). Equal values abound (stability shows in the pair
// values' second half, their origin).
namespace {
// Keys in the high 32 bits, compared alone; the low bits say which range and which element.
struct high_half_less {
  __host__ __device__ bool operator()(std::uint64_t a, std::uint64_t b) const { return (a >> 32) < (b >> 32); }
};
}  // namespace

TEST(NcclSpanning, MergeAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto make = [&](std::uint64_t count, std::uint64_t s, std::uint64_t origin) {
      std::mt19937_64 g(s);
      std::vector<std::uint64_t> v(count);
      for (std::uint64_t k = 0; k < count; ++k) v[k] = ((g() % 97) << 32) | (origin + k);
      std::stable_sort(v.begin(), v.end(), high_half_less{});
      return v;
    };
    const auto ha = make(n, seed, 0), hb = make(n / 3 + 2, seed + 1, std::uint64_t{1} << 31);
    std::vector<std::uint64_t> want(ha.size() + hb.size());
    std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), want.begin(), high_half_less{});
    const strata::distributed_vector<std::uint64_t> a(ha, set, policy), b(hb, set);
    strata::distributed_vector<std::uint64_t> out(want.size(), ~std::uint64_t{0}, set);
    strata::merge(a, b, out, high_half_less{});
    EXPECT_TRUE(out.to_std_vector() == want) << "merge";
  });
}
