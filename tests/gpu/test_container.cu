// distributed_vector and distributed_span on real devices: round trips, element access at
// segment boundaries, deep copy, move, user-owned segments, and a vector over 2^31 elements.
#include "test_util.cuh"

#include <thrust/device_vector.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <numeric>

using namespace strata_test;

TEST(Container, RoundTripsOnEverySetAndSize) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto h = random_vector<std::int32_t>(n, seed);
      strata::distributed_vector<std::int32_t> v(h, s.set);
      EXPECT_EQ(v.size(), n);
      EXPECT_EQ(v.empty(), n == 0);
      EXPECT_EQ(v.places(), s.set);
      EXPECT_EQ(v.partition(), strata::partition::even(n, s.set.size()));
      EXPECT_EQ(v.to_std_vector(), h);
    }
}

TEST(Container, FillConstructorsAndValueInit) {
  for (const auto& s : sets()) {
    SCOPED_TRACE(s.name);
    strata::distributed_vector<double> a(1237, 2.5, s.set);
    EXPECT_EQ(a.to_std_vector(), std::vector<double>(1237, 2.5));
    leave_poison_behind<std::int64_t>(999, -1, s.set);  // a skipped element reads -1, not 0
    strata::distributed_vector<std::int64_t> b(999, s.set);
    EXPECT_EQ(b.to_std_vector(), std::vector<std::int64_t>(999, 0));
  }
}

TEST(Container, SegmentsDescribeTheLayout) {
  const auto set = strata::device_set::repeat(0, 3);
  strata::distributed_vector<float> v(10, 1.0f, set, strata::partition_policy::explicit_sizes({4, 0, 6}));
  const auto segs = v.segments();
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].count, 4u);
  EXPECT_EQ(segs[0].offset, 0u);
  EXPECT_EQ(segs[1].count, 0u);
  EXPECT_EQ(segs[1].data, nullptr);
  EXPECT_EQ(segs[2].offset, 4u);
  EXPECT_EQ(segs[2].count, 6u);
  for (const auto& s : segs) {
    EXPECT_EQ(s.device, 0);
    EXPECT_EQ(s.place, &s - segs.data());
  }
}

TEST(Container, GetAndSetAtSegmentBoundaries) {
  for (const auto& s : sets()) {
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1009}}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      auto h = random_vector<std::int64_t>(n, seed);
      strata::distributed_vector<std::int64_t> v(h, s.set, strata::partition_policy::weighted(std::vector<double>(s.set.size(), 1.0)));
      std::vector<std::uint64_t> probes;
      for (const auto& seg : v.segments())
        if (seg.count > 0) {
          probes.push_back(seg.offset);
          probes.push_back(seg.offset + seg.count - 1);
        }
      for (std::uint64_t i : probes) {
        EXPECT_EQ(v.get(i), h[i]) << "index " << i;
        v.set(i, -static_cast<std::int64_t>(i) - 7);
        h[i] = -static_cast<std::int64_t>(i) - 7;
      }
      EXPECT_EQ(v.to_std_vector(), h);
      EXPECT_THROW(v.get(n), std::out_of_range);
      EXPECT_THROW(v.set(n + 5, 1), std::out_of_range);
    }
  }
}

TEST(Container, DeepCopyIsIndependentAndMoveIsCheap) {
  for (const auto& s : sets()) {
    SCOPED_TRACE(s.name);
    const auto h = random_vector<float>(4099, fresh_seed());
    strata::distributed_vector<float> a(h, s.set);
    strata::distributed_vector<float> b(a);
    EXPECT_EQ(b.partition(), a.partition());
    for (std::size_t i = 0; i < a.segments().size(); ++i)
      if (a.segments()[i].count) EXPECT_NE(a.segments()[i].data, b.segments()[i].data);
    a.set(0, -1.0f);
    a.set(4098, -2.0f);
    EXPECT_EQ(b.to_std_vector(), h);
    const auto before = b.segments();
    strata::distributed_vector<float> c(std::move(b));
    EXPECT_EQ(c.segments()[0].data, before[0].data);
    EXPECT_EQ(c.to_std_vector(), h);
    EXPECT_EQ(b.size(), 0u);
    EXPECT_THROW(b.places(), std::invalid_argument);
    EXPECT_THROW(strata::reduce(b), std::invalid_argument);
    b = c;  // a moved-from container can be assigned again
    EXPECT_EQ(b.to_std_vector(), h);
  }
}

TEST(Container, AssignFromHostChecksTheSize) {
  const auto set = strata::device_set::repeat(0, 4);
  strata::distributed_vector<int> v(100, set);
  std::vector<int> h(100);
  std::iota(h.begin(), h.end(), 3);
  v = h;
  EXPECT_EQ(v.to_std_vector(), h);
  EXPECT_THROW(v = std::vector<int>(99), std::invalid_argument);
  EXPECT_EQ(v.to_std_vector(), h);  // nothing was written
}

TEST(Container, UserOwnedSegmentsThroughSpan) {
  const auto set = strata::device_set::repeat(0, 3);
  const std::vector<std::uint64_t> counts = {5, 0, 1000};
  std::vector<int*> bufs(3, nullptr);
  for (std::size_t i = 0; i < 3; ++i)
    if (counts[i]) ASSERT_EQ(cudaMalloc(&bufs[i], counts[i] * sizeof(int)), cudaSuccess);
  std::vector<int> all(1005);
  std::iota(all.begin(), all.end(), -500);
  ASSERT_EQ(cudaMemcpy(bufs[0], all.data(), 5 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(bufs[2], all.data() + 5, 1000 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);

  strata::distributed_span<int> span(set, {{0, bufs[0], 5}, {0, nullptr, 0}, {0, bufs[2], 1000}});
  EXPECT_EQ(span.size(), 1005u);
  EXPECT_EQ(span.segment_at(2).offset, 5u);
  EXPECT_EQ(strata::reduce(span), std::accumulate(all.begin(), all.end(), 0));
  strata::distributed_vector<int> copy(1005, set);
  strata::copy(span, copy);
  EXPECT_EQ(copy.to_std_vector(), all);

  // The same layout from thrust::device_vectors, in one line.
  std::vector<thrust::device_vector<int>> dv;
  dv.emplace_back(all.begin(), all.begin() + 5);
  dv.emplace_back();
  dv.emplace_back(all.begin() + 5, all.end());
  const auto over = strata::span_over(set, dv);
  EXPECT_EQ(over.size(), 1005u);
  EXPECT_EQ(over.partition().count(1), 0u);
  EXPECT_EQ(strata::reduce(over), std::accumulate(all.begin(), all.end(), 0));
  poison(copy);
  strata::copy(over, copy);
  EXPECT_EQ(copy.to_std_vector(), all);
  dv.pop_back();
  EXPECT_THROW((void)strata::span_over(set, dv), std::invalid_argument) << "two containers for three places";

  // Validation: wrong count of segments, wrong device, null pointer with elements, host memory.
  EXPECT_THROW(strata::distributed_span<int>(set, {{0, bufs[0], 5}}), std::invalid_argument);
  EXPECT_THROW(strata::distributed_span<int>(set, {{0, bufs[0], 5}, {0, nullptr, 3}, {0, bufs[2], 1}}),
               std::invalid_argument);
  EXPECT_THROW(strata::distributed_span<int>(set, {{1, bufs[0], 5}, {0, nullptr, 0}, {0, bufs[2], 1}}),
               std::invalid_argument);
  EXPECT_THROW(strata::distributed_span<int>(set, {{0, all.data(), 5}, {0, nullptr, 0}, {0, bufs[2], 1}}),
               std::invalid_argument);
  for (int* p : bufs) cudaFree(p);
}

TEST(Container, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 12345;
  for (std::size_t k : {1, 3}) {
    const auto set = strata::device_set::repeat(0, k);
    std::vector<std::uint8_t> h(n);
    std::mt19937_64 g(fresh_seed());
    for (auto& x : h) x = static_cast<std::uint8_t>(g());
    strata::distributed_vector<std::uint8_t> v(h, set);
    EXPECT_EQ(v.get(n - 1), h[n - 1]);
    EXPECT_EQ(v.get(1ull << 31), h[1ull << 31]);
    const auto back = v.to_std_vector();
    EXPECT_TRUE(back == h) << k << " places";
  }
}

TEST(DeviceSet, PlacesStreamsAndPeerMatrix) {
  const auto set = strata::device_set::repeat(0, 4);
  EXPECT_EQ(set.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(set.device(i), 0);
    // One device: every place reaches every other directly, unless STRATA_DISABLE_P2P forces staging.
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(set.direct_access(i, j), i == j || !set.host_staging_forced());
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(set.stream(i), set.stream(j));
  }
  EXPECT_THROW(set.device(4), std::out_of_range);
  strata::device_set_options o;
  o.force_host_staging = true;
  const auto staged = strata::device_set::repeat(0, 2, o);
  EXPECT_FALSE(staged.direct_access(0, 1));
  EXPECT_TRUE(staged.direct_access(1, 1));
  const auto all = strata::device_set::all();
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = 0; j < all.size(); ++j) {
      int can = 0;
      ASSERT_EQ(cudaDeviceCanAccessPeer(&can, all.device(i), all.device(j)), cudaSuccess);
      if (i != j) EXPECT_EQ(all.peer_access_enabled(all.device(i), all.device(j)), can != 0);
    }
}

TEST(DeviceSet, GuardRestoresTheCallersDevice) {
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  const auto set = strata::device_set::all();
  strata::distributed_vector<int> v(1000, 1, set);
  (void)strata::reduce(v);
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(before, after);
}

// Issue 18: a std::vector<bool> makes a distributed_vector<bool> (it used to fail to compile:
// std::vector<bool> has no data()), and comes back out.
TEST(Container, BoolElementsFromAndToStdVectorBool) {
  for_each_set_and_size([](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<bool> h(n);
    std::uint64_t ones = 0;
    for (std::uint64_t i = 0; i < n; ++i) ones += (h[i] = (g() & 1) != 0) ? 1 : 0;
    strata::distributed_vector<bool> v(h, s.set);
    EXPECT_EQ(v.to_std_vector(), h);
    EXPECT_EQ(strata::count(v, true), ones);
    if (n > 0) EXPECT_EQ(v.get(n - 1), h[n - 1]);
    v.assign(h.begin(), h.end());
    EXPECT_EQ(v.to_std_vector(), h);
  });
}

// Issue 18: two device_set::all() (or two identical repeat()) calls give one set, so vectors made
// from each meet in one call; shared = false gives a set of its own.
TEST(DeviceSet, SetsWithTheSameDevicesAndOptionsAreOneSet) {
  const auto a = strata::device_set::all();
  const auto b = strata::device_set::all();
  EXPECT_EQ(a, b);
  strata::distributed_vector<int> x(1001, 2, a), y(1001, 3, strata::device_set::all());
  EXPECT_EQ(strata::transform_reduce(x, y, 0, cuda::std::plus<>{}, cuda::std::multiplies<>{}), 6006);
  EXPECT_EQ(strata::device_set::repeat(0, 3), strata::device_set::repeat(0, 3));
  EXPECT_NE(strata::device_set::repeat(0, 3), strata::device_set::repeat(0, 2));
  strata::device_set_options staged;
  staged.force_host_staging = true;
  if (!strata::device_set::repeat(0, 3).host_staging_forced())  // (STRATA_DISABLE_P2P makes every set staged)
    EXPECT_NE(strata::device_set::repeat(0, 3), strata::device_set::repeat(0, 3, staged));
  const auto own = private_set(3);
  EXPECT_NE(own, strata::device_set::repeat(0, 3));
  EXPECT_NE(own, private_set(3));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NE(own.stream(i), strata::device_set::repeat(0, 3).stream(i));
}

// A set over streams the user made: Strata's work runs on them, so it follows what the user
// enqueued there without any synchronisation (a memset of segment 0 enqueued, not waited for,
// then a reduce and a scan see it), a nosync call is finished once the user's stream is, and the
// streams outlive the set. Bad streams are refused before any place is made.
TEST(DeviceSet, OverYourOwnStreams) {
  std::vector<cudaStream_t> mine(3);
  for (auto& st : mine) ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  {
    strata::device_set_options o;
    o.streams = mine;
    const auto set = strata::device_set::repeat(0, 3, o);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(set.stream(i), mine[i]);
    EXPECT_NE(set, strata::device_set::repeat(0, 3, o)) << "never shared";
    const std::uint64_t n = 300007;
    const auto h = random_vector<std::int32_t>(n, fresh_seed());
    strata::distributed_vector<std::int32_t> x(h, set);
    const auto s0 = x.segments()[0];
    // A slow producer: the user's stream is held 300 ms by a host function before its memset, so
    // a reduce that did not run on that stream would read the old values.
    ASSERT_EQ(cudaLaunchHostFunc(mine[0], [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); },
                                 nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(s0.data, 0, s0.count * sizeof(std::int32_t), mine[0]), cudaSuccess);
    std::int64_t want = 0;
    for (std::uint64_t i = s0.count; i < n; ++i) want += h[i];
    EXPECT_EQ(strata::reduce(x, std::int64_t{0}), want) << "the reduce follows the user's memset";
    strata::distributed_vector<std::int64_t> y(n, set);
    strata::inclusive_scan(x, y, cuda::std::plus<std::int64_t>{}, strata::nosync);
    for (auto st : mine) ASSERT_EQ(cudaStreamSynchronize(st), cudaSuccess);  // the user's own wait
    std::int64_t acc = 0;
    std::vector<std::int64_t> sums(n);
    for (std::uint64_t i = 0; i < n; ++i) sums[i] = acc += (i < s0.count ? 0 : h[i]);
    EXPECT_TRUE(y.to_std_vector() == sums) << "a nosync scan, finished by synchronising the user's streams";
  }
  for (auto st : mine) {
    EXPECT_EQ(cudaStreamQuery(st), cudaSuccess) << "the set left the user's stream alive";
    EXPECT_EQ(cudaStreamDestroy(st), cudaSuccess);
  }
  strata::device_set_options bad;
  bad.streams = {cudaStreamLegacy, cudaStreamLegacy, cudaStreamLegacy};
  EXPECT_THROW((void)strata::device_set::repeat(0, 3, bad), std::invalid_argument) << "default streams";
  bad.streams.resize(2);
  EXPECT_THROW((void)strata::device_set::repeat(0, 3, bad), std::invalid_argument) << "two streams for three places";
}

// Issue 19: the measurement runs, gives positive figures, is cached in the set, and the measured
// policy over places of one GPU is the even layout.
TEST(DeviceSet, MeasuredTopologyAndPolicy) {
  strata::topology_options quick;
  quick.bandwidth_bytes = std::size_t{32} << 20;
  quick.repeats = 2;
  for (bool staged : {false, true}) {
    SCOPED_TRACE(staged ? "host staging" : "direct");
    strata::device_set_options o;
    o.force_host_staging = staged;
    o.shared = false;
    const auto set = strata::device_set::repeat(0, 3, o);
    const strata::topology& t = strata::measure_topology(set, quick);
    ASSERT_EQ(t.places(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_GT(t.memory_gbps[i], 100.0) << "an H100/H200-class GPU copies at TB/s";
      EXPECT_EQ(t.memory_gbps[i], t.memory_gbps[0]) << "one device, one figure";
      for (std::size_t j = 0; j < 3; ++j) {
        EXPECT_GT(t.copy(i, j), 0.0);
        EXPECT_GT(t.latency(i, j), 0.0);
        EXPECT_LT(t.latency(i, j), 10000.0);
        EXPECT_EQ(t.direct[i * 3 + j] != 0, set.direct_access(i, j));
      }
    }
    if (!set.host_staging_forced()) EXPECT_GT(t.copy(0, 1), 100.0);
    EXPECT_EQ(&strata::measure_topology(set), &t) << "cached";
    EXPECT_EQ(strata::measured_partition_policy(set).apply(1000003, 3), strata::partition::even(1000003, 3));
    std::printf("%s: memory %.0f GB/s, copy 0->1 %.0f GB/s, latency %.1f us, measured in %.3f s\n",
                staged ? "staged" : "direct", t.memory_gbps[0], t.copy(0, 1), t.latency(0, 1), t.seconds);
  }
}

// ---- the container memory cache (strata::set_memory_caching) -----------------------------------

namespace {

// The cache on for a scope, off (and returned) after it.
struct caching_on {
  caching_on() { strata::set_memory_caching(true); }
  ~caching_on() { strata::set_memory_caching(false); }
  caching_on(const caching_on&) = delete;
  caching_on& operator=(const caching_on&) = delete;
};


}  // namespace

// Containers made in a loop with the cache on: storage reused (a container of a size seen before
// makes no cudaMalloc, and the cache shrinks while it holds a kept block), every algorithm that
// moves data sees right values on storage handed out again a moment after its last use, and
// release_memory_cache empties the cache.
TEST(Container, MemoryCacheReusesStorageInOrder) {
  const auto set = private_set(3);
  {  // The set's own scratch and temp storage, made before the count (they stay with the set).
    strata::distributed_vector<std::uint32_t> warm(1000003 + 3 * 7919, 1u, set);
    strata::distributed_vector<std::uint32_t> other(warm.size(), 2u, set, strata::partition_policy::weighted({0, 1, 3}));
    strata::copy(warm, other);
    (void)strata::redistribute(warm, strata::partition_policy::weighted({2, 0, 1}));
    strata::sort(warm);
    (void)strata::reduce(warm, std::uint64_t{0});
  }
  const auto live_before = live_allocations::now();
  {
    caching_on on;
    EXPECT_TRUE(strata::memory_caching());
    for (int round = 0; round < 12; ++round) {
      const std::uint64_t n = 1000003 + static_cast<std::uint64_t>(round % 4) * 7919;
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE("round " + std::to_string(round) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed));
      auto h = random_vector<std::uint32_t>(n, seed);
      strata::distributed_vector<std::uint32_t> v(h, set);
      strata::distributed_vector<std::uint32_t> y(n, 0xdeadbeefu, set, strata::partition_policy::weighted({0, 1, 3}));
      strata::copy(v, y);
      EXPECT_EQ(y.to_std_vector(), h);
      const auto r = strata::redistribute(v, strata::partition_policy::weighted({2, 0, 1}));
      EXPECT_EQ(r.to_std_vector(), h);
      strata::sort(v);
      std::sort(h.begin(), h.end());
      EXPECT_EQ(v.to_std_vector(), h);
    }
    const std::size_t cached = strata::memory_cache_bytes();
    EXPECT_GE(cached, 3 * 1000003 * sizeof(std::uint32_t)) << "the freed containers were not kept";
    {
      const auto mallocs = strata::detail::counters().device_allocs.load();
      strata::distributed_vector<std::uint32_t> again(1000003, 5u, set);
      EXPECT_EQ(strata::detail::counters().device_allocs.load(), mallocs) << "a container of a size seen before made a cudaMalloc";
      EXPECT_LT(strata::memory_cache_bytes(), cached) << "a new container did not come from the cache";
      EXPECT_EQ(strata::reduce(again, std::uint64_t{0}), 5u * 1000003u);
    }
    strata::release_memory_cache();
    EXPECT_EQ(strata::memory_cache_bytes(), 0u);
  }
  EXPECT_FALSE(strata::memory_caching());
  expect_no_leak(live_before);
}
