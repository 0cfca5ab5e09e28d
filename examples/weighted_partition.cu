// Unequal GPUs, or GPUs with other work: give each a share proportional to a weight. Here the
// first GPU takes twice the share of the others, then the vector is redistributed evenly with
// strata::copy (peer copies of the overlapping pieces).
#include <strata/strata.cuh>

#include <cstdio>
#include <vector>

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  // With one GPU, show the mechanism on three places of it.
  const auto gpus = strata::visible_device_count() > 1 ? strata::device_set::all() : strata::device_set::repeat(0, 3);
  std::vector<double> weights(gpus.size(), 1.0);
  weights[0] = 2.0;

  const std::uint64_t n = 10'000'001;
  strata::distributed_vector<float> x(n, 1.0f, gpus, strata::partition_policy::weighted(weights));
  for (const auto& s : x.segments())
    std::printf("place %zu (GPU %d): elements [%llu, %llu)\n", s.place, s.device,
                static_cast<unsigned long long>(s.offset), static_cast<unsigned long long>(s.offset + s.count));

  strata::distributed_vector<float> even(n, gpus, strata::partition_policy::even(), strata::no_init);
  strata::copy(x, even);
  const bool ok = strata::equal(even, strata::distributed_vector<float>(n, 1.0f, gpus)) && strata::reduce(x) == float(n);
  std::printf("redistributed evenly: %s\n", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
