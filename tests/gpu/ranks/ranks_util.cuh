// What the tests of algorithms over several MPI ranks share: the process group (rank i on GPU i
// mod the visible GPUs), a seed that is the same on every rank, the sets spanning the ranks and
// the layouts every family runs over. Every rank builds the same global data from the same seed
// and checks what every rank must agree on. The binary is run by `mpirun -np R`: ctest runs
// R = 1; scripts/gpu-check.sh runs R = 2, 3 and 4 where the machine allows it (as many GPUs, or
// NCCL 2.30+ with NCCL_MULTI_RANK_GPU_ENABLE=1 for several ranks on one GPU).
#pragma once

#include <strata/nccl_mpi.cuh>
#include <strata/strata.cuh>

#include "../test_util.cuh"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace strata_test {

inline int world_rank() { return strata::detail::mpi_rank(MPI_COMM_WORLD); }
inline int world_size() { return strata::detail::mpi_size(MPI_COMM_WORLD); }

/// This rank's process group (made once, on first use: a collective).
inline const strata::process_group& group() {
  static const strata::process_group g = [] {
    auto pg = strata::process_group_from_mpi(MPI_COMM_WORLD, strata::mpi_local_gpu(MPI_COMM_WORLD));
    pg.set_timeout(std::chrono::seconds(30));
    return pg;
  }();
  return g;
}

/// The same seed on every rank (rank 0's, broadcast).
inline std::uint64_t shared_seed() {
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

struct square {
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return x * x; }
};

// 3a - b: not commutative (adjacent_difference's neighbour side).
struct three_a_minus_b {
  __host__ __device__ std::int64_t operator()(std::int64_t a, std::int64_t b) const { return 3 * a - b; }
};

// `n` random matrices from `seed` and their host scans (inclusive; exclusive seeded with `init`)
// under mat2_mul, which is associative and not commutative.
struct mat2_case {
  std::vector<mat2> h, inc, exc;
};
inline mat2_case mat2_scans(std::uint64_t n, std::uint64_t seed, const mat2& init) {
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

// A span's elements, every one of them on every rank.
template <class T>
std::vector<T> all_of_span(const strata::distributed_span<T>& r) {
  std::vector<T> h(r.size());
  strata::copy_to_host(r, h.data());
  return h;
}

}  // namespace strata_test
