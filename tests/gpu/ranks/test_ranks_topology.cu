// measure_topology over sets spanning the ranks.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

// measure_topology on a set spanning the ranks (a collective): each rank measures its own places
// and their pairs, one all-gather gives every rank the same figures, pairs across ranks stay 0.
// The measured policy then lays data out the same way on every rank: a reduce over it agrees with
// the host.
TEST(NcclSpanning, TopologyIsMeasuredByEachRankAndTheSameOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  const auto set = strata::spanning_set(group(), 1 + static_cast<std::size_t>(rank % 3));
  std::vector<int> gpu_of(static_cast<std::size_t>(size));
  const int my_gpu = group().device();
  ASSERT_EQ(MPI_Allgather(&my_gpu, 1, MPI_INT, gpu_of.data(), 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
  strata::topology_options quick;
  quick.bandwidth_bytes = std::size_t{16} << 20;
  quick.repeats = 2;
  const strata::topology& t = strata::measure_topology(set, quick);
  const std::size_t k = set.size();
  ASSERT_EQ(t.places(), k);
  ASSERT_EQ(t.ranks.size(), k);
  for (std::size_t i = 0; i < k; ++i) {
    EXPECT_EQ(t.ranks[i], set.owner_rank(i));
    EXPECT_EQ(t.devices[i], gpu_of[static_cast<std::size_t>(set.owner_rank(i))]) << "place " << i;
    EXPECT_GT(t.memory_gbps[i], 100.0) << "place " << i << ": an H100/H200-class GPU copies at TB/s";
    for (std::size_t j = 0; j < k; ++j) {
      SCOPED_TRACE("pair " + std::to_string(i) + " -> " + std::to_string(j));
      if (set.owner_rank(i) == set.owner_rank(j)) {
        EXPECT_GT(t.copy(i, j), 0.0);
        EXPECT_GT(t.latency(i, j), 0.0);
        if (set.is_local(i)) EXPECT_EQ(t.direct[i * k + j] != 0, set.direct_access(i, j));
      } else {
        EXPECT_EQ(t.copy(i, j), 0.0) << "not measured across ranks";
        EXPECT_EQ(t.latency(i, j), 0.0);
        EXPECT_EQ(t.direct[i * k + j], 0);
      }
    }
  }
  // Every rank holds rank 0's figures.
  std::vector<double> first = t.copy_gbps, first_memory = t.memory_gbps;
  ASSERT_EQ(MPI_Bcast(first.data(), static_cast<int>(k * k), MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  ASSERT_EQ(MPI_Bcast(first_memory.data(), static_cast<int>(k), MPI_DOUBLE, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(first, t.copy_gbps);
  EXPECT_EQ(first_memory, t.memory_gbps);
  EXPECT_EQ(&strata::measure_topology(set), &t) << "cached";
  const auto policy = strata::measured_partition_policy(set);
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000003}}) {
    const std::uint64_t seed = shared_seed();
    SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed));
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    // The layout from the figures (not from the policy under test): each place's share of n in
    // proportion to its device's measured bandwidth, shared by the places of one rank on that
    // device, to within one element, and every element placed once.
    std::vector<double> weight(k);
    double total_weight = 0;
    for (std::size_t i = 0; i < k; ++i) {
      std::size_t sharing = 0;
      for (std::size_t j = 0; j < k; ++j) sharing += t.ranks[j] == t.ranks[i] && t.devices[j] == t.devices[i] ? 1 : 0;
      weight[i] = t.memory_gbps[i] / static_cast<double>(sharing);
      total_weight += weight[i];
    }
    std::uint64_t placed = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double share = static_cast<double>(n) * weight[i] / total_weight;
      EXPECT_LE(std::abs(static_cast<double>(x.partition().count(i)) - share), 1.0) << "place " << i;
      placed += x.partition().count(i);
    }
    EXPECT_EQ(placed, n);
    std::vector<std::uint64_t> counts(k), first_counts;
    for (std::size_t i = 0; i < k; ++i) counts[i] = x.partition().count(i);
    first_counts = counts;
    ASSERT_EQ(MPI_Bcast(first_counts.data(), static_cast<int>(k), MPI_UINT64_T, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(counts, first_counts) << "the same layout on every rank";
    EXPECT_EQ(strata::reduce(x), std::accumulate(h.begin(), h.end(), std::int64_t{0}));
    EXPECT_TRUE(x.to_std_vector() == h);
  }
  if (size < 2) return;
  // A rank that cannot measure (its 1 TiB buffers do not fit) makes every rank throw, none waits
  // for it, and the figures measured before stay cached.
  const int victim = size - 1;
  strata::topology_options again = quick;
  again.refresh = true;
  if (rank == victim) again.bandwidth_bytes = std::size_t{1} << 40;
  try {
    (void)strata::measure_topology(set, again);
    ADD_FAILURE() << "no throw on rank " << rank;
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation) << e.what();
    if (rank != victim)
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(victim)), std::string::npos) << e.what();
  }
  EXPECT_EQ(&strata::measure_topology(set), &t) << "the cache is kept";
  EXPECT_EQ(strata::reduce(strata::distributed_vector<int>(1001, 2, set)), 2002) << "and the set still works";
}
