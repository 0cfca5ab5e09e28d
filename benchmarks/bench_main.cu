// Strata against plain CUB (and Thrust where it has the algorithm), in one binary and run.
//
// Every throughput case is timed with CUDA events: a start event on the root stream that every
// place's stream waits on, the operation, then an event on every place's stream that the root
// waits on before its stop event, so the time spans the whole multi-place operation. Bytes are
// what the operation must move (reduce: N reads, transform: reads + writes, scan: 2N).
// Names: <impl>/<case>/<log2 n>[/<places>]; scripts/bench_ratios.py pairs each Strata case
// with the CUB case of the same size and prints the throughput ratio.
// The sorts record their phases (detail/sort/profile.cuh) for the breakdown counters.
#define STRATA_SORT_PROFILE
#include <strata/strata.cuh>

#include <benchmark/benchmark.h>
#include <cub/cub.cuh>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/binary_search.h>
#include <thrust/gather.h>
#include <thrust/find.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/tabulate.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace {

#define BENCH_CHECK(x)                                                                     \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

// device_set per place count, made once (places = 0 means every GPU).
const strata::device_set& places(int p) {
  static std::map<int, strata::device_set> sets;
  auto it = sets.find(p);
  if (it == sets.end()) it = sets.emplace(p, p == 0 ? strata::device_set::all() : strata::device_set::repeat(0, static_cast<std::size_t>(p))).first;
  return it->second;
}

// The same place counts with graph replay off: the eager path's latency.
const strata::device_set& eager_places(int p) {
  static std::map<int, strata::device_set> sets;
  auto it = sets.find(p);
  if (it == sets.end()) {
    strata::device_set_options o;
    o.use_graphs = false;
    it = sets.emplace(p, p == 0 ? strata::device_set::all(o) : strata::device_set::repeat(0, static_cast<std::size_t>(p), o)).first;
  }
  return it->second;
}

// Events spanning an operation on every place of a set (see the file comment).
class span_timer {
 public:
  explicit span_timer(const strata::device_set& s) : set_(s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      cudaEvent_t e;
      BENCH_CHECK(cudaSetDevice(s.device(i)));
      BENCH_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      ends_.push_back(e);
    }
    BENCH_CHECK(cudaSetDevice(s.device(0)));
    BENCH_CHECK(cudaEventCreate(&start_));
    BENCH_CHECK(cudaEventCreate(&stop_));
  }
  ~span_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    for (auto e : ends_) cudaEventDestroy(e);
  }
  void start() {
    BENCH_CHECK(cudaSetDevice(set_.device(0)));
    BENCH_CHECK(cudaEventRecord(start_, set_.stream(0)));
    for (std::size_t i = 1; i < set_.size(); ++i) BENCH_CHECK(cudaStreamWaitEvent(set_.stream(i), start_, 0));
  }
  // Seconds from start() to the end of all work enqueued since on every place.
  double stop() {
    for (std::size_t i = 1; i < set_.size(); ++i) {
      BENCH_CHECK(cudaSetDevice(set_.device(i)));
      BENCH_CHECK(cudaEventRecord(ends_[i], set_.stream(i)));
    }
    BENCH_CHECK(cudaSetDevice(set_.device(0)));
    for (std::size_t i = 1; i < set_.size(); ++i) BENCH_CHECK(cudaStreamWaitEvent(set_.stream(0), ends_[i], 0));
    BENCH_CHECK(cudaEventRecord(stop_, set_.stream(0)));
    BENCH_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    BENCH_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / 1e3;
  }

 private:
  const strata::device_set& set_;
  std::vector<cudaEvent_t> ends_;
  cudaEvent_t start_, stop_;
};

// Plain one-device buffers for the CUB anchors, with cached temp storage.
template <class T>
struct dbuf {
  T* p = nullptr;
  explicit dbuf(std::uint64_t n) { BENCH_CHECK(cudaMalloc(&p, std::max<std::uint64_t>(n, 1) * sizeof(T))); }
  ~dbuf() { cudaFree(p); }
};
struct temp_cache {
  void* p = nullptr;
  std::size_t bytes = 0;
  void* get(std::size_t b) {
    if (b > bytes) {
      cudaFree(p);
      BENCH_CHECK(cudaMalloc(&p, b));
      bytes = b;
    }
    return p;
  }
  ~temp_cache() { cudaFree(p); }
};

struct saxpy_fn {
  float a;
  __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};
struct positive_fn {
  __host__ __device__ bool operator()(float x) const { return x > 0.5f; }
};
struct count_positive_fn {
  __host__ __device__ std::uint64_t operator()(float x) const { return x > 0.5f ? 1u : 0u; }
};
struct dot_at {
  const float* a;
  const float* b;
  __host__ __device__ double operator()(std::uint64_t i) const { return static_cast<double>(a[i]) * b[i]; }
};
struct mul_to_double {
  __host__ __device__ double operator()(float x, float y) const { return static_cast<double>(x) * y; }
};
struct fill_gen {
  float v;
  __host__ __device__ float operator()() const { return v; }
};
struct above_two {  // never true on [0, 1): find_if reads everything
  __host__ __device__ bool operator()(float x) const { return x > 2.0f; }
};
struct run_key {  // keyed cases: runs of 16 equal int32 keys
  __host__ __device__ std::int32_t operator()(std::uint64_t i) const { return static_cast<std::int32_t>(i >> 4); }
};
struct mixed_index {  // a gather map: index i -> a well-mixed index in [0, n) (splitmix64)
  std::uint64_t n;
  __host__ __device__ std::uint32_t operator()(std::uint64_t i) const {
    std::uint64_t z = i + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<std::uint32_t>((z ^ (z >> 31)) % n);
  }
};
struct mixed_float {  // search queries over [0, n): mixed_index as a float
  std::uint64_t n;
  __host__ __device__ float operator()(std::uint64_t i) const { return static_cast<float>(mixed_index{n}(i)); }
};
struct index_float {  // non-decreasing: is_sorted reads everything
  __host__ __device__ float operator()(std::uint64_t i) const { return static_cast<float>(i); }
};

template <class T>
struct hash_value {
  __host__ __device__ T operator()(std::uint64_t i) const {
    std::uint64_t x = i * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return static_cast<T>(static_cast<double>(x % 1000003) / 1000003.0);
  }
};

// Deterministic non-trivial data (not zeros), written on the device.
template <class T>
void random_fill(T* p, std::uint64_t n, cudaStream_t s) {
  BENCH_CHECK(cub::DeviceTransform::Transform(thrust::counting_iterator<std::uint64_t>(0), p, n, hash_value<T>{}, s));
}
template <class T>
void random_fill(strata::distributed_vector<T>& v) {
  for (auto& s : v.segments())
    if (s.count) {
      BENCH_CHECK(cudaSetDevice(s.device));
      random_fill(s.data, s.count, v.places().stream(s.place));
    }
  v.places().synchronize();
}

std::uint64_t size_of(const benchmark::State& st) { return 1ull << st.range(0); }

template <class T>
struct is_future : std::false_type {};
template <class T>
struct is_future<strata::future<T>> : std::true_type {};

// The timed loop of every throughput case: `op()` enqueues one operation and may return a future
// (collected after the stop event, so the host wait is not timed) or a new container (freed after
// the stop event). Counter host_us: the host time of op() itself (for nosync calls, allocation
// and enqueueing), beside the GPU span the iteration time is.
template <class Op>
void timed_loop(benchmark::State& st, span_timer& t, Op&& op) {
  double host_us = 0;
  const auto host_since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto _ : st) {
    t.start();
    const auto t0 = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<decltype(op())>) {
      op();
      host_us += host_since(t0);
      st.SetIterationTime(t.stop());
    } else {
      auto r = op();
      host_us += host_since(t0);
      st.SetIterationTime(t.stop());
      if constexpr (is_future<decltype(r)>::value) benchmark::DoNotOptimize(r.get());
    }
  }
  if (st.iterations() > 0) st.counters["host_us"] = host_us / static_cast<double>(st.iterations());
}

void finish(benchmark::State& st, double bytes_per_op) {
  st.SetBytesProcessed(static_cast<std::int64_t>(bytes_per_op * static_cast<double>(st.iterations())));
  st.counters["elements"] = static_cast<double>(size_of(st));
}

// ---- Strata cases ----------------------------------------------------------------------

// The sum; with Reproducible, the reproducible sum of the same data (its cost against plain CUB).
template <class T, bool Reproducible = false>
void strata_reduce(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<T> v(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  random_fill(v);
  span_timer t(set);
  timed_loop(st, t, [&] {
    if constexpr (Reproducible)
      return strata::reduce_async(strata::reproducible, v, T{});
    else
      return strata::reduce_async(v);
  });
  finish(st, size_of(st) * sizeof(T));
}

struct square_f {
  __host__ __device__ float operator()(float x) const { return x * x; }
};

// A lazy input: the sum of squares through strata::transformed (no temporary), against CUB's
// TransformReduce on one buffer.
void strata_reduce_transformed(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> v(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  random_fill(v);
  span_timer t(set);
  timed_loop(st, t, [&] { return strata::reduce_async(strata::transformed(v, square_f{}), 0.0f); });
  finish(st, size_of(st) * sizeof(float));
}

void strata_dot(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> a(size_of(st), set, strata::partition_policy::even(), strata::no_init), b(a);
  random_fill(a);
  random_fill(b);
  span_timer t(set);
  timed_loop(st, t, [&] { return strata::transform_reduce_async(a, b, 0.0, cuda::std::plus<>{}, mul_to_double{}); });
  finish(st, 2.0 * size_of(st) * sizeof(float));
}

// A value-returning call that reads one float range once: `call(x)` returns its future; the data
// is random in [0, 1), or 0, 1, 2, ... with `ascending`.
template <class Call>
void strata_read_case(benchmark::State& st, Call call, bool ascending = false) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  if (ascending)
    strata::tabulate(x, index_float{});
  else
    random_fill(x);
  span_timer t(set);
  timed_loop(st, t, [&] { return call(x); });
  finish(st, size_of(st) * sizeof(float));
}

void strata_count_if(benchmark::State& st) {
  strata_read_case(st, [](const auto& x) { return strata::count_if_async(x, positive_fn{}); });
}

void strata_min_element(benchmark::State& st) {
  strata_read_case(st, [](const auto& x) { return strata::min_element_async(x); });
}

template <bool Exclusive>
void strata_scan(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> a(size_of(st), set, strata::partition_policy::even(), strata::no_init), b(a);
  random_fill(a);
  span_timer t(set);
  for (auto _ : st) {
    t.start();
    if constexpr (Exclusive)
      strata::exclusive_scan(a, b, 0.0f, cuda::std::plus<>{}, strata::nosync);
    else
      strata::inclusive_scan(a, b, cuda::std::plus<>{}, strata::nosync);
    st.SetIterationTime(t.stop());
  }
  finish(st, 2.0 * size_of(st) * sizeof(float));
}

void strata_saxpy(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init), y(x), out(x);
  random_fill(x);
  random_fill(y);
  span_timer t(set);
  timed_loop(st, t, [&] { strata::transform(x, y, out, saxpy_fn{2.0f}, strata::nosync); });
  finish(st, 3.0 * size_of(st) * sizeof(float));
}

void strata_fill(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  span_timer t(set);
  timed_loop(st, t, [&] { strata::fill(x, 1.5f, strata::nosync); });
  finish(st, size_of(st) * sizeof(float));
}

// find_if with no match (every element read; the index on the host).
void strata_find_if(benchmark::State& st) {
  strata_read_case(st, [](const auto& x) { return strata::find_if_async(x, above_two{}); });
}

// is_sorted of sorted data (every element read).
void strata_is_sorted(benchmark::State& st) {
  strata_read_case(st, [](const auto& x) { return strata::is_sorted_async(x); }, true);
}

void strata_adjacent_difference(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init), y(x);
  random_fill(x);
  span_timer t(set);
  timed_loop(st, t, [&] { strata::adjacent_difference(x, y, cuda::std::minus<>{}, strata::nosync); });
  finish(st, 2.0 * size_of(st) * sizeof(float));
}

// A gather of floats by a random map of uint32 indices (map, source, destination the same size;
// the call waits once, for the per-owner counts that check the indices).
void strata_gather(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<float> x(n, set, strata::partition_policy::even(), strata::no_init), y(x);
  strata::distributed_vector<std::uint32_t> map(n, set, strata::partition_policy::even(), strata::no_init);
  random_fill(x);
  strata::tabulate(map, mixed_index{n});
  span_timer t(set);
  timed_loop(st, t, [&] { strata::gather(map, x, y); });
  finish(st, 3.0 * n * sizeof(float));
}

// merge of two sorted halves that interleave (the even numbers and the odd ones, as floats: equal
// neighbours past 2^24), n / 2 each, into n elements; every layout even.
struct twice_float {
  std::uint64_t plus;
  __host__ __device__ float operator()(std::uint64_t i) const { return static_cast<float>(2 * i + plus); }
};
void strata_merge(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<float> a(n / 2, set, strata::partition_policy::even(), strata::no_init),
      b(n - n / 2, set, strata::partition_policy::even(), strata::no_init),
      out(n, set, strata::partition_policy::even(), strata::no_init);
  strata::tabulate(a, twice_float{0});
  strata::tabulate(b, twice_float{1});
  span_timer t(set);
  timed_loop(st, t, [&] { strata::merge(a, b, out); });
  finish(st, 2.0 * n * sizeof(float));
}

// lower_bound of n random queries into n sorted floats (0, 1, 2, ...): 64-bit indices out.
void strata_lower_bound(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<float> x(n, set, strata::partition_policy::even(), strata::no_init), q(x);
  strata::distributed_vector<std::uint64_t> out(n, set, strata::partition_policy::even(), strata::no_init);
  strata::tabulate(x, index_float{});
  strata::tabulate(q, mixed_float{n});
  span_timer t(set);
  timed_loop(st, t, [&] { strata::lower_bound(x, q, out); });
  finish(st, n * (sizeof(float) + sizeof(std::uint64_t)));
}

// Keyed cases: int32 keys in runs of 16, float values, each called as a user calls it (it waits:
// reduce_by_key's host reads the run counts).
template <bool Scan>
void strata_by_key(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<std::int32_t> k(n, set, strata::partition_policy::even(), strata::no_init), ko(k);
  strata::distributed_vector<float> v(n, set, strata::partition_policy::even(), strata::no_init), vo(v);
  strata::tabulate(k, run_key{});
  random_fill(v);
  span_timer t(set);
  if constexpr (Scan)
    timed_loop(st, t, [&] { strata::inclusive_scan_by_key(k, v, vo); });
  else
    timed_loop(st, t, [&] { strata::reduce_by_key(k, v, ko, vo); });
  finish(st, Scan ? 3.0 * n * sizeof(float) : (2.0 + 2.0 / 16) * n * sizeof(float));
}

// segmented_reduce of floats: segments of 1024 elements (Long: four segments of n/4); the values
// come back to the host, so the call waits.
std::vector<std::uint64_t> bench_offsets(std::uint64_t n, bool long_segments) {
  std::vector<std::uint64_t> o;
  const std::uint64_t step = long_segments ? n / 4 : 1024;
  for (std::uint64_t k = 0; k < n; k += step) o.push_back(k);
  o.push_back(n);
  return o;
}
template <bool Long>
void strata_segmented_reduce(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<float> x(n, set, strata::partition_policy::even(), strata::no_init);
  random_fill(x);
  const auto offsets = bench_offsets(n, Long);
  span_timer t(set);
  timed_loop(st, t, [&] { benchmark::DoNotOptimize(strata::segmented_reduce(x, offsets, 0.0f)); });
  finish(st, n * sizeof(float));
}

// A 256-bin histogram of floats in [0, 1) (the bins on the host: the call waits).
void strata_histogram(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  random_fill(x);
  span_timer t(set);
  timed_loop(st, t, [&] { benchmark::DoNotOptimize(strata::histogram_even(x, 256, 0.0f, 1.0f)); });
  finish(st, size_of(st) * sizeof(float));
}

// The 1024 largest of random floats with their indices (the values on the host: the call waits).
// Its anchor is cub/top_k_1024_f32, one cub::DeviceReduce::Sum over the same data: issue 36's
// target is top-k in at most 1.2x the time of one reduce.
void strata_top_k(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  random_fill(x);
  span_timer t(set);
  timed_loop(st, t, [&] { benchmark::DoNotOptimize(strata::top_k(x, 1024, strata::largest)); });
  finish(st, size_of(st) * sizeof(float));
}

// Copy from an even layout onto a weighted one (1, 2, 3, ... per place): every place sends
// pieces to its neighbours.
void strata_copy_relayout(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  std::vector<double> w(set.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i + 1);
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  strata::distributed_vector<float> y(size_of(st), set, strata::partition_policy::weighted(w), strata::no_init);
  random_fill(x);
  span_timer t(set);
  timed_loop(st, t, [&] { strata::copy(x, y, strata::nosync); });
  finish(st, 2.0 * size_of(st) * sizeof(float));
}

// The elements moved onto a weighted layout by redistribute: the movement and the new
// container's allocation (copy_relayout_f32 above is the movement alone).
void redistribute_case(benchmark::State& st, bool warm_up) {
  const auto& set = places(static_cast<int>(st.range(1)));
  std::vector<double> w(set.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i + 1);
  strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  random_fill(x);
  if (warm_up) (void)strata::redistribute(x, strata::partition_policy::weighted(w));  // untimed
  span_timer t(set);
  timed_loop(st, t, [&] { return strata::redistribute(x, strata::partition_policy::weighted(w), strata::nosync); });
  finish(st, 2.0 * size_of(st) * sizeof(float));
}
void strata_redistribute(benchmark::State& st) { redistribute_case(st, false); }

// The same with the container memory cache on (strata::set_memory_caching): after one untimed
// call the new container's storage comes from the cache.
void strata_redistribute_cached(benchmark::State& st) {
  strata::set_memory_caching(true);
  redistribute_case(st, true);
  strata::set_memory_caching(false);  // (and returns the cache)
}

// A strict weak order CUB cannot radix-sort by: the comparison path of both libraries.
struct u32_less_cmp {
  __host__ __device__ bool operator()(std::uint32_t a, std::uint32_t b) const { return a < b; }
};

// Sorts in place: every iteration first restores the keys (untimed). Counters: where the time
// goes (local sorts, splitter search, exchange + merges; host wall time of each phase, in ms),
// the splitter rounds, and the most extra device memory one place held (MiB).
enum class sort_kind { keys, pairs, merge };
template <sort_kind Kind>
void strata_sort(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<std::uint32_t> pristine(n, set, strata::partition_policy::even(), strata::no_init), keys(pristine);
  strata::distributed_vector<std::uint32_t> values(n, set, strata::partition_policy::even(), strata::no_init);
  random_fill(pristine);
  span_timer t(set);
  double local = 0, splitters = 0, exchange = 0, rounds = 0, peak = 0;
  for (auto _ : st) {
    strata::copy(pristine, keys);
    t.start();
    if constexpr (Kind == sort_kind::keys)
      strata::sort(keys, strata::nosync);
    else if constexpr (Kind == sort_kind::pairs)
      strata::sort_by_key(keys, values, strata::nosync);
    else
      strata::sort(keys, u32_less_cmp{}, strata::nosync);
    st.SetIterationTime(t.stop());
    const auto& prof = strata::detail::last_sort_profile();
    local += prof.local_s * 1e3;
    splitters += prof.splitters_s * 1e3;
    exchange += prof.exchange_merge_s * 1e3;
    rounds += prof.rounds;
    peak = std::max(peak, static_cast<double>(prof.peak_extra_bytes) / (1 << 20));
  }
  const double it = static_cast<double>(st.iterations());
  st.counters["local_ms"] = local / it;
  st.counters["splitters_ms"] = splitters / it;
  st.counters["exchange_merge_ms"] = exchange / it;
  st.counters["rounds"] = rounds / it;
  st.counters["peak_extra_MiB"] = peak;
  finish(st, static_cast<double>(n) * (Kind == sort_kind::pairs ? 8 : 4));
}

// ---- as a user calls it ---------------------------------------------------------------
// The synchronous call between two events on place 0's stream, its input restored before
// (untimed): what a user who times `strata::sort(x)` that way sees, beside the span-timed nosync
// figures above. Counters: the median of the iterations (ms), and the host wall time of the call
// itself (ms), which includes the final wait.

class called_timer {
 public:
  explicit called_timer(const strata::device_set& s) : stream_(s.stream(0)), device_(s.device(0)) {
    BENCH_CHECK(cudaSetDevice(device_));
    BENCH_CHECK(cudaEventCreate(&start_));
    BENCH_CHECK(cudaEventCreate(&stop_));
  }
  ~called_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  // Times `call()` (synchronous) as the events on place 0's stream see it; returns seconds.
  template <class Call>
  double time(Call&& call) {
    BENCH_CHECK(cudaSetDevice(device_));
    BENCH_CHECK(cudaEventRecord(start_, stream_));
    const auto t0 = std::chrono::steady_clock::now();
    call();
    host_ms_.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    BENCH_CHECK(cudaSetDevice(device_));
    BENCH_CHECK(cudaEventRecord(stop_, stream_));
    BENCH_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    BENCH_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    ms_.push_back(ms);
    return ms / 1e3;
  }
  void report(benchmark::State& st) {
    if (ms_.empty()) return;
    std::sort(ms_.begin(), ms_.end());
    std::sort(host_ms_.begin(), host_ms_.end());
    st.counters["median_ms"] = ms_[ms_.size() / 2];
    st.counters["call_host_ms"] = host_ms_[host_ms_.size() / 2];
  }

 private:
  cudaStream_t stream_;
  int device_;
  cudaEvent_t start_, stop_;
  std::vector<double> ms_, host_ms_;
};

template <sort_kind Kind>
void strata_sort_called(benchmark::State& st) {
  const auto& set = places(static_cast<int>(st.range(1)));
  const std::uint64_t n = size_of(st);
  strata::distributed_vector<std::uint32_t> pristine(n, set, strata::partition_policy::even(), strata::no_init), keys(pristine);
  strata::distributed_vector<std::uint32_t> values(n, set, strata::partition_policy::even(), strata::no_init);
  random_fill(pristine);
  called_timer t(set);
  for (auto _ : st) {
    strata::copy(pristine, keys);
    st.SetIterationTime(t.time([&] {
      if constexpr (Kind == sort_kind::keys)
        strata::sort(keys);
      else
        strata::sort_by_key(keys, values);
    }));
  }
  t.report(st);
  finish(st, static_cast<double>(n) * (Kind == sort_kind::pairs ? 8 : 4));
}

// redistribute even -> weighted with the container cache on, called synchronously; the returned
// container is freed after the stop event.
void strata_redistribute_cached_called(benchmark::State& st) {
  strata::set_memory_caching(true);
  {
    const auto& set = places(static_cast<int>(st.range(1)));
    std::vector<double> w(set.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i + 1);
    strata::distributed_vector<float> x(size_of(st), set, strata::partition_policy::even(), strata::no_init);
    random_fill(x);
    (void)strata::redistribute(x, strata::partition_policy::weighted(w));  // untimed: fills the cache
    called_timer t(set);
    for (auto _ : st) {
      strata::distributed_vector<float> y;
      st.SetIterationTime(t.time([&] { y = strata::redistribute(x, strata::partition_policy::weighted(w)); }));
    }
    t.report(st);
  }
  strata::set_memory_caching(false);
  finish(st, 2.0 * size_of(st) * sizeof(float));
}

// The anchors timed the same way (for the median counter; their iteration times are the span's).
template <sort_kind Kind>
void cub_sort_called(benchmark::State& st) {
  const auto& set = places(1);
  cudaStream_t s = set.stream(0);
  temp_cache temp;
  const std::uint64_t n = size_of(st);
  dbuf<std::uint32_t> pristine(n), k0(n), k1(n), v0(n), v1(n);
  random_fill(pristine.p, n, s);
  called_timer t(set);
  for (auto _ : st) {
    BENCH_CHECK(cudaMemcpyAsync(k0.p, pristine.p, n * 4, cudaMemcpyDeviceToDevice, s));
    BENCH_CHECK(cudaStreamSynchronize(s));
    st.SetIterationTime(t.time([&] {
      cub::DoubleBuffer<std::uint32_t> keys(k0.p, k1.p), values(v0.p, v1.p);
      std::size_t b = 0;
      const auto call = [&](void* p) {
        if constexpr (Kind == sort_kind::keys)
          return cub::DeviceRadixSort::SortKeys(p, b, keys, static_cast<std::int64_t>(n), 0, 32, s);
        else
          return cub::DeviceRadixSort::SortPairs(p, b, keys, values, static_cast<std::int64_t>(n), 0, 32, s);
      };
      BENCH_CHECK(call(nullptr));
      BENCH_CHECK(call(temp.get(b)));
      BENCH_CHECK(cudaStreamSynchronize(s));  // a synchronous call, as Strata's
    }));
  }
  t.report(st);
  finish(st, static_cast<double>(n) * (Kind == sort_kind::pairs ? 8 : 4));
}

void cub_copy_called(benchmark::State& st) {
  const auto& set = places(1);
  cudaStream_t s = set.stream(0);
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  random_fill(x.p, n, s);
  called_timer t(set);
  for (auto _ : st)
    st.SetIterationTime(t.time([&] {
      BENCH_CHECK(cudaMemcpyAsync(y.p, x.p, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
      BENCH_CHECK(cudaStreamSynchronize(s));
    }));
  t.report(st);
  finish(st, 2.0 * n * sizeof(float));
}

// ---- CUB and Thrust anchors (one device, place 0's stream) --------------------------------

struct anchor {
  const strata::device_set& set = places(1);
  cudaStream_t s = set.stream(0);
  span_timer t{set};
  temp_cache temp;
  template <class Call>
  void run(Call&& call) {
    std::size_t bytes = 0;
    BENCH_CHECK(call(nullptr, bytes));
    void* p = temp.get(bytes);
    BENCH_CHECK(call(p, bytes));
  }
};

template <class T>
void cub_reduce(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<T> in(n), out(1);
  random_fill(in.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) { return cub::DeviceReduce::Sum(p, b, in.p, out.p, n, a.s); }); });
  finish(st, n * sizeof(T));
}

void cub_reduce_transformed(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> in(n), out(1);
  random_fill(in.p, n, a.s);
  timed_loop(st, a.t, [&] {
    a.run([&](void* p, std::size_t& b) {
      return cub::DeviceReduce::TransformReduce(p, b, in.p, out.p, n, cuda::std::plus<>{}, square_f{}, 0.0f, a.s);
    });
  });
  finish(st, n * sizeof(float));
}

void cub_dot(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  dbuf<double> out(1);
  random_fill(x.p, n, a.s);
  random_fill(y.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      return cub::DeviceReduce::TransformReduce(p, b, thrust::counting_iterator<std::uint64_t>(0), out.p, n,
                                                cuda::std::plus<>{}, dot_at{x.p, y.p}, 0.0, a.s);
    }); });
  finish(st, 2.0 * n * sizeof(float));
}

void cub_count_if(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n);
  dbuf<std::uint64_t> out(1);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      return cub::DeviceReduce::TransformReduce(p, b, x.p, out.p, n, cuda::std::plus<>{}, count_positive_fn{},
                                                std::uint64_t{0}, a.s);
    }); });
  finish(st, n * sizeof(float));
}

void cub_min_element(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), v(1);
  dbuf<std::int64_t> idx(1);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      return cub::DeviceReduce::ArgMin(p, b, x.p, v.p, idx.p, static_cast<std::int64_t>(n), a.s);
    }); });
  finish(st, n * sizeof(float));
}

template <bool Exclusive>
void cub_scan(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      if constexpr (Exclusive)
        return cub::DeviceScan::ExclusiveSum(p, b, x.p, y.p, n, a.s);
      else
        return cub::DeviceScan::InclusiveSum(p, b, x.p, y.p, n, a.s);
    }); });
  finish(st, 2.0 * n * sizeof(float));
}

void cub_saxpy(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n), out(n);
  random_fill(x.p, n, a.s);
  random_fill(y.p, n, a.s);
  timed_loop(st, a.t, [&] { BENCH_CHECK(cub::DeviceTransform::Transform(cuda::std::make_tuple(x.p, y.p), out.p, n, saxpy_fn{2.0f}, a.s)); });
  finish(st, 3.0 * n * sizeof(float));
}

void cub_fill(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n);
  timed_loop(st, a.t, [&] { BENCH_CHECK(cub::DeviceTransform::Transform(cuda::std::tuple<>{}, x.p, n, fill_gen{1.5f}, a.s)); });
  finish(st, n * sizeof(float));
}

void cub_histogram(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n);
  dbuf<unsigned long long> bins(256);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      return cub::DeviceHistogram::HistogramEven(p, b, x.p, bins.p, 257, 0.0f, 1.0f, static_cast<std::int64_t>(n), a.s);
    }); });
  finish(st, n * sizeof(float));
}

template <bool Scan>
void cub_by_key(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<std::int32_t> k(n), ko(n);
  dbuf<float> v(n), vo(n);
  dbuf<std::int64_t> runs(1);
  thrust::tabulate(thrust::cuda::par.on(a.s), k.p, k.p + n, run_key{});
  random_fill(v.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      if constexpr (Scan)
        return cub::DeviceScan::InclusiveScanByKey(p, b, k.p, v.p, vo.p, cuda::std::plus<>{}, static_cast<std::int64_t>(n),
                                                   cuda::std::equal_to<>{}, a.s);
      else
        return cub::DeviceReduce::ReduceByKey(p, b, k.p, ko.p, v.p, vo.p, runs.p, cuda::std::plus<>{},
                                              static_cast<std::int64_t>(n), a.s);
    }); });
  finish(st, Scan ? 3.0 * n * sizeof(float) : (2.0 + 2.0 / 16) * n * sizeof(float));
}

template <bool Long>
void cub_segmented_reduce(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  const auto offsets = bench_offsets(n, Long);
  const std::int64_t segs = static_cast<std::int64_t>(offsets.size() - 1);
  dbuf<float> x(n), sums(static_cast<std::uint64_t>(segs));
  dbuf<std::uint64_t> d_offsets(offsets.size());
  BENCH_CHECK(cudaMemcpy(d_offsets.p, offsets.data(), offsets.size() * sizeof(std::uint64_t), cudaMemcpyHostToDevice));
  random_fill(x.p, n, a.s);
  std::vector<float> host(static_cast<std::size_t>(segs));
  timed_loop(st, a.t, [&] {
    a.run([&](void* p, std::size_t& b) {
      return cub::DeviceSegmentedReduce::Sum(p, b, x.p, sums.p, static_cast<int>(segs), d_offsets.p, d_offsets.p + 1, a.s);
    });
    // As Strata's: the values come back to the host.
    BENCH_CHECK(cudaMemcpyAsync(host.data(), sums.p, host.size() * sizeof(float), cudaMemcpyDeviceToHost, a.s));
  });
  finish(st, n * sizeof(float));
}

void cub_adjacent_difference(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { a.run([&](void* p, std::size_t& b) {
      return cub::DeviceAdjacentDifference::SubtractLeftCopy(p, b, x.p, y.p, n, cuda::std::minus<>{}, a.s);
    }); });
  finish(st, 2.0 * n * sizeof(float));
}

void cub_copy(benchmark::State& st) {  // the anchor of a copy: one device-to-device memcpy
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { BENCH_CHECK(cudaMemcpyAsync(y.p, x.p, n * sizeof(float), cudaMemcpyDeviceToDevice, a.s)); });
  finish(st, 2.0 * n * sizeof(float));
}

template <sort_kind Kind>
void cub_sort(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<std::uint32_t> pristine(n), k0(n), k1(n), v0(n), v1(n);
  random_fill(pristine.p, n, a.s);
  for (auto _ : st) {
    BENCH_CHECK(cudaMemcpyAsync(k0.p, pristine.p, n * 4, cudaMemcpyDeviceToDevice, a.s));
    a.t.start();
    cub::DoubleBuffer<std::uint32_t> keys(k0.p, k1.p), values(v0.p, v1.p);
    a.run([&](void* p, std::size_t& b) {
      if constexpr (Kind == sort_kind::keys)
        return cub::DeviceRadixSort::SortKeys(p, b, keys, static_cast<std::int64_t>(n), 0, 32, a.s);
      else if constexpr (Kind == sort_kind::pairs)
        return cub::DeviceRadixSort::SortPairs(p, b, keys, values, static_cast<std::int64_t>(n), 0, 32, a.s);
      else
        return cub::DeviceMergeSort::SortKeys(p, b, k0.p, static_cast<std::int64_t>(n), u32_less_cmp{}, a.s);
    });
    st.SetIterationTime(a.t.stop());
  }
  finish(st, static_cast<double>(n) * (Kind == sort_kind::pairs ? 8 : 4));
}

void thrust_sort(benchmark::State& st) {  // includes Thrust's own temp allocation and sync
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<std::uint32_t> pristine(n), k(n);
  random_fill(pristine.p, n, a.s);
  for (auto _ : st) {
    BENCH_CHECK(cudaMemcpyAsync(k.p, pristine.p, n * 4, cudaMemcpyDeviceToDevice, a.s));
    a.t.start();
    thrust::sort(thrust::cuda::par.on(a.s), k.p, k.p + n);
    st.SetIterationTime(a.t.stop());
  }
  finish(st, static_cast<double>(n) * 4);
}

// A Thrust call that reads one float range once and returns a value (so it includes Thrust's own
// host sync and temp allocation): `call(first, last)`; the data random in [0, 1), or 0, 1, 2, ...
// with `ascending`.
template <class Call>
void thrust_read_case(benchmark::State& st, Call call, bool ascending = false) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n);
  if (ascending)
    thrust::tabulate(thrust::cuda::par.on(a.s), x.p, x.p + n, index_float{});
  else
    random_fill(x.p, n, a.s);
  for (auto _ : st) {
    a.t.start();
    benchmark::DoNotOptimize(call(thrust::cuda::par.on(a.s), x.p, x.p + n));
    st.SetIterationTime(a.t.stop());
  }
  finish(st, n * sizeof(float));
}

void thrust_reduce(benchmark::State& st) {
  thrust_read_case(st, [](auto policy, const float* first, const float* last) { return thrust::reduce(policy, first, last, 0.0f); });
}

// The anchors of find_if and is_sorted, which CUB lacks (CCCL 3.0): Thrust's calls.
void thrust_find_if(benchmark::State& st) {
  thrust_read_case(st, [](auto policy, const float* first, const float* last) { return thrust::find_if(policy, first, last, above_two{}); });
}

void thrust_is_sorted(benchmark::State& st) {
  thrust_read_case(st, [](auto policy, const float* first, const float* last) { return thrust::is_sorted(policy, first, last); }, true);
}

void thrust_inclusive_scan(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  random_fill(x.p, n, a.s);
  timed_loop(st, a.t, [&] { thrust::inclusive_scan(thrust::cuda::par_nosync.on(a.s), x.p, x.p + n, y.p); });
  finish(st, 2.0 * n * sizeof(float));
}

void thrust_gather(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), y(n);
  dbuf<std::uint32_t> map(n);
  random_fill(x.p, n, a.s);
  thrust::tabulate(thrust::cuda::par.on(a.s), map.p, map.p + n, mixed_index{n});
  timed_loop(st, a.t, [&] { thrust::gather(thrust::cuda::par_nosync.on(a.s), map.p, map.p + n, x.p, y.p); });
  finish(st, 3.0 * n * sizeof(float));
}

void cub_merge(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n / 2), y(n - n / 2), out(n);
  thrust::tabulate(thrust::cuda::par.on(a.s), x.p, x.p + n / 2, twice_float{0});
  thrust::tabulate(thrust::cuda::par.on(a.s), y.p, y.p + (n - n / 2), twice_float{1});
  timed_loop(st, a.t, [&] {
    a.run([&](void* p, std::size_t& b) {
      return cub::DeviceMerge::MergeKeys(p, b, x.p, static_cast<::cuda::std::int64_t>(n / 2), y.p,
                                         static_cast<::cuda::std::int64_t>(n - n / 2), out.p, ::cuda::std::less<>{}, a.s);
    });
  });
  finish(st, 2.0 * n * sizeof(float));
}

void thrust_lower_bound(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), q(n);
  dbuf<std::uint64_t> out(n);
  thrust::tabulate(thrust::cuda::par.on(a.s), x.p, x.p + n, index_float{});
  thrust::tabulate(thrust::cuda::par.on(a.s), q.p, q.p + n, mixed_float{n});
  timed_loop(st, a.t, [&] { thrust::lower_bound(thrust::cuda::par_nosync.on(a.s), x.p, x.p + n, q.p, q.p + n, out.p); });
  finish(st, n * (sizeof(float) + sizeof(std::uint64_t)));
}

void thrust_fill(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n);
  timed_loop(st, a.t, [&] { thrust::fill(thrust::cuda::par_nosync.on(a.s), x.p, x.p + n, 1.5f); });
  finish(st, n * sizeof(float));
}

// ---- small-size latency: value on the host, wall clock ------------------------------------

template <bool Graphs>
void latency_strata_reduce(benchmark::State& st) {
  const auto& set = Graphs ? places(static_cast<int>(st.range(1))) : eager_places(static_cast<int>(st.range(1)));
  strata::distributed_vector<float> v(size_of(st), set, strata::partition_policy::even(), strata::no_init);
  random_fill(v);
  (void)strata::reduce(v);
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(strata::reduce(v));
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  finish(st, size_of(st) * sizeof(float));
}

void latency_cub_reduce(benchmark::State& st) {
  anchor a;
  const std::uint64_t n = size_of(st);
  dbuf<float> x(n), out(1);
  float* host = nullptr;
  BENCH_CHECK(cudaMallocHost(&host, sizeof(float)));
  random_fill(x.p, n, a.s);
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    a.run([&](void* p, std::size_t& b) { return cub::DeviceReduce::Sum(p, b, x.p, out.p, n, a.s); });
    BENCH_CHECK(cudaMemcpyAsync(host, out.p, sizeof(float), cudaMemcpyDeviceToHost, a.s));
    BENCH_CHECK(cudaStreamSynchronize(a.s));
    benchmark::DoNotOptimize(*host);
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  cudaFreeHost(host);
  finish(st, n * sizeof(float));
}

using bench_fn = void (*)(benchmark::State&);

void register_all() {
  std::vector<int> logs = {16, 20, 24, 28, 30};
  if (const char* e = std::getenv("STRATA_BENCH_LOG2_SIZES")) {  // e.g. "20,28"
    logs.clear();
    for (const char* p = e; *p;) {
      logs.push_back(std::atoi(p));
      while (*p && *p != ',') ++p;
      if (*p) ++p;
    }
  }
  std::vector<int> place_counts = {1, 2, 4, 8};
  if (strata::visible_device_count() > 1) place_counts.push_back(0);  // 0: every GPU

  const std::vector<std::pair<const char*, bench_fn>> strata_cases = {
      {"reduce_f32", strata_reduce<float>}, {"reduce_i64", strata_reduce<std::int64_t>},
      {"reduce_transformed_f32", strata_reduce_transformed},
      {"dot_f32", strata_dot},              {"count_if_f32", strata_count_if},
      {"min_element_f32", strata_min_element}, {"inclusive_scan_f32", strata_scan<false>},
      {"exclusive_scan_f32", strata_scan<true>}, {"saxpy_f32", strata_saxpy},
      {"fill_f32", strata_fill},            {"copy_relayout_f32", strata_copy_relayout},
      {"redistribute_f32", strata_redistribute}, {"redistribute_cached_f32", strata_redistribute_cached},
      {"reduce_repro_f32", strata_reduce<float, true>}, {"reduce_repro_f64", strata_reduce<double, true>},
      {"histogram_f32", strata_histogram}, {"find_if_f32", strata_find_if},
      {"is_sorted_f32", strata_is_sorted}, {"adjacent_difference_f32", strata_adjacent_difference},
      {"gather_f32", strata_gather}, {"lower_bound_f32", strata_lower_bound},
      {"reduce_by_key_f32", strata_by_key<false>}, {"inclusive_scan_by_key_f32", strata_by_key<true>},
      {"segmented_reduce_f32", strata_segmented_reduce<false>}, {"segmented_reduce_long_f32", strata_segmented_reduce<true>},
      {"top_k_1024_f32", strata_top_k}, {"merge_f32", strata_merge}};
  const std::vector<std::pair<const char*, bench_fn>> cub_cases = {
      {"reduce_f32", cub_reduce<float>}, {"reduce_i64", cub_reduce<std::int64_t>},
      {"reduce_transformed_f32", cub_reduce_transformed},
      {"dot_f32", cub_dot},              {"count_if_f32", cub_count_if},
      {"min_element_f32", cub_min_element}, {"inclusive_scan_f32", cub_scan<false>},
      {"exclusive_scan_f32", cub_scan<true>}, {"saxpy_f32", cub_saxpy},
      {"fill_f32", cub_fill},            {"copy_relayout_f32", cub_copy},
      {"redistribute_f32", cub_copy}, {"redistribute_cached_f32", cub_copy},
      {"reduce_repro_f32", cub_reduce<float>}, {"reduce_repro_f64", cub_reduce<double>},
      {"histogram_f32", cub_histogram}, {"adjacent_difference_f32", cub_adjacent_difference},
      {"reduce_by_key_f32", cub_by_key<false>}, {"inclusive_scan_by_key_f32", cub_by_key<true>},
      {"segmented_reduce_f32", cub_segmented_reduce<false>}, {"segmented_reduce_long_f32", cub_segmented_reduce<true>},
      {"top_k_1024_f32", cub_reduce<float>}, {"merge_f32", cub_merge}};
  const std::vector<std::pair<const char*, bench_fn>> thrust_cases = {
      {"reduce_f32", thrust_reduce}, {"inclusive_scan_f32", thrust_inclusive_scan}, {"fill_f32", thrust_fill},
      {"find_if_f32", thrust_find_if}, {"is_sorted_f32", thrust_is_sorted}, {"gather_f32", thrust_gather},
      {"lower_bound_f32", thrust_lower_bound}};

  for (const auto& [name, fn] : cub_cases) {
    auto* b = benchmark::RegisterBenchmark((std::string("cub/") + name).c_str(), fn);
    for (int lg : logs) b->Arg(lg);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [name, fn] : thrust_cases) {
    auto* b = benchmark::RegisterBenchmark((std::string("thrust/") + name).c_str(), fn);
    for (int lg : logs) b->Arg(lg);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [name, fn] : strata_cases) {
    auto* b = benchmark::RegisterBenchmark((std::string("strata/") + name).c_str(), fn);
    for (int lg : logs)
      for (int p : place_counts) b->Args({lg, p});
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  // Sorts up to 2^28 keys (each iteration restores its input).
  const std::vector<std::pair<const char*, bench_fn>> sort_cub = {
      {"sort_u32", cub_sort<sort_kind::keys>}, {"sort_pairs_u32", cub_sort<sort_kind::pairs>},
      {"merge_sort_u32", cub_sort<sort_kind::merge>}, {"thrust_sort_u32", thrust_sort}};
  const std::vector<std::pair<const char*, bench_fn>> sort_strata = {
      {"sort_u32", strata_sort<sort_kind::keys>}, {"sort_pairs_u32", strata_sort<sort_kind::pairs>},
      {"merge_sort_u32", strata_sort<sort_kind::merge>}};
  for (const auto& [name, fn] : sort_cub) {
    const bool thrust_case = std::string(name).rfind("thrust_", 0) == 0;
    auto* b = benchmark::RegisterBenchmark(
        (thrust_case ? std::string("thrust/sort_u32") : std::string("cub/") + name).c_str(), fn);
    for (int lg : logs)
      if (lg <= 28) b->Arg(lg);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [name, fn] : sort_strata) {
    auto* b = benchmark::RegisterBenchmark((std::string("strata/") + name).c_str(), fn);
    for (int lg : logs)
      if (lg <= 28)
        for (int p : place_counts) b->Args({lg, p});
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  // As called (synchronous, between two events on place 0's stream), beside the span figures.
  const std::vector<std::pair<const char*, bench_fn>> called_cub = {
      {"sort_u32_called", cub_sort_called<sort_kind::keys>}, {"sort_pairs_u32_called", cub_sort_called<sort_kind::pairs>},
      {"redistribute_cached_called_f32", cub_copy_called}};
  const std::vector<std::pair<const char*, bench_fn>> called_strata = {
      {"sort_u32_called", strata_sort_called<sort_kind::keys>},
      {"sort_pairs_u32_called", strata_sort_called<sort_kind::pairs>},
      {"redistribute_cached_called_f32", strata_redistribute_cached_called}};
  for (const auto& [name, fn] : called_cub) {
    auto* b = benchmark::RegisterBenchmark((std::string("cub/") + name).c_str(), fn);
    for (int lg : logs)
      if (lg <= 28) b->Arg(lg);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [name, fn] : called_strata) {
    auto* b = benchmark::RegisterBenchmark((std::string("strata/") + name).c_str(), fn);
    for (int lg : logs)
      if (lg <= 28)
        for (int p : place_counts) b->Args({lg, p});
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  auto* lc = benchmark::RegisterBenchmark("latency_cub/reduce_f32", latency_cub_reduce);
  lc->Arg(20)->UseManualTime()->Unit(benchmark::kMicrosecond);
  auto* ls = benchmark::RegisterBenchmark("latency_strata/reduce_f32", latency_strata_reduce<true>);
  for (int p : place_counts) ls->Args({20, p});
  ls->UseManualTime()->Unit(benchmark::kMicrosecond);
  auto* le = benchmark::RegisterBenchmark("latency_strata_eager/reduce_f32", latency_strata_reduce<false>);
  for (int p : place_counts) le->Args({20, p});
  le->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  if (strata::visible_device_count() == 0) {
    std::printf("no CUDA device is visible: nothing to benchmark\n");
    return 0;
  }
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
