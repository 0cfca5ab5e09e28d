// gather, scatter, the vectorised searches (lower_bound, upper_bound, binary_search) and merge
// against host references (merge's: std::merge, stable). gather and scatter: random maps (with
// repeats for gather, permutations for scatter) between ranges of different sizes and partitions
// (with empty places), signed and unsigned indices, on direct sets (each place reads or writes the owners' segments) and staged
// ones (indices and values bucketed by owner through the exchange); outputs poisoned first; an
// index out of range throws with nothing written; a source past 2^31 elements. top_k against a
// host stable sort in radix order.
#include "test_util.cuh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>

using namespace strata_test;

namespace {

// A layout other than even for the side a map indexes into: explicit sizes with an empty place
// first and one in the middle (every place empty when m is small), so the owner search meets
// empty segments.
strata::partition_policy uneven(const strata::device_set& set, std::uint64_t m) {
  const std::size_t k = set.size();
  std::vector<std::uint64_t> sizes(k, 0);
  if (k == 1) return strata::partition_policy::explicit_sizes({m});
  std::uint64_t left = m;
  for (std::size_t i = 1; i < k; ++i) {
    if (i == k / 2 && k > 2) continue;
    const std::uint64_t c = i + 1 == k ? left : left / 3;
    sizes[i] = c;
    left -= c;
  }
  sizes[k - 1] += left;
  return strata::partition_policy::explicit_sizes(sizes);
}

template <class I>
std::vector<I> random_map(std::uint64_t n, std::uint64_t m, std::uint64_t seed) {
  std::mt19937_64 g(seed ^ 0x9e3779b97f4a7c15ull);
  std::vector<I> map(n);
  if (m == 0) return map;
  std::uniform_int_distribution<std::uint64_t> d(0, m - 1);
  for (auto& x : map) x = static_cast<I>(d(g));
  return map;
}

// The source element at global index g of the 2^31 test, on the device and the host.
struct byte_of {
  __host__ __device__ std::uint8_t operator()(std::uint64_t g) const { return static_cast<std::uint8_t>((g * 2654435761u) >> 7); }
};

}  // namespace

// dst[k] = src[map[k]] with map of n random indices (repeats allowed) into a source of another
// size (n / 2 + 5: gathers that fan in) laid out unevenly; int64 and uint32 indices.
TEST(Gather, AgreesWithTheHost) {
  for_each_set_and_size([&](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    const std::uint64_t m = n / 2 + 5;
    const auto hs = random_vector<std::int32_t>(m, seed);
    const strata::distributed_vector<std::int32_t> src(hs, s.set, uneven(s.set, m));
    const auto hm = random_map<std::int64_t>(n, m, seed);
    const strata::distributed_vector<std::int64_t> map(hm, s.set);
    std::vector<std::int32_t> want(n);
    for (std::uint64_t k = 0; k < n; ++k) want[k] = hs[static_cast<std::size_t>(hm[k])];
    strata::distributed_vector<std::int32_t> dst(n, s.set);
    poison(dst);
    strata::gather(map, src, dst);
    EXPECT_TRUE(dst.to_std_vector() == want) << "int64 indices";
    const auto hm32 = random_map<std::uint32_t>(n, m, seed + 1);
    const strata::distributed_vector<std::uint32_t> map32(hm32, s.set);
    for (std::uint64_t k = 0; k < n; ++k) want[k] = hs[hm32[k]];
    poison(dst);
    strata::gather(map32, src, dst);
    EXPECT_TRUE(dst.to_std_vector() == want) << "uint32 indices";
  });
}

// dst[map[k]] = src[k] with map a random injection of n entries into a destination of 2n + 3
// elements laid out unevenly: the named elements take the values, the others keep theirs.
TEST(Scatter, AgreesWithTheHost) {
  for_each_set_and_size([&](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    const std::uint64_t m = 2 * n + 3;
    std::vector<std::int64_t> slots(m);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::mt19937_64(seed));
    const std::vector<std::int32_t> hm(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(n));
    const auto hs = random_vector<double>(n, seed);
    const strata::distributed_vector<double> src(hs, s.set);
    const strata::distributed_vector<std::int32_t> map(hm, s.set);
    std::vector<double> want(m, -1.5);
    for (std::uint64_t k = 0; k < n; ++k) want[static_cast<std::size_t>(hm[k])] = hs[k];
    strata::distributed_vector<double> dst(m, -1.5, s.set, uneven(s.set, m));
    strata::scatter(src, map, dst);
    EXPECT_TRUE(dst.to_std_vector() == want);
  });
}

// Gathering by a sort's permutation: sort_by_key of (keys, 0..n-1) gives the permutation, and a
// second column follows it with one gather (the use that sort_by_key alone does not cover).
TEST(Gather, AppliesASortPermutationToAnotherColumn) {
  for (const auto& s : sets()) {
    const std::uint64_t n = quick_mode() ? 65537 : 1000003, seed = fresh_seed();
    SCOPED_TRACE(where(s, n, seed));
    const auto hk = random_vector<std::uint32_t>(n, seed);
    const auto hc = random_vector<float>(n, seed + 1);
    std::vector<std::uint64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return hk[a] < hk[b]; });
    strata::distributed_vector<std::uint32_t> keys(hk, s.set);
    strata::distributed_vector<std::uint64_t> perm(n, s.set);
    strata::iota(perm, std::uint64_t{0});
    strata::stable_sort_by_key(keys, perm);
    const strata::distributed_vector<float> column(hc, s.set);
    strata::distributed_vector<float> sorted(n, s.set);
    poison(sorted);
    strata::gather(perm, column, sorted);
    std::vector<float> want(n);
    for (std::uint64_t k = 0; k < n; ++k) want[k] = hc[order[k]];
    EXPECT_TRUE(sorted.to_std_vector() == want);
  }
}

// An index outside the indexed range (one past the end, or negative) throws std::out_of_range
// before anything is written, on direct and staged sets; the set works afterwards.
TEST(GatherScatter, OutOfRangeThrowsWithNothingWritten) {
  for (const auto& set : {private_set(3), staged_set(3)}) {
    SCOPED_TRACE(set.host_staging_forced() ? "staged" : "direct");
    const std::uint64_t n = 10007, m = 5003;
    for (const std::int64_t bad : {std::int64_t(m), std::int64_t{-1}, std::int64_t{1} << 40}) {
      auto hm = random_map<std::int64_t>(n, m, fresh_seed());
      hm[n - 17] = bad;  // one bad index, on the last place
      const strata::distributed_vector<std::int64_t> map(hm, set);
      const strata::distributed_vector<int> src(m, 7, set);
      strata::distributed_vector<int> dst(n, 3, set);
      EXPECT_THROW(strata::gather(map, src, dst), std::out_of_range) << bad;
      EXPECT_EQ(dst.to_std_vector(), std::vector<int>(n, 3)) << "gather wrote nothing, " << bad;
      const strata::distributed_vector<int> values(n, 5, set);
      strata::distributed_vector<int> into(m, 9, set);
      EXPECT_THROW(strata::scatter(values, map, into), std::out_of_range) << bad;
      EXPECT_EQ(into.to_std_vector(), std::vector<int>(m, 9)) << "scatter wrote nothing, " << bad;
    }
    const strata::distributed_vector<std::int64_t> ok(std::vector<std::int64_t>{4, 0, 2}, set);
    const strata::distributed_vector<int> src(std::vector<int>{10, 11, 12, 13, 14}, set);
    strata::distributed_vector<int> dst(3, set);
    strata::gather(ok, src, dst);
    EXPECT_EQ(dst.to_std_vector(), (std::vector<int>{14, 10, 12})) << "and the set still works";
  }
}

TEST(GatherScatter, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = private_set(3), other_set = private_set(2);
  const strata::distributed_vector<std::int64_t> map(std::vector<std::int64_t>(100, 0), set);
  const strata::distributed_vector<int> src(50, 1, set), on_other(50, 1, other_set);
  strata::distributed_vector<int> dst(100, 2, set), shorter(99, 2, set);
  strata::distributed_vector<int> skewed(100, 2, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  EXPECT_THROW(strata::gather(map, src, shorter), std::invalid_argument) << "map and dst differ in size";
  EXPECT_THROW(strata::gather(map, src, skewed), std::invalid_argument) << "map and dst differ in layout";
  EXPECT_THROW(strata::gather(map, on_other, dst), std::invalid_argument) << "src on another set";
  EXPECT_THROW(strata::gather(map, dst, dst), std::invalid_argument) << "dst is src";
  EXPECT_THROW(strata::scatter(dst, map, dst), std::invalid_argument) << "scatter into its own source";
  EXPECT_EQ(dst.to_std_vector(), std::vector<int>(100, 2));
  EXPECT_EQ(skewed.to_std_vector(), std::vector<int>(100, 2));
  const strata::distributed_vector<std::int64_t> empty_map(0, set);
  strata::distributed_vector<int> empty_dst(0, set);
  strata::gather(empty_map, src, empty_dst);  // nothing to do, no error
}

// A source of 2^31 + 11 one-byte elements on 3 places (indices past 2^31 and 2^32 / 2): gathered
// by 2^22 indices drawn over the whole range, on a direct and a staged set.
TEST(Gather, SourcePastTwoToThe31) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t m = (std::uint64_t{1} << 31) + 11, n = std::uint64_t{1} << 22;
  for (const auto& set : {private_set(3), staged_set(3)}) {
    SCOPED_TRACE(set.host_staging_forced() ? "staged" : "direct");
    strata::distributed_vector<std::uint8_t> src(m, set, strata::partition_policy::even(), strata::no_init);
    strata::tabulate(src, byte_of{});
    auto hm = random_map<std::int64_t>(n, m, fresh_seed());
    hm[0] = static_cast<std::int64_t>(m - 1);
    hm[1] = std::int64_t{1} << 31;
    const strata::distributed_vector<std::int64_t> map(hm, set);
    strata::distributed_vector<std::uint8_t> dst(n, set);
    poison(dst);
    strata::gather(map, src, dst);
    const auto got = dst.to_std_vector();
    std::uint64_t bad = 0;
    for (std::uint64_t k = 0; k < n; ++k) {
      const auto g = static_cast<std::uint64_t>(hm[k]);
      if (got[k] != byte_of{}(g)) ++bad;
    }
    EXPECT_EQ(bad, 0u);
  }
}

// ---- lower_bound, upper_bound, binary_search ----------------------------------------------

// Sorted small integers (many repeats) laid out unevenly (empty places), queried by random values
// reaching past both ends, in another layout: the three searches against std:: on the host, into
// poisoned outputs of several integer types and bool.
TEST(Search, AgreesWithTheHost) {
  for_each_set_and_size([&](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    auto hs = random_vector<std::int32_t>(n, seed);
    std::sort(hs.begin(), hs.end());
    const strata::distributed_vector<std::int32_t> sorted(hs, s.set, uneven(s.set, n));
    const std::uint64_t m = n / 3 + 7;
    std::mt19937_64 g(seed + 1);
    std::uniform_int_distribution<int> d(-110, 110);
    std::vector<std::int32_t> hq(m);
    for (auto& q : hq) q = d(g);
    const strata::distributed_vector<std::int32_t> queries(hq, s.set);
    std::vector<std::uint64_t> lo(m), hi(m);
    std::vector<char> found(m);
    for (std::uint64_t k = 0; k < m; ++k) {
      lo[k] = static_cast<std::uint64_t>(std::lower_bound(hs.begin(), hs.end(), hq[k]) - hs.begin());
      hi[k] = static_cast<std::uint64_t>(std::upper_bound(hs.begin(), hs.end(), hq[k]) - hs.begin());
      found[k] = std::binary_search(hs.begin(), hs.end(), hq[k]);
    }
    strata::distributed_vector<std::uint64_t> out(m, s.set);
    poison(out);
    strata::lower_bound(sorted, queries, out);
    EXPECT_TRUE(out.to_std_vector() == lo) << "lower_bound";
    poison(out);
    strata::upper_bound(sorted, queries, out);
    EXPECT_TRUE(out.to_std_vector() == hi) << "upper_bound";
    strata::distributed_vector<bool> has(m, s.set);
    poison(has);
    strata::binary_search(sorted, queries, has);
    const auto got = has.to_std_vector();
    std::uint64_t wrong = 0;
    for (std::uint64_t k = 0; k < m; ++k) wrong += got[k] != static_cast<bool>(found[k]);
    EXPECT_EQ(wrong, 0u) << "binary_search";
    strata::distributed_vector<std::int32_t> out32(m, s.set);
    poison(out32);
    strata::lower_bound(sorted, queries, out32);
    const auto got32 = out32.to_std_vector();
    EXPECT_TRUE(std::equal(got32.begin(), got32.end(), lo.begin(), [](std::int32_t a, std::uint64_t b) {
      return static_cast<std::uint64_t>(a) == b;
    })) << "into int32";
  });
}

// A descending range searched with cuda::std::greater, and floats found exactly (queries drawn
// from the data, every other one nudged off it).
TEST(Search, ComparatorAndFloats) {
  for (const auto& s : sets()) {
    const std::uint64_t n = quick_mode() ? 65537 : 1000003, seed = fresh_seed();
    SCOPED_TRACE(where(s, n, seed));
    auto hs = random_vector<float>(n, seed);
    std::sort(hs.begin(), hs.end(), std::greater<float>{});
    const strata::distributed_vector<float> sorted(hs, s.set);
    std::mt19937_64 g(seed + 2);
    std::vector<float> hq(n / 7 + 3);
    for (std::size_t k = 0; k < hq.size(); ++k) {
      hq[k] = hs[g() % n];
      if (k % 2) hq[k] = std::nextafter(hq[k], 2.0f);
    }
    const strata::distributed_vector<float> queries(hq, s.set, uneven(s.set, hq.size()));
    strata::distributed_vector<std::int64_t> out(hq.size(), s.set, uneven(s.set, hq.size()));
    strata::distributed_vector<bool> has(hq.size(), s.set, uneven(s.set, hq.size()));
    poison(out);
    strata::upper_bound(sorted, queries, out, cuda::std::greater<float>{});
    strata::binary_search(sorted, queries, has, cuda::std::greater<float>{});
    const auto got = out.to_std_vector();
    const auto got_has = has.to_std_vector();
    std::uint64_t wrong = 0, wrong_has = 0;
    for (std::size_t k = 0; k < hq.size(); ++k) {
      wrong += got[k] != std::upper_bound(hs.begin(), hs.end(), hq[k], std::greater<float>{}) - hs.begin();
      wrong_has += got_has[k] != std::binary_search(hs.begin(), hs.end(), hq[k], std::greater<float>{});
    }
    EXPECT_EQ(wrong, 0u) << "upper_bound";
    EXPECT_EQ(wrong_has, 0u) << "binary_search";
  }
}

TEST(Search, EmptyRangeAndBadArguments) {
  const auto set = private_set(3), other_set = private_set(2);
  const strata::distributed_vector<int> empty(0, set), sorted(std::vector<int>{1, 3, 5, 7}, set);
  const strata::distributed_vector<int> queries(std::vector<int>{0, 3, 8}, set), on_other(3, 1, other_set);
  strata::distributed_vector<std::uint64_t> out(3, 99, set), skewed(3, 99, set, strata::partition_policy::explicit_sizes({3, 0, 0}));
  strata::distributed_vector<bool> has(3, true, set);
  strata::lower_bound(empty, queries, out);
  strata::binary_search(empty, queries, has);
  EXPECT_EQ(out.to_std_vector(), std::vector<std::uint64_t>(3, 0)) << "nothing to find: 0";
  EXPECT_EQ(has.to_std_vector(), std::vector<bool>(3, false)) << "nothing to find: false";
  EXPECT_THROW(strata::lower_bound(sorted, queries, skewed), std::invalid_argument) << "out in another layout";
  strata::distributed_vector<std::uint64_t> out_other(3, 99, other_set);
  EXPECT_THROW(strata::lower_bound(sorted, on_other, out_other), std::invalid_argument) << "queries on another set";
  EXPECT_EQ(out_other.to_std_vector(), std::vector<std::uint64_t>(3, 99));
  EXPECT_EQ(skewed.to_std_vector(), std::vector<std::uint64_t>(3, 99));
  strata::lower_bound(sorted, queries, out);
  EXPECT_EQ(out.to_std_vector(), (std::vector<std::uint64_t>{0, 1, 4}));
}

// top_k against a host stable sort in sort's radix order (ties in index order): random data with
// many ties (small integers), floats with -0.0, +-inf and NaNs of both signs mixed in; k from 0
// to the whole range; smallest and largest; every set and size.
namespace {

template <class T>
int nan_side(T x) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(x)) return std::signbit(x) ? -1 : 1;
  return 0;
}

// The reference: indices of the k first elements of a stable sort by radix order (reversed for
// largest), computed on the host without the library's key image.
template <class T>
std::vector<std::uint64_t> host_top_k(const std::vector<T>& h, std::uint64_t k, bool largest) {
  std::vector<std::uint64_t> idx(h.size());
  std::iota(idx.begin(), idx.end(), std::uint64_t{0});
  const auto before = [](T a, T b) {  // radix order: NaN(-) < everything < NaN(+); -0.0 == +0.0
    if (nan_side(a) != nan_side(b)) return nan_side(a) < nan_side(b);
    if (nan_side(a) != 0) return false;
    return a < b;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](std::uint64_t a, std::uint64_t b) {
    return largest ? before(h[b], h[a]) : before(h[a], h[b]);
  });
  idx.resize(k);
  return idx;
}

template <class T>
void expect_top_k(const std::vector<T>& h, const strata::distributed_vector<T>& v, std::uint64_t k, bool largest) {
  SCOPED_TRACE(std::string(largest ? "largest" : "smallest") + ", k=" + std::to_string(k));
  const auto got = largest ? strata::top_k(v, k, strata::largest) : strata::top_k(v, k, strata::smallest);
  const auto want = host_top_k(h, k, largest);
  ASSERT_EQ(got.indices.size(), k);
  ASSERT_EQ(got.values.size(), k);
  for (std::uint64_t j = 0; j < k; ++j) {
    ASSERT_EQ(got.indices[j], want[j]) << "entry " << j;
    ASSERT_EQ(std::memcmp(&got.values[j], &h[want[j]], sizeof(T)), 0) << "entry " << j << " value " << +got.values[j];
  }
}

template <class T>
void top_k_cases() {
  for_each_set_and_size([&](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    auto h = random_vector<T>(n, seed);
    if constexpr (std::is_floating_point_v<T>) {
      const T specials[] = {T(-0.0), T(0.0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                            std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN(), T(-1.5)};
      std::mt19937_64 g(seed);
      for (std::uint64_t j = 0; j < std::min<std::uint64_t>(n, 40); ++j) h[g() % n] = specials[j % 7];
    }
    strata::distributed_vector<T> v(h, s.set);
    for (const std::uint64_t k : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1000}, n / 2, n}) {
      if (k > n || k > (std::uint64_t{1} << 20)) continue;
      expect_top_k(h, v, k, false);
      expect_top_k(h, v, k, true);
    }
  });
}

}  // namespace

namespace {

// An element whose key orders it and whose tag tells equal keys apart: a merge that is not stable,
// or that loses, duplicates or leaves out an element, shows in the tags.
struct tagged {
  std::int32_t key;
  std::uint32_t tag;
  bool operator==(const tagged& o) const { return key == o.key && tag == o.tag; }
};
struct by_key {
  __host__ __device__ bool operator()(const tagged& a, const tagged& b) const { return a.key < b.key; }
};
struct by_key_desc {
  __host__ __device__ bool operator()(const tagged& a, const tagged& b) const { return a.key > b.key; }
};

// `n` elements sorted by `comp`, keys from a small range (many equal ones), tags `first`, first + 1, ...
template <class Comp>
std::vector<tagged> sorted_tagged(std::uint64_t n, std::uint64_t seed, std::uint32_t first, Comp comp) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-40, 40);
  std::vector<tagged> v(n);
  for (std::uint64_t k = 0; k < n; ++k) v[k] = {d(g), first + static_cast<std::uint32_t>(k)};
  std::stable_sort(v.begin(), v.end(), comp);
  return v;
}

}  // namespace

// merge of two sorted ranges of different sizes and layouts (the first uneven, the second even,
// the output uneven) against std::merge, which is stable: equal keys keep the first range first
// and each range's order (the tags tell). Output poisoned first. Ascending and descending, and
// with either input empty; a set of one place takes the one-place CUB path.
TEST(Merge, AgreesWithStdMergeAndIsStable) {
  for_each_set_and_size([&](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    for (const std::uint64_t m : {n / 2 + 3, std::uint64_t{0}}) {
      for (const bool desc : {false, true}) {
        SCOPED_TRACE(std::string(desc ? "descending" : "ascending") + ", second range of " + std::to_string(m));
        const auto run = [&](auto comp) {
          const auto ha = sorted_tagged(n, seed, 0, comp), hb = sorted_tagged(m, seed + 1, 1u << 30, comp);
          std::vector<tagged> want(n + m);
          std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), want.begin(), comp);
          const strata::distributed_vector<tagged> a(ha, s.set, uneven(s.set, n)), b(hb, s.set);
          strata::distributed_vector<tagged> out(n + m, s.set, uneven(s.set, n + m));
          poison(out);
          strata::merge(a, b, out, comp);
          EXPECT_TRUE(out.to_std_vector() == want) << "merge";
          poison(out);  // the inputs the other way round: the second range's elements first on ties
          std::merge(hb.begin(), hb.end(), ha.begin(), ha.end(), want.begin(), comp);
          strata::merge(b, a, out, comp);
          EXPECT_TRUE(out.to_std_vector() == want) << "merge, inputs swapped";
        };
        if (desc)
          run(by_key_desc{});
        else
          run(by_key{});
      }
    }
  });
}

// Plain values with the default comparator into a layout of their own, and the refusals: dst of
// the wrong size, another set, dst sharing memory with an input; nothing written.
TEST(Merge, DefaultOrderAndBadArguments) {
  const auto set = strata::device_set::repeat(0, 3), other = strata::device_set::repeat(0, 2);
  auto ha = random_vector<double>(5003, fresh_seed()), hb = random_vector<double>(77, fresh_seed());
  std::sort(ha.begin(), ha.end());
  std::sort(hb.begin(), hb.end());
  std::vector<double> want(ha.size() + hb.size());
  std::merge(ha.begin(), ha.end(), hb.begin(), hb.end(), want.begin());
  const strata::distributed_vector<double> a(ha, set), b(hb, set, strata::partition_policy::weighted({0, 0, 1}));
  strata::distributed_vector<double> out(want.size(), set, strata::partition_policy::weighted({5, 1, 2}));
  poison(out);
  strata::merge(a, b, out);
  EXPECT_EQ(out.to_std_vector(), want);
  const std::vector<double> before = out.to_std_vector();
  strata::distributed_vector<double> shorter(want.size() - 1, set), on_other(want.size(), other);
  EXPECT_THROW(strata::merge(a, b, shorter), std::invalid_argument) << "dst too short";
  EXPECT_THROW(strata::merge(a, b, on_other), std::invalid_argument) << "dst on another set";
  strata::distributed_vector<double> self(ha, set);
  const strata::distributed_vector<double> empty(0, set);
  EXPECT_THROW(strata::merge(self, empty, self), std::invalid_argument) << "dst is the first range";
  EXPECT_EQ(out.to_std_vector(), before);
  EXPECT_EQ(self.to_std_vector(), ha) << "a refused merge wrote";
  // A first range that is not sorted, whose segment starts send the merge path back (a[2] = 50
  // goes after 50 of b's elements, a[4] = 1 after one): on a set whose places reach each other
  // the splits show it, refused with nothing written (host staging's searches cannot tell; there
  // the result is unspecified and only must not fault).
  for (const auto& s : {strata::device_set::repeat(0, 3), staged_set(3)}) {
    std::vector<double> hv(100);
    for (std::size_t k = 0; k < hv.size(); ++k) hv[k] = static_cast<double>(k);
    const strata::distributed_vector<double> bad(std::vector<double>{0, 0, 50, 50, 1, 1}, s), sorted(hv, s);
    strata::distributed_vector<double> to(106, s);
    poison(to);
    const std::vector<double> poisoned = to.to_std_vector();
    if (s.direct_access(0, 1)) {
      EXPECT_THROW(strata::merge(bad, sorted, to), std::invalid_argument) << "an unsorted input, direct";
      EXPECT_EQ(to.to_std_vector(), poisoned) << "a refused merge wrote";
    } else {
      strata::merge(bad, sorted, to);
      (void)to.to_std_vector();
    }
  }
}

TEST(TopK, AgreesWithAStableSortOnTheHost) {
  top_k_cases<std::int32_t>();
  top_k_cases<float>();
  STRATA_SKIP_IF_QUICK();
  top_k_cases<double>();
  top_k_cases<std::uint64_t>();
}

// Ties at the k-th value (the radix select ends on one value and every place keeps at most the
// count still needed, lowest indices first), every element equal, and a narrow range (floats
// sharing their top 20 bits: several histogram passes) with k up to 2^20.
TEST(TopK, TiesOneValueAndNarrowRanges) {
  for (const auto& s : sets()) {
    SCOPED_TRACE(s.name);
    const std::uint64_t n = quick_mode() ? 100003 : 1000003;
    std::vector<std::int64_t> thirds(n), same(n, 42);
    for (std::uint64_t i = 0; i < n; ++i) thirds[i] = static_cast<std::int64_t>((i * 7) % 3);
    strata::distributed_vector<std::int64_t> t(thirds, s.set), e(same, s.set);
    for (const std::uint64_t k : {std::uint64_t{1}, std::uint64_t{10}, n / 2, n - 1}) {
      expect_top_k(thirds, t, k, false);
      expect_top_k(thirds, t, k, true);
      expect_top_k(same, e, k, false);
    }
    const std::uint64_t m = quick_mode() ? (std::uint64_t{1} << 18) + 3 : (std::uint64_t{1} << 22) + 3;
    std::vector<float> narrow(m);
    std::mt19937_64 g(fresh_seed());
    for (auto& x : narrow) x = 1.0f + static_cast<float>(g() % 4096) * std::numeric_limits<float>::epsilon();
    strata::distributed_vector<float> v(narrow, s.set);
    for (const std::uint64_t k : {std::uint64_t{5}, std::uint64_t{1000}, std::uint64_t{1} << 20}) {
      if (k > m) continue;
      expect_top_k(narrow, v, k, false);
      expect_top_k(narrow, v, k, true);
    }
  }
}

TEST(TopK, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = strata::device_set::repeat(0, 3);
  strata::distributed_vector<float> v(std::vector<float>{1.0f, 2.0f}, set);
  EXPECT_THROW(strata::top_k(v, 3, strata::smallest), std::invalid_argument);
  strata::distributed_vector<float> none;
  EXPECT_THROW(strata::top_k(none, 0, strata::largest), std::invalid_argument);
  EXPECT_TRUE(strata::top_k(v, 0, strata::largest).values.empty());
  strata::distributed_vector<float> empty(0, set);
  EXPECT_TRUE(strata::top_k(empty, 0, strata::smallest).indices.empty());
}
