// The reduce family against host references, typed over the value types, on every place
// configuration and size (tests/gpu/test_util.cuh).
#include "test_util.cuh"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

using namespace strata_test;

template <class T>
class ReduceTyped : public ::testing::Test {};
TYPED_TEST_SUITE(ReduceTyped, ValueTypes);

template <class T>
double host_sum(const std::vector<T>& h) {
  if constexpr (std::is_unsigned_v<T>) {
    T s = 0;
    for (T x : h) s = static_cast<T>(s + x);
    return static_cast<double>(s);
  } else {
    long double s = 0;
    for (T x : h) s += x;
    return static_cast<double>(s);
  }
}

struct greater_than_half {
  template <class T>
  __host__ __device__ bool operator()(const T& x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x > T(0.5);
    else if constexpr (std::is_signed_v<T>)
      return x > 0;
    else
      return (x & 1u) != 0;
  }
};

// Functors rather than lambdas: nvcc does not allow extended lambdas inside gtest's (private)
// test bodies.
struct square_to_double {
  template <class T>
  __host__ __device__ double operator()(T x) const {
    return static_cast<double>(x) * static_cast<double>(x);
  }
};
struct multiply_to_double {
  template <class T>
  __host__ __device__ double operator()(T x, T y) const {
    return static_cast<double>(x) * static_cast<double>(y);
  }
};
struct widen_u64 {
  __host__ __device__ std::uint64_t operator()(std::uint8_t x) const { return x; }
};

TYPED_TEST(ReduceTyped, SumReduceAndInit) {
  using T = TypeParam;
  for_each_case<T>([](const named_set&, std::uint64_t n, const std::vector<T>& h, strata::distributed_vector<T>& v) {
      expect_value(strata::reduce(v), host_sum(h), n, "reduce(r)");
      const T init = T(3);
      if constexpr (std::is_unsigned_v<T>) {
        EXPECT_EQ(strata::reduce(v, init, cuda::std::plus<>{}), static_cast<T>(static_cast<T>(host_sum(h)) + 3u));
      } else {
        expect_value(strata::reduce(v, init, cuda::std::plus<>{}), host_sum(h) + 3, n, "reduce(r, 3, plus)");
      }
      auto f = strata::reduce_async(v);
      f.wait();
      EXPECT_TRUE(f.ready());
      expect_value(f.get(), host_sum(h), n, "reduce_async");
      EXPECT_FALSE(f.valid());
  });
}

TYPED_TEST(ReduceTyped, MaxAsReduceAndCountFamily) {
  using T = TypeParam;
  for_each_case<T>([](const named_set&, std::uint64_t n, const std::vector<T>& h, strata::distributed_vector<T>& v) {
      const T lowest = std::numeric_limits<T>::lowest();
      const T want_max = h.empty() ? lowest : *std::max_element(h.begin(), h.end());
      EXPECT_EQ(strata::reduce(v, lowest, cuda::maximum<>{}), want_max);

      const T probe = h.empty() ? T(1) : h[n / 2];
      EXPECT_EQ(strata::count(v, probe), static_cast<std::uint64_t>(std::count(h.begin(), h.end(), probe)));
      const auto pred = greater_than_half{};
      const auto c = static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), [&](T x) { return pred(x); }));
      EXPECT_EQ(strata::count_if(v, pred), c);
      EXPECT_EQ(strata::all_of(v, pred), c == n);
      EXPECT_EQ(strata::any_of(v, pred), c > 0);
      EXPECT_EQ(strata::none_of(v, pred), c == 0);
  });
}

TYPED_TEST(ReduceTyped, MinMaxElementsFirstOccurrence) {
  using T = TypeParam;
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      auto h = random_vector<T>(n, seed);
      // Few distinct values, so ties (within and across segments) are the norm.
      for (auto& x : h) x = static_cast<T>(static_cast<std::int64_t>(std::fabs(static_cast<double>(x)) * 7) % 5);
      strata::distributed_vector<T> v(h, s.set);
      const auto mn = strata::min_element(v);
      const auto mx = strata::max_element(v);
      const auto mm = strata::minmax(v);
      if (n == 0) {
        EXPECT_EQ(mn.index, 0u);
        EXPECT_EQ(mx.index, 0u);
        EXPECT_EQ(mm.min.index, 0u);
        EXPECT_EQ(mm.max.index, 0u);
        continue;
      }
      const auto want_min = static_cast<std::uint64_t>(std::min_element(h.begin(), h.end()) - h.begin());
      const auto want_max = static_cast<std::uint64_t>(std::max_element(h.begin(), h.end()) - h.begin());
      const auto want_mm = std::minmax_element(h.begin(), h.end());
      EXPECT_EQ(mn.index, want_min);
      EXPECT_EQ(mn.value, h[want_min]);
      EXPECT_EQ(mx.index, want_max);
      EXPECT_EQ(mx.value, h[want_max]);
      EXPECT_EQ(mm.min.index, static_cast<std::uint64_t>(want_mm.first - h.begin()));
      EXPECT_EQ(mm.max.index, static_cast<std::uint64_t>(want_mm.second - h.begin()));
      EXPECT_EQ(mm.max.value, *want_mm.second);
      const auto mx_greater = strata::max_element(v, cuda::std::greater<>{});  // the first smallest
      EXPECT_EQ(mx_greater.index, want_min);
    }
}

TYPED_TEST(ReduceTyped, TransformReduceAndDot) {
  using T = TypeParam;
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto a = random_vector<T>(n, seed);
      const auto b = random_vector<T>(n, seed + 1);
      strata::distributed_vector<T> va(a, s.set), vb(b, s.set);
      // Accumulate in double: sum of squares and dot product.
      long double sq = 0, dot = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        sq += static_cast<long double>(a[i]) * a[i];
        dot += static_cast<long double>(a[i]) * b[i];
      }
      const square_to_double square{};
      const double got_sq = strata::transform_reduce(va, 0.0, cuda::std::plus<>{}, square);
      EXPECT_NEAR(got_sq, static_cast<double>(sq), 1e-9 * std::max(1.0L, std::fabs(sq)));
      const multiply_to_double mul{};
      const double got_dot = strata::transform_reduce(va, vb, 0.0, cuda::std::plus<>{}, mul);
      EXPECT_NEAR(got_dot, static_cast<double>(dot), 1e-9 * std::max(1.0L, std::fabs(dot)));
      EXPECT_TRUE(strata::equal(va, va));
      if (n > 0) {
        strata::distributed_vector<T> vc(va);
        vc.set(n - 1, static_cast<T>(a[n - 1] + T(1)));
        EXPECT_FALSE(strata::equal(va, vc));
      }
    }
}

TEST(Reduce, CustomStructMinMax) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto lo = random_vector<float>(n, seed);
      std::vector<range2> h(n);
      for (std::uint64_t i = 0; i < n; ++i) h[i] = {lo[i], lo[i] + 1.0f};
      strata::distributed_vector<range2> v(h, s.set);
      const range2 init{1e30f, -1e30f};
      range2 want = init;
      for (const auto& x : h) want = range2_merge{}(want, x);
      const range2 got = strata::reduce(v, init, range2_merge{});
      EXPECT_EQ(got.lo, want.lo);
      EXPECT_EQ(got.hi, want.hi);
    }
}

TEST(Reduce, ManyAsyncCallsInFlight) {
  const auto set = strata::device_set::repeat(0, 4);
  const auto h = random_vector<std::int64_t>(100003, fresh_seed());
  strata::distributed_vector<std::int64_t> v(h, set);
  const double want = host_sum(h);
  std::vector<strata::future<std::int64_t>> fs;
  for (int i = 0; i < 100; ++i) fs.push_back(strata::reduce_async(v, std::int64_t{i}, cuda::std::plus<>{}));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), static_cast<std::int64_t>(want) + i);
}

TEST(Reduce, SteadyStateAllocatesNothing) {
  const auto set = strata::device_set::repeat(0, 4);
  leave_poison_behind(1 << 20, -1e30f, set);  // an element the fill skipped spoils every sum
  strata::distributed_vector<float> v(1 << 20, 1.0f, set);
  (void)strata::reduce(v);  // warm: temp storage, merge workspace, result slots
  (void)strata::min_element(v);
  const auto& c = strata::detail::counters();
  const auto dev = c.device_allocs.load(), host = c.host_allocs.load();
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(strata::reduce(v), float(1 << 20));
    (void)strata::min_element(v);
  }
  EXPECT_EQ(c.device_allocs.load(), dev);
  EXPECT_EQ(c.host_allocs.load(), host);
}

TEST(Reduce, MismatchedRangesThrowBeforeDeviceWork) {
  const auto set = strata::device_set::repeat(0, 3);
  strata::distributed_vector<int> a(10, 1, set), b(11, 1, set);
  strata::distributed_vector<int> c(10, 1, set, strata::partition_policy::explicit_sizes({10, 0, 0}));
  EXPECT_THROW(strata::transform_reduce(a, b, 0, cuda::std::plus<>{}, cuda::std::multiplies<>{}), std::invalid_argument);
  EXPECT_THROW(strata::equal(a, b), std::invalid_argument);
  try {
    (void)strata::transform_reduce(a, c, 0, cuda::std::plus<>{}, cuda::std::multiplies<>{});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("partitioned differently"), std::string::npos) << e.what();
  }
  strata::distributed_vector<int> d(10, 1, private_set(3));
  EXPECT_THROW(strata::equal(a, d), std::invalid_argument);  // another device_set
  EXPECT_THROW(strata::reduce(strata::distributed_span<int>{}), std::invalid_argument);
}

TEST(Reduce, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 77;
  const auto set = strata::device_set::repeat(0, 3);
  std::vector<std::uint8_t> h(n);
  std::mt19937_64 g(fresh_seed());
  std::uint64_t want = 0;
  for (auto& x : h) {
    x = static_cast<std::uint8_t>(1 + g() % 255);  // no zero: the extrema checks below plant them
    want += x;
  }
  strata::distributed_vector<std::uint8_t> v(h, set);
  const widen_u64 widen{};
  EXPECT_EQ(strata::transform_reduce(v, std::uint64_t{0}, cuda::std::plus<>{}, widen), want);
  // One place holding all of it: a single segment over 2^31 elements.
  strata::distributed_vector<std::uint8_t> one(h, strata::device_set::repeat(0, 1));
  EXPECT_EQ(strata::transform_reduce(one, std::uint64_t{0}, cuda::std::plus<>{}, widen), want);
  EXPECT_EQ(strata::count(one, std::uint8_t{7}), static_cast<std::uint64_t>(std::count(h.begin(), h.end(), 7)));

  // Extrema over a segment longer than one CUB call's 32-bit indices: the answer lies in the
  // second chunk, then a tie across chunks goes to the first occurrence. The reference sees the
  // planted zero too (the last maximum may have stood exactly there).
  ASSERT_GT(*std::min_element(h.begin(), h.end()), 0);
  h[n - 3] = 0;
  const auto first_max = static_cast<std::uint64_t>(std::max_element(h.begin(), h.end()) - h.begin());
  const auto last_max = n - 1 - static_cast<std::uint64_t>(std::max_element(h.rbegin(), h.rend()) - h.rbegin());
  for (auto* w : {&one, &v}) {
    w->set(n - 3, 0);
    auto lo = strata::min_element(*w);
    EXPECT_EQ(lo.index, n - 3);
    EXPECT_EQ(lo.value, 0);
    EXPECT_EQ(strata::max_element(*w).index, first_max);
    const auto mm = strata::minmax(*w);
    EXPECT_EQ(mm.min.index, n - 3);
    EXPECT_EQ(mm.max.index, last_max);
    w->set(5, 0);
    EXPECT_EQ(strata::min_element(*w).index, 5u);
    EXPECT_EQ(strata::minmax(*w).min.index, 5u);
  }
}

struct add_k {
  std::int64_t k;
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return x + k; }
};

// Repeated identical calls are replayed from a CUDA graph: the results must follow the data
// (changed in between by asynchronous element-wise work on the places' streams) and the
// initial value (changed on every call), on every place configuration.
TEST(Reduce, RepeatedCallsReplayedAsGraphsFollowDataAndInit) {
  for (const auto& s : sets()) {
    SCOPED_TRACE(s.name);
    const std::uint64_t n = 1 << 20;
    auto h = random_vector<std::int64_t>(n, fresh_seed());
    strata::distributed_vector<std::int64_t> v(h, s.set);
    std::int64_t want = 0;
    for (auto x : h) want += x;
    const auto replays_before = s.set.state().graphs.replays;
    const std::int64_t probe = h[3] + 5;  // one count_if key for every iteration, data changing
    for (std::int64_t it = 0; it < 12; ++it) {
      EXPECT_EQ(strata::reduce(v, it, cuda::std::plus<>{}), want + it) << "iteration " << it;
      EXPECT_EQ(strata::count(v, probe), static_cast<std::uint64_t>(std::count(h.begin(), h.end(), probe)));
      strata::transform(v, v, add_k{1}, strata::nosync);  // ordered before the next replay
      want += static_cast<std::int64_t>(n);
      for (auto& x : h) x += 1;
    }
    if (s.set.state().use_graphs) EXPECT_GE(s.set.state().graphs.replays - replays_before, 18u);
  }
  strata::device_set_options eager;
  eager.use_graphs = false;
  const auto set = strata::device_set::repeat(0, 3, eager);
  strata::distributed_vector<int> v(1000, 2, set);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(strata::reduce(v), 2000);
  EXPECT_EQ(set.state().graphs.replays, 0u);
}

// reduce(r, init) as std::reduce: the sum is accumulated in the type of init, so 32-bit values
// whose sum leaves int32 come out exact with an int64 init.
TEST(Reduce, WithInitAccumulatesInItsType) {
  for_each_set_and_size([](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<std::int32_t> h(n);
    std::int64_t want = 40;
    for (auto& x : h) want += x = static_cast<std::int32_t>(2'000'000'000 - g() % 1000);
    strata::distributed_vector<std::int32_t> v(h, s.set);
    EXPECT_EQ(strata::reduce(v, std::int64_t{40}), want);
    EXPECT_EQ(strata::reduce_async(v, std::int64_t{40}).get(), want);
  });
}

// ---- reproducible sums (issue 19) ------------------------------------------------------------

namespace {

// Finite doubles over a wide exponent range (2^-100..2^100, or 2^-1070..2^1020 for `whole`: the
// largest run at the scaled tops), both signs, and some exact cancellation.
std::vector<double> wide_doubles(std::uint64_t n, std::uint64_t seed, bool whole = false) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::vector<double> v(n);
  const int lo = whole ? -1070 : -100, span = whole ? 2091 : 201;
  for (auto& x : v) x = std::ldexp(m(g), static_cast<int>(g() % span) + lo) * ((g() & 1) ? -1.0 : 1.0);
  for (std::uint64_t i = 1; i < n; i += 7) v[i] = -v[i - 1];
  return v;
}

// The host's reproducible sum of v, element by element (float sums keep three windows).
template <class T>
T host_reproducible(const std::vector<T>& v, double init = 0) {
  constexpr int W = strata::detail::repro_windows_for<T>;
  auto a = strata::detail::repro_of<W>(init);
  for (T x : v) a = strata::detail::repro_combine<W>(a, strata::detail::repro_of<W>(static_cast<double>(x)));
  return strata::detail::repro_round<T>(a);
}

// The exact sum of v by Shewchuk's algorithm (non-overlapping partials, as Python's math.fsum),
// added up in long double at the end: independent of the library's windows, for the documented
// error bound. Requires a finite sum with no overflow on the way.
template <class T>
long double exact_sum(const std::vector<T>& v, double init = 0) {
  std::vector<double> partials;
  const auto add = [&](double x) {
    std::size_t used = 0;
    for (double y : partials) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y, lo = y - (hi - x);
      if (lo != 0.0) partials[used++] = lo;
      x = hi;
    }
    partials.resize(used);
    partials.push_back(x);
  };
  add(init);
  for (const T x : v) add(static_cast<double>(x));
  long double sum = 0;
  for (auto p = partials.rbegin(); p != partials.rend(); ++p) sum += *p;
  return sum;
}

// docs/api.md's promise for a reproducible sum `got` of v: within N * 2^-90 * max|x| (double sums;
// 2^-60 for float sums, which keep three windows) plus half an ulp of the result of the exact sum.
template <class T>
void expect_within_repro_bound(T got, const std::vector<T>& v, double init = 0) {
  long double largest = std::fabs(static_cast<long double>(init));
  for (const T x : v) largest = std::max(largest, std::fabs(static_cast<long double>(x)));
  const long double exact = exact_sum(v, init);
  const int window_bits = std::is_same_v<T, float> ? 60 : 90;
  const T magnitude = std::fabs(got);
  const long double half_ulp = 0.5L * (static_cast<long double>(std::nextafter(magnitude, std::numeric_limits<T>::infinity())) -
                                       static_cast<long double>(magnitude));
  const long double bound = static_cast<long double>(v.size() + 1) * std::ldexp(largest, -window_bits) + half_ulp +
                            std::ldexp(std::fabs(exact), -60);  // (the long double sum of the partials)
  EXPECT_LE(std::fabs(static_cast<long double>(got) - exact), bound)
      << "reproducible sum " << got << " against the exact " << static_cast<double>(exact);
}

template <class T>
std::uint64_t bits(T x) {
  std::uint64_t u = 0;
  std::memcpy(&u, &x, sizeof(T));
  return u;
}

struct steps_of_1021 {
  __host__ __device__ float operator()(std::uint64_t i) const { return static_cast<float>(i % 1021) / 64.0f - 7.5f; }
};

struct wide_mul {
  __host__ __device__ double operator()(float a, float b) const { return static_cast<double>(a) * b; }
};

// Layouts over k places: even, weighted with empty places, everything on the last place.
std::vector<strata::partition_policy> repro_layouts(std::size_t k, std::uint64_t n) {
  std::vector<strata::partition_policy> l{strata::partition_policy::even()};
  if (k > 1) {
    std::vector<double> w(k, 1.0);
    w[0] = 0;
    w[k - 1] = 5;
    l.push_back(strata::partition_policy::weighted(w));
    std::vector<std::uint64_t> sizes(k, 0);
    sizes[k - 1] = n;
    l.push_back(strata::partition_policy::explicit_sizes(sizes));
  }
  return l;
}

}  // namespace

TEST(Reduce, ReproducibleSumsHaveTheSameBitsOnEveryLayout) {
  for (std::uint64_t n : sizes()) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed));
    const auto hd = wide_doubles(n, seed), hw = wide_doubles(n, seed + 2, true);
    std::vector<float> hf(hd.begin(), hd.end());
    for (std::uint64_t i = 5; i < n; i += 13) hf[i] = std::ldexp(static_cast<float>(i % 1000 + 1), -149);  // subnormal
    for (std::uint64_t i = 3; i < n; i += 17) hf[i] = (i & 1) ? 0.0f : -0.0f;
    const auto hy = random_vector<float>(n, seed + 1);
    std::vector<double> prod(n);
    for (std::uint64_t i = 0; i < n; ++i) prod[i] = static_cast<double>(hf[i]) * hy[i];
    const double want_d = host_reproducible(hd), want_init = host_reproducible(hd, 0.75);
    const double want_w = host_reproducible(hw);
    const float want_f = host_reproducible(hf);
    const double want_dot = host_reproducible(prod);
    for (const auto& s : sets())
      for (const auto& policy : repro_layouts(s.set.size(), n)) {
        SCOPED_TRACE(s.name);
        strata::distributed_vector<double> d(hd, s.set, policy), dw(hw, s.set, policy);
        strata::distributed_vector<float> f(hf, s.set, policy), y(hy, s.set, policy);
        for (int rep = 0; rep < 3; ++rep) {  // the second call is captured, the third replayed
          EXPECT_EQ(bits(strata::reduce(strata::reproducible, d)), bits(want_d));
          EXPECT_EQ(bits(strata::reduce(strata::reproducible, d, 0.75)), bits(want_init));
          EXPECT_EQ(bits(strata::reduce(strata::reproducible, dw)), bits(want_w));
          EXPECT_EQ(bits(strata::reduce(strata::reproducible, f)), bits(want_f));
          EXPECT_EQ(bits(strata::transform_reduce(strata::reproducible, f, y, 0.0, wide_mul{})), bits(want_dot));
        }
        // Against the exact sums (independent of the library's own reference above).
        expect_within_repro_bound(strata::reduce(strata::reproducible, d), hd);
        expect_within_repro_bound(strata::reduce(strata::reproducible, d, 0.75), hd, 0.75);
        expect_within_repro_bound(strata::reduce(strata::reproducible, f), hf);
        expect_within_repro_bound(strata::transform_reduce(strata::reproducible, f, y, 0.0, wide_mul{}), prod);
      }
  }
}

TEST(Reduce, ReproducibleOver2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  // x_i = (i mod 1021) / 64 - 7.5: exact in float, with an exact sum known in closed form.
  const std::uint64_t n = (1ull << 31) + 333;
  long double exact = 0;
  const std::uint64_t full = n / 1021, rest = n % 1021;
  for (std::uint64_t r = 0; r < 1021; ++r)
    exact += (static_cast<long double>(r) / 64 - 7.5L) * static_cast<long double>(full + (r < rest ? 1 : 0));
  std::uint64_t first = 0;
  for (std::size_t k : {1, 3}) {
    const auto set = strata::device_set::repeat(0, k);
    strata::distributed_vector<float> v(n, set, k == 1 ? strata::partition_policy::even()
                                                       : strata::partition_policy::weighted({1, 0, 2}), strata::no_init);
    strata::tabulate(v, steps_of_1021{});
    const double got = strata::reduce(strata::reproducible, v, 0.0);
    EXPECT_EQ(static_cast<long double>(got), exact) << k << " places";
    if (k == 1) first = bits(got);
    EXPECT_EQ(bits(got), first);
  }
}

// ---- histograms (the array fold: each place's bins added on the root) ----------------------

namespace {

// Host reference of histogram_even for integers: bin b holds lower + b*w <= x < lower + (b+1)*w,
// computed exactly as (x - lower) * bins / (upper - lower).
template <class T>
std::vector<std::uint64_t> host_even(const std::vector<T>& h, int bins, std::int64_t lower, std::int64_t upper) {
  std::vector<std::uint64_t> c(static_cast<std::size_t>(bins), 0);
  for (T x : h) {
    const auto v = static_cast<std::int64_t>(x);
    if (v < lower || v >= upper) continue;
    ++c[static_cast<std::size_t>((v - lower) * bins / (upper - lower))];
  }
  return c;
}

template <class T, class L>
std::vector<std::uint64_t> host_range(const std::vector<T>& h, const std::vector<L>& edges) {
  std::vector<std::uint64_t> c(edges.size() - 1, 0);
  for (T x : h) {
    if (!(static_cast<L>(x) >= edges.front()) || !(static_cast<L>(x) < edges.back())) continue;
    const auto at = std::upper_bound(edges.begin(), edges.end(), static_cast<L>(x)) - edges.begin();
    ++c[static_cast<std::size_t>(at - 1)];
  }
  return c;
}

struct byte_pattern {
  __host__ __device__ std::uint8_t operator()(std::uint64_t i) const { return static_cast<std::uint8_t>(i % 251); }
};

}  // namespace

// Integers binned evenly (a width that does not divide the range, samples outside it) and by
// edges, floats at half-integers (never on an edge, so CUB's rounding cannot move them), on every
// set and size; a reduce between the calls shares the fold's ordering with the array fold.
TEST(Histogram, EvenAndRangeAgreeWithTheHost) {
  const std::vector<std::int32_t> edges{-100, -50, -3, 0, 1, 2, 60, 101};
  for_each_case<std::int32_t>([&](const named_set&, std::uint64_t n, const std::vector<std::int32_t>& h,
                                  strata::distributed_vector<std::int32_t>& v) {
    EXPECT_EQ(strata::histogram_even(v, 16, -90, 91), host_even(h, 16, -90, 91)) << "even";
    std::int64_t sum = 0;
    for (auto x : h) sum += x;
    EXPECT_EQ(strata::reduce(v, std::int64_t{0}), sum) << "a scalar fold between two array folds";
    EXPECT_EQ(strata::histogram_range(v, edges), host_range(h, edges)) << "range";
    EXPECT_EQ(strata::histogram_even(v, 1, -1000, 1000), std::vector<std::uint64_t>{n}) << "one bin holds everything";
    // Floats at k + 0.5 for k in [-20, 20): 8 bins of width 4 over [-16, 16).
    std::vector<float> f(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) f[i] = static_cast<float>(h[i] % 20) + 0.5f;
    const strata::distributed_vector<float> fv(f, v.places());
    std::vector<std::uint64_t> want(8, 0);
    for (float x : f)
      if (x >= -16.0f && x < 16.0f) ++want[static_cast<std::size_t>((x + 16.0f) / 4.0f)];
    EXPECT_EQ(strata::histogram_even(fv, 8, -16.0f, 16.0f), want) << "float";
    EXPECT_EQ(strata::histogram_range(fv, std::vector<float>{-16.0f, -4.0f, 0.0f, 16.0f}),
              host_range(f, std::vector<float>{-16.0f, -4.0f, 0.0f, 16.0f}))
        << "float edges";
  });
}

TEST(Histogram, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = private_set(3);
  strata::distributed_vector<int> v(100, 1, set);
  EXPECT_THROW((void)strata::histogram_even(v, 0, 0, 10), std::invalid_argument) << "no bins";
  EXPECT_THROW((void)strata::histogram_even(v, 4, 10, 10), std::invalid_argument) << "lower == upper";
  EXPECT_THROW((void)strata::histogram_even(strata::distributed_span<int>{}, 4, 0, 10), std::invalid_argument)
      << "no places";
  EXPECT_THROW((void)strata::histogram_range(v, std::vector<int>{1}), std::invalid_argument) << "one edge";
  EXPECT_THROW((void)strata::histogram_range(v, std::vector<int>{0, 5, 5}), std::invalid_argument) << "repeated edge";
  EXPECT_THROW((void)strata::histogram_range(v, std::vector<int>{0, 5, 2}), std::invalid_argument) << "out of order";
  EXPECT_EQ(strata::histogram_even(v, 2, 0, 4), (std::vector<std::uint64_t>{100, 0})) << "and the set still works";
}

// More than 2^31 bytes, on one place (one segment past 2^31) and on three: x[i] = i mod 251, one
// bin per value.
TEST(Histogram, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 99;
  std::vector<std::uint64_t> want(251, n / 251);
  for (std::uint64_t v = 0; v < n % 251; ++v) ++want[v];
  for (std::size_t k : {1, 3}) {
    SCOPED_TRACE(std::to_string(k) + " places");
    strata::distributed_vector<std::uint8_t> x(n, private_set(k), strata::partition_policy::even(), strata::no_init);
    strata::tabulate(x, byte_pattern{});
    EXPECT_EQ(strata::histogram_even(x, 251, 0, 251), want);
  }
}

// ---- the first-index algorithms (algorithm/find.cuh) ------------------------------------

namespace {

struct above {
  std::int32_t t;
  __host__ __device__ bool operator()(std::int32_t x) const { return x > t; }
};

struct is_seven {
  __host__ __device__ bool operator()(std::uint8_t b) const { return b == 7; }
};

struct descending {
  __host__ __device__ bool operator()(std::int32_t a, std::int32_t b) const { return a > b; }
};

// The data with `marker` written at `at` (each in range) and nowhere else: random values stay in
// [-100, 100].
std::vector<std::int32_t> with_markers(std::vector<std::int32_t> h, std::initializer_list<std::uint64_t> at,
                                       std::int32_t marker) {
  for (std::uint64_t i : at)
    if (i < h.size()) h[i] = marker;
  return h;
}

// The first element of the last non-empty segment (0 if the first is the only one): a hit or a
// descent there is found only through the fold's segment order and offsets.
std::uint64_t last_segment_start(const strata::partition& part) {
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < part.places(); ++i)
    if (part.count(i) > 0) at = part.offset(i);
  return at;
}

}  // namespace

// find, find_if, find_if_not and mismatch against std:: on every set and size: thresholds on the
// random data (hits early or nowhere) and markers in a later place (hits found only through the
// fold's order and the segment offsets), two markers (the first wins).
TEST(Find, FirstHitsAgreeWithTheHost) {
  for_each_case<std::int32_t>([&](const named_set& s, std::uint64_t n, const std::vector<std::int32_t>& h,
                                  strata::distributed_vector<std::int32_t>& v) {
    for (std::int32_t t : {-101, 0, 97, 100}) {
      const auto want = static_cast<std::uint64_t>(std::find_if(h.begin(), h.end(), above{t}) - h.begin());
      const auto want_not = static_cast<std::uint64_t>(std::find_if_not(h.begin(), h.end(), above{t}) - h.begin());
      EXPECT_EQ(strata::find_if(v, above{t}), want) << "find_if x > " << t;
      EXPECT_EQ(strata::find_if_not(v, above{t}), want_not) << "find_if_not x > " << t;
    }
    EXPECT_EQ(strata::find(v, 1000), n) << "absent";
    if (n == 0) return;
    const std::uint64_t late = last_segment_start(v.partition());
    const std::uint64_t later = late + (n - late) / 2;
    const auto m = with_markers(h, {later, n - 1, late}, 1000);
    const strata::distributed_vector<std::int32_t> vm(m, s.set);
    EXPECT_EQ(strata::find(vm, 1000), late) << "marker at the last segment's start";
    EXPECT_EQ(strata::find_if(vm, above{500}), late);
    const auto m2 = with_markers(h, {n - 1}, 1000);
    const strata::distributed_vector<std::int32_t> vm2(m2, s.set);
    EXPECT_EQ(strata::find(vm2, 1000), n - 1) << "marker at the end";
    EXPECT_EQ(strata::mismatch(v, vm2), n - 1) << "mismatch at the end";
    EXPECT_EQ(strata::mismatch(v, v), n) << "equal";
    // vm has markers at late, later and n - 1, vm2 at n - 1 only: they differ first at late,
    // unless late is n - 1 (then they are equal).
    EXPECT_EQ(strata::mismatch(vm, vm2), late < n - 1 ? late : n) << "two markers apart";
    EXPECT_EQ(strata::find_async(vm2, 1000).get(), n - 1) << "async";
  });
}

// is_sorted / is_sorted_until against std:: on every set and size: sorted data with duplicates
// (non-strict order passes), a descent at the last segment's first element (only the boundary
// check sees it), one at the last element, a descending comparator, and the random data.
TEST(Find, SortednessAgreesWithTheHost) {
  for_each_case<std::int32_t>([&](const named_set& s, std::uint64_t n, const std::vector<std::int32_t>& h,
                                  strata::distributed_vector<std::int32_t>& v) {
    const auto until = [](const std::vector<std::int32_t>& x) {
      return static_cast<std::uint64_t>(std::is_sorted_until(x.begin(), x.end()) - x.begin());
    };
    EXPECT_EQ(strata::is_sorted_until(v), until(h)) << "random";
    EXPECT_EQ(strata::is_sorted(v), std::is_sorted(h.begin(), h.end())) << "random";
    auto sorted = h;
    std::sort(sorted.begin(), sorted.end());
    const strata::distributed_vector<std::int32_t> vs(sorted, s.set);
    EXPECT_TRUE(strata::is_sorted(vs)) << "sorted, with duplicates";
    EXPECT_EQ(strata::is_sorted_until(vs), n);
    EXPECT_EQ(strata::is_sorted(vs, descending{}), n < 2 || sorted.front() == sorted.back()) << "descending";
    auto reversed = sorted;
    std::reverse(reversed.begin(), reversed.end());
    const strata::distributed_vector<std::int32_t> vr(reversed, s.set);
    EXPECT_TRUE(strata::is_sorted(vr, descending{})) << "descending comparator";
    EXPECT_EQ(strata::is_sorted_until(vr, descending{}), n);
    const std::uint64_t late = last_segment_start(vs.partition());
    if (late > 0) {
      auto b = sorted;
      b[late] = b[late - 1] - 1;  // below its predecessor, at most its successor
      const strata::distributed_vector<std::int32_t> vb(b, s.set);
      EXPECT_EQ(strata::is_sorted_until(vb), until(b)) << "descent at a segment boundary";
      EXPECT_EQ(until(b), late);
      EXPECT_FALSE(strata::is_sorted(vb));
    }
    if (n >= 2) {
      auto e = sorted;
      e[n - 1] = e[n - 2] - 1;
      const strata::distributed_vector<std::int32_t> ve(e, s.set);
      EXPECT_EQ(strata::is_sorted_until(ve), until(e)) << "descent at the end";
      EXPECT_FALSE(strata::is_sorted_async(ve).get());
    }
  });
}

TEST(Find, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = private_set(3);
  strata::distributed_vector<int> a(100, 1, set), shorter(99, 1, set);
  strata::distributed_vector<int> other(100, 1, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  EXPECT_THROW((void)strata::mismatch(a, shorter), std::invalid_argument) << "sizes differ";
  EXPECT_THROW((void)strata::mismatch(a, other), std::invalid_argument) << "layouts differ";
  EXPECT_THROW((void)strata::find(strata::distributed_span<int>{}, 1), std::invalid_argument) << "no places";
  EXPECT_THROW((void)strata::is_sorted(strata::distributed_span<int>{}), std::invalid_argument) << "no places";
  EXPECT_EQ(strata::mismatch(a, a), 100u) << "and the set still works";
}

// Past 2^31 elements in one segment and across three: a hit and a descent near the end.
TEST(Find, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 99;
  for (std::size_t k : {1, 3}) {
    SCOPED_TRACE(std::to_string(k) + " places");
    strata::distributed_vector<std::uint8_t> x(n, private_set(k), strata::partition_policy::even(), strata::no_init);
    strata::tabulate(x, byte_pattern{});
    EXPECT_EQ(strata::find(x, std::uint8_t{250}), 250u);
    EXPECT_EQ(strata::is_sorted_until(x), 251u) << "i mod 251 descends at 251";
    strata::distributed_vector<std::uint8_t> y(n, std::uint8_t{7}, private_set(k));
    EXPECT_TRUE(strata::is_sorted(y));
    EXPECT_EQ(strata::find_if_not(y, is_seven{}), n);
  }
}

// ---- lazy inputs: strata::counting and strata::transformed ----------------------------------

struct square_i64 {
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return x * x; }
};
struct scale_i64 {  // state in the function: a replayed graph must follow it
  std::int64_t k;
  __host__ __device__ std::int64_t operator()(std::int64_t x) const { return k * x; }
};
struct is_multiple_of_7 {
  __host__ __device__ bool operator()(std::int64_t x) const { return x % 7 == 0; }
};
struct non_negative {
  __host__ __device__ bool operator()(std::int64_t x) const { return x >= 0; }
};
struct strata_test_identity {
  __host__ __device__ int operator()(int x) const { return x; }
};
std::vector<int> h_of_size(std::size_t n) { return std::vector<int>(n, 3); }
std::int64_t sum_i64(const std::vector<std::int64_t>& h) {
  std::int64_t s = 0;
  for (auto x : h) s += x;
  return s;
}
struct index_times_value {
  __host__ __device__ std::int64_t operator()(std::int64_t i, std::int64_t x) const { return i * x; }
};
struct index_plus_value {
  __host__ __device__ std::int64_t operator()(std::int64_t i, std::int64_t x) const { return i + x; }
};
struct mod_1000 {
  __host__ __device__ std::int32_t operator()(std::int64_t x) const { return static_cast<std::int32_t>(x % 1000); }
};

// A transform view of a __device__ lambda states its element type (a free function: nvcc allows
// no extended lambdas in gtest's test bodies).
std::int64_t sum_of_cubes_through_a_device_lambda(const strata::distributed_vector<std::int64_t>& v) {
  return strata::reduce(strata::transformed<std::int64_t>(v, [] __device__(std::int64_t x) { return x * x * x; }));
}

// Every algorithm that takes a lazy input, on every set and size, against host references: the
// counting range (values from a negative start, so offsets and signs both count), transform
// views of a container and of a counting range, nested views; the element written by transform
// from a view (into a poisoned container); repeated calls (captured and replayed as graphs) whose
// function state changes between calls.
TEST(Views, CountingAndTransformedAgreeWithTheHost) {
  for_each_case<std::int64_t>([&](const named_set& s, std::uint64_t n, const std::vector<std::int64_t>& h,
                                  strata::distributed_vector<std::int64_t>& v) {
    const std::int64_t first = -1234567;
    const auto c = strata::counting(first, n, s.set, strata::partition_policy::weighted(std::vector<double>(s.set.size(), 1.0)));
    ASSERT_EQ(c.size(), n);
    std::int64_t sum = 0, squares = 0, sevens = 0, cubes = 0;
    for (std::uint64_t g = 0; g < n; ++g) {
      const std::int64_t x = first + static_cast<std::int64_t>(g);
      sum += x;
      sevens += x % 7 == 0 ? 1 : 0;
    }
    for (auto x : h) {
      squares += x * x;
      cubes += x * x * x;
    }
    EXPECT_EQ(strata::reduce(c), sum) << "reduce(counting)";
    EXPECT_EQ(strata::count_if(c, is_multiple_of_7{}), static_cast<std::uint64_t>(sevens)) << "count_if(counting)";
    const auto lo = strata::min_element(c), hi = strata::max_element(c);
    EXPECT_EQ(lo.index, n > 0 ? 0u : n);
    EXPECT_EQ(hi.index, n > 0 ? n - 1 : n);
    if (n > 0) {
      EXPECT_EQ(lo.value, first);
      EXPECT_EQ(hi.value, first + static_cast<std::int64_t>(n) - 1);
    }
    EXPECT_EQ(strata::find(c, first + static_cast<std::int64_t>(n / 2)), n > 0 ? n / 2 : 0u) << "find(counting)";
    // A histogram of a counting range: every bin of [first, first + n) holds its width.
    if (n > 0) {
      const auto bins = strata::histogram_even(c, 5, first, first + static_cast<std::int64_t>(n));
      std::vector<std::uint64_t> want(5, 0);
      for (std::uint64_t g = 0; g < n; ++g) ++want[static_cast<std::size_t>(g * 5 / n)];
      EXPECT_EQ(bins, want) << "histogram_even(counting)";
    }
    // Transform views of the container and of the counting range; one of a view.
    EXPECT_EQ(strata::reduce(strata::transformed(v, square_i64{})), squares) << "reduce(transformed(v))";
    EXPECT_EQ(sum_of_cubes_through_a_device_lambda(v), cubes) << "transformed<V> of a __device__ lambda";
    const auto mm = strata::minmax(strata::transformed(v, scale_i64{-1}));
    if (n > 0) {
      const auto [a, b] = std::minmax_element(h.begin(), h.end());
      EXPECT_EQ(mm.max.value, -*a);
      EXPECT_EQ(mm.min.value, -*b);
    }
    const auto tc = strata::transformed(strata::counting(std::int64_t{0}, v), mod_1000{});
    std::vector<std::uint64_t> want_mod(10, 0);
    for (std::uint64_t g = 0; g < n; ++g) ++want_mod[static_cast<std::size_t>((g % 1000) / 100)];
    EXPECT_EQ(strata::histogram_even(tc, 10, 0, 1000), want_mod) << "histogram_even(transformed(counting))";
    EXPECT_EQ(strata::reduce(strata::transformed(strata::transformed(v, scale_i64{2}), scale_i64{3})), 6 * sum_i64(h))
        << "a view of a view";
    EXPECT_EQ(strata::all_of(strata::transformed(v, square_i64{}), non_negative{}), true);
    // transform from a view writes every element.
    strata::distributed_vector<std::int64_t> out(n, s.set);
    poison(out);
    strata::transform(strata::counting(first, out), out, scale_i64{5});
    const auto got = out.to_std_vector();
    for (std::uint64_t g = 0; g < n; ++g)
      if (got[g] != 5 * (first + static_cast<std::int64_t>(g))) {
        ADD_FAILURE() << "transform(counting) element " << g << " is " << got[g];
        break;
      }
    // Zips of a view and a container: the index with the element (Thrust's zip of a counting
    // iterator), read by transform_reduce and transform.
    std::int64_t weighted = 0;
    for (std::uint64_t g = 0; g < n; ++g) weighted += static_cast<std::int64_t>(g) * h[g];
    const auto idx = strata::counting(std::int64_t{0}, v);
    EXPECT_EQ(strata::transform_reduce(strata::zip(idx, v), std::int64_t{0}, cuda::std::plus<>{}, index_times_value{}),
              weighted)
        << "transform_reduce(zip(counting, v))";
    poison(out);
    strata::transform(strata::zip(idx, strata::transformed(v, scale_i64{2})), out, index_plus_value{});
    const auto zipped = out.to_std_vector();
    for (std::uint64_t g = 0; g < n; ++g)
      if (zipped[g] != static_cast<std::int64_t>(g) + 2 * h[g]) {
        ADD_FAILURE() << "transform(zip(counting, transformed)) element " << g << " is " << zipped[g];
        break;
      }
    // Repeated: the second call is captured, later ones replay; the function's state is in the key.
    for (std::int64_t k = 1; k <= 3; ++k)
      for (int rep = 0; rep < 3; ++rep)
        EXPECT_EQ(strata::reduce(strata::transformed(v, scale_i64{k})), k * sum_i64(h)) << "k=" << k << ", call " << rep;
  });
}

TEST(Views, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = strata::device_set::repeat(0, 3);
  EXPECT_THROW((void)strata::counting(std::int8_t{100}, 29, set), std::invalid_argument) << "100 + 28 > 127";
  EXPECT_NO_THROW((void)strata::counting(std::int8_t{100}, 28, set));
  EXPECT_THROW((void)strata::counting(std::uint32_t{1}, std::uint64_t{1} << 32, set), std::invalid_argument);
  EXPECT_NO_THROW((void)strata::counting(std::int64_t{-5}, 0, set));
  EXPECT_THROW((void)strata::counting(0, strata::distributed_span<int>{}), std::invalid_argument);
  EXPECT_THROW((void)strata::counting(0, 10, set, strata::partition_policy::weighted({1.0, 2.0})), std::invalid_argument)
      << "weights for another number of places";
  // A view meets a container of another layout: transform refuses before any work.
  const auto c = strata::counting(0, 1000, set);
  strata::distributed_vector<int> other(1000, set, strata::partition_policy::weighted({1.0, 2.0, 3.0}));
  strata::distributed_vector<int> shorter(999, set);
  EXPECT_THROW(strata::transform(c, other, strata_test_identity{}), std::invalid_argument);
  EXPECT_THROW(strata::transform(c, shorter, strata_test_identity{}), std::invalid_argument);
  EXPECT_THROW((void)strata::reduce(strata::transformed(strata::distributed_span<const int>{}, square_i64{})),
               std::invalid_argument);
  // A view's base shifted against the output: a partial overlap, refused as for the base itself
  // (one place, so that both slices have one layout and only the overlap is at fault).
  strata::distributed_vector<int> w(h_of_size(1001), strata::device_set::repeat(0, 1));
  const strata::distributed_span<int> ws = w;
  EXPECT_THROW(strata::transform(strata::transformed(ws.first(1000), strata_test_identity{}), ws.last(1000),
                                 strata_test_identity{}),
               std::invalid_argument);
  EXPECT_NO_THROW(strata::transform(strata::transformed(ws, strata_test_identity{}), ws, strata_test_identity{}))
      << "in place through a view";
}
