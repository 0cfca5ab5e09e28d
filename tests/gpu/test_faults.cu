// Fault injection (built with STRATA_ENABLE_FAULT_INJECTION): the Nth checked CUDA call made
// for a chosen place reports a failure. Every algorithm must surface it as strata::cuda_error
// naming the device, leave the other places' work to drain without hanging, leak nothing, and
// work normally afterwards.
#include "test_util.cuh"

#include <algorithm>
#include <functional>
#include <cstdio>
#include <numeric>

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

}  // namespace

class Faults : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(GraphsOnAndOff, Faults, ::testing::Bool());

TEST_P(Faults, EveryAlgorithmSurfacesAnInjectedFailureAndRecovers) {
  auto& inj = strata::detail::faults();
  strata::device_set_options options;
  options.use_graphs = GetParam();  // with graphs, the loop below exercises replays
  const auto set = private_set(4, options);
  // Under the sanitizers (STRATA_TEST_QUICK) a tenth of the size: the loop below makes the same
  // checked CUDA calls at either size (the injector counts calls, not elements), and racecheck
  // over 1000003 elements ran past its 240 s cap (H100, 2026-12-05).
  const std::uint64_t n = quick_mode() ? 100003 : 1000003;
  std::vector<std::int64_t> h(n);
  // From an even value: the odd elements are n / 2 of them (count_if below).
  std::iota(h.begin(), h.end(), -static_cast<std::int64_t>((n / 2) & ~std::uint64_t{1}));
  strata::distributed_vector<std::int64_t> in(h, set), out(n, set), other(n, set, strata::partition_policy::weighted({1, 2, 3, 4}));
  strata::distributed_vector<std::int64_t> scratch(n, set);
  const std::int64_t sum = std::accumulate(h.begin(), h.end(), std::int64_t{0});
  const auto odd = static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), [](std::int64_t x) { return (x & 1) != 0; }));

  // name, the call, and a check that the library computes correctly afterwards.
  const std::vector<std::pair<const char*, std::function<bool()>>> algos = {
      {"reduce", [&] { return strata::reduce(in) == sum; }},
      {"reduce_async", [&] { return strata::reduce_async(in, std::int64_t{1}, cuda::std::plus<>{}).get() == sum + 1; }},
      {"count_if", [&] { return strata::count_if(in, is_odd{}) == n / 2; }},
      {"min_element", [&] { return strata::min_element(in).index == 0; }},
      {"minmax", [&] { return strata::minmax(in).max.index == n - 1; }},
      {"dot", [&] { return strata::transform_reduce(in, in, std::int64_t{0}, cuda::std::plus<>{}, mul_fn{}) > 0; }},
      {"equal", [&] { return strata::equal(in, in); }},
      {"inclusive_scan", [&] { strata::inclusive_scan(in, out); return out.get(n - 1) == sum; }},
      {"exclusive_scan", [&] { strata::exclusive_scan(in, out, std::int64_t{0}); return out.get(n - 1) == sum - h[n - 1]; }},
      {"transform", [&] { strata::transform(in, out, twice_fn{}); return out.get(n - 1) == 2 * h[n - 1]; }},
      {"fill", [&] { strata::fill(out, 3); return out.get(n / 2) == 3; }},
      {"copy relayout", [&] { strata::copy(in, other); return other.get(n - 2) == h[n - 2]; }},
      // Every other public call that does device work (the loop used to cover only the 12 above).
      {"for_each", [&] { strata::for_each(out, add_one{}); return true; }},
      {"iota", [&] { strata::iota(out, std::int64_t{4}); return out.get(n - 1) == std::int64_t(n) + 3; }},
      {"tabulate", [&] { strata::tabulate(out, twice_index{}); return out.get(n - 1) == 2 * std::int64_t(n - 1); }},
      {"for_each_indexed", [&] { strata::fill(out, 0); strata::for_each_indexed(out, add_index{}); return out.get(7) == 7; }},
      {"binary transform", [&] { strata::transform(in, in, out, mul_fn{}); return out.get(n - 1) == h[n - 1] * h[n - 1]; }},
      {"zip transform", [&] { strata::transform(strata::zip(in, in, in), out, sum3{}); return out.get(3) == 3 * h[3]; }},
      {"zip for_each", [&] { strata::for_each(strata::zip(out, in), assign_second{}); return out.get(5) == h[5]; }},
      {"for_each_segment", [&] {
         strata::for_each_segment(strata::zip(out, in), [](cudaStream_t st, auto o, auto i) {
           STRATA_CUDA_CHECK(cudaMemcpyAsync(o.data, i.data, i.count * sizeof(std::int64_t), cudaMemcpyDeviceToDevice, st));
         });
         return out.get(n - 1) == h[n - 1];
       }},
      {"copy_from_host", [&] { strata::copy_from_host(h.data(), out); return out.get(n / 3) == h[n / 3]; }},
      {"copy_to_host", [&] { std::vector<std::int64_t> b(n); strata::copy_to_host(in, b.data()); return b == h; }},
      {"get", [&] { return in.get(n - 1) == h[n - 1]; }},
      {"set", [&] { out.set(n - 1, 42); return out.get(n - 1) == 42; }},
      {"count", [&] { return strata::count(in, h[9]) == 1; }},
      {"all_of", [&] { return !strata::all_of(in, is_odd{}); }},
      {"any_of", [&] { return strata::any_of(in, is_odd{}); }},
      {"none_of", [&] { return !strata::none_of(in, is_odd{}); }},
      {"transform_reduce zip", [&] { return strata::transform_reduce(strata::zip(in, in), std::int64_t{0}, cuda::std::plus<>{}, mul_fn{}) > 0; }},
      {"reduce with init", [&] { return strata::reduce(in, std::int64_t{2}) == sum + 2; }},
      {"inclusive_scan with init", [&] { strata::inclusive_scan(in, out, cuda::std::plus<>{}, std::int64_t{1}); return out.get(n - 1) == sum + 1; }},
      {"copy constructor", [&] { strata::distributed_vector<std::int64_t> c(in); return c.get(n - 1) == h[n - 1]; }},
      {"copy assignment", [&] { strata::distributed_vector<std::int64_t> c; c = other; return c.get(0) == other.get(0); }},
      {"host constructor", [&] { strata::distributed_vector<std::int64_t> c(h, set); return c.get(n - 1) == h[n - 1]; }},
      {"fill constructor", [&] { strata::distributed_vector<std::int64_t> c(n, 5, set); return c.get(n - 1) == 5; }},
      {"copy_if", [&] { return strata::copy_if(in, out, is_odd{}).size() == odd; }},
      {"copy_if new", [&] { return strata::copy_if(in, is_odd{}).size() == odd; }},
      {"remove_if", [&] { strata::copy(in, out); return strata::remove_if(out, is_odd{}).size() == n - odd; }},
      {"unique", [&] { strata::copy(in, out); return strata::unique(out).size() == n; }},
      {"unique_copy", [&] { return strata::unique_copy(in, out).size() == n; }},
      {"partition_copy", [&] { return strata::partition_copy(in, out, scratch, is_odd{}).first.size() == odd; }},
      {"sort", [&] { strata::copy(in, out); strata::sort(out, cuda::std::greater<>{}); return out.get(0) == h[n - 1]; }},
      {"sort_by_key", [&] {
         strata::copy(in, out);
         strata::copy(in, scratch);
         strata::stable_sort_by_key(out, scratch, cuda::std::greater<>{});
         return out.get(n - 1) == h[0] && scratch.get(0) == h[n - 1];
       }},
      {"redistribute", [&] {
         const auto r = strata::redistribute(in, strata::partition_policy::weighted({1, 0, 2, 3}));
         return r.get(n - 1) == h[n - 1] && r.partition().count(1) == 0;
       }},
  };

  for (int warm = 0; warm < 3; ++warm)  // warms every cache and captures the graphs
    for (const auto& [name, call] : algos) ASSERT_TRUE(call()) << name << " is wrong before any fault";
  const auto live_before = live_allocations::now();

  const auto captures_before = set.state().graphs.captures;
  int surfaced = 0;
  for (const auto& [name, call] : algos)
    for (int place = 0; place < 4; ++place)
      for (long nth = 0; nth < 6; ++nth) {
        SCOPED_TRACE(std::string(name) + ", place " + std::to_string(place) + ", call " + std::to_string(nth));
        inj.arm(place, nth);
        bool threw = false;
        try {
          (void)call();
        } catch (const strata::cuda_error& e) {
          threw = true;
          EXPECT_EQ(e.code(), cudaErrorLaunchFailure);
          EXPECT_EQ(e.device(), 0) << e.what();
          EXPECT_NE(std::string(e.what()).find("on device 0"), std::string::npos) << e.what();
        }
        const bool fired = inj.fired > 0;
        inj.disarm();
        EXPECT_EQ(threw, fired) << "an injected failure was swallowed, or an exception came from nowhere";
        surfaced += threw ? 1 : 0;
        set.synchronize();  // the other places' work drains: no hang
        EXPECT_TRUE(call()) << name << " is wrong after a fault";
      }
  EXPECT_GT(surfaced, 250);
  std::printf("graphs: %llu captures during the fault loop, %llu replays in all\n",
              static_cast<unsigned long long>(set.state().graphs.captures - captures_before),
              static_cast<unsigned long long>(set.state().graphs.replays));
  set.synchronize();
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
      const bool fired = inj.fired > 0;
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
