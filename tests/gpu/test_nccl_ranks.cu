// The algorithms over several MPI ranks, each on a GPU (rank i on GPU i mod the visible GPUs),
// against host references over the global range: every rank builds the same global data from
// the same seed and checks its own share and the values every rank must agree on. Run by
// `mpirun -np R`: ctest runs R = 1; scripts/gpu-check.sh runs R = 2, 3 and 4 where the machine
// allows it (as many GPUs, or NCCL 2.30+ with NCCL_MULTI_RANK_GPU_ENABLE=1 for several ranks on
// one GPU). Layouts: every rank with 1-3 places, even and weighted with a rank that holds nothing.
// Last, a rank that fails on purpose (it skips a collective): the others throw, none hangs.
#include <strata/nccl_mpi.cuh>
#include <strata/strata.cuh>

#include "test_util.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <numeric>
#include <vector>

using namespace strata_test;

namespace {

int world_rank() { return strata::detail::mpi_rank(MPI_COMM_WORLD); }
int world_size() { return strata::detail::mpi_size(MPI_COMM_WORLD); }

const strata::process_group& group() {
  static const strata::process_group g = [] {
    auto pg = strata::process_group_from_mpi(MPI_COMM_WORLD, strata::mpi_local_gpu(MPI_COMM_WORLD));
    pg.set_timeout(std::chrono::seconds(30));
    return pg;
  }();
  return g;
}

// The same seed on every rank (rank 0's, broadcast).
std::uint64_t shared_seed() {
  std::uint64_t s = fresh_seed();
  EXPECT_EQ(MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  return s;
}

struct flip_low_bit {
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return x ^ 1; }
};

struct odd {
  __host__ __device__ bool operator()(std::int64_t x) const { return (x & 1) != 0; }
};

// A strict weak order for the comparison path under which distinct keys are equivalent (so the
// stability of stable_sort shows): by the key mod 7, the larger first.
struct by_mod7_descending {
  __host__ __device__ bool operator()(std::uint32_t a, std::uint32_t b) const { return a % 7 > b % 7; }
};

// Layouts: this rank drives 1 + (rank mod 3) places of its GPU; even, or weighted with every place
// of rank 1 (if any) at weight 0.
template <class F>
void over_layouts(F f) {
  const int rank = world_rank(), size = world_size();
  const std::size_t mine = 1 + static_cast<std::size_t>(rank % 3);
  const auto set = private_set_on(group().device(), mine);
  std::vector<double> weights;
  for (int r = 0; r < size; ++r)
    for (int p = 0; p < 1 + r % 3; ++p) weights.push_back(r == 1 ? 0.0 : 1.0 + p);
  for (std::uint64_t n : sizes())
    for (const auto& policy : {strata::partition_policy::even(), strata::partition_policy::weighted(weights)}) {
      const std::uint64_t seed = shared_seed();
      SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(size) + ", n=" + std::to_string(n) +
                   " seed=" + std::to_string(seed));
      const auto l = strata::make_rank_layout(MPI_COMM_WORLD, n, mine, policy);
      f(set, l, seed);
    }
}

template <class T>
std::vector<T> my_share(const std::vector<T>& global, const strata::rank_layout& l) {
  return std::vector<T>(global.begin() + static_cast<std::ptrdiff_t>(l.offset()),
                        global.begin() + static_cast<std::ptrdiff_t>(l.offset() + l.local_size()));
}

// `n` random matrices from `seed` and their host scans (inclusive; exclusive seeded with `init`)
// under mat2_mul, which is associative and not commutative.
struct mat2_case {
  std::vector<mat2> h, inc, exc;
};
mat2_case mat2_scans(std::uint64_t n, std::uint64_t seed, const mat2& init) {
  std::mt19937_64 gen(seed);
  mat2_case c{std::vector<mat2>(n), std::vector<mat2>(n), std::vector<mat2>(n)};
  for (auto& m : c.h) m = {static_cast<std::uint32_t>(gen()), static_cast<std::uint32_t>(gen()),
                           static_cast<std::uint32_t>(gen()), static_cast<std::uint32_t>(gen())};
  mat2 acc{1, 0, 0, 1}, acc_init = init;
  for (std::size_t i = 0; i < c.h.size(); ++i) {
    c.exc[i] = acc_init;
    acc = i == 0 ? c.h[0] : mat2_mul{}(acc, c.h[i]);
    acc_init = mat2_mul{}(acc_init, c.h[i]);
    c.inc[i] = acc;
  }
  return c;
}

}  // namespace

TEST(NcclRanks, ReduceFamilyAgreesWithTheHost) {
  over_layouts([](const strata::device_set& set, const strata::rank_layout& l, std::uint64_t seed) {
    const auto& g = group();
    const auto h = random_vector<std::int64_t>(l.size(), seed);
    strata::distributed_vector<std::int64_t> x(my_share(h, l), set, l.local_policy());
    std::int64_t sum = 0;
    std::uint64_t odds = 0;
    for (auto v : h) {
      sum += v;
      odds += (v & 1) != 0;
    }
    EXPECT_EQ(strata::reduce(g, x), sum);
    EXPECT_EQ(strata::reduce(g, x, std::int64_t{-3}), sum - 3);
    EXPECT_EQ(strata::count_if(g, x, odd{}), odds);
    const auto lo = strata::min_element(g, x), hi = strata::max_element(g, x);
    EXPECT_EQ(lo.index, static_cast<std::uint64_t>(std::min_element(h.begin(), h.end()) - h.begin()));
    EXPECT_EQ(hi.index, static_cast<std::uint64_t>(std::max_element(h.begin(), h.end()) - h.begin()));
    EXPECT_EQ(strata::any_of(g, x, odd{}), odds > 0);
    EXPECT_EQ(strata::all_of(g, x, odd{}), odds == l.size());
  });
}

// A commutative operator: the rank totals come from a CUB reduction whose value stays on the
// device (read by the group's stream after the local work's event), not from a local scan.
TEST(NcclRanks, SumScansAgreeWithTheHost) {
  over_layouts([](const strata::device_set& set, const strata::rank_layout& l, std::uint64_t seed) {
    const auto& g = group();
    const auto h = random_vector<std::int64_t>(l.size(), seed);
    std::vector<std::int64_t> inc(h.size()), exc(h.size());
    std::int64_t acc = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      exc[i] = acc + 5;
      acc += h[i];
      inc[i] = acc;
    }
    strata::distributed_vector<std::int64_t> x(my_share(h, l), set, l.local_policy());
    strata::distributed_vector<std::int64_t> y(l.local_size(), std::int64_t{-77}, set, l.local_policy());
    strata::inclusive_scan(g, x, y, cuda::std::plus<std::int64_t>{});
    EXPECT_TRUE(y.to_std_vector() == my_share(inc, l)) << "inclusive";
    strata::exclusive_scan(g, x, x, std::int64_t{5}, cuda::std::plus<std::int64_t>{});  // in place
    EXPECT_TRUE(x.to_std_vector() == my_share(exc, l)) << "exclusive, in place";
  });
}

TEST(NcclRanks, NonCommutativeScansKeepTheGlobalOrder) {
  over_layouts([](const strata::device_set& set, const strata::rank_layout& l, std::uint64_t seed) {
    const auto& g = group();
    const mat2 init{2, 7, 1, 8};
    const auto [h, inc, exc] = mat2_scans(l.size(), seed, init);
    strata::distributed_vector<mat2> x(my_share(h, l), set, l.local_policy());
    strata::distributed_vector<mat2> y(l.local_size(), mat2{9, 9, 9, 9}, set, l.local_policy());
    strata::inclusive_scan(g, x, y, mat2_mul{});
    EXPECT_TRUE(y.to_std_vector() == my_share(inc, l)) << "inclusive";
    strata::exclusive_scan(g, x, y, init, mat2_mul{});
    EXPECT_TRUE(y.to_std_vector() == my_share(exc, l)) << "exclusive";
  });
}

// A move from an even layout onto one where rank 1 holds nothing (draining it) and back: pieces
// cross ranks by grouped ncclSend/ncclRecv.
TEST(NcclRanks, CopyBetweenRankLayouts) {
  const auto& g = group();
  const int rank = world_rank(), size = world_size();
  const std::size_t mine = 1 + static_cast<std::size_t>(rank % 3);
  const auto set = private_set_on(g.device(), mine);
  std::vector<std::size_t> places;
  std::vector<double> weights;
  for (int r = 0; r < size; ++r) {
    places.push_back(1 + static_cast<std::size_t>(r % 3));
    for (int p = 0; p < 1 + r % 3; ++p) weights.push_back(r == 1 ? 0.0 : 1.0 + p);
  }
  for (std::uint64_t n : sizes()) {
    const std::uint64_t seed = shared_seed();
    SCOPED_TRACE("rank " + std::to_string(rank) + ", n=" + std::to_string(n) + " seed=" + std::to_string(seed));
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::rank_layout from(n, places, strata::partition_policy::even(), rank);
    const strata::rank_layout to(n, places, strata::partition_policy::weighted(weights), rank);
    strata::distributed_vector<std::int64_t> a(my_share(h, from), set, from.local_policy());
    strata::distributed_vector<std::int64_t> b(to.local_size(), std::int64_t{-99}, set, to.local_policy());
    strata::copy(g, a.span(), from, b.span(), to);
    EXPECT_EQ(b.to_std_vector(), my_share(h, to));
    strata::fill(a, std::int64_t{-98});
    strata::copy(g, b.span(), to, a.span(), from);
    EXPECT_EQ(a.to_std_vector(), my_share(h, from));
  }
}

// ---- device sets spanning the ranks: the algorithms unchanged for user code -------------------

// Sets spanning every rank: this rank drives 1 + (rank mod 3) places of its GPU (made once, as
// sets spanning processes are collective to make); peer paths, and host staging forced. Layouts:
// even, or weighted with every place of rank 1 (if any) at weight 0 (an empty rank).
template <class F>
void over_spanning(F f, const std::vector<std::uint64_t>& ns = sizes()) {
  const int rank = world_rank(), size = world_size();
  const std::size_t mine = 1 + static_cast<std::size_t>(rank % 3);
  static const std::vector<strata::device_set> sets = [mine] {
    strata::device_set_options staged;
    staged.force_host_staging = true;
    return std::vector<strata::device_set>{strata::spanning_set(group(), mine), strata::spanning_set(group(), mine, staged)};
  }();
  std::vector<double> weights;
  for (int r = 0; r < size; ++r)
    for (int p = 0; p < 1 + r % 3; ++p) weights.push_back(r == 1 ? 0.0 : 1.0 + p);
  for (const auto& set : sets)
    for (std::uint64_t n : ns)
      for (const auto& policy : {strata::partition_policy::even(), strata::partition_policy::weighted(weights)}) {
        const std::uint64_t seed = shared_seed();
        SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(size) + ", n=" + std::to_string(n) +
                     " seed=" + std::to_string(seed) + (set.host_staging_forced() ? ", staged" : ""));
        f(set, policy, n, seed);
      }
}

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

// Copies between layouts and redistribute on sets spanning the ranks: pieces between places of one
// rank go by the exchange's device copies (or staging), pieces between ranks by NCCL sends and
// receives. Targets: the same set with another policy, and a second spanning set with another
// number of places per rank (even, and weighted with empty places). Outputs poisoned first; every
// rank checks the whole range (to_std_vector) and its own segments (get).
TEST(NcclSpanning, CopyAndRedistributeAcrossRanks) {
  const int rank = world_rank();
  static const strata::device_set other = strata::spanning_set(group(), 1 + static_cast<std::size_t>((rank + 1) % 2));
  std::vector<double> other_weights(other.size());
  for (std::size_t i = 0; i < other_weights.size(); ++i) other_weights[i] = i % 3 == 0 ? 0.0 : static_cast<double>(i);
  if (other.size() == 1) other_weights[0] = 1.0;
  over_spanning([&](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                    std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    std::int64_t sum = 0;
    for (auto v : h) sum += v;
    const auto check = [&](const strata::distributed_vector<std::int64_t>& y, const char* what) {
      EXPECT_EQ(y.size(), n) << what;
      EXPECT_TRUE(y.to_std_vector() == h) << what;
      for (std::size_t i = 0; i < y.partition().places(); ++i) {
        if (!y.places().is_local(i) || y.partition().count(i) == 0) continue;
        const std::uint64_t first = y.partition().offset(i), last = first + y.partition().count(i) - 1;
        EXPECT_EQ(y.get(first), h[first]) << what << ", place " << i;
        EXPECT_EQ(y.get(last), h[last]) << what << ", place " << i;
      }
    };
    struct target {
      const strata::device_set* set;
      strata::partition_policy policy;
      const char* what;
    };
    const std::vector<target> targets = {
        {&set, strata::partition_policy::even(), "same set, even"},
        {&other, strata::partition_policy::even(), "other set, even"},
        {&other, strata::partition_policy::weighted(other_weights), "other set, weighted with empty places"}};
    for (const auto& t : targets) {
      strata::distributed_vector<std::int64_t> y(n, std::int64_t{-77}, *t.set, t.policy);
      strata::copy(x, y);
      check(y, t.what);
      const auto z = strata::redistribute(x, *t.set, t.policy);
      EXPECT_TRUE(z.partition() == y.partition()) << t.what;
      check(z, t.what);
      // And back, without waiting: the reduce that follows is ordered after the moves.
      const auto back = strata::redistribute(z, set, policy, strata::nosync);
      EXPECT_EQ(strata::reduce(back), sum) << t.what << ", back";
      check(back, t.what);
    }
    // Non-trivial elements of 16 bytes, and a copy onto a subspan of the same length.
    const auto [m, minc, mexc] = mat2_scans(n, seed, mat2{1, 0, 0, 1});
    const strata::distributed_vector<mat2> a(m, set, policy);
    strata::distributed_vector<mat2> b(n + 5, mat2{9, 9, 9, 9}, other);
    strata::copy(a, b.span().subspan(3, n));
    const auto got = b.to_std_vector();
    ASSERT_EQ(got.size(), n + 5);
    EXPECT_TRUE(std::equal(m.begin(), m.end(), got.begin() + 3)) << "mat2 onto a subspan";
    EXPECT_TRUE(got[0] == (mat2{9, 9, 9, 9}) && got[n + 4] == (mat2{9, 9, 9, 9})) << "outside the subspan untouched";
  });
}

TEST(NcclSpanning, ReduceFamilyAgreesWithTheHostOnEveryRank) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    std::int64_t sum = 0;
    std::uint64_t odds = 0;
    for (auto v : h) {
      sum += v;
      odds += (v & 1) != 0;
    }
    EXPECT_EQ(strata::reduce(x), sum);
    EXPECT_EQ(strata::reduce(x, std::int64_t{-3}), sum - 3);
    EXPECT_EQ(strata::reduce_async(x, std::int64_t{4}, cuda::std::plus<std::int64_t>{}).get(), sum + 4);
    EXPECT_EQ(strata::count_if(x, odd{}), odds);
    const auto lo = strata::min_element(x), hi = strata::max_element(x);
    EXPECT_EQ(lo.index, static_cast<std::uint64_t>(std::min_element(h.begin(), h.end()) - h.begin()));
    EXPECT_EQ(hi.index, static_cast<std::uint64_t>(std::max_element(h.begin(), h.end()) - h.begin()));
    if (n > 0) {
      EXPECT_EQ(lo.value, *std::min_element(h.begin(), h.end()));
      EXPECT_EQ(hi.value, *std::max_element(h.begin(), h.end()));
    }
    EXPECT_EQ(strata::any_of(x, odd{}), odds > 0);
    EXPECT_EQ(strata::all_of(x, odd{}), odds == n);
    strata::distributed_vector<std::int64_t> y(x);
    EXPECT_TRUE(strata::equal(x, y));
    if (n > 0) {
      strata::transform(y, y, flip_low_bit{});
      EXPECT_FALSE(strata::equal(x, y));
    }
    EXPECT_TRUE(x.to_std_vector() == h) << "every rank receives every element";
  });
}

TEST(NcclSpanning, ScansKeepTheGlobalOrder) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    const auto h = random_vector<std::int64_t>(n, seed);
    std::vector<std::int64_t> inc(h.size()), exc(h.size());
    std::int64_t acc = 0;
    for (std::size_t i = 0; i < h.size(); ++i) {
      exc[i] = acc + 5;
      acc += h[i];
      inc[i] = acc;
    }
    strata::distributed_vector<std::int64_t> x(h, set, policy);
    strata::distributed_vector<std::int64_t> y(n, std::int64_t{-77}, set, policy);
    strata::inclusive_scan(x, y, cuda::std::plus<std::int64_t>{});
    EXPECT_TRUE(y.to_std_vector() == inc) << "inclusive";
    strata::exclusive_scan(x, x, std::int64_t{5}, cuda::std::plus<std::int64_t>{});  // in place
    EXPECT_TRUE(x.to_std_vector() == exc) << "exclusive, in place";

    const mat2 init{2, 7, 1, 8};
    const auto [m, minc, mexc] = mat2_scans(n, seed, init);
    strata::distributed_vector<mat2> a(m, set, policy);
    strata::distributed_vector<mat2> b(n, mat2{9, 9, 9, 9}, set, policy);
    strata::inclusive_scan(a, b, mat2_mul{});
    EXPECT_TRUE(b.to_std_vector() == minc) << "inclusive, not commutative";
    strata::exclusive_scan(a, b, init, mat2_mul{});
    EXPECT_TRUE(b.to_std_vector() == mexc) << "exclusive, not commutative";
  });
}

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
// A span's elements, every one of them on every rank.
template <class T>
std::vector<T> all_of_span(const strata::distributed_span<T>& r) {
  std::vector<T> h(r.size());
  strata::copy_to_host(r, h.data());
  return h;
}

// Compaction over sets spanning the ranks: each place compacts its own segment, the kept counts
// cross ranks in one all-gather (every rank learns the result's global layout), and unique's
// predecessors cross rank boundaries. Against the host, with runs of equal keys that span places
// and ranks, and with rank 1 empty in the weighted layout.
TEST(NcclSpanning, CompactionAcrossRanks) {
  over_spanning([](const strata::device_set& set, const strata::partition_policy& policy, std::uint64_t n,
                   std::uint64_t seed) {
    auto h = random_vector<std::int64_t>(n, seed);
    for (auto& v : h) v = (v % 4 + 4) % 4;  // few distinct values: long runs, across boundaries
    std::vector<std::int64_t> odds, evens, runs;
    for (std::uint64_t i = 0; i < n; ++i) {
      (odd{}(h[i]) ? odds : evens).push_back(h[i]);
      if (i == 0 || h[i] != h[i - 1]) runs.push_back(h[i]);
    }
    const strata::distributed_vector<std::int64_t> x(h, set, policy);
    const auto layout_sums = [&](const auto& r, std::uint64_t want) {
      std::uint64_t total = 0;
      for (std::size_t i = 0; i < r.partition().places(); ++i) total += r.partition().count(i);
      return total == want && r.size() == want;
    };
    {
      strata::distributed_vector<std::int64_t> out(n, std::int64_t{-9}, set, policy);
      const auto kept = strata::copy_if(x, out, odd{});
      EXPECT_TRUE(layout_sums(kept, odds.size())) << "copy_if: the layout";
      EXPECT_TRUE(all_of_span(kept) == odds) << "copy_if";
    }
    {
      const auto made = strata::copy_if(x, odd{});
      EXPECT_EQ(made.size(), odds.size());
      EXPECT_TRUE(made.to_std_vector() == odds) << "copy_if into a new container";
      EXPECT_EQ(strata::reduce(made), std::accumulate(odds.begin(), odds.end(), std::int64_t{0}))
          << "a collective over the new container's layout";
    }
    {
      strata::distributed_vector<std::int64_t> y(h, set, policy);
      EXPECT_TRUE(all_of_span(strata::remove_if(y, odd{})) == evens) << "remove_if";
    }
    {
      strata::distributed_vector<std::int64_t> y(h, set, policy);
      EXPECT_EQ(strata::erase_if(y, odd{}), odds.size()) << "erase_if";
      EXPECT_TRUE(y.to_std_vector() == evens) << "erase_if";
    }
    {
      strata::distributed_vector<std::int64_t> y(h, set, policy);
      EXPECT_TRUE(all_of_span(strata::unique(y)) == runs) << "unique";
      strata::distributed_vector<std::int64_t> out(n, std::int64_t{-9}, set, policy);
      EXPECT_TRUE(all_of_span(strata::unique_copy(x, out)) == runs) << "unique_copy";
    }
    {
      strata::distributed_vector<std::int64_t> yes(n, std::int64_t{-9}, set, policy), no(n, std::int64_t{-9}, set, policy);
      const auto [t, f] = strata::partition_copy(x, yes, no, odd{});
      EXPECT_TRUE(all_of_span(t) == odds) << "partition_copy, true part";
      EXPECT_TRUE(all_of_span(f) == evens) << "partition_copy, false part";
    }
  });
}

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
    const strata::partition expected = policy.apply(n, k);
    for (std::size_t i = 0; i < k; ++i) EXPECT_EQ(x.partition().count(i), expected.count(i)) << "place " << i;
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
