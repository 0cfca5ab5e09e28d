// The MPI bootstrap of the NCCL layer, where no GPU is needed (CI runs it under mpirun -np 3 on
// the CPU): the unique id reaches every rank, every rank learns of a bad argument on any rank
// (none is left waiting), and node-local ranks. Its own main: MPI_Init first.
#include <strata/nccl_mpi.cuh>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

int world_rank() { return strata::detail::mpi_rank(MPI_COMM_WORLD); }
int world_size() { return strata::detail::mpi_size(MPI_COMM_WORLD); }

}  // namespace

TEST(NcclMpi, EveryRankGetsRankZerosUniqueId) {
  const ncclUniqueId id = strata::mpi_unique_id(MPI_COMM_WORLD);
  std::vector<char> all(sizeof id * static_cast<std::size_t>(world_size()));
  ASSERT_EQ(MPI_Allgather(&id, sizeof id, MPI_BYTE, all.data(), sizeof id, MPI_BYTE, MPI_COMM_WORLD), MPI_SUCCESS);
  for (int r = 1; r < world_size(); ++r)
    EXPECT_EQ(std::memcmp(all.data(), all.data() + sizeof id * static_cast<std::size_t>(r), sizeof id), 0) << "rank " << r;
  // A second id differs: each call makes a fresh one.
  const ncclUniqueId again = strata::mpi_unique_id(MPI_COMM_WORLD);
  EXPECT_NE(std::memcmp(&id, &again, sizeof id), 0);
}

TEST(NcclMpi, ABadArgumentOnOneRankMakesEveryRankThrow) {
  // Rank 1 asks for device -1; where no GPU is visible device 0 is bad on every rank too.
  const int device = world_rank() == 1 ? -1 : 0;
  try {
    (void)strata::process_group_from_mpi(MPI_COMM_WORLD, device);
    FAIL() << "no exception on rank " << world_rank();
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("bad arguments on rank(s) "), std::string::npos) << w;
    EXPECT_NE(w.find("1"), std::string::npos) << w;
  }
}

TEST(NcclMpi, NodeLocalRanksArePermutations) {
  const int local = strata::mpi_local_rank(MPI_COMM_WORLD);
  std::vector<int> all(static_cast<std::size_t>(world_size()));
  ASSERT_EQ(MPI_Allgather(&local, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
  // One node here: the local ranks are 0 .. size-1 in some order.
  std::vector<int> seen(all.size(), 0);
  for (int r : all) {
    ASSERT_GE(r, 0);
    ASSERT_LT(r, world_size());
    ++seen[static_cast<std::size_t>(r)];
  }
  for (int c : seen) EXPECT_EQ(c, 1);
}

// Every rank runs every test; the run fails if a test failed on any rank.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
