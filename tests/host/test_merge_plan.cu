// merge's merge-path plan on the host (algorithm/merge.cuh): the splits find_merge_splits finds at
// every segment start (run here over host memory, as its kernel runs it over the places' memory)
// and the stretches merge_stretches makes of them. Merging every stretch on its own with
// std::merge, at its place in the output, must give std::merge of the whole (stable: the tags tell
// equal keys apart), each stretch inside one segment of the output, of a and of b, for random
// layouts with empty places. An unsorted input whose splits go back is refused.
#include <strata/algorithm/merge.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

struct tagged {
  int key;
  unsigned tag;
  bool operator==(const tagged& o) const { return key == o.key && tag == o.tag; }
};
struct by_key {
  __host__ __device__ bool operator()(const tagged& a, const tagged& b) const { return a.key < b.key; }
};

// n elements over `places` places, cut at random points (repeats make empty places).
strata::partition random_layout(std::uint64_t n, std::size_t places, std::mt19937_64& g) {
  std::vector<std::uint64_t> cuts{0, n};
  for (std::size_t i = 1; i < places; ++i) cuts.push_back(n == 0 ? 0 : g() % (n + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::uint64_t> sizes;
  for (std::size_t i = 1; i < cuts.size(); ++i) sizes.push_back(cuts[i] - cuts[i - 1]);
  return strata::partition::explicit_sizes(n, sizes);
}

// segment_table's words for a range laid out as `part` over the host array `data`.
std::vector<std::uint64_t> host_table(const strata::partition& part, const tagged* data) {
  std::vector<std::uint64_t> words = strata::detail::offset_table(part);
  for (std::size_t i = 0; i < part.places(); ++i)
    words.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(data + part.offset(i))));
  return words;
}

std::vector<tagged> sorted_tagged(std::uint64_t n, unsigned first, std::mt19937_64& g) {
  std::vector<tagged> v(n);
  for (std::uint64_t k = 0; k < n; ++k) v[k] = {static_cast<int>(g() % 11) - 5, first + static_cast<unsigned>(k)};
  std::stable_sort(v.begin(), v.end(), by_key{});
  return v;
}

// The stretches of merging a and b (laid out as pa, pb) into an output laid out as po.
std::vector<strata::detail::merge_stretch> plan(const std::vector<tagged>& a, const std::vector<tagged>& b,
                                                const strata::partition& pa, const strata::partition& pb,
                                                const strata::partition& po) {
  using namespace strata::detail;
  const std::vector<std::uint64_t> ask = merge_asks(po, pa, pb);
  std::vector<std::uint64_t> table = host_table(pa, a.data());
  const std::size_t b_at = append_table(table, host_table(pb, b.data()));
  const std::size_t ask_at = append_table(table, ask);
  std::vector<merge_split> found(ask.size() / 2);
  const find_merge_splits<tagged, by_key> f{{{table.data(), static_cast<int>(pa.places())}},
                                            {{table.data() + b_at, static_cast<int>(pb.places())}},
                                            table.data() + ask_at, found.data(), by_key{}};
  for (std::uint32_t s = 0; s < found.size(); ++s) f(s);
  return merge_stretches("test merge", found, po, pa, pb);
}

bool inside(const strata::partition& p, std::size_t place, std::uint64_t at, std::uint64_t n) {
  return place < p.places() && at >= p.offset(place) && at + n <= p.offset(place) + p.count(place);
}

}  // namespace

TEST(MergePlan, StretchesMergedOneByOneGiveTheWholeMerge) {
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 g(seed);
  for (int round = 0; round < 400; ++round) {
    const std::uint64_t na = g() % 5 == 0 ? 0 : g() % 257, nb = g() % 5 == 0 ? 0 : g() % 263;
    const std::size_t places = 1 + g() % 9;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", round " + std::to_string(round) + ": " + std::to_string(na) + " + " +
                 std::to_string(nb) + " elements on " + std::to_string(places) + " places");
    const auto a = sorted_tagged(na, 0, g), b = sorted_tagged(nb, 1u << 20, g);
    const auto pa = random_layout(na, places, g), pb = random_layout(nb, places, g), po = random_layout(na + nb, places, g);
    std::vector<tagged> want(na + nb), got(na + nb, tagged{99, ~0u});
    std::merge(a.begin(), a.end(), b.begin(), b.end(), want.begin(), by_key{});
    std::uint64_t covered = 0;
    for (const auto& t : plan(a, b, pa, pb, po)) {
      ASSERT_EQ(t.at, covered) << "the stretches follow each other";
      covered += t.na + t.nb;
      EXPECT_TRUE(inside(po, t.place, t.at, t.na + t.nb)) << "a stretch leaves its output segment";
      if (t.na > 0) EXPECT_TRUE(inside(pa, t.a_place, t.a_at, t.na)) << "a piece of a leaves its segment";
      if (t.nb > 0) EXPECT_TRUE(inside(pb, t.b_place, t.b_at, t.nb)) << "a piece of b leaves its segment";
      std::merge(a.begin() + t.a_at, a.begin() + t.a_at + t.na, b.begin() + t.b_at, b.begin() + t.b_at + t.nb,
                 got.begin() + t.at, by_key{});
    }
    EXPECT_EQ(covered, na + nb);
    EXPECT_TRUE(got == want) << "the stretches merged one by one differ from the whole merge";
  }
}

// a[2] = 50 goes after 50 of b's elements, a[4] = 1 after one: the splits at a's segment starts
// go back, and merge refuses before it writes.
TEST(MergePlan, AnUnsortedInputWhoseSplitsGoBackIsRefused) {
  std::vector<tagged> a, b;
  for (int x : {0, 0, 50, 50, 1, 1}) a.push_back({x, 0});
  for (int x = 0; x < 100; ++x) b.push_back({x, 1});
  const auto even = [](std::uint64_t n) { return strata::partition::explicit_sizes(n, {n / 3, n / 3, n - 2 * (n / 3)}); };
  EXPECT_THROW((void)plan(a, b, even(6), even(100), even(106)), std::invalid_argument);
  std::sort(a.begin(), a.end(), [](const tagged& x, const tagged& y) { return x.key < y.key; });
  EXPECT_NO_THROW((void)plan(a, b, even(6), even(100), even(106))) << "sorted, the same layouts";
}
