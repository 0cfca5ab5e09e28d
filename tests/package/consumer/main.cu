// The package consumer: real Strata code, a reduce over a distributed_vector on every GPU.
#include <strata/strata.cuh>

#include <cstdio>

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("STRATA_GPU_SKIP: no CUDA device is visible\n");
    return 0;
  }
  const auto set = strata::device_set::all();
  strata::distributed_vector<int> v(1000003, 2, set);
  const int sum = strata::reduce(v);
  std::printf("Strata %s: sum = %d over %zu places\n", STRATA_VERSION_STRING, sum, set.size());
  return sum == 2000006 ? 0 : 1;
}
