// The test binary of the algorithms over several MPI ranks (the families are in test_ranks_*.cu):
// MPI's start and end, and the set spanning the ranks itself. Run by `mpirun -np R` (ctest: R = 1;
// scripts/gpu-check.sh: R = 2, 3, 4).
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

TEST(NcclSpanning, TheSetListsEveryRanksPlacesInRankOrder) {
  const int size = world_size();
  const auto set = strata::spanning_set(group(), 2);
  ASSERT_TRUE(set.spans_processes());
  ASSERT_EQ(set.size(), static_cast<std::size_t>(2 * size));
  for (std::size_t i = 0; i < set.size(); ++i) {
    EXPECT_EQ(set.owner_rank(i), static_cast<int>(i / 2));
    EXPECT_EQ(set.is_local(i), set.owner_rank(i) == world_rank());
    EXPECT_EQ(set.device(i), set.is_local(i) ? group().device() : -1);
    if (!set.is_local(i)) EXPECT_THROW((void)set.stream(i), std::invalid_argument);
  }
  strata::distributed_vector<int> x(5 * set.size() + 3, 7, set);
  EXPECT_EQ(x.size(), 5 * set.size() + 3) << "the size is global";
  const std::uint64_t mine_first = x.partition().offset(2 * static_cast<std::size_t>(world_rank()));
  EXPECT_EQ(x.get(mine_first), 7);
  // This rank's share: its places' elements, contiguous in the global range.
  const strata::index_range share = x.span().local_range();
  const std::size_t first_place = 2 * static_cast<std::size_t>(world_rank());
  EXPECT_EQ(share.offset, x.partition().offset(first_place));
  EXPECT_EQ(share.count, x.partition().count(first_place) + x.partition().count(first_place + 1));
  const auto mine = x.span().subspan(share.offset, share.count);
  for (std::size_t i = 0; i < set.size(); ++i)
    EXPECT_EQ(mine.partition().count(i), set.is_local(i) ? x.partition().count(i) : 0u) << "place " << i;
  strata::fill(mine, 3);  // element-wise: this rank's places alone
  const auto all = x.to_std_vector();  // a collective over x, the same layout on every rank
  EXPECT_EQ(static_cast<std::uint64_t>(std::count(all.begin(), all.end(), 3)), x.size()) << "every rank filled its share";
  if (size > 1) {
    const std::uint64_t other = x.partition().offset(2 * static_cast<std::size_t>((world_rank() + 1) % size));
    EXPECT_THROW((void)x.get(other), std::invalid_argument);
  }
  EXPECT_THROW((void)strata::redistribute(x, strata::partition_policy::weighted({1.0})), std::invalid_argument)
      << "weights for one place on a set of " << set.size();
  const auto here = private_set_on(group().device(), 2);
  strata::distributed_vector<int> local(x.size(), 0, here);
  EXPECT_THROW(strata::copy(x, local), std::logic_error) << "a set spanning processes and one that does not";
  EXPECT_THROW(strata::copy(local, x), std::logic_error);
  EXPECT_THROW((void)strata::redistribute(x, here), std::logic_error);
  set.synchronize();
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int status = 0;
  if (strata::visible_device_count() == 0) {
    std::printf("STRATA_GPU_SKIP: no CUDA device is visible; GPU tests skipped\n");
  } else {
    int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
    MPI_Allreduce(&failed, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return status;
}
