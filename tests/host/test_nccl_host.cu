// The NCCL layer where no GPU is needed (CI): the error type, the argument checks a process group
// makes before any NCCL call, and the version of the NCCL library that was found.
#include <strata/nccl.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

TEST(NcclHost, ErrorNamesTheCallTheRankAndNcclsMessage) {
  const strata::nccl_error e(ncclRemoteError, "ncclAllGather(...)", 3, "a peer failed", "file.cuh", 42);
  EXPECT_EQ(e.code(), ncclRemoteError);
  EXPECT_EQ(e.rank(), 3);
  EXPECT_EQ(e.call(), "ncclAllGather(...)");
  const std::string w = e.what();
  EXPECT_NE(w.find("ncclAllGather(...) failed on rank 3: "), std::string::npos) << w;
  EXPECT_NE(w.find(ncclGetErrorString(ncclRemoteError)), std::string::npos) << w;
  EXPECT_NE(w.find("(a peer failed) at file.cuh:42"), std::string::npos) << w;
  EXPECT_THROW(STRATA_NCCL_CHECK(0, ncclInvalidArgument), strata::nccl_error);
  EXPECT_NO_THROW(STRATA_NCCL_CHECK(0, ncclSuccess));
}

TEST(NcclHost, ProcessGroupChecksItsArgumentsBeforeAnyNcclCall) {
  using strata::process_group;
  EXPECT_THROW(process_group::check_arguments(0, 0, 0), std::invalid_argument);
  EXPECT_THROW(process_group::check_arguments(-1, 4, 0), std::invalid_argument);
  try {
    process_group::check_arguments(4, 4, 0);
    FAIL() << "rank 4 of 4 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 4 is not in [0, 4)"), std::string::npos) << e.what();
  }
  const int n = strata::visible_device_count();
  EXPECT_THROW(process_group::check_arguments(0, 2, n), std::out_of_range);
  EXPECT_THROW(process_group::check_arguments(0, 2, -1), std::out_of_range);
  EXPECT_THROW(process_group::borrow(nullptr), std::invalid_argument);
  // Several ranks of one process (create_local / create_all): the same checks for each, first.
  EXPECT_THROW(process_group::check_local_arguments(0, 2, {}), std::invalid_argument);
  EXPECT_THROW(process_group::check_local_arguments(-1, 2, {0}), std::invalid_argument);
  try {
    process_group::check_local_arguments(3, 4, {0, 0});
    FAIL() << "ranks 3 and 4 of 4 were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 3 to 4 are not in [0, 4)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(process_group::check_local_arguments(0, 2, {0, n}), std::out_of_range);
  EXPECT_THROW(process_group::create_all({}), std::invalid_argument);
  EXPECT_THROW(process_group::create_all({n}), std::out_of_range);  // before any NCCL call
  if (n > 0) EXPECT_NO_THROW(process_group::check_local_arguments(1, 3, {0, 0}));
}

TEST(NcclHost, TheNcclLibraryReportsItsVersion) {
  const int v = strata::nccl_version();
  EXPECT_GE(v, 20000) << "NCCL 2.x encodes its version as major * 10000 + minor * 100 + patch";
  std::printf("NCCL %d.%d.%d loaded\n", v / 10000, (v / 100) % 100, v % 100);
}

// The layout of a range over the places of several ranks: rank order, then place order; the
// policy spans every place of every rank; each rank's share is contiguous and they tile [0, n).
TEST(NcclHost, RankLayoutTilesTheRangeInRankOrder) {
  const std::vector<std::size_t> places{2, 1, 3};
  for (std::uint64_t n : {0ull, 1ull, 5ull, 6ull, 1000003ull}) {
    std::uint64_t next = 0;
    for (int r = 0; r < 3; ++r) {
      const strata::rank_layout l(n, places, strata::partition_policy::even(), r);
      const strata::partition all = strata::partition::even(n, 6);
      EXPECT_EQ(l.size(), n);
      EXPECT_EQ(l.ranks(), 3);
      EXPECT_EQ(l.offset(), next) << "n=" << n << " rank " << r;
      const auto sizes = l.local_sizes();
      ASSERT_EQ(sizes.size(), places[static_cast<std::size_t>(r)]);
      std::uint64_t sum = 0;
      const std::size_t first = r == 0 ? 0 : (r == 1 ? 2 : 3);
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(sizes[i], all.count(first + i));
        sum += sizes[i];
      }
      EXPECT_EQ(sum, l.local_size());
      EXPECT_EQ(l.rank_size(r), l.local_size());
      EXPECT_EQ(l.local_policy().apply(l.local_size(), sizes.size()).size(), l.local_size());
      next += l.local_size();
    }
    EXPECT_EQ(next, n);
  }
  // Weighted over all six places: a rank whose places weigh 0 holds nothing.
  const strata::rank_layout w(60, places, strata::partition_policy::weighted({1, 1, 0, 1, 1, 2}), 1);
  EXPECT_EQ(w.local_size(), 0u);
  EXPECT_EQ(w.offset(), 20u);
  EXPECT_EQ(w.rank_size(2), 40u);
}

TEST(NcclHost, RankLayoutRejectsBadArguments) {
  using strata::partition_policy;
  using strata::rank_layout;
  EXPECT_THROW(rank_layout(10, {}, partition_policy::even(), 0), std::invalid_argument);
  EXPECT_THROW(rank_layout(10, {1, 0}, partition_policy::even(), 0), std::invalid_argument);
  EXPECT_THROW(rank_layout(10, {1, 1}, partition_policy::even(), 2), std::invalid_argument);
  EXPECT_THROW(rank_layout(10, {1, 1}, partition_policy::weighted({1, 1, 1}), 0), std::invalid_argument);
  const rank_layout l(10, {1, 1}, partition_policy::even(), 0);
  EXPECT_THROW(l.rank_size(2), std::out_of_range);
  EXPECT_THROW(l.rank_offset(-1), std::out_of_range);
}

// The plan of a move between two rank layouts, simulated on the host for every rank: the pieces
// each rank sends to a peer are the ones that peer receives, in the same order with the same
// counts (NCCL's matching rule), and applying every rank's pieces puts global element k at global
// index k of the new layout, for random layouts over 1-4 ranks with 1-3 places each.
TEST(NcclHost, RankMovesDeliverEveryElementOnce) {
  std::mt19937_64 gen(std::random_device{}());
  const auto random_policy = [&](std::size_t places, std::uint64_t n) {
    switch (gen() % 3) {
      case 0:
        return strata::partition_policy::even();
      case 1: {
        std::vector<double> w(places);
        for (auto& x : w) x = static_cast<double>(gen() % 4);  // zeros included
        if (std::all_of(w.begin(), w.end(), [](double x) { return x == 0; })) w[0] = 1;
        return strata::partition_policy::weighted(w);
      }
      default: {
        std::vector<std::uint64_t> c(places, 0);
        for (std::uint64_t k = 0; k < n; ++k) ++c[gen() % places];
        return strata::partition_policy::explicit_sizes(c);
      }
    }
  };
  for (int trial = 0; trial < 300; ++trial) {
    const int ranks = 1 + static_cast<int>(gen() % 4);
    std::vector<std::size_t> pa(static_cast<std::size_t>(ranks)), pb(pa.size());
    for (auto& p : pa) p = 1 + gen() % 3;
    for (auto& p : pb) p = 1 + gen() % 3;
    const std::uint64_t n = gen() % 40;
    std::size_t ta = 0, tb = 0;
    for (std::size_t r = 0; r < pa.size(); ++r) ta += pa[r], tb += pb[r];
    const auto policy_a = random_policy(ta, n), policy_b = random_policy(tb, n);
    // Every rank's shares, place by place: the source holds global indices, the destination -1.
    std::vector<std::vector<std::vector<std::int64_t>>> src(pa.size()), dst(pa.size());
    std::vector<strata::detail::rank_moves> moves;
    for (int r = 0; r < ranks; ++r) {
      const strata::rank_layout a(n, pa, policy_a, r), b(n, pb, policy_b, r);
      std::int64_t k = static_cast<std::int64_t>(a.offset());
      for (std::uint64_t c : a.local_sizes()) {
        src[r].emplace_back();
        for (std::uint64_t e = 0; e < c; ++e) src[r].back().push_back(k++);
      }
      for (std::uint64_t c : b.local_sizes()) dst[r].emplace_back(c, -1);
      moves.push_back(strata::detail::plan_rank_moves(a, b));
    }
    for (int r = 0; r < ranks; ++r) {
      for (const auto& p : moves[r].stays)
        for (std::uint64_t e = 0; e < p.count; ++e) dst[r][p.dst_place][p.dst_offset + e] = src[r][p.place][p.offset + e];
      for (int d = 0; d < ranks; ++d) {
        std::vector<strata::detail::rank_piece> out, in;
        for (const auto& p : moves[r].sends)
          if (p.peer == d) out.push_back(p);
        for (const auto& p : moves[d].receives)
          if (p.peer == r) in.push_back(p);
        ASSERT_EQ(out.size(), in.size()) << "rank " << r << " -> " << d;
        for (std::size_t q = 0; q < out.size(); ++q) {
          ASSERT_EQ(out[q].count, in[q].count);
          for (std::uint64_t e = 0; e < out[q].count; ++e)
            dst[d][in[q].place][in[q].offset + e] = src[r][out[q].place][out[q].offset + e];
        }
      }
    }
    for (int r = 0; r < ranks; ++r) {
      const strata::rank_layout b(n, pb, policy_b, r);
      std::int64_t k = static_cast<std::int64_t>(b.offset());
      for (const auto& place : dst[r])
        for (std::int64_t v : place) ASSERT_EQ(v, k++) << "trial " << trial << ", rank " << r;
    }
  }
  EXPECT_THROW(strata::detail::plan_rank_moves(strata::rank_layout(5, {1, 1}, strata::partition_policy::even(), 0),
                                               strata::rank_layout(6, {1, 1}, strata::partition_policy::even(), 0)),
               std::invalid_argument);
}

// The stamps of a group all-gather: every rank's slot holds its payload (16-byte aligned) and the
// call's stamp; a slot this call did not write (a rank that left: stale bytes of an earlier call,
// or never written) is found, the first such rank named.
TEST(NcclHost, GatherStampsFindARankThatDidNotContribute) {
  using namespace strata::detail;
  EXPECT_EQ(gather_slot_bytes(1), 32u);
  EXPECT_EQ(gather_slot_bytes(16), 32u);
  EXPECT_EQ(gather_slot_bytes(17), 48u);
  EXPECT_EQ(gather_stamp_at(8), 16u);
  EXPECT_EQ(gather_stamp_at(24), 32u);
  EXPECT_NE(gather_stamp(1), gather_stamp(2));
  EXPECT_NE(gather_stamp(1), 0u);
  const int ranks = 5;
  const std::size_t bytes = 12, slot = gather_slot_bytes(bytes), at = gather_stamp_at(bytes);
  std::vector<char> buf(slot * ranks, 0);
  const auto stamp = [&](int r, std::uint64_t s) { std::memcpy(buf.data() + r * slot + at, &s, sizeof s); };
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(7)), 0) << "a zeroed buffer";
  for (int r = 0; r < ranks; ++r) stamp(r, gather_stamp(7));
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(7)), -1);
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(8)), 0) << "every slot is of the call before";
  for (int r = 0; r < ranks; ++r) stamp(r, gather_stamp(8));
  stamp(3, gather_stamp(7));  // rank 3 left after call 7
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(8)), 3);
  EXPECT_EQ(first_unstamped(buf.data(), 3, slot, at, gather_stamp(8)), -1) << "only ranks [0, 3) asked";
}
