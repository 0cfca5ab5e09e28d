// The package consumer: real Strata code, a reduce over a distributed_vector on every GPU, and a
// device lambda (the consumer's CMakeLists adds no flag: Strata::strata must bring
// --extended-lambda itself).
#include <strata/strata.cuh>

#include <cstdio>

#ifdef STRATA_CONSUMER_NCCL
#include <strata/nccl.cuh>
#endif

int main() {
#ifdef STRATA_CONSUMER_NCCL
  std::printf("Strata::nccl: NCCL %d\n", strata::nccl_version());
#endif
  if (strata::visible_device_count() == 0) {
    std::printf("STRATA_GPU_SKIP: no CUDA device is visible\n");
    return 0;
  }
  const auto set = strata::device_set::all();
  strata::distributed_vector<int> v(1000003, 2, set);
  strata::transform(v, v, [] __device__(int x) { return x + 1; });
  const int sum = strata::reduce(v);
  std::printf("Strata %s: sum = %d over %zu places\n", STRATA_VERSION_STRING, sum, set.size());
  return sum == 3000009 ? 0 : 1;
}
