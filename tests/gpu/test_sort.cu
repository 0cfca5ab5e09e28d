// Multi-place sort against std::stable_sort on the host: keys of every arithmetic kind on the
// radix path (CUB's radix order, -0.0 and NaN included), a custom order on a struct and a device
// lambda on the comparison path, key-value pairs with the stability check, skewed keys (sorted,
// reverse-sorted, all equal, 3 distinct values, 90% one value, one place holding all the smallest
// keys), on 1, 2, 3, 5 and 8 places, weighted layouts with empty places and staging forced, and
// over 2^31 keys in one call. The layout never changes.
#include "test_util.cuh"
#include "../common/radix_reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

using namespace strata_test;

namespace {

// The sets the sort runs on: 1, 2, 3, 5 and 8 places, 3 with staging forced, every GPU.
const std::vector<named_set>& sort_sets() {
  static const std::vector<named_set> s = [] {
    std::vector<named_set> v;
    const std::vector<std::size_t> counts = quick_mode() ? std::vector<std::size_t>{1, 3} : std::vector<std::size_t>{1, 2, 3, 5, 8};
    for (std::size_t k : counts) v.push_back({std::to_string(k) + " places on GPU 0", strata::device_set::repeat(0, k)});
    v.push_back({"3 places on GPU 0, host staging", staged_set(3)});
    if (!quick_mode())
      v.push_back({"all " + std::to_string(strata::visible_device_count()) + " GPUs", strata::device_set::all()});
    return v;
  }();
  return s;
}

// Even, and (with several places) weighted with an empty first and middle place.
std::vector<std::pair<std::string, strata::partition_policy>> sort_layouts(std::size_t k) {
  std::vector<std::pair<std::string, strata::partition_policy>> l{{"even", strata::partition_policy::even()}};
  if (k > 1) {
    std::vector<double> w(k, 1.0);
    w[0] = 0;
    w[k / 2] = 0;
    w[k - 1] = 2.5;
    l.push_back({"weighted with empty places", strata::partition_policy::weighted(w)});
  }
  return l;
}

enum class shape { random, sorted, reverse, all_equal, three_values, mostly_one, smallest_on_last_place };
const char* shape_name(shape s) {
  switch (s) {
    case shape::random: return "random";
    case shape::sorted: return "sorted";
    case shape::reverse: return "reverse-sorted";
    case shape::all_equal: return "all equal";
    case shape::three_values: return "3 distinct values";
    case shape::mostly_one: return "90% one value";
    default: return "the smallest tenth of the keys at the end";
  }
}
const std::vector<shape>& shapes() {
  static const std::vector<shape> s =
      quick_mode() ? std::vector<shape>{shape::random, shape::all_equal, shape::three_values}
                   : std::vector<shape>{shape::random,    shape::sorted,       shape::reverse,
                                        shape::all_equal, shape::three_values, shape::mostly_one,
                                        shape::smallest_on_last_place};
  return s;
}

template <class K>
K random_key(std::mt19937_64& g) {
  if constexpr (std::is_floating_point_v<K>) {
    std::uniform_real_distribution<double> d(-1e6, 1e6);
    return static_cast<K>(d(g));
  } else {
    return static_cast<K>(g());
  }
}

template <class K>
std::vector<K> keys_of(shape sh, std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<K> h(n);
  for (auto& x : h) x = random_key<K>(g);
  const K a = random_key<K>(g), b = random_key<K>(g), c = random_key<K>(g);
  switch (sh) {
    case shape::sorted: std::sort(h.begin(), h.end()); break;
    case shape::reverse: std::sort(h.begin(), h.end(), std::greater<K>{}); break;
    case shape::all_equal: std::fill(h.begin(), h.end(), a); break;
    case shape::three_values:
      for (auto& x : h) x = std::array<K, 3>{a, b, c}[g() % 3];
      break;
    case shape::mostly_one:
      for (auto& x : h)
        if (g() % 10 != 0) x = b;
      break;
    case shape::smallest_on_last_place:  // the smallest tenth of the keys, all at the end
      std::sort(h.begin(), h.end());
      std::rotate(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(n / 10), h.end());
      break;
    default: break;
  }
  return h;
}

// CUB's radix order on the host, written from its meaning (not the library's radix_order, which
// its merges use); host test RadixReference.* checks the two agree.
template <class K, bool Desc = false>
using radix_less = strata_test::radix_reference_less<K, Desc>;

template <class K>
bool same_bits(const std::vector<K>& a, const std::vector<K>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(K)) == 0);
}

// Sorts on every set, layout, shape and size, keys only and with values (the stability check),
// against std::stable_sort under `host_order`.
template <class K, class Comp, class HostOrder>
void check_sorts(Comp comp, HostOrder host_order) {
  for (const auto& s : sort_sets())
    for (const auto& [lname, policy] : sort_layouts(s.set.size()))
      for (shape sh : shapes())
        for (std::uint64_t n : sizes()) {
          // The host reference sorts too: shapes up to 10^5 elements, random keys up to 10^6.
          if (n > (sh == shape::random ? 1000003u : 100000u)) continue;
          if (quick_mode() && n > 1009) continue;  // the sanitizers slow every kernel down
          const std::uint64_t seed = fresh_seed();
          SCOPED_TRACE(where(s, n, seed) + ", " + lname + ", " + shape_name(sh));
          const auto h = keys_of<K>(sh, n, seed);
          auto want = h;
          std::stable_sort(want.begin(), want.end(), host_order);

          strata::distributed_vector<K> keys(h, s.set, policy);
          const auto layout = keys.partition();
          strata::stable_sort(keys, comp);
          EXPECT_TRUE(same_bits(keys.to_std_vector(), want)) << "stable_sort";
          EXPECT_EQ(keys.partition(), layout);

          // Pairs: values are the original indices, so stability is visible.
          keys = h;
          std::vector<std::uint32_t> idx(n);
          std::iota(idx.begin(), idx.end(), 0u);
          strata::distributed_vector<std::uint32_t> values(idx, s.set, policy);
          strata::stable_sort_by_key(keys, values, comp);
          std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t x, std::uint32_t y) { return host_order(h[x], h[y]); });
          EXPECT_TRUE(same_bits(keys.to_std_vector(), want)) << "stable_sort_by_key keys";
          EXPECT_EQ(values.to_std_vector(), idx) << "stable_sort_by_key values (stability)";

          keys = h;
          strata::sort(keys, comp, strata::nosync);
          s.set.synchronize();
          EXPECT_TRUE(same_bits(keys.to_std_vector(), want)) << "sort, nosync";
        }
}

struct point {
  std::int32_t x;
  std::uint32_t tag;
};
struct by_x_desc {
  __host__ __device__ bool operator()(const point& a, const point& b) const { return a.x > b.x; }
};
struct abs_less {
  __host__ __device__ bool operator()(std::int64_t a, std::int64_t b) const {
    return (a < 0 ? -a : a) < (b < 0 ? -b : b);
  }
};

// (An extended lambda cannot live in a TEST body: gtest makes it a private member function.)
void sort_descending_with_a_lambda(strata::distributed_vector<double>& d) {
  strata::sort(d, [] __device__(double a, double b) { return a > b; });
}

}  // namespace

TEST(Sort, Int8KeysRadix) { check_sorts<std::int8_t>(cuda::std::less<>{}, std::less<std::int8_t>{}); }
TEST(Sort, Uint32KeysRadix) { check_sorts<std::uint32_t>(std::less<std::uint32_t>{}, std::less<std::uint32_t>{}); }
TEST(Sort, Int64KeysRadixDescending) {
  check_sorts<std::int64_t>(cuda::std::greater<>{}, std::greater<std::int64_t>{});
}
TEST(Sort, FloatKeysRadix) { check_sorts<float>(cuda::std::less<>{}, radix_less<float>{}); }
TEST(Sort, DoubleKeysRadixDescending) { check_sorts<double>(std::greater<>{}, radix_less<double, true>{}); }
TEST(Sort, ComparisonPathCustomOrder) { check_sorts<std::int64_t>(abs_less{}, abs_less{}); }

// -0.0, +0.0, NaNs of both signs and the infinities, as CUB orders them: -0.0 and +0.0 are equal
// (they keep their input order under stable_sort), negative NaNs first, positive NaNs last.
TEST(Sort, FloatSpecialValuesFollowCubsRadixOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const auto& s : sort_sets())
    for (std::uint64_t n : {std::uint64_t{9}, std::uint64_t{1009}, std::uint64_t{100003}}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      std::mt19937_64 g(seed);
      const float specials[] = {-0.0f, 0.0f, nan, -nan, inf, -inf, 1.0f, -1.0f};
      std::vector<float> h(n);
      for (auto& x : h) x = specials[g() % 8];
      auto want = h;
      std::stable_sort(want.begin(), want.end(), radix_less<float>{});
      strata::distributed_vector<float> v(h, s.set);
      strata::stable_sort(v);
      EXPECT_TRUE(same_bits(v.to_std_vector(), want));
      // In that order -0.0 and +0.0 tie, so their input order survives: check one case by hand.
      EXPECT_TRUE(radix_less<float>{}(-nan, -inf) && radix_less<float>{}(inf, nan));
      EXPECT_FALSE(radix_less<float>{}(-0.0f, 0.0f) || radix_less<float>{}(0.0f, -0.0f));
    }
}

// A struct ordered by one field (descending) through the comparison path, and a device lambda.
TEST(Sort, StructsAndDeviceLambdasOnTheComparisonPath) {
  for (const auto& s : sort_sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      std::mt19937_64 g(seed);
      std::vector<point> h(n);
      for (std::uint64_t i = 0; i < n; ++i) h[i] = {static_cast<std::int32_t>(g() % 50), static_cast<std::uint32_t>(i)};
      auto want = h;
      std::stable_sort(want.begin(), want.end(), by_x_desc{});
      strata::distributed_vector<point> v(h, s.set);
      strata::stable_sort(v, by_x_desc{});
      const auto got = v.to_std_vector();
      ASSERT_EQ(got.size(), want.size());
      for (std::uint64_t i = 0; i < n; ++i)
        ASSERT_TRUE(got[i].x == want[i].x && got[i].tag == want[i].tag) << "element " << i;

      auto hd = random_vector<double>(n, seed);
      strata::distributed_vector<double> d(hd, s.set);
      sort_descending_with_a_lambda(d);
      std::sort(hd.begin(), hd.end(), std::greater<double>{});
      EXPECT_EQ(d.to_std_vector(), hd);
    }
}

struct at_most {  // <=: not a strict weak order
  __host__ __device__ bool operator()(int a, int b) const { return a <= b; }
};

// Random keys and values (so any permutation a refused call made would show), each refused call
// checked to leave every range as it was.
TEST(Sort, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = strata::device_set::repeat(0, 3);
  const auto hk = random_vector<int>(100, fresh_seed()), hs = random_vector<int>(99, fresh_seed()),
             ho = random_vector<int>(100, fresh_seed());
  strata::distributed_vector<int> k(hk, set), shorter(hs, set);
  strata::distributed_vector<int> other(ho, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  EXPECT_THROW(strata::sort(strata::distributed_span<int>{}), std::invalid_argument);
  EXPECT_THROW(strata::sort_by_key(k, shorter), std::invalid_argument);
  EXPECT_THROW(strata::sort_by_key(k, k), std::invalid_argument);
  EXPECT_THROW(strata::sort_by_key(k, other), std::invalid_argument);
  EXPECT_THROW(strata::stable_sort_by_key(k, other), std::invalid_argument);
  EXPECT_EQ(k.to_std_vector(), hk);
  EXPECT_EQ(shorter.to_std_vector(), hs);
  EXPECT_EQ(other.to_std_vector(), ho);
  // <= is no strict weak order: refused before any key moves, on one place and on three.
  for (const auto& s : {strata::device_set::repeat(0, 1), set}) {
    strata::distributed_vector<int> keys(hk, s), values(ho, s);
    EXPECT_THROW(strata::sort(keys, at_most{}), std::invalid_argument);
    EXPECT_THROW(strata::stable_sort_by_key(keys, values, cuda::std::less_equal<int>{}), std::invalid_argument);
    EXPECT_EQ(keys.to_std_vector(), hk) << s.size() << " places";
    EXPECT_EQ(values.to_std_vector(), ho) << s.size() << " places";
  }
}

struct rock_paper_scissors {  // irreflexive and asymmetric, but not transitive: no strict weak order
  __host__ __device__ bool operator()(int a, int b) const {
    return (static_cast<unsigned>(b) % 3u + 3u - static_cast<unsigned>(a) % 3u) % 3u == 1u;
  }
};

// The splitter search alone (detail::find_splitters), on places whose segments are already sorted,
// so that no CUB sort or merge sees a comparator that is no order: CUB's merge sort faults on one
// (an H100 on 2026-12-07, under compute-sanitizer: an invalid __shared__ read in
// DeviceMergeSortMergeKernel for rock_paper_scissors, which is undefined behaviour for CUB as for
// std::sort), so a whole strata::sort with such a comparator is no test of Strata.
// With std::less the splits must be the exact ones (every place's count of the `offset(b)`
// smallest elements in the order (key, place, position), from a host reference). With
// rock_paper_scissors on data where each place holds two residues mod 3 (a strict weak order
// there, so each segment is sorted, and a cycle across places), the search must either throw
// std::logic_error naming "strict weak order" or return splits the exchange can use: from 0 to
// the place's count, never going back from one boundary to the next, adding up to every boundary.
namespace {
void expect_usable_splits(const std::vector<std::vector<std::uint64_t>>& splits, const strata::partition& part) {
  const std::size_t k = part.places();
  ASSERT_EQ(splits.size(), k + 1);
  for (std::size_t i = 0; i < k; ++i) {
    EXPECT_EQ(splits[0][i], 0u);
    EXPECT_EQ(splits[k][i], part.count(i));
    for (std::size_t b = 1; b <= k; ++b) EXPECT_LE(splits[b - 1][i], splits[b][i]) << "place " << i << ", boundary " << b;
  }
  for (std::size_t b = 0; b <= k; ++b) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < k; ++i) total += splits[b][i];
    EXPECT_EQ(total, part.offset(b)) << "boundary " << b;
  }
}

template <class Ord>
std::vector<std::vector<std::uint64_t>> splits_of(const strata::device_set& set, strata::distributed_vector<int>& v, Ord ord) {
  const auto& part = v.partition();
  std::vector<strata::detail::sort_buffers<int, strata::detail::no_values>> buf(part.places());
  for (std::size_t i = 0; i < part.places(); ++i) {
    buf[i].keys[0] = v.span().segment_at(i).data;
    buf[i].count = part.count(i);
  }
  int rounds = 0;
  return strata::detail::find_splitters(set.state(), part, buf, ord, rounds);
}
}  // namespace

TEST(Sort, TheSplitterSearchIsExactOrRefusesAComparatorThatIsNoOrder) {
  for (const std::size_t places : {std::size_t{3}, std::size_t{5}}) {
    const auto set = strata::device_set::repeat(0, places);
    for (const std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{100003}}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(std::to_string(places) + " places, n=" + std::to_string(n) + ", seed " + std::to_string(seed));
      std::vector<double> weights(places, 1.0);
      if (places == 5) weights = {3, 1, 2, 5, 4};
      const auto policy = strata::partition_policy::weighted(weights);
      const auto part = policy.apply(n, places);
      // Place i holds values of residues i and i + 1 mod 3, each segment sorted by the comparator.
      std::mt19937_64 g(seed);
      std::vector<int> h(n);
      for (std::size_t i = 0; i < places; ++i) {
        const auto b = h.begin() + static_cast<std::ptrdiff_t>(part.offset(i));
        const auto e = b + static_cast<std::ptrdiff_t>(part.count(i));
        for (auto it = b; it != e; ++it) *it = 3 * static_cast<int>(g() % 1000) + static_cast<int>((i + g() % 2) % 3);
        std::stable_sort(b, e, rock_paper_scissors{});
      }
      strata::distributed_vector<int> cyclic(h, set, policy);
      try {
        expect_usable_splits(splits_of(set, cyclic, rock_paper_scissors{}), part);
      } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("strict weak order"), std::string::npos) << e.what();
      }
      // The same data sorted per place by <: the exact splits.
      for (std::size_t i = 0; i < places; ++i)
        std::sort(h.begin() + static_cast<std::ptrdiff_t>(part.offset(i)),
                  h.begin() + static_cast<std::ptrdiff_t>(part.offset(i) + part.count(i)));
      strata::distributed_vector<int> ordered(h, set, policy);
      const auto splits = splits_of(set, ordered, cuda::std::less<int>{});
      expect_usable_splits(splits, part);
      // Host reference: order (key, place, position) and count each place's share of every prefix.
      std::vector<std::pair<std::pair<int, std::size_t>, std::uint64_t>> all;
      for (std::size_t i = 0; i < places; ++i)
        for (std::uint64_t q = 0; q < part.count(i); ++q) all.push_back({{h[part.offset(i) + q], i}, q});
      std::sort(all.begin(), all.end());
      for (std::size_t b = 1; b < places; ++b) {
        std::vector<std::uint64_t> want(places, 0);
        for (std::uint64_t t = 0; t < part.offset(b); ++t) ++want[all[t].first.second];
        EXPECT_EQ(splits[b], want) << "boundary " << b;
      }
    }
  }
}

// The sort's scratch does not fit: strata::cuda_error naming the device, the keys unchanged, and
// nothing the failed call allocated stays allocated.
TEST(Sort, OutOfMemoryLeavesTheInputUnchanged) {
  STRATA_SKIP_IF_QUICK();
  const auto set = private_set(3);
  const std::uint64_t n = 3ull << 27;  // 1.5 GiB of uint32 keys
  auto h = random_vector<std::uint32_t>(n, fresh_seed());
  strata::distributed_vector<std::uint32_t> keys(h, set);
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  void* hog = nullptr;
  // 700 MiB stay free: the first place's 512 MiB of scratch fit, the second's do not.
  ASSERT_EQ(cudaMalloc(&hog, free_bytes - (700ull << 20)), cudaSuccess);
  const auto live_before = live_allocations::now();
  try {
    strata::sort(keys);
    ADD_FAILURE() << "the sort found room for its scratch";
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation);
    EXPECT_NE(std::string(e.what()).find("on device 0"), std::string::npos) << e.what();
  }
  expect_no_leak(live_before);
  ASSERT_EQ(cudaFree(hog), cudaSuccess);
  EXPECT_EQ(keys.to_std_vector(), h) << "the input changed";
  strata::sort(keys);
  std::sort(h.begin(), h.end());
  EXPECT_EQ(keys.to_std_vector(), h);
}

TEST(Sort, MoreThan2To31KeysInOneCall) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 12345;
  std::vector<std::uint8_t> h(n);
  std::mt19937_64 g(fresh_seed());
  std::uint64_t hist[256] = {};
  for (auto& x : h) ++hist[x = static_cast<std::uint8_t>(g())];
  for (std::size_t k : {1, 3}) {
    SCOPED_TRACE(std::to_string(k) + " places");
    const auto set = strata::device_set::repeat(0, k);
    strata::distributed_vector<std::uint8_t> v(h, set);
    strata::sort(v);
    const auto got = v.to_std_vector();
    std::uint64_t at = 0, bad = 0;
    for (int b = 0; b < 256; ++b)
      for (std::uint64_t c = 0; c < hist[b]; ++c, ++at)
        if (got[at] != b && bad++ < 5) ADD_FAILURE() << "element " << at << " is " << int(got[at]) << ", want " << b;
    EXPECT_EQ(bad, 0u);
    set.release_cached_memory();
  }
}

// ---- redistribute ----------------------------------------------------------------------------

TEST(Redistribute, BetweenLayoutsAndDeviceSets) {
  const auto three = strata::device_set::repeat(0, 3);
  const auto five = strata::device_set::repeat(0, 5);
  const auto staged = staged_set(4);
  const auto layouts_for = [](std::size_t k, std::uint64_t n) {
    std::vector<double> w(k, 1.0);
    w[0] = 0;
    w[k - 1] = 4;
    std::vector<std::uint64_t> sizes(k, 0);
    sizes[k / 2] = n / 2;
    sizes[k - 1] = n - n / 2;
    return std::vector<strata::partition_policy>{strata::partition_policy::even(), strata::partition_policy::weighted(w),
                                                 strata::partition_policy::explicit_sizes(sizes)};
  };
  for (std::uint64_t n : sizes()) {
    if (n > 1000003) continue;  // 81 layout pairs per size: the largest size is left to the copy tests
    const std::uint64_t seed = fresh_seed();
    const auto h = random_vector<std::int64_t>(n, seed);
    for (const auto* from_set : {&three, &five, &staged})
      for (const auto& from : layouts_for(from_set->size(), n))
        for (const auto* to_set : {&three, &five, &staged})
          for (const auto& to : layouts_for(to_set->size(), n)) {
            SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed) + ", " +
                         std::to_string(from_set->size()) + " -> " + std::to_string(to_set->size()) + " places");
            strata::distributed_vector<std::int64_t> src(h, *from_set, from);
            leave_poison_behind<std::int64_t>(n, -1, *to_set);
            const auto dst = strata::redistribute(src, *to_set, to);
            EXPECT_EQ(dst.places(), *to_set);
            EXPECT_EQ(dst.partition(), to.apply(n, to_set->size()));
            EXPECT_EQ(dst.to_std_vector(), h);
          }
    // Onto the same set, asynchronously, then compacted survivors evened out again.
    strata::distributed_vector<std::int64_t> v(h, five, strata::partition_policy::weighted({0, 1, 0, 0, 9}));
    auto even = strata::redistribute(v, strata::partition_policy::even(), strata::nosync);
    five.synchronize();
    EXPECT_EQ(even.to_std_vector(), h);
    EXPECT_EQ(even.partition(), strata::partition::even(n, 5));
  }
}
