// The math of the measured partition policy (no GPU needed): each place's weight is its device's
// measured bandwidth shared evenly among the places on that device.
#include <strata/topology.cuh>

#include <gtest/gtest.h>

TEST(TopologyMath, ThroughputWeightsShareADeviceEvenly) {
  using strata::detail::throughput_weights;
  EXPECT_EQ(throughput_weights({0, 1, 2}, {4000, 4000, 4000}), (std::vector<double>{4000, 4000, 4000}));
  // Two places on GPU 0 (4 TB/s) and one on a GPU half as fast: every place gets 2 TB/s.
  EXPECT_EQ(throughput_weights({0, 0, 1}, {4000, 4000, 2000}), (std::vector<double>{2000, 2000, 2000}));
  // Four places on one GPU: equal weights, so the measured policy is the even layout.
  const auto w = throughput_weights({0, 0, 0, 0}, {4400, 4400, 4400, 4400});
  EXPECT_EQ(strata::partition::weighted(1000003, w), strata::partition::even(1000003, 4));
  // A GPU twice as fast gets twice the elements.
  const auto p = strata::partition::weighted(300, throughput_weights({0, 1}, {2000, 1000}));
  EXPECT_EQ(p.count(0), 200u);
  EXPECT_EQ(p.count(1), 100u);
  EXPECT_THROW(throughput_weights({0, 1}, {1000}), std::invalid_argument);
  EXPECT_THROW(throughput_weights({0, 1}, {1000, 0}), std::invalid_argument);
}

// Across ranks, places share a device only with places of their own rank: device 0 of rank 0
// and device 0 of rank 1 are different GPUs.
TEST(TopologyMath, ThroughputWeightsCountSharingPerRank) {
  using strata::detail::throughput_weights;
  // Rank 0: two places on its GPU 0; rank 1: one place on its GPU 0. Same bandwidth everywhere.
  EXPECT_EQ(throughput_weights({0, 0, 1}, {0, 0, 0}, {4000, 4000, 4000}), (std::vector<double>{2000, 2000, 4000}));
  EXPECT_EQ(throughput_weights({0, 0, 0}, {4000, 4000, 4000}), (std::vector<double>{4000.0 / 3, 4000.0 / 3, 4000.0 / 3}));
  EXPECT_THROW(throughput_weights({0, 1}, {0, 0, 0}, {1, 2, 3}), std::invalid_argument) << "owners of two places for three";
}

// What every rank of a set spanning processes builds from the all-gathered figures: each place's
// device and each pair of one rank's places from that rank; pairs across ranks stay 0.
TEST(TopologyMath, RankFiguresMergeIntoOneTopology) {
  using strata::detail::rank_topology;
  // Places 0, 1 on rank 0 (its GPUs 3 and 5), place 2 on rank 1 (its GPU 0).
  const std::size_t k = 3;
  std::vector<rank_topology> all(2);
  for (auto& m : all) {  // what must not be read: -9 and 7
    std::fill(std::begin(m.devices), std::end(m.devices), -9);
    std::fill(std::begin(m.copy_gbps), std::end(m.copy_gbps), -9.0);
    std::fill(std::begin(m.latency_us), std::end(m.latency_us), -9.0);
    std::fill(std::begin(m.direct), std::end(m.direct), char{7});
  }
  all[0].devices[0] = 3;
  all[0].devices[1] = 5;
  all[1].devices[2] = 0;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      all[0].copy_gbps[i * k + j] = 100.0 * (i + 1) + static_cast<double>(j);
      all[0].latency_us[i * k + j] = 10.0 + static_cast<double>(i * k + j);
      all[0].direct[i * k + j] = 1;
    }
  all[1].copy_gbps[8] = 2000;
  all[1].latency_us[8] = 4;
  all[1].direct[8] = 1;
  strata::topology t;
  t.ranks = {0, 0, 1};
  strata::detail::merge_rank_topologies(t, all);
  EXPECT_EQ(t.devices, (std::vector<int>{3, 5, 0}));
  EXPECT_EQ(t.copy_gbps, (std::vector<double>{100, 101, 0, 200, 201, 0, 0, 0, 2000}));
  EXPECT_EQ(t.latency_us, (std::vector<double>{10, 11, 0, 13, 14, 0, 0, 0, 4}));
  EXPECT_EQ(t.direct, (std::vector<char>{1, 1, 0, 1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(t.memory_gbps, (std::vector<double>{200, 402, 4000}));
  EXPECT_EQ(t.copy(1, 0), 200.0);
  // The measured policy over it: rank 0's places on two GPUs, rank 1's alone on its GPU.
  const auto w = strata::detail::throughput_weights(t.ranks, t.devices, t.memory_gbps);
  EXPECT_EQ(w, t.memory_gbps);
  t.ranks = {0, 2, 1};
  EXPECT_THROW(strata::detail::merge_rank_topologies(t, all), std::invalid_argument) << "rank 2 gave no figures";
}

// measure_topology's options are checked before any device work: no zero-byte copy (its figures
// would be cached and poison every later call) and at least one timed repetition.
TEST(TopologyMath, BadOptionsAreRefusedBeforeAnyDeviceWork) {
  strata::topology_options o;
  EXPECT_NO_THROW(strata::detail::check_topology_options(o));
  o.bandwidth_bytes = 0;
  EXPECT_THROW(strata::detail::check_topology_options(o), std::invalid_argument);
  o.bandwidth_bytes = 3;
  EXPECT_THROW(strata::detail::check_topology_options(o), std::invalid_argument);
  o.bandwidth_bytes = 4;
  EXPECT_NO_THROW(strata::detail::check_topology_options(o));
  o.repeats = 0;
  EXPECT_THROW(strata::detail::check_topology_options(o), std::invalid_argument);
  o.repeats = -2;
  EXPECT_THROW(strata::detail::check_topology_options(o), std::invalid_argument);
}
