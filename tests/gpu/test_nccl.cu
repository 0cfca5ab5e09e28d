// The algorithms over the ranks of an NCCL process group, on the GPU. One process can hold one
// rank per GPU (NCCL 2.28, the toolkit's and the H200 image's, refuses two ranks on one GPU), so
// here the group has one rank over a device_set of several places on GPU 0: every cross-rank step
// runs for real (the all-gather, the fold kernel in rank order, the seeded and shifted scans) with
// one contribution. Several ranks: tests/gpu/test_nccl_ranks.cu (under mpirun).
#include <strata/nccl.cuh>
#include <strata/strata.cuh>

#include "test_util.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace strata_test;

namespace {

strata::process_group one_rank_group() {
  static const strata::process_group g = strata::process_group::create(strata::nccl_unique_id(), 0, 1, 0);
  return g;
}


struct odd {
  __host__ __device__ bool operator()(std::int64_t x) const { return (x & 1) != 0; }
};
struct square {
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return x * x; }
};

__global__ void spin_until(const volatile int* flag) {
  while (*flag == 0) {
  }
}

}  // namespace

TEST(Nccl, LayoutOfOneRankIsItsOwnSet) {
  const auto g = one_rank_group();
  const auto set = private_set(3);
  const auto l = strata::make_rank_layout(g, 1000003, set);
  EXPECT_EQ(l.ranks(), 1);
  EXPECT_EQ(l.offset(), 0u);
  EXPECT_EQ(l.local_size(), 1000003u);
  EXPECT_EQ(l.local_sizes(), strata::partition::even(1000003, 3).counts());
}

// f(set, n, seed) over 1 and 3 places and every test size, with a fresh seed each.
template <class F>
void over_layouts(F f) {
  for (std::size_t k : {1, 3}) {
    const auto set = private_set(k);
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE("places=" + std::to_string(k) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed));
      f(set, n, seed);
    }
  }
}

TEST(Nccl, ReduceAndCountAcrossRanksMatchTheHost) {
  const auto g = one_rank_group();
  over_layouts([&](const strata::device_set& set, std::uint64_t n, std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const auto l = strata::make_rank_layout(g, n, set);
    strata::distributed_vector<std::int64_t> x(h, set, l.local_policy());
    std::int64_t sum = 0, sq = 0;
    std::uint64_t odds = 0;
    for (auto v : h) {
      sum += v;
      sq += v * v;
      odds += (v & 1) != 0;
    }
    EXPECT_EQ(strata::reduce(g, x), sum);
    EXPECT_EQ(strata::reduce(g, x, std::int64_t{5}), sum + 5);
    EXPECT_EQ(strata::transform_reduce(g, x, std::int64_t{0}, cuda::std::plus<std::int64_t>{}, square{}), sq);
    EXPECT_EQ(strata::count_if(g, x, odd{}), odds);
    EXPECT_EQ(strata::count(g, x, std::int64_t{7}), static_cast<std::uint64_t>(std::count(h.begin(), h.end(), 7)));

    // Extrema: the first smallest and the first largest, with global indices (size() if empty).
    const auto lo = strata::min_element(g, x), hi = strata::max_element(g, x);
    const auto want_lo = std::min_element(h.begin(), h.end()), want_hi = std::max_element(h.begin(), h.end());
    EXPECT_EQ(lo.index, static_cast<std::uint64_t>(want_lo - h.begin()));
    EXPECT_EQ(hi.index, static_cast<std::uint64_t>(want_hi - h.begin()));
    if (n > 0) {
      EXPECT_EQ(lo.value, *want_lo);
      EXPECT_EQ(hi.value, *want_hi);
    }

    // Quantifiers and equal.
    EXPECT_EQ(strata::all_of(g, x, odd{}), odds == n);
    EXPECT_EQ(strata::any_of(g, x, odd{}), odds > 0);
    EXPECT_EQ(strata::none_of(g, x, odd{}), odds == 0);
    strata::distributed_vector<std::int64_t> x2(h, set, l.local_policy());
    EXPECT_TRUE(strata::equal(g, x, x2));
    if (n > 0) {
      x2.set(n - 1, h[n - 1] + 1);
      EXPECT_FALSE(strata::equal(g, x, x2));
    }
  });
}

TEST(Nccl, ScansAcrossRanksKeepTheOrder) {
  const auto g = one_rank_group();
  over_layouts([&](const strata::device_set& set, std::uint64_t n, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::vector<mat2> h(n);
    for (auto& m : h) m = {static_cast<std::uint32_t>(gen()), static_cast<std::uint32_t>(gen()),
                           static_cast<std::uint32_t>(gen()), static_cast<std::uint32_t>(gen())};
    const mat2 init{3, 1, 4, 1};
    std::vector<mat2> inc(n), inc_init(n), exc(n);
    mat2 acc{1, 0, 0, 1}, acc_init = init;
    for (std::uint64_t i = 0; i < n; ++i) {
      exc[i] = acc_init;
      acc = i == 0 ? h[0] : mat2_mul{}(acc, h[i]);
      acc_init = mat2_mul{}(acc_init, h[i]);
      inc[i] = acc;
      inc_init[i] = acc_init;
    }
    const auto l = strata::make_rank_layout(g, n, set);
    strata::distributed_vector<mat2> x(h, set, l.local_policy());
    strata::distributed_vector<mat2> y(n, mat2{7, 7, 7, 7}, set, l.local_policy());  // poisoned
    strata::inclusive_scan(g, x, y, mat2_mul{});
    EXPECT_TRUE(y.to_std_vector() == inc) << "inclusive";
    strata::fill(y, mat2{7, 7, 7, 7});
    strata::inclusive_scan(g, x, y, mat2_mul{}, init);
    EXPECT_TRUE(y.to_std_vector() == inc_init) << "inclusive with init";
    strata::fill(y, mat2{7, 7, 7, 7});
    strata::exclusive_scan(g, x, y, init, mat2_mul{});
    EXPECT_TRUE(y.to_std_vector() == exc) << "exclusive";
    strata::exclusive_scan(g, x, x, init, mat2_mul{});  // in place: the local total needs a scratch share
    EXPECT_TRUE(x.to_std_vector() == exc) << "exclusive in place";

    // A commutative operator takes the reduce-then-seeded-scan path.
    const auto hi = random_vector<std::int64_t>(n, seed + 1);
    strata::distributed_vector<std::int64_t> xi(hi, set, l.local_policy()), yi(n, std::int64_t{-7}, set, l.local_policy());
    strata::inclusive_scan(g, xi, yi, cuda::std::plus<std::int64_t>{}, std::int64_t{11});
    std::vector<std::int64_t> want(n);
    std::int64_t s = 11;
    for (std::uint64_t i = 0; i < n; ++i) want[i] = s += hi[i];
    EXPECT_EQ(yi.to_std_vector(), want);
  });
}

// A move between layouts with one rank: every piece stays (device copies on the group's stream).
TEST(Nccl, CopyBetweenRankLayoutsKeepsTheOrder) {
  const auto g = one_rank_group();
  const auto set = private_set(3);
  for (std::uint64_t n : sizes()) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed));
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::rank_layout from(n, {3}, strata::partition_policy::even(), 0);
    const strata::rank_layout to(n, {3}, strata::partition_policy::weighted({0, 1, 3}), 0);
    strata::distributed_vector<std::int64_t> a(h, set, from.local_policy());
    strata::distributed_vector<std::int64_t> b(n, std::int64_t{-99}, set, to.local_policy());  // poisoned
    strata::copy(g, a.span(), from, b.span(), to);
    EXPECT_EQ(b.to_std_vector(), h);
  }
  // Shares of the wrong size are refused before any device work.
  const strata::rank_layout l(10, {3}, strata::partition_policy::even(), 0);
  strata::distributed_vector<std::int64_t> a(9, std::int64_t{0}, set), b(10, std::int64_t{0}, set);
  EXPECT_THROW(strata::copy(g, a.span(), l, b.span(), l), std::invalid_argument);
}

// A wait on work that does not end in time (a peer that never comes; here a kernel spinning on a
// host flag) gives up after the timeout, aborts the communicator and throws strata::nccl_error;
// later calls on the group throw at once. ncclCommAbort frees device memory, which waits for
// kernels already running on the device: NCCL's own kernels stop at the abort, a user's kernel does
// not, so a host thread releases the spinning kernel after 2 s (before, this test set the flag only
// after the throw and hung in the abort: found on the H200).
TEST(Nccl, AWaitNeverHangsAndAbortsTheGroup) {
  auto g = strata::process_group::create(strata::nccl_unique_id(), 0, 1, 0);
  int* flag = nullptr;
  ASSERT_EQ(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *flag = 0;
  int* dflag = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(&dflag, flag, 0), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  spin_until<<<1, 1, 0, s>>>(dflag);
  std::thread release([flag] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    *static_cast<volatile int*>(flag) = 1;
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(g.wait(s, std::chrono::milliseconds(100)), strata::nccl_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(g.aborted());
  release.join();
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(flag), cudaSuccess);
  const std::uint64_t one = 1;
  std::uint64_t out = 0;
  EXPECT_THROW(g.all_gather(&one, sizeof one, &out), strata::nccl_error);
}

// One process holding several ranks (process_group::create_all: the ranks join inside one NCCL
// group), each rank driven from its own host thread over a set spanning the ranks (1, 2, 3 places
// per rank): reduce, an inclusive scan and a sort agree with the host on every rank. On one GPU
// this needs NCCL 2.30+ (several ranks per GPU): ctest's build NCCL (2.28) skips it there, and
// scripts/gpu-check.sh runs it with the newer NCCL.
TEST(Nccl, RanksOnThreadsOfOneProcessAgreeWithTheHost) {
  const int gpus = strata::visible_device_count();
  for (int ranks : {2, 3}) {
    if (gpus < ranks && strata::nccl_version() < 23000)
      GTEST_SKIP() << ranks << " ranks on " << gpus << " GPU(s) need NCCL 2.30+ (this one is " << strata::nccl_version()
                   << "): scripts/gpu-check.sh runs this test with STRATA_NCCL_LIB";
    if (gpus < ranks) {  // several ranks on one GPU: NCCL's opt-in (0: do not override the caller's)
      setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
      setenv("NCCL_NVLS_ENABLE", "0", 0);
    }
    std::vector<int> devices(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) devices[static_cast<std::size_t>(r)] = gpus >= ranks ? r : 0;
    auto groups = strata::process_group::create_all(devices);
    ASSERT_EQ(groups.size(), static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(groups[static_cast<std::size_t>(r)].rank(), r);
      EXPECT_EQ(groups[static_cast<std::size_t>(r)].size(), ranks);
      // A failing thread: the others throw within the timeout (STRATA_TEST_RANK_TIMEOUT_S, default 30).
      const char* limit = std::getenv("STRATA_TEST_RANK_TIMEOUT_S");
      groups[static_cast<std::size_t>(r)].set_timeout(std::chrono::seconds(limit != nullptr ? std::atoi(limit) : 30));
    }
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{2}, std::uint64_t{1009}, std::uint64_t{1000003}}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE("ranks=" + std::to_string(ranks) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed));
      const auto h = random_vector<std::int64_t>(n, seed);
      std::int64_t sum = 0;
      std::vector<std::int64_t> prefix(n), sorted(h);
      for (std::uint64_t i = 0; i < n; ++i) prefix[i] = sum += h[i];
      std::sort(sorted.begin(), sorted.end());
      std::vector<std::string> wrong(static_cast<std::size_t>(ranks));
      std::vector<std::thread> threads;
      for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
          std::string& w = wrong[static_cast<std::size_t>(r)];
          const char* step = "spanning_set";  // (named in a failure)
          try {
            const auto set = strata::spanning_set(groups[static_cast<std::size_t>(r)], static_cast<std::size_t>(r + 1));
            step = "distributed_vector";
            strata::distributed_vector<std::int64_t> x(h, set);
            step = "reduce";
            if (strata::reduce(x) != sum) w += "reduce; ";
            step = "inclusive_scan";
            strata::distributed_vector<std::int64_t> y(n, std::int64_t{-7}, set);
            strata::inclusive_scan(x, y);
            if (y.to_std_vector() != prefix) w += "inclusive_scan; ";
            step = "sort";
            strata::sort(x);
            if (x.to_std_vector() != sorted) w += "sort; ";
          } catch (const std::exception& e) {
            w += std::string("threw in ") + step + ": " + e.what();
          }
        });
      for (auto& t : threads) t.join();
      for (int r = 0; r < ranks; ++r) EXPECT_EQ(wrong[static_cast<std::size_t>(r)], "") << "rank " << r;
    }
  }
}

// Ranks on threads of one process that share a GPU launch their collectives together: a rank
// whose thread stops calling makes the others throw strata::nccl_error within their timeout
// (instead of waiting for it forever), and every later collective of these ranks, its own
// included, throws at once.
TEST(Nccl, ThreadRankThatStopsMakesTheRanksSharingItsGpuThrow) {
  if (strata::nccl_version() < 23000)
    GTEST_SKIP() << "3 ranks on one GPU need NCCL 2.30+ (this one is " << strata::nccl_version()
                 << "): scripts/gpu-check.sh runs this test with STRATA_NCCL_LIB";
  setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  auto groups = strata::process_group::create_all({0, 0, 0});
  for (auto& g : groups) g.set_timeout(std::chrono::seconds(2));
  // First a collective every rank joins.
  std::vector<std::uint64_t> got(3 * 3, 0);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        const std::uint64_t mine = 100 + static_cast<std::uint64_t>(r);
        groups[static_cast<std::size_t>(r)].all_gather(&mine, sizeof mine, got.data() + 3 * r);
      });
    for (auto& t : threads) t.join();
  }
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(got[static_cast<std::size_t>(3 * r + k)], 100u + static_cast<std::uint64_t>(k));
  // Then rank 0 stops: ranks 1 and 2 throw, in about their timeout.
  std::vector<int> threw(3, 0);
  std::vector<double> seconds(3, 0);
  {
    std::vector<std::thread> threads;
    for (int r = 1; r < 3; ++r)
      threads.emplace_back([&, r] {
        const auto start = std::chrono::steady_clock::now();
        const std::uint64_t mine = 7;
        std::uint64_t out[3];
        try {
          groups[static_cast<std::size_t>(r)].all_gather(&mine, sizeof mine, out);
        } catch (const strata::nccl_error& e) {
          threw[static_cast<std::size_t>(r)] = std::string(e.what()).find("rank " + std::to_string(r)) != std::string::npos ? 1 : 2;
        }
        seconds[static_cast<std::size_t>(r)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      });
    for (auto& t : threads) t.join();
  }
  for (int r = 1; r < 3; ++r) {
    EXPECT_EQ(threw[static_cast<std::size_t>(r)], 1) << "rank " << r << " (1: threw naming its rank)";
    EXPECT_LT(seconds[static_cast<std::size_t>(r)], 20.0) << "rank " << r;
  }
  // Rank 0 comes back too late: it throws at once, as do the others.
  const std::uint64_t mine = 1;
  std::uint64_t out[3];
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(groups[0].all_gather(&mine, sizeof mine, out), strata::nccl_error);
  EXPECT_THROW(groups[1].all_gather(&mine, sizeof mine, out), strata::nccl_error);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}
