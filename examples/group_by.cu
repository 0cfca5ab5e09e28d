// Group-by over every GPU: sales records (a store id and an amount each) in no particular order,
// sorted by store with the amounts carried along (sort_by_key), then one total per store
// (reduce_by_key: a store whose records straddle two GPUs still gets one total), and a running
// total within each store (inclusive_scan_by_key). Checked against the host.
#include <strata/strata.cuh>

#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  const auto gpus = strata::device_set::all();
  const std::uint64_t n = 10'000'019;
  const std::uint32_t stores = 1000;

  // Records generated on the GPUs from their global index: store ids scattered, amounts in cents.
  strata::distributed_vector<std::uint32_t> store(n, gpus);
  strata::distributed_vector<std::int64_t> cents(n, gpus);
  strata::tabulate(store, [] __device__(std::uint64_t i) { return static_cast<std::uint32_t>((i * 2654435761u) % 1000u); });
  strata::tabulate(cents, [] __device__(std::uint64_t i) { return static_cast<std::int64_t>(i % 9973); });
  std::map<std::uint32_t, std::int64_t> want;  // the host's group-by, before the data moves
  {
    const auto s = store.to_std_vector();
    const auto c = cents.to_std_vector();
    for (std::uint64_t i = 0; i < n; ++i) want[s[i]] += c[i];
  }

  strata::sort_by_key(store, cents);  // records of one store now consecutive, across the GPUs
  strata::distributed_vector<std::uint32_t> ids(n, gpus);
  strata::distributed_vector<std::int64_t> totals(n, gpus);
  const auto groups = strata::reduce_by_key(store, cents, ids, totals);  // one (id, total) per store
  std::vector<std::uint32_t> got_ids(groups.keys.size());
  std::vector<std::int64_t> got_totals(groups.values.size());
  strata::copy_to_host(groups.keys, got_ids.data());
  strata::copy_to_host(groups.values, got_totals.data());

  bool ok = got_ids.size() == want.size() && got_ids.size() == stores;
  std::size_t k = 0;
  for (const auto& [id, total] : want) {
    if (k >= got_ids.size() || got_ids[k] != id || got_totals[k] != total) ok = false;
    ++k;
  }
  // The running total within each store: its last record's value is the store's total.
  strata::inclusive_scan_by_key(store, cents, totals);
  ok = ok && totals.get(n - 1) == want.rbegin()->second;

  std::printf("%llu records over %zu place(s): %zu stores, store %u sold %lld cents: %s\n",
              static_cast<unsigned long long>(n), gpus.size(), got_ids.size(), got_ids.empty() ? 0u : got_ids[0],
              got_totals.empty() ? 0LL : static_cast<long long>(got_totals[0]), ok ? "matches the host" : "WRONG");
  return ok ? 0 : 1;
}
