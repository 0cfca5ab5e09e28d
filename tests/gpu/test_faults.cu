// Fault injection (built with STRATA_ENABLE_FAULT_INJECTION): the Nth checked CUDA call made
// for a chosen place reports a failure. Every algorithm must surface it as strata::cuda_error
// naming the device, leave the other places' work to drain without hanging, leak nothing, and
// work normally afterwards.
#include "test_util.cuh"

#include <algorithm>
#include <string>
#include <functional>
#include <cstdio>
#include <numeric>
#include <vector>

using namespace strata_test;

namespace {

struct twice_fn {
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return 2 * x; }
};
struct is_odd {
  __host__ __device__ bool operator()(std::int64_t x) const { return (x & 1) != 0; }
};
struct mul_fn {
  __host__ __device__ std::int64_t operator()(std::int64_t x, std::int64_t y) const { return x * y; }
};
struct add_one {
  __host__ __device__ void operator()(std::int64_t& x) const { x += 1; }
};
struct twice_index {
  __host__ __device__ std::int64_t operator()(std::uint64_t i) const { return 2 * static_cast<std::int64_t>(i); }
};
struct add_index {
  __host__ __device__ void operator()(std::uint64_t i, std::int64_t& x) const { x += static_cast<std::int64_t>(i); }
};
struct sum3 {
  __host__ __device__ std::int64_t operator()(std::int64_t a, std::int64_t b, std::int64_t c) const { return a + b + c; }
};
struct assign_second {
  __host__ __device__ void operator()(std::int64_t& a, std::int64_t b) const { a = b; }
};

struct abs_then_value {  // a comparator that is not less/greater: sort's comparison path
  __host__ __device__ bool operator()(std::int64_t a, std::int64_t b) const {
    const std::int64_t x = a < 0 ? -a : a, y = b < 0 ? -b : b;
    return x != y ? x < y : a < b;
  }
};

// The checked calls to fail in one operation for one place: every one of the `calls` it makes
// (counted in a dry run), or `most` of them spread evenly over all its phases, first and last
// included. Host logic of the test.
std::vector<long> fault_points(long calls, long most) {
  std::vector<long> at;
  if (calls <= most) {
    for (long c = 0; c < calls; ++c) at.push_back(c);
    return at;
  }
  for (long k = 0; k < most; ++k) at.push_back(k * (calls - 1) / (most - 1));
  return at;
}

// One injected failure: arms the injector for the `nth` call at `site` made for `place`, runs
// `call`, disarms. Whether the failure fired, and whether `call` threw strata::cuda_error (with
// the injected code: checked here).
struct one_fault {
  bool fired, threw;
};
one_fault inject_once(int place, long nth, cudaError_t code, strata::detail::fault_site site,
                      const std::function<void()>& call) {
  auto& inj = strata::detail::faults();
  inj.arm(place, nth, code, site);
  bool threw = false;
  try {
    call();
  } catch (const strata::cuda_error& e) {
    threw = true;
    EXPECT_EQ(e.code(), code) << e.what();
  }
  const bool fired = inj.fired() > 0;
  inj.disarm();
  return {fired, threw};
}

template <class R>
std::vector<std::remove_const_t<strata::range_value_t<R>>> host_copy(const R& v) {
  std::vector<std::remove_const_t<strata::range_value_t<R>>> h(v.size());
  strata::copy_to_host(v, h.data());
  return h;
}

}  // namespace

class Faults : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(GraphsOnAndOff, Faults, ::testing::Bool());

// Every public call that does device work, failed at every phase: for each operation the checked
// CUDA calls it makes for each place are counted in a dry run and the injector then fails each of
// them in turn (or up to 24 spread over all of them, 8 under STRATA_TEST_QUICK), and each of the
// allocations it makes anywhere with cudaErrorMemoryAllocation. The failure must surface as
// strata::cuda_error naming the device, the other places' work must drain, nothing may leak, and
// the operation must compute the whole, exact result afterwards.
TEST_P(Faults, EveryAlgorithmSurfacesAnInjectedFailureAtEveryPhaseAndRecovers) {
  using strata::detail::fault_injector;
  using strata::detail::fault_site;
  auto& inj = strata::detail::faults();
  strata::device_set_options options;
  options.use_graphs = GetParam();  // with graphs, the loop below exercises replays
  const auto set = private_set(4, options);
  const auto other_set = private_set(3, options);  // cross-set copies and redistributes
  // Under the sanitizers (STRATA_TEST_QUICK) a tenth of the size: the injector counts calls, not
  // elements, and racecheck over 1000003 elements ran past its 240 s cap (H100, 2026-12-05).
  const std::uint64_t n = quick_mode() ? 100003 : 1000003;
  const long most = quick_mode() ? 8 : 24;
  std::vector<std::int64_t> h(n);
  // From an even value: the odd elements are n / 2 of them (count_if below).
  std::iota(h.begin(), h.end(), -static_cast<std::int64_t>((n / 2) & ~std::uint64_t{1}));
  strata::distributed_vector<std::int64_t> in(h, set), out(n, set), other(n, set, strata::partition_policy::weighted({1, 2, 3, 4}));
  strata::distributed_vector<std::int64_t> scratch(n, set), elsewhere(n, other_set);
  const auto is_odd_h = [](std::int64_t x) { return (x & 1) != 0; };
  const std::int64_t sum = std::accumulate(h.begin(), h.end(), std::int64_t{0});
  const auto odd = static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), is_odd_h));

  // Host references.
  std::vector<std::int64_t> h_odd, h_even, h_twice(n), h_plus1(n), h_rev(h.rbegin(), h.rend()), h_inc(n), h_exc(n);
  std::int64_t dot = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    (is_odd_h(h[i]) ? h_odd : h_even).push_back(h[i]);
    h_twice[i] = 2 * h[i];
    h_plus1[i] = h[i] + 1;
    h_inc[i] = (i ? h_inc[i - 1] : 0) + h[i];
    h_exc[i] = h_inc[i] - h[i];
    dot += h[i] * h[i];
  }
  std::vector<std::int64_t> h_abs_sorted = h;
  std::sort(h_abs_sorted.begin(), h_abs_sorted.end(), abs_then_value{});
  std::vector<std::int64_t> h_keys(n);  // runs of 7 equal keys
  for (std::uint64_t i = 0; i < n; ++i) h_keys[i] = static_cast<std::int64_t>(i / 7);
  std::vector<std::int64_t> h_run_sums, h_key_inc(n), h_key_exc(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const bool head = i % 7 == 0;
    if (head) h_run_sums.push_back(0);
    h_run_sums.back() += h[i];
    h_key_inc[i] = (head ? 0 : h_key_inc[i - 1]) + h[i];
    h_key_exc[i] = h_key_inc[i] - h[i];
  }
  std::vector<std::int64_t> h_run_keys(h_run_sums.size());
  std::iota(h_run_keys.begin(), h_run_keys.end(), std::int64_t{0});
  const std::vector<std::uint64_t> offsets{0, 3, n / 3, n / 3, n / 2 + 11, n - 1, n};
  std::vector<std::int64_t> h_seg(offsets.size() - 1, 5);
  for (std::size_t j = 0; j + 1 < offsets.size(); ++j)
    for (std::uint64_t i = offsets[j]; i < offsets[j + 1]; ++i) h_seg[j] += h[i];
  std::vector<std::uint64_t> h_hist(16, 0);
  const std::int64_t lo = h.front(), hi = h.back() + 1;
  for (const auto x : h) h_hist[static_cast<std::size_t>((x - lo) * 16 / (hi - lo))]++;
  std::vector<std::uint64_t> h_map(n), h_lb(n);
  for (std::uint64_t i = 0; i < n; ++i) h_map[i] = n - 1 - i;
  for (std::uint64_t i = 0; i < n; ++i) h_lb[i] = static_cast<std::uint64_t>(std::lower_bound(h.begin(), h.end(), 2 * h[i]) - h.begin());
  std::vector<std::int64_t> h_diff(n, 1);
  h_diff[0] = h[0];
  std::vector<double> hd(h.begin(), h.end());
  const double dsum = std::accumulate(hd.begin(), hd.end(), 0.0);  // exact: integers below 2^53

  std::vector<std::int64_t> h_merged(2 * n);
  std::merge(h.begin(), h.end(), h_twice.begin(), h_twice.end(), h_merged.begin());
  strata::distributed_vector<std::int64_t> merged(2 * n, set, strata::partition_policy::weighted({4, 3, 2, 1}));
  strata::distributed_vector<std::int64_t> keys(h_keys, set), keys_out(n, set), twice(h_twice, set);
  strata::distributed_vector<std::uint64_t> map(h_map, set), idx(n, set);
  strata::distributed_vector<double> dv(hd, set);
  const auto eq = [](const auto& got, const auto& want) { return got == want; };

  strata::topology_options topo;
  topo.bandwidth_bytes = 1 << 20;
  topo.repeats = 1;
  topo.refresh = true;

  // name, the call, and whether it computed the whole, exact result.
  const std::vector<std::pair<const char*, std::function<bool()>>> algos = {
      {"reduce", [&] { return strata::reduce(in) == sum; }},
      {"reduce_async", [&] { return strata::reduce_async(in, std::int64_t{1}, cuda::std::plus<>{}).get() == sum + 1; }},
      {"count_if", [&] { return strata::count_if(in, is_odd{}) == odd; }},
      {"min_element", [&] { const auto m = strata::min_element(in); return m.index == 0 && m.value == h[0]; }},
      {"minmax", [&] { const auto m = strata::minmax(in); return m.max.index == n - 1 && m.min.index == 0; }},
      {"dot", [&] { return strata::transform_reduce(in, in, std::int64_t{0}, cuda::std::plus<>{}, mul_fn{}) == dot; }},
      {"equal", [&] { return strata::equal(in, in) && !strata::equal(in, twice); }},
      {"inclusive_scan", [&] { strata::inclusive_scan(in, out); return eq(host_copy(out), h_inc); }},
      {"exclusive_scan", [&] { strata::exclusive_scan(in, out, std::int64_t{0}); return eq(host_copy(out), h_exc); }},
      {"inclusive_scan nosync", [&] {
         strata::inclusive_scan(in, out, strata::nosync);
         set.synchronize();
         return eq(host_copy(out), h_inc);
       }},
      {"transform", [&] { strata::transform(in, out, twice_fn{}); return eq(host_copy(out), h_twice); }},
      {"transform nosync", [&] { strata::transform(in, out, twice_fn{}, strata::nosync); set.synchronize(); return eq(host_copy(out), h_twice); }},
      {"fill", [&] { strata::fill(out, 3); return eq(host_copy(out), std::vector<std::int64_t>(n, 3)); }},
      {"copy relayout", [&] { strata::copy(in, other); return eq(host_copy(other), h); }},
      {"copy across sets", [&] { strata::copy(in, elsewhere); return eq(host_copy(elsewhere), h); }},
      {"for_each", [&] { strata::copy(in, out); strata::for_each(out, add_one{}); return eq(host_copy(out), h_plus1); }},
      {"iota", [&] { strata::iota(out, std::int64_t{4}); return out.get(0) == 4 && out.get(n - 1) == std::int64_t(n) + 3; }},
      {"tabulate", [&] { strata::tabulate(out, twice_index{}); return out.get(n - 1) == 2 * std::int64_t(n - 1); }},
      {"for_each_indexed", [&] { strata::fill(out, 0); strata::for_each_indexed(out, add_index{}); return out.get(7) == 7 && out.get(n - 1) == std::int64_t(n - 1); }},
      {"binary transform", [&] { strata::transform(in, in, out, mul_fn{}); return out.get(n - 1) == h[n - 1] * h[n - 1]; }},
      {"zip transform", [&] { strata::transform(strata::zip(in, in, in), out, sum3{}); return out.get(3) == 3 * h[3]; }},
      {"zip for_each", [&] { strata::for_each(strata::zip(out, in), assign_second{}); return eq(host_copy(out), h); }},
      {"for_each_segment", [&] {
         strata::fill(out, 0);
         strata::for_each_segment(strata::zip(out, in), [](cudaStream_t st, auto o, auto i) {
           STRATA_CUDA_CHECK(cudaMemcpyAsync(o.data, i.data, i.count * sizeof(std::int64_t), cudaMemcpyDeviceToDevice, st));
         });
         return eq(host_copy(out), h);
       }},
      {"copy_from_host", [&] { strata::copy_from_host(h.data(), out); return eq(host_copy(out), h); }},
      {"copy_to_host", [&] { std::vector<std::int64_t> b(n); strata::copy_to_host(in, b.data()); return b == h; }},
      {"get", [&] { return in.get(n - 1) == h[n - 1]; }},
      {"set", [&] { out.set(n - 1, 42); return out.get(n - 1) == 42; }},
      {"count", [&] { return strata::count(in, h[9]) == 1; }},
      {"all_of", [&] { return !strata::all_of(in, is_odd{}); }},
      {"any_of", [&] { return strata::any_of(in, is_odd{}); }},
      {"none_of", [&] { return !strata::none_of(in, is_odd{}); }},
      {"transform_reduce zip", [&] { return strata::transform_reduce(strata::zip(in, in), std::int64_t{0}, cuda::std::plus<>{}, mul_fn{}) == dot; }},
      {"reduce with init", [&] { return strata::reduce(in, std::int64_t{2}) == sum + 2; }},
      {"reproducible reduce", [&] { return strata::reduce(strata::reproducible, dv) == dsum; }},
      {"inclusive_scan with init", [&] { strata::inclusive_scan(in, out, cuda::std::plus<>{}, std::int64_t{1}); return out.get(n - 1) == sum + 1; }},
      {"copy constructor", [&] { strata::distributed_vector<std::int64_t> c(in); return eq(host_copy(c), h); }},
      {"copy assignment", [&] { strata::distributed_vector<std::int64_t> c; c = other; return eq(host_copy(c), host_copy(other)); }},
      {"host constructor", [&] { strata::distributed_vector<std::int64_t> c(h, set); return eq(host_copy(c), h); }},
      {"fill constructor", [&] { strata::distributed_vector<std::int64_t> c(n, 5, set); return c.get(n - 1) == 5 && c.get(0) == 5; }},
      // A compaction's result is the view it returns (each place keeps its survivors at its start).
      {"copy_if", [&] { return eq(host_copy(strata::copy_if(in, out, is_odd{})), h_odd); }},
      {"copy_if new", [&] { const auto r = strata::copy_if(in, is_odd{}); return eq(host_copy(r), h_odd); }},
      {"remove_if", [&] { strata::copy(in, out); return eq(host_copy(strata::remove_if(out, is_odd{})), h_even); }},
      {"erase_if", [&] { strata::distributed_vector<std::int64_t> c(in); return strata::erase_if(c, is_odd{}) == odd && eq(host_copy(c), h_even); }},
      {"unique", [&] { strata::copy(in, out); return eq(host_copy(strata::unique(out)), h); }},
      {"unique_copy", [&] { return eq(host_copy(strata::unique_copy(in, out)), h); }},
      {"partition_copy", [&] {
         const auto r = strata::partition_copy(in, out, scratch, is_odd{});
         return eq(host_copy(r.first), h_odd) && eq(host_copy(r.second), h_even);
       }},
      {"sort", [&] { strata::copy(in, out); strata::sort(out, cuda::std::greater<>{}); return eq(host_copy(out), h_rev); }},
      {"stable_sort", [&] { strata::copy(in, out); strata::stable_sort(out, cuda::std::greater<>{}); return eq(host_copy(out), h_rev); }},
      {"sort comparison path", [&] { strata::copy(in, out); strata::sort(out, abs_then_value{}); return eq(host_copy(out), h_abs_sorted); }},
      {"sort_by_key", [&] {
         strata::copy(in, out);
         strata::copy(in, scratch);
         strata::stable_sort_by_key(out, scratch, cuda::std::greater<>{});
         return eq(host_copy(out), h_rev) && eq(host_copy(scratch), h_rev);
       }},
      {"redistribute", [&] {
         const auto r = strata::redistribute(in, strata::partition_policy::weighted({1, 0, 2, 3}));
         return eq(host_copy(r), h) && r.partition().count(1) == 0;
       }},
      {"redistribute across sets", [&] { return eq(host_copy(strata::redistribute(in, other_set, strata::partition_policy::even())), h); }},
      // The algorithms of issue 36.
      {"find", [&] { return strata::find(in, h[n / 2]) == n / 2 && strata::find(in, h[n - 1] + 1) == n; }},
      {"is_sorted_until", [&] { return strata::is_sorted_until(in) == n; }},
      {"adjacent_difference", [&] { strata::adjacent_difference(in, out); return eq(host_copy(out), h_diff); }},
      {"histogram_even", [&] { return strata::histogram_even(in, 16, lo, hi) == h_hist; }},
      {"reduce_by_key", [&] {
         const auto r = strata::reduce_by_key(keys, in, keys_out, out);
         return eq(host_copy(r.values), h_run_sums) && eq(host_copy(r.keys), h_run_keys);
       }},
      {"inclusive_scan_by_key", [&] { strata::inclusive_scan_by_key(keys, in, out); return eq(host_copy(out), h_key_inc); }},
      {"exclusive_scan_by_key", [&] { strata::exclusive_scan_by_key(keys, in, out, std::int64_t{0}); return eq(host_copy(out), h_key_exc); }},
      {"segmented_reduce", [&] { return strata::segmented_reduce(in, offsets, std::int64_t{5}) == h_seg; }},
      {"gather", [&] { strata::gather(map, in, out); return eq(host_copy(out), h_rev); }},
      {"scatter", [&] { strata::scatter(in, map, out); return eq(host_copy(out), h_rev); }},
      {"lower_bound", [&] { strata::lower_bound(in, twice, idx); return eq(host_copy(idx), h_lb); }},
      {"merge", [&] { strata::merge(in, twice, merged); return eq(host_copy(merged), h_merged); }},
      {"top_k", [&] {
         const auto r = strata::top_k(in, 100, strata::largest);
         bool ok = r.indices.size() == 100;
         for (std::uint64_t j = 0; ok && j < 100; ++j) ok = r.indices[j] == n - 1 - j && r.values[j] == h[n - 1 - j];
         return ok;
       }},
      {"measure_topology", [&] {
         const auto& t = strata::measure_topology(set, topo);
         return t.memory_gbps.size() == 4 && *std::min_element(t.memory_gbps.begin(), t.memory_gbps.end()) > 0;
       }},
  };

  for (int warm = 0; warm < 3; ++warm)  // warms every cache and captures the graphs
    for (const auto& [name, call] : algos) ASSERT_TRUE(call()) << name << " is wrong before any fault";
  const auto live_before = live_allocations::now();

  const auto captures_before = set.state().graphs.captures;
  // One failure: it must surface as it should, and the operation must work afterwards.
  const auto fail_once = [&](const char* name, const std::function<bool()>& call, int place, long nth, fault_site site) {
    const cudaError_t code = site == fault_site::allocation ? cudaErrorMemoryAllocation : cudaErrorLaunchFailure;
    SCOPED_TRACE(std::string(name) + (site == fault_site::allocation ? ", allocation " : ", place " + std::to_string(place) + ", call ") +
                 std::to_string(nth));
    inj.arm(place, nth, code, site);
    bool threw = false;
    try {
      (void)call();
    } catch (const strata::cuda_error& e) {
      threw = true;
      EXPECT_EQ(e.code(), code);
      EXPECT_EQ(e.device(), 0) << e.what();
      EXPECT_NE(std::string(e.what()).find("on device 0"), std::string::npos) << e.what();
    }
    const bool fired = inj.fired() > 0;
    inj.disarm();
    EXPECT_EQ(threw, fired) << "an injected failure was swallowed, or an exception came from nowhere";
    set.synchronize();  // the other places' work drains: no hang
    other_set.synchronize();
    EXPECT_TRUE(call()) << name << " is wrong after a fault";
    return threw;
  };
  long surfaced = 0, phases = 0;
  for (const auto& [name, call] : algos) {
    inj.count();  // the dry run: how many checked calls each place makes
    ASSERT_TRUE(call()) << name;
    inj.disarm();
    std::vector<long> calls(4);
    for (int place = 0; place < 4; ++place) calls[place] = inj.calls(place);
    inj.count(fault_site::allocation);
    ASSERT_TRUE(call()) << name;
    inj.disarm();
    const long allocations = inj.calls(fault_injector::any_place);
    long surfaced_here = 0;
    for (int place = 0; place < 4; ++place)
      for (const long nth : fault_points(calls[place], most)) surfaced_here += fail_once(name, call, place, nth, fault_site::any_call);
    for (const long nth : fault_points(allocations, 4))
      surfaced_here += fail_once(name, call, fault_injector::any_place, nth, fault_site::allocation);
    EXPECT_GT(surfaced_here, 0) << name << ": no injected failure surfaced (" << calls[0] << " checked calls on place 0)";
    surfaced += surfaced_here;
    phases += calls[0] + calls[1] + calls[2] + calls[3];
  }
  std::printf("faults: %ld surfaced over %zu operations (%ld checked calls per run in all); graphs: %llu captures "
              "during the fault loop, %llu replays in all\n",
              surfaced, algos.size(), phases,
              static_cast<unsigned long long>(set.state().graphs.captures - captures_before),
              static_cast<unsigned long long>(set.state().graphs.replays));
  set.synchronize();
  expect_no_leak(live_before);
}

// docs/errors.md: a sort that cannot allocate fails "before any key moves: the range is
// unchanged", and on a staged set what the exchange needs (the pinned staging ring) is allocated
// in that same phase. Every allocation a first sort makes on a fresh staged set (radix path,
// comparison path, and by key) is failed in turn, each on a set of its own with empty caches: the
// failure must surface, the keys (and values) must be exactly as they were, the next sort must be
// right, and nothing may stay allocated once the sets are gone.
TEST(Faults, AFirstStagedSortThatCannotAllocateLeavesTheRangeUnchanged) {
  using strata::detail::fault_injector;
  using strata::detail::fault_site;
  auto& inj = strata::detail::faults();
  strata::device_set_options options;
  options.force_host_staging = true;
  const std::uint64_t n = 300007;
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::int64_t> h = random_vector<std::int64_t>(n, seed);
  for (std::uint64_t i = 0; i < n; ++i) h[i] = h[i] * 100003 + static_cast<std::int64_t>(i % 100003);
  std::vector<std::int64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::int64_t{0});
  std::vector<std::int64_t> by_less = h, by_abs = h;
  std::sort(by_less.begin(), by_less.end());
  std::sort(by_abs.begin(), by_abs.end(), abs_then_value{});
  std::vector<std::int64_t> ids_by_key = ids;  // the values of a stable sort by key, ascending
  std::stable_sort(ids_by_key.begin(), ids_by_key.end(), [&](std::int64_t a, std::int64_t b) { return h[a] < h[b]; });
  const char* const names[] = {"sort (radix path)", "sort (comparison path)", "stable_sort_by_key"};
  const auto live_before = live_allocations::now();
  for (int path = 0; path < 3; ++path) {
    SCOPED_TRACE(names[path]);
    // Sorts keys (and values), then checks them against the host's; false if wrong.
    const auto run = [&](strata::distributed_vector<std::int64_t>& keys, strata::distributed_vector<std::int64_t>& values) {
      if (path == 0) strata::sort(keys);
      if (path == 1) strata::sort(keys, abs_then_value{});
      if (path == 2) strata::stable_sort_by_key(keys, values);
    };
    const auto right = [&](strata::distributed_vector<std::int64_t>& keys, strata::distributed_vector<std::int64_t>& values) {
      if (path == 2) return host_copy(keys) == by_less && host_copy(values) == ids_by_key;
      return host_copy(keys) == (path == 0 ? by_less : by_abs);
    };
    long allocations = 0;
    {
      const auto set = private_set(3, options);
      strata::distributed_vector<std::int64_t> keys(h, set), values(ids, set);
      const auto pinned_before = strata::detail::counters().host_allocs.load();
      inj.count(fault_site::allocation);
      run(keys, values);
      inj.disarm();
      allocations = inj.calls(fault_injector::any_place);
      ASSERT_TRUE(right(keys, values)) << "wrong without a fault";
      EXPECT_GT(strata::detail::counters().host_allocs.load(), pinned_before)
          << "a first staged sort allocated no pinned memory: the staging ring is not among the failures";
    }
    ASSERT_GT(allocations, 0);
    for (long nth = 0; nth < allocations; ++nth) {
      SCOPED_TRACE("allocation " + std::to_string(nth) + " of " + std::to_string(allocations));
      const auto set = private_set(3, options);
      strata::distributed_vector<std::int64_t> keys(h, set), values(ids, set);
      const auto [fired, threw] = inject_once(fault_injector::any_place, nth, cudaErrorMemoryAllocation,
                                              fault_site::allocation, [&] { run(keys, values); });
      EXPECT_TRUE(fired) << "the allocation counted in the dry run was not made";
      EXPECT_EQ(threw, fired) << "an injected allocation failure was swallowed";
      set.synchronize();
      EXPECT_TRUE(host_copy(keys) == h) << "the keys changed although the sort failed while allocating";
      if (path == 2) EXPECT_TRUE(host_copy(values) == ids) << "the values changed although the sort failed";
      run(keys, values);
      EXPECT_TRUE(right(keys, values)) << "wrong after the failure";
    }
  }
  expect_no_leak(live_before);
}

// docs/errors.md: "erase_if changes a container's layout only after its work succeeded". Every
// checked call erase_if makes on each of 4 places (weighted layout, an empty place) and every
// allocation it makes on a fresh set are failed in turn: the container must keep its size and its
// per-place counts, stay usable (assigned again, erase_if then gives the host's answer) and
// destructible, and nothing may stay allocated once the sets are gone.
TEST(Faults, AFailedEraseIfKeepsTheContainersLayout) {
  using strata::detail::fault_injector;
  using strata::detail::fault_site;
  auto& inj = strata::detail::faults();
  const std::uint64_t n = 200009;
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::int64_t> h = random_vector<std::int64_t>(n, seed);
  std::vector<std::int64_t> kept;
  for (const auto x : h)
    if ((x & 1) == 0) kept.push_back(x);
  const auto policy = strata::partition_policy::weighted({3, 0, 2, 5});
  strata::device_set_options options;
  options.use_graphs = false;  // every run eager: the dry run's count is every armed run's
  // (site, place): the checked calls made for each place, then every allocation (any_place).
  std::vector<std::pair<fault_site, int>> sites;
  for (int place = 0; place < 4; ++place) sites.push_back({fault_site::any_call, place});
  sites.push_back({fault_site::allocation, fault_injector::any_place});
  const auto live_before = live_allocations::now();
  long surfaced = 0;
  {
    const auto warm = private_set(4, options);  // the checked calls' runs share it
    for (const auto& [site, place] : sites) {
      // Allocations: a fresh set for every run (a warm one allocates nothing but the container).
      const auto set_for_run = [&, site = site] { return site == fault_site::allocation ? private_set(4, options) : warm; };
      long calls = 0;
      {
        const auto set = set_for_run();
        strata::distributed_vector<std::int64_t> v(h, set, policy);
        inj.count(site);
        ASSERT_EQ(strata::erase_if(v, is_odd{}), n - kept.size());
        inj.disarm();
        calls = inj.calls(place);
        ASSERT_TRUE(host_copy(v) == kept);
      }
      if (site == fault_site::allocation) EXPECT_GT(calls, 0) << "erase_if on a fresh set allocated nothing";
      for (long nth = 0; nth < calls; ++nth) {
        SCOPED_TRACE((site == fault_site::allocation ? std::string("allocation ") : "place " + std::to_string(place) + ", call ") +
                     std::to_string(nth) + " of " + std::to_string(calls));
        const auto set = set_for_run();
        strata::distributed_vector<std::int64_t> v(h, set, policy);
        const auto counts = v.partition().counts();
        const auto [fired, threw] =
            inject_once(place, nth, site == fault_site::allocation ? cudaErrorMemoryAllocation : cudaErrorLaunchFailure,
                        site, [&] { (void)strata::erase_if(v, is_odd{}); });
        // (Allocations on a fresh set are the same in every run; a checked call may be a wait's
        // poll, made as often as the timing wants.)
        if (site == fault_site::allocation) EXPECT_TRUE(fired) << "the allocation counted in the dry run was not made";
        EXPECT_EQ(threw, fired) << "an injected failure was swallowed, or an exception came from nowhere";
        set.synchronize();
        if (threw) {
          ++surfaced;
          EXPECT_EQ(v.size(), n) << "the failed erase_if changed the size";
          EXPECT_TRUE(v.partition().counts() == counts) << "the failed erase_if changed the layout";
        }
        if (!threw) {  // (the call was not made this time: the erase ran to the end)
          EXPECT_TRUE(host_copy(v) == kept) << "wrong with no failure";
          continue;
        }
        ASSERT_EQ(v.size(), n);  // then the same container is reused: refilled, erased again
        v.assign(h.begin(), h.end());
        EXPECT_EQ(strata::erase_if(v, is_odd{}), n - kept.size());
        EXPECT_TRUE(host_copy(v) == kept) << "wrong after the failure";
      }
    }
  }  // (the sets and their caches go)
  EXPECT_GT(surfaced, 4);
  expect_no_leak(live_before);
}

// A failure while a repeated call is being captured into a graph (the second identical call
// captures): the error surfaces, the capture is ended and dropped with every forked place joined
// back, no stream is left capturing, nothing leaks, and later calls capture again and replay
// correctly. Small `nth` hit the capture itself; larger ones its first replay.
TEST(Faults, AFailureDuringGraphCaptureLeavesNoCaptureBehind) {
  auto& inj = strata::detail::faults();
  const std::uint64_t n = 1000003;
  std::vector<std::int64_t> h(n);
  std::iota(h.begin(), h.end(), std::int64_t{-400000});
  const std::int64_t sum = std::accumulate(h.begin(), h.end(), std::int64_t{0});
  const auto live_before = live_allocations::now();
  int surfaced = 0;
  for (int place = 0; place < 4; ++place)
    for (long nth = 0; nth < 7; ++nth) {
      SCOPED_TRACE("place " + std::to_string(place) + ", call " + std::to_string(nth));
      const auto set = private_set(4);  // a fresh graph cache
      if (!set.state().use_graphs) GTEST_SKIP() << "graph replay is off (STRATA_DISABLE_GRAPHS)";
      strata::distributed_vector<std::int64_t> in(h, set);
      ASSERT_EQ(strata::reduce(in), sum);  // first sighting: eager
      const auto captures_before = set.state().graphs.captures;
      inj.arm(place, nth);
      bool threw = false;
      try {
        (void)strata::reduce(in);  // second sighting: captured, then replayed
      } catch (const strata::cuda_error& e) {
        threw = true;
        EXPECT_EQ(e.device(), 0) << e.what();
      }
      const bool fired = inj.fired() > 0;
      inj.disarm();
      EXPECT_EQ(threw, fired);
      surfaced += threw ? 1 : 0;
      for (const auto& p : set.state().places) {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
        ASSERT_EQ(cudaStreamIsCapturing(p->stream(), &status), cudaSuccess);
        EXPECT_EQ(status, cudaStreamCaptureStatusNone) << "a place was left capturing";
      }
      set.synchronize();
      for (int k = 0; k < 3; ++k) EXPECT_EQ(strata::reduce(in), sum) << "wrong after the fault";
      EXPECT_GE(set.state().graphs.captures, captures_before + 1) << "later calls are not captured";
      EXPECT_GE(set.state().graphs.replays, 1u);
    }
  EXPECT_GT(surfaced, 12);
  expect_no_leak(live_before);
}
