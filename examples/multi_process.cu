// The quick start over MPI ranks: one process per GPU, a device_set spanning them, and one range of
// 10^7 floats over it (each rank allocating its share); the sum and the scan cover the whole range,
// with the same calls as in one process, and every rank gets the same sum; then the range is moved
// off rank 0 (redistribute onto a layout giving rank 0's place no elements: NCCL sends and
// receives between the ranks).
//
//   mpirun -np <number of GPUs> ./build/examples/multi_process
//
// (On one GPU, run one rank: NCCL before 2.30 refuses two ranks on one GPU.) Needs Strata::nccl
// and MPI; see README.md, "Beyond one node".
#include <strata/nccl_mpi.cuh>
#include <strata/strata.cuh>

#include <cstdint>
#include <cstdio>
#include <vector>

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
    const strata::device_set set = strata::spanning_set(group);  // one place per rank, in rank order

    const std::uint64_t n = 10'000'000;
    strata::distributed_vector<float> x(n, 1.0f, set);  // the global range; each rank holds its share
    strata::distributed_vector<float> y(n, 0.0f, set);

    const float sum = strata::reduce(x);                           // the same on every rank
    strata::inclusive_scan(x, y, cuda::std::plus<float>{});        // global prefix sums
    const strata::index_range mine = y.span().local_range();  // this rank's elements
    const std::uint64_t first = mine.offset, end = mine.offset + mine.count;
    const float last = end > first ? y.get(end - 1) : 0.0f;

    std::printf("rank %d of %d on GPU %d: elements [%llu, %llu), sum = %.0f, last prefix here = %.0f\n", group.rank(),
                group.size(), gpu, static_cast<unsigned long long>(first), static_cast<unsigned long long>(end), sum,
                last);
    // Drain rank 0 (with one rank there is nowhere to go: keep it).
    std::vector<double> weights(set.size(), 1.0);
    if (set.size() > 1) weights[0] = 0.0;
    const auto moved = strata::redistribute(y, strata::partition_policy::weighted(weights));
    const bool drained = set.size() == 1 || moved.partition().count(0) == 0;
    const float last_moved = moved.to_std_vector().back();  // every rank receives every element
    std::printf("rank %d: after draining rank 0 it holds %llu elements; the last prefix is %.0f\n", group.rank(),
                static_cast<unsigned long long>(moved.partition().count(static_cast<std::size_t>(group.rank()))),
                last_moved);
    const bool ok = sum == static_cast<float>(n) && (end == first || last == static_cast<float>(end)) && drained &&
                    last_moved == static_cast<float>(n);
    status = ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("rank failed: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
