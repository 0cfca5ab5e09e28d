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
