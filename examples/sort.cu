// Sorting a range spread over every GPU: keys alone, then keys with values (a permutation), and
// the layout stays as it was. Then redistribute: the same elements onto a weighted layout.
#include <strata/strata.cuh>

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  const auto gpus = strata::device_set::all();
  const std::uint64_t n = 100'000'007;

  // Pseudo-random keys, generated on the GPUs from their global index.
  strata::distributed_vector<std::uint32_t> keys(n, gpus);
  strata::tabulate(keys, [] __device__(std::uint64_t i) { return static_cast<std::uint32_t>(i * 2654435761u ^ (i >> 7)); });
  strata::distributed_vector<std::uint64_t> index(n, gpus);
  strata::iota(index, std::uint64_t{0});

  strata::sort_by_key(keys, index);  // keys in order, index[i] = where keys[i] came from
  const auto host = keys.to_std_vector();
  const bool sorted = std::is_sorted(host.begin(), host.end());
  std::printf("sorted %llu keys over %zu place(s): %s; smallest key %u came from index %llu\n",
              static_cast<unsigned long long>(n), gpus.size(), sorted ? "in order" : "NOT in order", keys.get(0),
              static_cast<unsigned long long>(index.get(0)));

  // The same elements onto a layout that gives the last GPU three times the share of the others.
  std::vector<double> weights(gpus.size(), 1.0);
  weights.back() = 3.0;
  const auto moved = strata::redistribute(keys, strata::partition_policy::weighted(weights));
  std::printf("redistributed: %llu elements on the last place (was %llu)\n",
              static_cast<unsigned long long>(moved.partition().count(gpus.size() - 1)),
              static_cast<unsigned long long>(keys.partition().count(gpus.size() - 1)));
  return sorted && strata::equal(strata::redistribute(moved, strata::partition_policy::even()), keys) ? 0 : 1;
}
