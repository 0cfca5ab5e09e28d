// The NCCL layer where no GPU is needed (CI): the error type, the argument checks a process group
// makes before any NCCL call, and the version of the NCCL library that was found.
#include <strata/nccl.cuh>

#include <gtest/gtest.h>

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
