// Where does each record start? An exclusive scan of per-record sizes gives every record's
// byte offset in a packed output buffer, the first step of stream compaction or of writing
// variable-length records in parallel.
#include <strata/strata.cuh>

#include <cstdint>
#include <cstdio>
#include <vector>

// Record i has 1 + (i * 7919) % 100 bytes.
struct record_size {
  __host__ __device__ std::uint64_t operator()(std::uint64_t i) const { return 1 + (i * 7919) % 100; }
};

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  const auto gpus = strata::device_set::all();
  const std::uint64_t records = 50'000'000;

  strata::distributed_vector<std::uint64_t> sizes(records, gpus, strata::partition_policy::even(), strata::no_init);
  strata::iota(sizes, std::uint64_t{0});
  strata::transform(sizes, sizes, record_size{});

  strata::distributed_vector<std::uint64_t> offsets(records, gpus, strata::partition_policy::even(), strata::no_init);
  strata::exclusive_scan(sizes, offsets, std::uint64_t{0});   // offsets[i] = sizes[0] + ... + sizes[i-1]
  const std::uint64_t total = strata::reduce(sizes);           // bytes of the packed buffer

  // Check a few offsets against the host.
  std::uint64_t want = 0;
  bool ok = true;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    ok = ok && offsets.get(i) == want;
    want += record_size{}(i);
  }
  const std::uint64_t last = offsets.get(records - 1) + sizes.get(records - 1);
  ok = ok && last == total;
  std::printf("%llu records over %zu places: packed size %llu bytes, last record at %llu: %s\n",
              static_cast<unsigned long long>(records), gpus.size(), static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(offsets.get(records - 1)), ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
