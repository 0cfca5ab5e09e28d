// The cost of crossing ranks (issue 17): per rank, the same reduce over its share in one process
// (strata::reduce(x) over a one-place set of its own) and over a set spanning the ranks
// (strata::reduce(x) again, x now the global range: the same local work plus one all-gather of the
// partials and the fold on the GPU), at 2^20 and 2^28 elements per rank, and a group all-gather
// alone (host to host). Medians of 21 runs after a warm-up, host wall clock with every rank
// started together (MPI_Barrier), value on the host in both. Run under mpirun, one rank per GPU
// (or several ranks on one GPU with NCCL 2.30+ and NCCL_MULTI_RANK_GPU_ENABLE=1):
//
//   mpirun -np R build/benchmarks/strata_bench_ranks [OUT.json]
//
// Rank 0 prints one line per size and, given a file, writes the figures as JSON.
#include <strata/nccl_mpi.cuh>
#include <strata/strata.cuh>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

template <class F>
double median_us(F f) {
  f();  // warm-up (and graph capture of the repeated call)
  f();
  std::vector<double> t;
  for (int i = 0; i < 21; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    const int gpu = strata::mpi_local_gpu(MPI_COMM_WORLD);  // one rank per GPU of the node
    if (gpu < 0) {
      std::printf("No CUDA device is visible\n");
      MPI_Finalize();
      return 0;
    }
    const auto group = strata::process_group_from_mpi(MPI_COMM_WORLD, gpu);
    const strata::device_set set{gpu};
    const strata::device_set spanning = strata::spanning_set(group, 1);
    std::string json = "[";
    for (int lg : {20, 28}) {
      const std::uint64_t per_rank = std::uint64_t{1} << lg;
      strata::distributed_vector<float> x(per_rank, 1.0f, set);
      strata::distributed_vector<float> global(per_rank * static_cast<std::uint64_t>(group.size()), 1.0f, spanning);
      float sink = 0;
      const double local = median_us([&] { sink += strata::reduce(x); });
      const double ranks = median_us([&] { sink += strata::reduce(global); });
      const std::uint64_t word = 1;
      std::vector<std::uint64_t> words(static_cast<std::size_t>(group.size()));
      const double gather = median_us([&] { group.all_gather(&word, sizeof word, words.data()); });
      const double gb = static_cast<double>(per_rank) * sizeof(float) / 1e3;  // bytes per us -> GB/s
      if (group.rank() == 0) {
        std::printf("ranks %d, 2^%d f32 per rank: reduce in one process %.1f us (%.0f GB/s), over the spanning set %.1f us "
                    "(%.0f GB/s, %.3fx), all-gather alone %.1f us (%.0f%% of the spanning call)\n",
                    group.size(), lg, local, gb / local, ranks, gb / ranks, local / ranks, gather,
                    100.0 * gather / ranks);
        json += std::string(json.size() > 1 ? "," : "") + "{\"ranks\":" + std::to_string(group.size()) +
                ",\"log2_per_rank\":" + std::to_string(lg) + ",\"one_process_us\":" + std::to_string(local) +
                ",\"group_us\":" + std::to_string(ranks) + ",\"all_gather_us\":" + std::to_string(gather) + "}";
      }
      if (sink < 0) status = 1;  // keeps the sums alive
    }
    if (group.rank() == 0 && argc > 1) {
      if (FILE* f = std::fopen(argv[1], "w")) {
        std::fprintf(f, "%s]\n", json.c_str());
        std::fclose(f);
      }
    }
  } catch (const std::exception& e) {
    std::printf("rank failed: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
