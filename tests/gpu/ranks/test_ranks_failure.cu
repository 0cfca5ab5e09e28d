// A rank that fails on purpose: the others throw, none hangs. It aborts the group, so it runs last:
// this file is the last source of the binary (tests/CMakeLists.txt), and GoogleTest runs suites in
// the order they register.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

namespace {
struct less_equal_i64 {  // not a strict weak order
  __host__ __device__ bool operator()(std::int64_t a, std::int64_t b) const { return a <= b; }
};
struct less_i64 {  // the comparison path's strict order
  __host__ __device__ bool operator()(std::int64_t a, std::int64_t b) const { return a < b; }
};
}  // namespace

// An all-gather whose byte count differs by rank: every rank throws std::invalid_argument (the
// counts are compared first; unequal NCCL all-gathers would read and write past the slots), and
// the group still works. Needs two ranks (the one-rank ctest run leaves NcclRanksTwo out).
TEST(NcclRanksTwo, AllGatherOfDifferentByteCountsThrowsOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const int rank = world_rank(), size = world_size();
  std::vector<char> in(8 + 8 * static_cast<std::size_t>(rank), 'a'), out(static_cast<std::size_t>(size) * (8 + 8 * size));
  try {
    group().all_gather(in.data(), in.size(), out.data());
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: 16"), std::string::npos) << e.what();
  }
  std::int64_t mine = 100 + rank;
  std::vector<std::int64_t> all(static_cast<std::size_t>(size));
  group().all_gather(&mine, sizeof mine, all.data());
  for (int r = 0; r < size; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], 100 + r);
}

// A comparator that is not a strict weak order (<=) is refused before any key moves, on every
// rank, on a set spanning them; the range is unchanged and the set still sorts.
TEST(NcclSpanning, ANonStrictComparatorIsRefusedOnEveryRank) {
  over_spanning(
      [](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n, std::uint64_t seed) {
        const auto h = random_vector<std::int64_t>(n, seed);
        strata::distributed_vector<std::int64_t> x(h, set, policy);
        EXPECT_THROW(strata::sort(x, less_equal_i64{}), std::invalid_argument);
        EXPECT_TRUE(x.to_std_vector() == h) << "unchanged";
        strata::sort(x, less_i64{});
        auto want = h;
        std::sort(want.begin(), want.end());
        EXPECT_TRUE(x.to_std_vector() == want);
      },
      {1009, 65537});
}

// Last (the group is aborted then): rank size-1 leaves after the set spanning the ranks is made;
// the others' reduce (no group argument) gives up after the timeout, aborts the communicator and
// throws strata::nccl_error instead of hanging, and so does every later wait on the set.
TEST(NcclRanksZ, OnASpanningSetARankThatFailsMakesTheOthersThrow) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  const auto& g = group();
  g.set_timeout(std::chrono::seconds(3));
  const auto set = strata::spanning_set(g, 1);
  strata::distributed_vector<int> x(10, 1, set);
  if (world_rank() == world_size() - 1) {
    g.abort();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW((void)strata::reduce(x), strata::nccl_error);
  EXPECT_THROW(set.synchronize(), strata::nccl_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_TRUE(g.aborted());
}
