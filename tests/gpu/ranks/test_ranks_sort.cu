// Sorts over sets spanning the ranks, and a rank that cannot reserve its sort memory.
#include "ranks_util.cuh"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

using namespace strata_test;

namespace {

// A strict weak order for the comparison path under which distinct keys are equivalent (so the
// stability of stable_sort shows): by the key mod 7, the larger first.
struct by_mod7_descending {
  __host__ __device__ bool operator()(std::uint32_t a, std::uint32_t b) const { return a % 7 > b % 7; }
};

}  // namespace

// Sorts on sets spanning the ranks: every rank sorts, searches the splitters and merges on its
// own places; pivots and counts cross ranks by all-gathers, elements by one exchange. Every rank
// checks the whole range against std::sort / std::stable_sort and that no place's count changed.
TEST(NcclSpanning, SortsAcrossRanks) {
  over_spanning(
      [](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n, std::uint64_t seed) {
        {  // random keys, the radix path
          auto h = random_vector<std::uint32_t>(n, seed);
          strata::distributed_vector<std::uint32_t> x(h, set, policy);
          const strata::partition before = x.partition();
          strata::sort(x);
          std::sort(h.begin(), h.end());
          EXPECT_TRUE(x.to_std_vector() == h) << "uint32, radix";
          EXPECT_TRUE(x.partition() == before) << "the layout does not change";
        }
        {  // the comparison path, stable, with large classes of equivalent keys
          auto h = random_vector<std::uint32_t>(n, seed + 1);
          strata::distributed_vector<std::uint32_t> x(h, set, policy);
          strata::stable_sort(x, by_mod7_descending{});
          std::stable_sort(h.begin(), h.end(), by_mod7_descending{});
          EXPECT_TRUE(x.to_std_vector() == h) << "comparison path, stable";
        }
        {  // pairs: 3 distinct keys, the values their global index, stability checked
          auto k = random_vector<std::int64_t>(n, seed + 2);
          for (auto& v : k) v = (v % 3 + 3) % 3 - 1;
          std::vector<std::uint64_t> idx(n);
          for (std::uint64_t i = 0; i < n; ++i) idx[i] = i;
          strata::distributed_vector<std::int64_t> x(k, set, policy);
          strata::distributed_vector<std::uint64_t> y(idx, set, policy);
          strata::stable_sort_by_key(x, y);
          std::stable_sort(idx.begin(), idx.end(), [&](std::uint64_t a, std::uint64_t b) { return k[a] < k[b]; });
          std::vector<std::int64_t> sk(n);
          for (std::uint64_t i = 0; i < n; ++i) sk[i] = k[idx[i]];
          EXPECT_TRUE(x.to_std_vector() == sk) << "3 distinct keys";
          EXPECT_TRUE(y.to_std_vector() == idx) << "their values, in their first order";
        }
        {  // all keys equal, descending: a stable sort leaves the values where they were
          strata::distributed_vector<double> x(n, 2.5, set, policy);
          std::vector<std::uint64_t> idx(n);
          for (std::uint64_t i = 0; i < n; ++i) idx[i] = i;
          strata::distributed_vector<std::uint64_t> y(idx, set, policy);
          strata::stable_sort_by_key(x, y, cuda::std::greater<>{});
          EXPECT_TRUE(y.to_std_vector() == idx) << "all keys equal";
        }
      },
      quick_mode() ? std::vector<std::uint64_t>{0, 1, 2, 7, 1009, 65537}
                   : std::vector<std::uint64_t>{0, 1, 2, 7, 1009, 65537, 1000003});
}

// A rank that cannot reserve its sort memory (an allocation failure injected on the last rank's
// first place): every rank throws strata::cuda_error before any element moves, the others' naming
// that rank; the range is unchanged everywhere, and the next sort works.
TEST(NcclSpanning, ASortThatCannotReserveItsMemoryThrowsOnEveryRank) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  static const strata::device_set set = strata::spanning_set(group(), 2);
  const std::uint64_t n = 100003;
  const auto h = random_vector<std::uint32_t>(n, shared_seed());
  strata::distributed_vector<std::uint32_t> x(h, set);
  set.release_cached_memory();  // so that the sort must allocate
  const int victim = world_size() - 1;
  if (world_rank() == victim) strata::detail::faults().arm(2 * victim, 0, cudaErrorMemoryAllocation);
  try {
    strata::sort(x);
    ADD_FAILURE() << "no throw on rank " << world_rank();
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation) << e.what();
    if (world_rank() != victim)
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(victim)), std::string::npos) << e.what();
  }
  strata::detail::faults().disarm();
  EXPECT_TRUE(x.to_std_vector() == h) << "the range is unchanged";
  strata::sort(x);
  auto sorted = h;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_TRUE(x.to_std_vector() == sorted) << "and the next sort works";
}
