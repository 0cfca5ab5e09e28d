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
