// Host logic checked without a GPU: which rank owns which place of a set spanning processes
// (detail::rank_map, the same on every rank); how a rank's failure reaches the others
// (rank_verdict); and moving by owner (detail/by_index.cuh, algorithm/search.cuh): owners of
// global indices, the pieces of a bucketed move, and the searches' owner and segment steps; and
// which segments of a segmented reduction touch a place, and its offset checks; top_k's key order
// and its merge of the places' lists.
#include <strata/detail/exchange.cuh>
#include <strata/algorithm/search.cuh>
#include <strata/algorithm/segmented_reduce.cuh>
#include <strata/algorithm/top_k.cuh>
#include <strata/detail/by_index.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/sort/order.cuh>
#include <strata/partition.hpp>

#include <gtest/gtest.h>

#include "../common/radix_reference.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <limits>
#include <cmath>
#include <new>
#include <algorithm>
#include <random>
#include <string>
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

// The exchange between two sets spanning ranks (detail::plan_rank_exchange): seen from every rank
// of random layouts (random places per rank on both sides, weighted partitions with empty places),
// rank a's sends to rank b are exactly b's receives from a, in order and size (NCCL's matching
// rule), every piece between two ranks is sent once and received once, and no piece that stays on
// a rank is listed.
TEST(RankExchange, EverySendMeetsItsReceiveInOrder) {
  std::mt19937_64 gen(0x5eedull ^ static_cast<std::uint64_t>(std::random_device{}()));
  for (int round = 0; round < 200; ++round) {
    const int ranks = 1 + static_cast<int>(gen() % 5);
    std::vector<std::size_t> pa(ranks), pb(ranks);
    for (auto& p : pa) p = 1 + gen() % 3;
    for (auto& p : pb) p = 1 + gen() % 3;
    const std::uint64_t n = round % 10 == 0 ? gen() % 4 : gen() % 100000;
    const auto random_partition = [&](std::size_t places) {
      std::vector<double> w(places);
      for (auto& x : w) x = gen() % 4 == 0 ? 0.0 : static_cast<double>(1 + gen() % 7);
      w[gen() % places] = 1.0;  // (not every weight zero)
      return strata::partition::weighted(n, w);
    };
    std::size_t ta = 0, tb = 0;
    for (int r = 0; r < ranks; ++r) ta += pa[r], tb += pb[r];
    const auto from = random_partition(ta), to = random_partition(tb);
    const auto pieces = strata::detail::relayout_pieces(from, to);
    std::vector<strata::detail::rank_exchange_plan> plans;
    std::vector<rank_map> ma, mb;
    for (int r = 0; r < ranks; ++r) {
      ma.emplace_back(pa, r, 64);
      mb.emplace_back(pb, r, 64);
      plans.push_back(strata::detail::plan_rank_exchange(pieces, ma.back(), mb.back()));
    }
    std::vector<int> sent(pieces.size(), 0), received(pieces.size(), 0);
    for (int a = 0; a < ranks; ++a) {
      for (std::size_t k : plans[a].sends) {
        ++sent[k];
        EXPECT_EQ(ma[a].owner(pieces[k].src), a);
        EXPECT_NE(mb[a].owner(pieces[k].dst), a);
      }
      for (std::size_t k : plans[a].receives) {
        ++received[k];
        EXPECT_EQ(mb[a].owner(pieces[k].dst), a);
        EXPECT_NE(ma[a].owner(pieces[k].src), a);
      }
      for (int b = 0; b < ranks; ++b) {
        std::vector<std::uint64_t> a_to_b, b_from_a;
        for (std::size_t k : plans[a].sends)
          if (mb[a].owner(pieces[k].dst) == b) a_to_b.push_back(pieces[k].count);
        for (std::size_t k : plans[b].receives)
          if (ma[b].owner(pieces[k].src) == a) b_from_a.push_back(pieces[k].count);
        EXPECT_EQ(a_to_b, b_from_a) << "ranks " << a << " -> " << b << ", round " << round;
      }
    }
    std::uint64_t moved = 0;
    for (std::size_t k = 0; k < pieces.size(); ++k) {
      const bool crosses = ma[0].owner(pieces[k].src) != mb[0].owner(pieces[k].dst);
      EXPECT_EQ(sent[k], crosses ? 1 : 0);
      EXPECT_EQ(received[k], crosses ? 1 : 0);
      moved += pieces[k].count;
    }
    EXPECT_EQ(moved, n) << "the pieces cover the range";
  }
}

// A rank's failure travels to the others as a verdict, and they throw the same kind of exception
// naming that rank: a comparator refused on one rank is std::invalid_argument on every rank (not
// a CUDA error), a CUDA error keeps its code and device, an allocation failure is
// cudaErrorMemoryAllocation, and an unknown exception a strata::cuda_error.
TEST(RankVerdict, TheOthersThrowTheSameKind) {
  using strata::detail::exception_from;
  using strata::detail::rank_verdict;
  using strata::detail::verdict_of;
  EXPECT_EQ(verdict_of(nullptr).failed, 0);
  const auto rethrown = [](const rank_verdict& v) {
    EXPECT_EQ(v.failed, 1);
    return exception_from(v, 2, "strata::sort", "reserving its sort memory");
  };
  try {
    std::rethrow_exception(rethrown(verdict_of(std::make_exception_ptr(std::invalid_argument("strata::sort: not a strict weak order")))));
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("on rank 2"), std::string::npos) << w;
    EXPECT_NE(w.find("not a strict weak order"), std::string::npos) << w;
  }
  EXPECT_THROW(std::rethrow_exception(rethrown(verdict_of(std::make_exception_ptr(std::out_of_range("x"))))), std::out_of_range);
  EXPECT_THROW(std::rethrow_exception(rethrown(verdict_of(std::make_exception_ptr(std::logic_error("x"))))), std::logic_error);
  try {
    std::rethrow_exception(rethrown(verdict_of(std::make_exception_ptr(
        strata::cuda_error(cudaErrorIllegalAddress, "cudaMemcpyAsync", 3, __FILE__, __LINE__)))));
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorIllegalAddress);
    EXPECT_EQ(e.device(), 3);
    EXPECT_NE(std::string(e.what()).find("on rank 2"), std::string::npos) << e.what();
  }
  try {
    std::rethrow_exception(rethrown(verdict_of(std::make_exception_ptr(std::bad_alloc()))));
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation);
  }
  try {
    std::rethrow_exception(rethrown(verdict_of(std::make_exception_ptr(42))));
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorUnknown);
  }
  // A long message is cut, never overrun.
  const rank_verdict v = verdict_of(std::make_exception_ptr(std::invalid_argument(std::string(1000, 'm'))));
  EXPECT_EQ(strnlen(v.message, sizeof v.message), sizeof v.message - 1);
}

// ---- moving by owner (detail/by_index.cuh): the host-callable parts ---------------------------

// owner_lookup::owner over a partition's offset_table (empty places too), against
// partition::owner; owner_of's out-of-range bucket for negative indices and indices at or past the
// end; segment_lookup's element of a global index in a segment_table.
TEST(ByIndex, OwnersOfGlobalIndices) {
  using strata::detail::owner_lookup;
  using strata::detail::owner_of;
  for (const auto& sizes : std::vector<std::vector<std::uint64_t>>{{5}, {0, 3, 0, 4, 0}, {1, 1, 1}, {0, 0, 9}, {7, 0}}) {
    std::uint64_t n = 0;
    for (auto c : sizes) n += c;
    const auto part = strata::partition_policy::explicit_sizes(sizes).apply(n, sizes.size());
    const std::vector<std::uint64_t> words = strata::detail::offset_table(part);
    const owner_lookup t{words.data(), static_cast<int>(part.places())};
    EXPECT_EQ(t.size(), n);
    for (std::uint64_t g = 0; g < n; ++g) EXPECT_EQ(static_cast<std::size_t>(t.owner(g)), part.owner(g)) << g;
    const owner_of<std::int64_t> of{t};
    EXPECT_EQ(of(-1), sizes.size());
    EXPECT_EQ(of(static_cast<std::int64_t>(n)), sizes.size());
    EXPECT_EQ(of(std::int64_t{1} << 40), sizes.size());
    if (n > 0) EXPECT_EQ(of(static_cast<std::int64_t>(n - 1)), part.owner(n - 1));
    const owner_of<std::uint32_t> of32{t};
    EXPECT_EQ(of32(0xffffffffu), sizes.size());
    // The same layout's segments on the host, each holding its global indices.
    std::vector<std::vector<std::uint64_t>> segs(sizes.size());
    std::vector<std::uint64_t> table = words;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      for (std::uint64_t j = 0; j < sizes[i]; ++j) segs[i].push_back(part.offset(i) + j);
      table.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(segs[i].data())));
    }
    const strata::detail::segment_lookup<const std::uint64_t> at{{table.data(), static_cast<int>(part.places())}};
    for (std::uint64_t g = 0; g < n; ++g) EXPECT_EQ(at[g], g);
  }
}

// The pieces of a bucketed move, against a brute-force walk of every entry: random counts
// (zeros included), every entry of place i for owner j sent exactly once, to the right place,
// in place order at the owner and owner order at the source; the return pieces mirror them.
TEST(ByIndex, OwnerPiecesCoverEveryEntryOnce) {
  std::mt19937_64 g(20261206);
  for (int round = 0; round < 200; ++round) {
    const std::size_t k = 1 + g() % 6, owners = 1 + g() % 6;
    std::vector<std::uint64_t> counts(k * owners);
    for (auto& c : counts) c = g() % 3 == 0 ? 0 : g() % 50;
    strata::detail::owner_requests r;
    strata::detail::plan_owner_pieces(counts, k, owners, r);
    // Brute force: entry e of place i has owner j; its position in i's sorted order and at j.
    std::vector<std::vector<int>> at_source(k), at_owner(owners);  // which (i, j) each slot holds
    for (std::size_t j = 0; j < owners; ++j)
      for (std::size_t i = 0; i < k; ++i)
        for (std::uint64_t e = 0; e < counts[j * k + i]; ++e) at_owner[j].push_back(static_cast<int>(i * 16 + j));
    for (std::size_t i = 0; i < k; ++i)
      for (std::size_t j = 0; j < owners; ++j)
        for (std::uint64_t e = 0; e < counts[j * k + i]; ++e) at_source[i].push_back(static_cast<int>(i * 16 + j));
    std::vector<std::vector<int>> seen_source(k), seen_owner(owners);
    for (std::size_t i = 0; i < k; ++i) seen_source[i].assign(at_source[i].size(), -1);
    for (std::size_t j = 0; j < owners; ++j) seen_owner[j].assign(at_owner[j].size(), -1);
    ASSERT_EQ(r.to_owners.size(), r.from_owners.size());
    for (std::size_t p = 0; p < r.to_owners.size(); ++p) {
      const auto& pc = r.to_owners[p];
      const auto& back = r.from_owners[p];
      EXPECT_EQ(back.src, pc.dst);
      EXPECT_EQ(back.dst, pc.src);
      EXPECT_EQ(back.src_offset, pc.dst_offset);
      EXPECT_EQ(back.dst_offset, pc.src_offset);
      EXPECT_EQ(back.count, pc.count);
      for (std::uint64_t e = 0; e < pc.count; ++e) {
        ASSERT_LT(pc.src_offset + e, seen_source[pc.src].size());
        ASSERT_LT(pc.dst_offset + e, seen_owner[pc.dst].size());
        EXPECT_EQ(seen_source[pc.src][pc.src_offset + e], -1) << "sent twice";
        EXPECT_EQ(seen_owner[pc.dst][pc.dst_offset + e], -1) << "received twice";
        seen_source[pc.src][pc.src_offset + e] = static_cast<int>(pc.src * 16 + pc.dst);
        seen_owner[pc.dst][pc.dst_offset + e] = static_cast<int>(pc.src * 16 + pc.dst);
      }
    }
    EXPECT_EQ(seen_source, at_source) << "round " << round;
    EXPECT_EQ(seen_owner, at_owner) << "round " << round;
    for (std::size_t j = 0; j < owners; ++j) EXPECT_EQ(r.served_count[j], at_owner[j].size());
  }
}

// The searches' two steps on the host: search_owner picks a segment from the segments' first
// elements, search_segment finishes in it; against std::lower_bound / upper_bound /
// binary_search over random sorted data with repeats, split at random (empty segments too).
template <strata::detail::search_kind Kind>
std::uint64_t search_on_host(const std::vector<int>& data, const std::vector<std::uint64_t>& sizes, int q) {
  using namespace strata::detail;
  std::vector<std::uint64_t> offset;
  std::vector<int> firsts;
  std::vector<std::uint8_t> places;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    offset.push_back(at);
    if (sizes[i] > 0) {
      firsts.push_back(data[at]);
      places.push_back(static_cast<std::uint8_t>(i));
    }
    at += sizes[i];
  }
  // As a query place's lookup table holds them (append_table), read back through it.
  std::vector<std::uint64_t> table{0, 1, 2};  // (an odd start: the values begin at 16 bytes)
  const std::size_t first_at = append_table(table, firsts), place_at = append_table(table, places);
  const search_owner<int, cuda::std::less<>, Kind> owner{reinterpret_cast<const int*>(table.data() + first_at),
                                                         reinterpret_cast<const std::uint8_t*>(table.data() + place_at),
                                                         static_cast<int>(firsts.size()),
                                                         {}};
  const int o = owner(q);
  return search_segment<int, cuda::std::less<>, Kind>(data.data() + offset[o], sizes[o], offset[o], q, owner.comp);
}

TEST(ByIndex, SearchOwnersAndSegmentsAgreeWithStd) {
  using strata::detail::search_kind;
  std::mt19937_64 g(7);
  for (int round = 0; round < 300; ++round) {
    const std::size_t k = 1 + g() % 6;
    std::vector<std::uint64_t> sizes(k);
    std::uint64_t n = 0;
    for (auto& c : sizes) n += c = g() % 3 == 0 ? 0 : g() % 20;
    if (n == 0) sizes[g() % k] = n = 1 + g() % 5;
    std::vector<int> data(n);
    for (auto& x : data) x = static_cast<int>(g() % 15);
    std::sort(data.begin(), data.end());
    for (int q = -2; q < 18; ++q) {
      const auto lo = static_cast<std::uint64_t>(std::lower_bound(data.begin(), data.end(), q) - data.begin());
      const auto hi = static_cast<std::uint64_t>(std::upper_bound(data.begin(), data.end(), q) - data.begin());
      EXPECT_EQ(search_on_host<search_kind::lower>(data, sizes, q), lo) << "round " << round << ", q " << q;
      EXPECT_EQ(search_on_host<search_kind::upper>(data, sizes, q), hi) << "round " << round << ", q " << q;
      EXPECT_EQ(search_on_host<search_kind::contains>(data, sizes, q), std::binary_search(data.begin(), data.end(), q) ? 1u : 0u)
          << "round " << round << ", q " << q;
    }
  }
}

// segments_touching against a walk over every segment: for random offsets (empty segments, gaps
// before the first and after the last) and every share [base, base + count) of a range, the
// touched segments are exactly those with an element in the share.
TEST(SegmentedReduce, TouchedSegmentsAreExactlyThoseWithElementsInTheShare) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    const std::uint64_t size = g() % 60;
    const std::size_t entries = 1 + g() % 12;
    std::vector<std::uint64_t> offsets(entries);
    for (auto& o : offsets) o = size == 0 ? 0 : g() % (size + 1);
    std::sort(offsets.begin(), offsets.end());
    for (std::uint64_t base = 0; base <= size; ++base)
      for (std::uint64_t count = 1; base + count <= size; ++count) {
        const auto [lo, hi] = strata::detail::segments_touching(offsets, base, count);
        std::size_t want_lo = entries - 1, want_hi = 0;
        bool any = false;
        for (std::size_t j = 0; j + 1 < entries; ++j)
          if (std::max(offsets[j], base) < std::min(offsets[j + 1], base + count)) {
            if (!any) want_lo = j;
            want_hi = j + 1;
            any = true;
          }
        ASSERT_LE(lo, hi);
        if (!any) {
          for (std::size_t j = lo; j < hi; ++j)
            EXPECT_GE(std::max(offsets[j], base), std::min(offsets[j + 1], base + count)) << "segment " << j << " is empty here";
          continue;
        }
        // Every segment with elements here is in [lo, hi); any extra ones in it are empty here.
        EXPECT_LE(lo, want_lo) << "share [" << base << ", " << base + count << ")";
        EXPECT_GE(hi, want_hi) << "share [" << base << ", " << base + count << ")";
        for (std::size_t j = lo; j < want_lo; ++j)
          EXPECT_GE(std::max(offsets[j], base), std::min(offsets[j + 1], base + count));
        for (std::size_t j = want_hi; j < hi; ++j)
          EXPECT_GE(std::max(offsets[j], base), std::min(offsets[j + 1], base + count));
      }
  }
}

TEST(SegmentedReduce, OffsetsAreChecked) {
  using strata::detail::require_offsets;
  EXPECT_THROW(require_offsets("t", {}, 10), std::invalid_argument);
  EXPECT_THROW(require_offsets("t", {0, 5, 4}, 10), std::invalid_argument);
  EXPECT_THROW(require_offsets("t", {0, 11}, 10), std::invalid_argument);
  EXPECT_NO_THROW(require_offsets("t", {3}, 10));
  EXPECT_NO_THROW(require_offsets("t", {0, 0, 10, 10}, 10));
  try {
    require_offsets("strata::segmented_reduce", {2, 7, 3}, 10);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("offset 2 is 3, below offset 1, 7"), std::string::npos) << e.what();
  }
}

// top_k's key image and the sort's radix_order order as CUB's radix sort does, checked against
// the reference written from its meaning (tests/common/radix_reference.hpp, which the GPU sort
// tests use): for random floats (specials and NaN payloads of both signs included), signed and
// unsigned integers, key(a) < key(b) exactly when a sorts before b (-0.0 and +0.0 equal, NaNs of
// either sign at the ends, by their bits), and the largest-first image reverses it.
template <class T>
void expect_radix_order(const std::vector<T>& xs) {
  const strata::detail::radix_key<T> up{false}, down{true};
  const strata_test::radix_reference_less<T> before;
  const strata::detail::radix_order<T, false> library;  // the sort's own (its merges use it)
  for (std::size_t i = 0; i < xs.size(); ++i)
    for (std::size_t j = 0; j < xs.size(); ++j) {
      const T a = xs[i], b = xs[j];
      EXPECT_EQ(up(a) < up(b), before(a, b)) << +a << " vs " << +b;
      EXPECT_EQ(down(a) < down(b), before(b, a)) << +a << " vs " << +b;
      EXPECT_EQ(library(a, b), before(a, b)) << +a << " vs " << +b;
    }
}

TEST(TopK, KeyImageOrdersAsSortsRadixPath) {
  std::mt19937_64 g(std::random_device{}());
  std::vector<float> f{0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                       std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()};
  // NaNs with other payloads, both signs (ordered by their bits at either end).
  for (const std::uint32_t bits : {0x7f800001u, 0x7fc00005u, 0x7fffffffu, 0xff800001u, 0xffc00005u, 0xffffffffu}) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    f.push_back(x);
  }
  std::normal_distribution<float> nf(0.0f, 100.0f);
  for (int i = 0; i < 60; ++i) f.push_back(nf(g));
  expect_radix_order(f);
  std::vector<double> d{0.0, -0.0, 3.5, -3.5, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::quiet_NaN()};
  for (int i = 0; i < 40; ++i) d.push_back(static_cast<double>(static_cast<std::int64_t>(g())) / 7.0);
  expect_radix_order(d);
  std::vector<std::int32_t> s32{0, -1, 1, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  std::vector<std::uint16_t> u16{0, 1, 65535, 32768, 32767};
  std::vector<std::int8_t> s8{0, -128, 127, -1, 1};
  for (int i = 0; i < 40; ++i) {
    s32.push_back(static_cast<std::int32_t>(g()));
    u16.push_back(static_cast<std::uint16_t>(g()));
    s8.push_back(static_cast<std::int8_t>(g()));
  }
  expect_radix_order(s32);
  expect_radix_order(u16);
  expect_radix_order(s8);
}

// merge_top_k against sorting everything: random sorted lists with repeated keys, the first k of
// their union by (key, index), for k below, at and above the total.
// The sample pass's plan and threshold on the host: for random partitions (empty places too),
// sizes and k (1 up to n, past the sample limit too), the chunks lie inside their segments, do not
// overlap, number at least k in all, and the k-th smallest of their minima is reached by at least k
// elements of random data, of ascending data, and of data with many repeats (so the k smallest
// elements are all at or below it).
TEST(TopK, SampleThresholdIsReachedByAtLeastKElements) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 300; ++round) {
    const std::size_t places = 1 + g() % 8;
    std::vector<std::uint64_t> sizes(places);
    for (auto& c : sizes) c = g() % 4 == 0 ? 0 : g() % (round % 3 == 0 ? 200000 : 3000);
    std::uint64_t n = 0;
    for (const auto c : sizes) n += c;
    if (n == 0) continue;
    const std::uint64_t k = 1 + (round % 5 == 0 ? g() % n : g() % std::min<std::uint64_t>(n, 5000));
    std::vector<std::uint32_t> data(n);
    for (std::uint64_t i = 0; i < n; ++i)
      data[i] = round % 4 == 0 ? static_cast<std::uint32_t>(i) : round % 4 == 1 ? static_cast<std::uint32_t>(g() % 7)
                                                                              : static_cast<std::uint32_t>(g());
    std::vector<std::uint32_t> minima;
    std::uint64_t offset = 0, chunks = 0;
    for (std::size_t i = 0; i < places; ++i) {
      const auto c = strata::detail::top_k_sample_plan(sizes[i], n, k);
      if (sizes[i] == 0) EXPECT_EQ(c.count, 0u);
      if (c.count > 0) {
        ASSERT_GE(c.length, 1u);
        ASSERT_LE(c.length, c.stride) << "chunks overlap";
        ASSERT_LE(c.count * c.stride, sizes[i]) << "a chunk leaves its segment";
      }
      for (std::uint64_t j = 0; j < c.count; ++j) {
        std::uint32_t m = ~0u;
        for (std::uint64_t e = j * c.stride; e < j * c.stride + c.length; ++e) m = std::min(m, data[offset + e]);
        minima.push_back(m);
      }
      chunks += c.count;
      offset += sizes[i];
    }
    ASSERT_GE(chunks, k) << "fewer chunks than k";
    std::nth_element(minima.begin(), minima.begin() + static_cast<std::ptrdiff_t>(k - 1), minima.end());
    const std::uint32_t threshold = minima[k - 1];
    const auto reached = static_cast<std::uint64_t>(std::count_if(data.begin(), data.end(), [&](std::uint32_t x) { return x <= threshold; }));
    EXPECT_GE(reached, k) << "round " << round << ": n " << n << ", k " << k;
  }
}

TEST(TopK, MergeOfSortedListsTakesTheFirstKByKeyThenIndex) {
  using entry = strata::detail::top_k_entry<std::int32_t>;
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 300; ++round) {
    std::vector<std::vector<entry>> lists(1 + g() % 6);
    std::vector<entry> all;
    std::uint64_t index = 0;
    for (auto& l : lists) {
      l.resize(g() % 9);
      for (auto& e : l) {
        e.key = static_cast<std::uint32_t>(g() % 5);
        e.index = index++;
        e.value = static_cast<std::int32_t>(e.key) * 10;
      }
      std::stable_sort(l.begin(), l.end(), [](const entry& a, const entry& b) { return a.key < b.key; });
      all.insert(all.end(), l.begin(), l.end());
    }
    std::sort(all.begin(), all.end(), [](const entry& a, const entry& b) { return a.key != b.key ? a.key < b.key : a.index < b.index; });
    const std::uint64_t k = g() % (all.size() + 3);
    const auto got = strata::detail::merge_top_k(lists, k);
    ASSERT_EQ(got.size(), std::min<std::uint64_t>(k, all.size()));
    for (std::size_t j = 0; j < got.size(); ++j) {
      EXPECT_EQ(got[j].key, all[j].key) << "round " << round << " entry " << j;
      EXPECT_EQ(got[j].index, all[j].index) << "round " << round << " entry " << j;
    }
  }
}

// count_owners spreads each owner bucket over owner_spread(buckets) histogram bins (a power of
// two, at most 256, all bins within 2048) by the sample's position: for random indices into
// random layouts, adding each bucket's bins gives exactly the per-owner counts of owner_of, and
// neighbouring positions of one owner land in different bins.
TEST(CountOwners, SpreadBinsAddUpToTheOwnersCounts) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    const std::size_t places = 1 + g() % 64;
    std::vector<std::uint64_t> sizes(places);
    for (auto& c : sizes) c = g() % 4 == 0 ? 0 : g() % 50;
    std::uint64_t n = 0;
    for (const auto c : sizes) n += c;
    const strata::partition part = strata::partition::explicit_sizes(n, sizes);
    const std::vector<std::uint64_t> words = strata::detail::offset_table(part);
    const strata::detail::owner_lookup t{words.data(), static_cast<int>(part.places())};
    const std::size_t buckets = places + 1;
    const int spread = strata::detail::owner_spread(buckets);
    ASSERT_GE(spread, 1);
    ASSERT_EQ(spread & (spread - 1), 0) << "a power of two";
    ASSERT_LE(spread, 256);
    ASSERT_LE(static_cast<std::size_t>(spread) * buckets, std::size_t{2048});
    std::vector<std::int64_t> idx(1 + g() % 300);
    for (auto& x : idx) x = static_cast<std::int64_t>(g() % (part.size() + 20)) - 10;  // some out of range
    const strata::detail::owner_of<std::int64_t> owner{t};
    const strata::detail::spread_owner_key<std::int64_t, strata::detail::owner_of<std::int64_t>> key{idx.data(), owner, spread};
    std::vector<std::uint64_t> bins(buckets * static_cast<std::size_t>(spread), 0), want(buckets, 0);
    for (std::uint64_t j = 0; j < idx.size(); ++j) {
      const int b = key(j);
      ASSERT_GE(b, 0);
      ASSERT_LT(static_cast<std::size_t>(b), bins.size());
      ++bins[static_cast<std::size_t>(b)];
      ++want[owner(idx[j])];
      if (j > 0 && spread > 1 && owner(idx[j]) == owner(idx[j - 1])) EXPECT_NE(b, key(j - 1));
    }
    for (std::size_t b = 0; b < buckets; ++b) {
      std::uint64_t sum = 0;
      for (int s = 0; s < spread; ++s) sum += bins[b * static_cast<std::size_t>(spread) + static_cast<std::size_t>(s)];
      EXPECT_EQ(sum, want[b]) << "bucket " << b << " of " << buckets;
    }
  }
}
