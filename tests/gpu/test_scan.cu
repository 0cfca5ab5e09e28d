// The scan family against host references: typed sums, a non-commutative operator (2x2
// matrix product mod 2^32), transform scans, in place, and a scan over 2^31 elements.
#include "test_util.cuh"

#include <numeric>

using namespace strata_test;

template <class T>
class ScanTyped : public ::testing::Test {};
TYPED_TEST_SUITE(ScanTyped, ValueTypes);

// Compares a scan's output element by element (exact for integers, relative for floating).
template <class T>
void expect_prefix(const std::vector<T>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::uint64_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    bool ok;
    if constexpr (std::is_floating_point_v<T>)
      ok = std::fabs(static_cast<double>(got[i]) - want[i]) <= 2e-5 * std::max(1.0, std::fabs(want[i]));
    else
      ok = got[i] == static_cast<T>(want[i]);
    if (!ok && bad++ < 5) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

template <class T>
std::vector<double> host_scan(const std::vector<T>& h, bool exclusive, double init) {
  std::vector<double> r(h.size());
  if constexpr (std::is_unsigned_v<T>) {
    T acc = static_cast<T>(init);
    for (std::size_t i = 0; i < h.size(); ++i) {
      if (exclusive) r[i] = acc;
      acc = static_cast<T>(acc + h[i]);
      if (!exclusive) r[i] = acc;
    }
  } else {
    long double acc = init;
    for (std::size_t i = 0; i < h.size(); ++i) {
      if (exclusive) r[i] = static_cast<double>(acc);
      acc += h[i];
      if (!exclusive) r[i] = static_cast<double>(acc);
    }
  }
  return r;
}

struct twice {
  template <class T>
  __host__ __device__ T operator()(T x) const {
    return static_cast<T>(x + x);
  }
};

TYPED_TEST(ScanTyped, InclusiveAndExclusiveSums) {
  using T = TypeParam;
  for_each_case<T>([](const named_set& s, std::uint64_t n, const std::vector<T>& h, strata::distributed_vector<T>& in) {
      strata::distributed_vector<T> out(n, s.set);
      poison(out);
      strata::inclusive_scan(in, out);
      expect_prefix(out.to_std_vector(), host_scan(h, false, 0), "inclusive_scan");
      poison(out);
      strata::exclusive_scan(in, out, T(5));
      expect_prefix(out.to_std_vector(), host_scan(h, true, 5), "exclusive_scan");

      std::vector<T> h2(h);
      for (auto& x : h2) x = twice{}(x);
      poison(out);
      strata::transform_inclusive_scan(in, out, cuda::std::plus<>{}, twice{});
      expect_prefix(out.to_std_vector(), host_scan(h2, false, 0), "transform_inclusive_scan");
      poison(out);
      strata::transform_exclusive_scan(in, out, T(1), cuda::std::plus<>{}, twice{});
      expect_prefix(out.to_std_vector(), host_scan(h2, true, 1), "transform_exclusive_scan");

      strata::inclusive_scan(in, in);  // in place
      expect_prefix(in.to_std_vector(), host_scan(h, false, 0), "in-place inclusive_scan");
  });
}


TEST(Scan, NonCommutativeOperatorKeepsOrder) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      std::mt19937_64 g(seed);
      std::vector<mat2> h(n);
      for (auto& m : h) m = {static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()),
                             static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g())};
      strata::distributed_vector<mat2> in(h, s.set), out(n, s.set);
      poison(out);
      strata::inclusive_scan(in, out, mat2_mul{});
      std::vector<mat2> want(n);
      mat2 acc{1, 0, 0, 1};
      for (std::uint64_t i = 0; i < n; ++i) want[i] = acc = mat2_mul{}(acc, h[i]);
      EXPECT_TRUE(out.to_std_vector() == want) << "inclusive";
      poison(out);
      const mat2 init{3, 1, 4, 1};
      strata::exclusive_scan(in, out, init, mat2_mul{});
      acc = init;
      for (std::uint64_t i = 0; i < n; ++i) {
        want[i] = acc;
        acc = mat2_mul{}(acc, h[i]);
      }
      EXPECT_TRUE(out.to_std_vector() == want) << "exclusive";
    }
}

TEST(Scan, UnevenAndEmptySegments) {
  const auto set = strata::device_set::repeat(0, 5);
  const auto h = random_vector<std::int64_t>(1000, fresh_seed());
  for (const auto& sizes : std::vector<std::vector<std::uint64_t>>{{0, 0, 1000, 0, 0}, {1, 0, 0, 0, 999}, {0, 500, 0, 500, 0}, {997, 1, 1, 1, 0}}) {
    strata::distributed_vector<std::int64_t> in(h, set, strata::partition_policy::explicit_sizes(sizes));
    strata::distributed_vector<std::int64_t> out(1000, set, strata::partition_policy::explicit_sizes(sizes));
    poison(out);
    strata::exclusive_scan(in, out, std::int64_t{-3});
    expect_prefix(out.to_std_vector(), host_scan(h, true, -3), "exclusive, uneven");
    poison(out);
    strata::inclusive_scan(in, out, cuda::std::plus<>{}, strata::nosync);
    set.synchronize();
    expect_prefix(out.to_std_vector(), host_scan(h, false, 0), "inclusive nosync, uneven");
  }
}

TEST(Scan, MismatchedLayoutsThrowBeforeDeviceWork) {
  const auto set = strata::device_set::repeat(0, 2);
  strata::distributed_vector<int> in(10, 1, set), shorter(9, 7, set);
  strata::distributed_vector<int> other(10, 7, set, strata::partition_policy::explicit_sizes({1, 9}));
  EXPECT_THROW(strata::inclusive_scan(in, shorter), std::invalid_argument);
  EXPECT_THROW(strata::exclusive_scan(in, other, 0), std::invalid_argument);
  EXPECT_EQ(other.to_std_vector(), std::vector<int>(10, 7));
}

TEST(Scan, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 1001;
  const auto set = strata::device_set::repeat(0, 2);
  std::vector<std::uint8_t> h(n);
  std::mt19937_64 g(fresh_seed());
  for (auto& x : h) x = static_cast<std::uint8_t>(g());
  strata::distributed_vector<std::uint8_t> v(h, set);
  strata::inclusive_scan(v, v);  // in place, wraps mod 256
  const auto got = v.to_std_vector();
  std::uint8_t acc = 0;
  std::uint64_t bad = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    acc = static_cast<std::uint8_t>(acc + h[i]);
    if (got[i] != acc && bad++ < 5) ADD_FAILURE() << "element " << i;
  }
  EXPECT_EQ(bad, 0u);
}

// Issue 18: every documented form takes strata::nosync (the tag used to bind as the operator and
// fail to compile), an inclusive scan takes an initial value, and a scan into a wider output adds
// in the wider type (int32 into int64 used to overflow in int32).
TEST(Scan, NosyncInitialValueAndAccumulatorType) {
  for_each_set_and_size([](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    std::mt19937_64 g(seed);
    std::vector<std::int32_t> h(n);
    for (auto& x : h) x = static_cast<std::int32_t>(1'000'000'000 + g() % 1'000'000'000);  // sums leave int32 at once
    strata::distributed_vector<std::int32_t> in(h, s.set), out32(n, s.set);
    strata::distributed_vector<std::int64_t> out(n, s.set);
    std::vector<std::int64_t> inc(n), exc(n);
    std::int64_t acc = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      exc[i] = acc;
      inc[i] = acc += h[i];
    }
    const auto plus_init = [&](std::int64_t init) {
      std::vector<std::int64_t> w(inc);
      for (auto& x : w) x += init;
      return w;
    };

    poison(out);
    strata::inclusive_scan(in, out);  // accumulates in int64, the common type
    EXPECT_EQ(out.to_std_vector(), inc) << "int32 into int64";
    poison(out);
    strata::inclusive_scan(in, out, strata::nosync);
    s.set.synchronize();
    EXPECT_EQ(out.to_std_vector(), inc) << "inclusive_scan(in, out, nosync)";
    poison(out);
    strata::inclusive_scan(in, out, cuda::std::plus<>{}, std::int64_t{-7});
    EXPECT_EQ(out.to_std_vector(), plus_init(-7)) << "inclusive_scan with init";
    poison(out);
    strata::inclusive_scan(in, out, cuda::std::plus<>{}, std::int64_t{11}, strata::nosync);
    s.set.synchronize();
    EXPECT_EQ(out.to_std_vector(), plus_init(11)) << "inclusive_scan with init, nosync";
    poison(out);
    strata::transform_inclusive_scan(in, out, cuda::std::plus<>{}, cuda::std::negate<>{}, std::int64_t{5});
    std::vector<std::int64_t> neg(n);
    for (std::uint64_t i = 0; i < n; ++i) neg[i] = 5 - inc[i];
    EXPECT_EQ(out.to_std_vector(), neg) << "transform_inclusive_scan with init";
    poison(out);
    strata::exclusive_scan(in, out, std::int64_t{0}, strata::nosync);
    s.set.synchronize();
    EXPECT_EQ(out.to_std_vector(), exc) << "exclusive_scan(in, out, init, nosync)";
    // Same types in and out: the sums wrap in int32 as std::inclusive_scan's do.
    strata::distributed_vector<std::int32_t> small(n, s.set);
    std::vector<std::int32_t> hs(n, 3), ws(n);
    small = hs;
    poison(out32);
    strata::inclusive_scan(small, out32, strata::nosync);
    s.set.synchronize();
    for (std::uint64_t i = 0; i < n; ++i) ws[i] = static_cast<std::int32_t>(3 * (i + 1));
    EXPECT_EQ(out32.to_std_vector(), ws);
  });
}

// A non-commutative operator with an initial value: the seed joins on the left of segment 0 only.
TEST(Scan, InclusiveWithInitNonCommutative) {
  for (const auto& s : sets())
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{1009}}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      std::mt19937_64 g(seed);
      std::vector<mat2> h(n);
      for (auto& m : h)
        m = mat2{static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()),
                 static_cast<std::uint32_t>(g())};
      strata::distributed_vector<mat2> in(h, s.set), out(n, s.set);
      poison(out);
      const mat2 init{2, 7, 1, 8};
      strata::inclusive_scan(in, out, mat2_mul{}, init);
      std::vector<mat2> want(n);
      mat2 acc = init;
      for (std::uint64_t i = 0; i < n; ++i) want[i] = acc = mat2_mul{}(acc, h[i]);
      EXPECT_TRUE(out.to_std_vector() == want);
    }
}

// ---- adjacent_difference ---------------------------------------------------------------

namespace {

// 3a - b in 64 bits: not commutative, so the neighbour's side is checked too.
struct three_a_minus_b {
  __host__ __device__ std::int64_t operator()(std::int32_t a, std::int32_t b) const {
    return 3 * static_cast<std::int64_t>(a) - b;
  }
};

}  // namespace

// Against std::adjacent_difference on every set and size, into poisoned outputs: differences,
// a non-commutative operator into a wider type, and in place.
TEST(AdjacentDifference, AgreesWithTheHost) {
  for_each_case<std::int32_t>([&](const named_set& s, std::uint64_t n, const std::vector<std::int32_t>& h,
                                  strata::distributed_vector<std::int32_t>& v) {
    std::vector<std::int32_t> want(n);
    std::adjacent_difference(h.begin(), h.end(), want.begin());
    strata::distributed_vector<std::int32_t> out(n, s.set);
    poison(out);
    strata::adjacent_difference(v, out);
    EXPECT_TRUE(out.to_std_vector() == want) << "differences";
    std::vector<std::int64_t> want3(n);
    for (std::uint64_t i = 0; i < n; ++i) want3[i] = i == 0 ? h[0] : three_a_minus_b{}(h[i], h[i - 1]);
    strata::distributed_vector<std::int64_t> out3(n, s.set);
    poison(out3);
    strata::adjacent_difference(v, out3, three_a_minus_b{}, strata::nosync);
    EXPECT_TRUE(out3.to_std_vector() == want3) << "not commutative, into int64, nosync";
    strata::adjacent_difference(v, v);
    EXPECT_TRUE(v.to_std_vector() == want) << "in place";
  });
}

TEST(AdjacentDifference, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = private_set(3);
  strata::distributed_vector<int> a(100, 1, set), shorter(99, 3, set);
  strata::distributed_vector<int> other(100, 4, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  EXPECT_THROW(strata::adjacent_difference(a, shorter), std::invalid_argument);
  EXPECT_THROW(strata::adjacent_difference(a, other), std::invalid_argument);
  EXPECT_EQ(shorter.to_std_vector(), std::vector<int>(99, 3));
  EXPECT_EQ(other.to_std_vector(), std::vector<int>(100, 4));
  strata::adjacent_difference(a, a);
  std::vector<int> want(100, 0);
  want[0] = 1;
  EXPECT_EQ(a.to_std_vector(), want) << "and the set still works";
}
