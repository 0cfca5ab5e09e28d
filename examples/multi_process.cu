// The quick start over MPI ranks: one process per GPU, each holding its share of one range of
// 10^7 floats; the sum and the scan cover the whole range and every rank gets the same sum.
//
//   mpirun -np <number of GPUs> ./build/examples/multi_process
//
// (On one GPU, run one rank: NCCL before 2.30 refuses two ranks on one GPU.) Needs Strata::nccl
// and MPI; see README.md, "Beyond one node".
#include <strata/nccl_mpi.cuh>
#include <strata/strata.cuh>

#include <cstdint>
#include <cstdio>

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

    const std::uint64_t n = 10'000'000;
    const auto layout = strata::make_rank_layout(MPI_COMM_WORLD, n, set.size());  // ranks in order
    strata::distributed_vector<float> x(layout.local_size(), 1.0f, set, layout.local_policy());
    strata::distributed_vector<float> y(layout.local_size(), 0.0f, set, layout.local_policy());

    const float sum = strata::reduce(group, x);                        // the same on every rank
    strata::inclusive_scan(group, x, y, cuda::std::plus<float>{});     // global prefix sums
    const float last = layout.local_size() > 0 ? y.get(y.size() - 1) : 0.0f;

    std::printf("rank %d of %d on GPU %d: elements [%llu, %llu), sum = %.0f, last prefix here = %.0f\n", group.rank(),
                group.size(), gpu, static_cast<unsigned long long>(layout.offset()),
                static_cast<unsigned long long>(layout.offset() + layout.local_size()), sum, last);
    const bool ok = sum == static_cast<float>(n) &&
                    (layout.local_size() == 0 || last == static_cast<float>(layout.offset() + layout.local_size()));
    status = ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("rank failed: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
