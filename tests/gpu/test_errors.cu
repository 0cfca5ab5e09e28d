// The error model (docs/errors.md): a catalogue of bad input, each case asserting the exception
// type and a message that names the problem, checked before any device work (outputs stay as
// they were); out of memory on one place; two host threads on one device_set; the container
// memory cache giving way under memory pressure.
#include "test_util.cuh"

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

using namespace strata_test;

namespace {

struct catalogue_case {
  const char* name;
  std::function<void()> call;
  const char* needle;
};

template <class E>
void expect_throws(const catalogue_case& c) {
  try {
    c.call();
    ADD_FAILURE() << c.name << ": no exception";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos)
        << c.name << ": message '" << e.what() << "' does not mention '" << c.needle << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << c.name << ": wrong exception type: " << e.what();
  }
}

struct twice_fn {
  __host__ __device__ int operator()(int x) const { return 2 * x; }
};
struct add_fn {
  __host__ __device__ int operator()(int x, int y) const { return x + y; }
};
struct below_fn {
  std::int64_t k;
  __host__ __device__ bool operator()(std::int64_t x) const { return x < k; }
};

// Runs `f` on a thread of its own; what it throws lands in `*error`. (An exception escaping a
// std::thread would end the whole test binary instead of failing one test.)
template <class F>
std::thread guarded_thread(std::string* error, F f) {
  return std::thread([error, f]() mutable {
    try {
      f();
    } catch (const std::exception& e) {
      *error = e.what();
    } catch (...) {
      *error = "an exception not derived from std::exception";
    }
  });
}

}  // namespace

TEST(Errors, CatalogueOfBadInput) {
  const int n_dev = strata::visible_device_count();
  const auto set = strata::device_set::repeat(0, 3);
  const auto other_set = private_set(3);  // equal devices, but another set
  strata::distributed_vector<int> a(100, 1, set), b(100, 2, set), shorter(99, 3, set);
  strata::distributed_vector<int> skewed(100, 4, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  strata::distributed_vector<int> elsewhere(100, 5, other_set);
  strata::distributed_vector<int> moved(10, 6, set);
  strata::distributed_vector<int> taker(std::move(moved));
  int* raw = nullptr;
  ASSERT_EQ(cudaMalloc(&raw, 64 * sizeof(int)), cudaSuccess);
  std::vector<int> host(64);

  const std::vector<catalogue_case> invalid = {
      {"empty device list", [] { strata::device_set s(std::vector<int>{}); }, "list of devices is empty"},
      {"repeat with 0 places", [] { strata::device_set::repeat(0, 0); }, "number of places must be positive"},
      {"too many places", [] { strata::device_set::repeat(0, 65); }, "at most 64"},
      {"weights all zero", [&] { strata::distributed_vector<int> v(10, set, strata::partition_policy::weighted({0, 0, 0})); },
       "at least one weight must be positive"},
      {"negative weight", [&] { strata::distributed_vector<int> v(10, set, strata::partition_policy::weighted({1, -2, 1})); },
       "weight 1 is negative"},
      {"NaN weight", [&] { strata::distributed_vector<int> v(10, set, strata::partition_policy::weighted({1, 1, std::nan("")})); },
       "weight 2 is NaN"},
      {"weights per place", [&] { strata::distributed_vector<int> v(10, set, strata::partition_policy::weighted({1, 1})); },
       "2 weights given for 3 places"},
      {"explicit sizes sum", [&] { strata::distributed_vector<int> v(10, set, strata::partition_policy::explicit_sizes({1, 2, 3})); },
       "sum to 6, not to the 10"},
      {"explicit sizes per place", [&] { strata::distributed_vector<int> v(10, set, strata::partition_policy::explicit_sizes({10})); },
       "1 sizes given for 3 places"},
      {"assign wrong size", [&] { a = std::vector<int>(7); }, "host range has 7 elements but the container has 100"},
      {"transform sizes", [&] { strata::transform(a, shorter, twice_fn{}); }, "different sizes (100 and 99"},
      {"transform partitions", [&] { strata::transform(a, skewed, twice_fn{}); }, "partitioned differently"},
      {"transform device sets", [&] { strata::transform(a, elsewhere, twice_fn{}); }, "different device_sets"},
      {"binary transform sizes", [&] { strata::transform(a, shorter, b, add_fn{}); }, "different sizes"},
      {"dot sizes", [&] { (void)strata::transform_reduce(a, shorter, 0, cuda::std::plus<>{}, add_fn{}); }, "different sizes"},
      {"equal partitions", [&] { (void)strata::equal(a, skewed); }, "partitioned differently"},
      {"scan sizes", [&] { strata::inclusive_scan(a, shorter); }, "different sizes"},
      {"exclusive scan device sets", [&] { strata::exclusive_scan(a, elsewhere, 0); }, "different device_sets"},
      {"copy sizes", [&] { strata::copy(a, shorter); }, "different sizes"},
      {"moved-from reduce", [&] { (void)strata::reduce(moved); }, "no device_set"},
      {"moved-from places", [&] { (void)moved.places(); }, "no device_set"},
      {"moved-from fill", [&] { strata::fill(moved, 1); }, "no device_set"},
      {"default span count_if", [&] { (void)strata::count(strata::distributed_span<int>{}, 1); }, "no device_set"},
      {"span segment count", [&] { strata::distributed_span<int> s(set, {{0, raw, 4}}); }, "1 segments given for a device_set of 3"},
      {"span wrong device", [&] { strata::distributed_span<int> s(set, {{0, raw, 4}, {n_dev, raw, 4}, {0, nullptr, 0}}); },
       "segment 1 is on device"},
      {"span null pointer", [&] { strata::distributed_span<int> s(set, {{0, raw, 4}, {0, nullptr, 4}, {0, nullptr, 0}}); },
       "segment 1 has 4 elements and a null pointer"},
      {"span host memory", [&] { strata::distributed_span<int> s(set, {{0, host.data(), 4}, {0, nullptr, 0}, {0, nullptr, 0}}); },
       "host memory"},
      {"copy_from_host null", [&] { strata::copy_from_host(static_cast<const int*>(nullptr), a); }, "host pointer is null"},
      {"copy_to_host null", [&] { strata::copy_to_host(a, static_cast<int*>(nullptr)); }, "host pointer is null"},
      {"overlapping transform",
       [&] {
         strata::distributed_span<int> lo(set, {{0, raw, 32}, {0, nullptr, 0}, {0, nullptr, 0}});
         strata::distributed_span<int> hi(set, {{0, raw + 1, 32}, {0, nullptr, 0}, {0, nullptr, 0}});
         strata::transform(lo, hi, twice_fn{});
       },
       "overlap in memory"},
      {"overlapping copy",
       [&] {
         strata::distributed_span<int> x(set, {{0, raw, 16}, {0, raw + 16, 16}, {0, nullptr, 0}});
         strata::distributed_span<int> y(set, {{0, raw + 8, 16}, {0, raw + 24, 16}, {0, nullptr, 0}});
         strata::copy(x, y);
       },
       "overlap in memory"},
  };
  for (const auto& c : invalid) expect_throws<std::invalid_argument>(c);

  const std::vector<catalogue_case> out_of_range = {
      {"ordinal too large", [&] { strata::device_set s{n_dev}; }, "is out of range (1 CUDA device is visible)"},
      {"negative ordinal", [] { strata::device_set s{-1}; }, "device ordinal -1 is out of range"},
      {"get past the end", [&] { (void)a.get(100); }, "index 100 is out of range for 100 elements"},
      {"set past the end", [&] { a.set(1000, 1); }, "index 1000 is out of range"},
      {"place past the end", [&] { (void)set.device(3); }, "place 3 is out of range for 3 places"},
      {"owner past the end", [&] { (void)a.partition().owner(100); }, "index 100 is out of range"},
  };
  for (auto c : out_of_range) {
    if (n_dev != 1 && std::string(c.name) == "ordinal too large") c.needle = "CUDA devices are visible";
    expect_throws<std::out_of_range>(c);
  }

  expect_throws<std::logic_error>({"get on an empty future", [] { strata::future<int> f; (void)f.get(); }, "no state"});

  // Nothing was written by any rejected call.
  EXPECT_EQ(a.to_std_vector(), std::vector<int>(100, 1));
  EXPECT_EQ(b.to_std_vector(), std::vector<int>(100, 2));
  EXPECT_EQ(shorter.to_std_vector(), std::vector<int>(99, 3));
  EXPECT_EQ(skewed.to_std_vector(), std::vector<int>(100, 4));
  EXPECT_EQ(elsewhere.to_std_vector(), std::vector<int>(100, 5));
  EXPECT_EQ(taker.to_std_vector(), std::vector<int>(10, 6));
  cudaFree(raw);
}

TEST(Errors, OutOfMemoryOnOnePlaceLeavesEveryDeviceAsItWas) {
  const auto set = strata::device_set::repeat(0, 3);
  std::size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  // Places 0 and 1 get 64 MiB each, place 2 more than the whole device.
  const std::uint64_t huge = total / sizeof(float) + 1;
  const std::uint64_t small = (64ull << 20) / sizeof(float);
  const auto attempt = [&] {
    try {
      strata::distributed_vector<float> v(small * 2 + huge, set, strata::partition_policy::explicit_sizes({small, small, huge}));
      ADD_FAILURE() << "allocating more than the device holds succeeded";
    } catch (const strata::cuda_error& e) {
      EXPECT_EQ(e.code(), cudaErrorMemoryAllocation);
      EXPECT_EQ(e.device(), 0);
      EXPECT_NE(std::string(e.what()).find("on device 0"), std::string::npos) << e.what();
    }
  };
  // The first failure also settles what CUDA itself sets up lazily (module loading, the
  // allocator's own bookkeeping), which cudaMemGetInfo would otherwise count.
  attempt();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  const auto live_before = live_allocations::now();
  attempt();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_EQ(free_after, free_before);
  expect_no_leak(live_before);
  // And the set still works.
  strata::distributed_vector<int> ok(1000, 2, set);
  EXPECT_EQ(strata::reduce(ok), 2000);
}

// Two threads, each with its own vectors on one shared set, run reductions, async counts, scans
// and element reads. With `own_vectors` each thread allocates and frees its vectors itself, so
// one thread's cudaMalloc/cudaFree meet the other's launches and captures; without, the vectors
// are made before the threads start and freed after both have joined.
void two_threads_share_one_set(bool own_vectors) {
  using vec = strata::distributed_vector<std::int64_t>;
  const auto set = strata::device_set::repeat(0, 4);
  struct job {
    std::vector<std::int64_t> h;
    std::int64_t want = 0;
    std::uint64_t count7 = 0;  // elements equal to h[7]
    std::optional<vec> v, out;
    int failures = 0;
    std::string error;
  };
  job jobs[2];
  for (job& j : jobs) {
    j.h = random_vector<std::int64_t>(300007, fresh_seed());
    for (auto x : j.h) j.want += x;
    j.count7 = static_cast<std::uint64_t>(std::count(j.h.begin(), j.h.end(), j.h[7]));
  }
  const auto make_vectors = [&set](job& j) {
    j.v.emplace(j.h, set);
    j.out.emplace(j.h.size(), set);
  };
  const auto run = [&](job& j) {
    if (own_vectors) make_vectors(j);
    for (int it = 0; it < 40; ++it) {
      if (strata::reduce(*j.v) != j.want) ++j.failures;
      auto f = strata::count_async(*j.v, j.h[7]);
      strata::inclusive_scan(*j.v, *j.out);
      if (j.out->get(j.h.size() - 1) != j.want) ++j.failures;
      if (f.get() != j.count7) ++j.failures;
    }
    if (own_vectors) {  // freed while the other thread may still run
      j.v.reset();
      j.out.reset();
    }
  };
  if (!own_vectors)
    for (job& j : jobs) make_vectors(j);
  std::vector<std::thread> threads;
  for (job& j : jobs) threads.push_back(guarded_thread(&j.error, [&run, &j] { run(j); }));
  for (std::thread& t : threads) t.join();
  for (const job& j : jobs) {
    EXPECT_EQ(j.error, "");
    EXPECT_EQ(j.failures, 0);
  }
}

TEST(Concurrency, TwoHostThreadsShareOneDeviceSet) { two_threads_share_one_set(true); }

TEST(Concurrency, TwoHostThreadsShareOneDeviceSetWithVectorsMadeFirst) { two_threads_share_one_set(false); }

// One thread makes calls that are captured into graphs (each predicate state is a new graph key,
// captured on its second call) while another reads, writes and synchronises the same set. A copy
// or a wait on a place stream in the middle of a capture would break it and fail both calls, so
// element access and synchronize must take the set's lock like the algorithms do.
TEST(Concurrency, ElementAccessAndSynchronizeStayOutOfAnotherThreadsCapture) {
  const auto set = strata::device_set::repeat(0, 4);
  const std::uint64_t n = 100003;
  std::vector<std::int64_t> h(n);
  for (std::uint64_t i = 0; i < n; ++i) h[i] = static_cast<std::int64_t>((i * 7919) % 1000);
  strata::distributed_vector<std::int64_t> v(h, set), w(std::vector<std::int64_t>(n, 5), set);
  const auto captures_before = set.state().graphs.captures;
  std::atomic<bool> done{false};
  int wrong_counts = 0, wrong_reads = 0, accesses = 0;
  std::string e1, e2;
  // (Fewer under the sanitizers; without the lock the first overlap already fails.)
  const std::int64_t keys = quick_mode() ? 48 : 240;
  std::thread capturer = guarded_thread(&e1, [&] {
    for (std::int64_t k = 0; k < keys; ++k)
      for (int rep = 0; rep < 2; ++rep)
        if (strata::count_if(v, below_fn{k}) != static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), below_fn{k})))
          ++wrong_counts;
    done = true;
  });
  std::thread accessor = guarded_thread(&e2, [&] {
    for (std::uint64_t j = 0; !done; j = (j + 30011) % n, ++accesses) {
      w.set(j, static_cast<std::int64_t>(j));
      if (w.get(j) != static_cast<std::int64_t>(j)) ++wrong_reads;
      if (accesses % 8 == 0) set.synchronize();
    }
  });
  capturer.join();
  done = true;  // (in case the capturer threw)
  accessor.join();
  EXPECT_EQ(e1, "");
  EXPECT_EQ(e2, "");
  EXPECT_EQ(wrong_counts, 0);
  EXPECT_EQ(wrong_reads, 0);
  EXPECT_GE(set.state().graphs.captures, captures_before + static_cast<std::uint64_t>(keys) * 5 / 6)
      << "the calls were not captured";
  EXPECT_GT(accesses, keys / 2) << "the threads hardly overlapped";
}

// ---- the container memory cache under memory pressure ------------------------------------------
// (Here, not in gpu_container: gpu_errors runs alone (RUN_SERIAL), and this test holds nearly all
// of the device's memory for moments, which would starve tests running beside it.)

namespace {
struct scrambled {  // a permutation of the indices, as keys
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const { return static_cast<std::uint32_t>(i * 2654435761u); }
};
}  // namespace

// What the cache keeps gives way when memory runs short: Strata's own cudaMalloc (here a sort's
// scratch) and a container bigger than any kept block both succeed while the cache holds nearly
// all of the device's free memory (without the retry, both would run out of memory).
TEST(Errors, MemoryCacheGivesWayWhenMemoryRunsShort) {
  STRATA_SKIP_IF_QUICK();
  strata::set_memory_caching(true);
  struct off_at_exit {
    ~off_at_exit() { strata::set_memory_caching(false); }
  } off;
  const auto set = private_set(1);
  const std::uint64_t n = 1ull << 29;  // 2 GiB of keys: the sort needs as much scratch
  strata::distributed_vector<std::uint32_t> keys(n, set, strata::partition_policy::even(), strata::no_init);
  strata::tabulate(keys, scrambled{});
  // Fills the cache with all but 1 GiB of what is free (other test processes may take memory
  // meanwhile: a few tries). The device stays this full only until the next Strata allocation.
  const auto fill_cache = [&](std::size_t leave) {
    for (int attempt = 0; attempt < 4; ++attempt) {
      std::size_t free_bytes = 0, total = 0;
      EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
      if (free_bytes <= leave) return false;
      try {
        strata::distributed_vector<char> hog((free_bytes - leave), set, strata::partition_policy::even(), strata::no_init);
        return true;  // (freed into the cache here)
      } catch (const strata::cuda_error&) {
      }
    }
    return false;
  };
  ASSERT_TRUE(fill_cache(1ull << 30));
  EXPECT_GT(strata::memory_cache_bytes(), 2ull << 30);
  strata::sort(keys);  // 2 GiB of scratch, more than is free outside the cache
  const auto sorted = keys.to_std_vector();
  EXPECT_TRUE(std::is_sorted(sorted.begin(), sorted.end()));
  EXPECT_EQ(sorted.front(), 0u);
  // A container bigger than the block the cache keeps, with less free outside the cache.
  ASSERT_TRUE(fill_cache(1ull << 30));
  const std::size_t kept = strata::memory_cache_bytes();
  strata::distributed_vector<char> bigger(kept + (512ull << 20), set, strata::partition_policy::even(), strata::no_init);
  EXPECT_EQ(bigger.size(), kept + (512ull << 20));
}
