// The exact accumulator of strata::reproducible sums, on the host (its functions are
// __host__ __device__): the same bits for any grouping and order, exact sums where the data
// spans less than the kept windows, the documented error bound where it spans more, correct
// rounding to double and float, and IEEE specials.
#include <strata/detail/repro.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using strata::detail::repro_acc;
using strata::detail::repro_combine;
using strata::detail::repro_of;
using strata::detail::repro_round;
using strata::detail::repro_zero;

template <class T>
std::uint64_t bits_of(T x) {
  std::uint64_t u = 0;
  std::memcpy(&u, &x, sizeof(T));
  return u;
}

template <int W = repro_acc::windows>
repro_acc sequential(const std::vector<double>& v) {
  repro_acc a = repro_zero();
  for (double x : v) a = repro_combine<W>(a, repro_of<W>(x));
  return a;
}

// The same elements, cut into random groups, each summed in random order (by a running
// accumulator, as one GPU thread sums its elements, or element by element), then the groups
// combined in random order: what any partition, any grid and any reduction tree does.
template <int W = repro_acc::windows>
repro_acc grouped(std::vector<double> v, std::mt19937_64& g) {
  std::shuffle(v.begin(), v.end(), g);
  std::vector<repro_acc> parts;
  for (std::size_t at = 0; at < v.size();) {
    const std::size_t len = 1 + g() % (v.size() - at);
    repro_acc a = repro_zero();
    if (g() & 1) {
      strata::detail::repro_thread<W> t;
      for (std::size_t i = at; i < at + len; ++i) t.add(v[i]);
      a = t.get();
    } else {
      for (std::size_t i = at; i < at + len; ++i) a = repro_combine<W>(repro_of<W>(v[i]), a);
    }
    parts.push_back(a);
    at += len;
  }
  // A random binary tree over the parts.
  while (parts.size() > 1) {
    const std::size_t i = g() % (parts.size() - 1);
    parts[i] = repro_combine<W>(parts[i + 1], parts[i]);
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
  return parts.empty() ? repro_zero() : parts[0];
}

std::vector<double> wide_data(std::size_t n, int min_exp, int max_exp, std::mt19937_64& g) {
  std::vector<double> v(n);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  for (auto& x : v) {
    const int e = min_exp + static_cast<int>(g() % static_cast<unsigned>(max_exp - min_exp + 1));
    x = std::ldexp(m(g), e) * ((g() & 1) ? -1.0 : 1.0);
  }
  return v;
}

}  // namespace

// (Four windows: double sums; three: float sums.)
template <int W>
void same_bits_for_any_grouping() {
  std::mt19937_64 g(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const auto v = wide_data(1 + g() % 3000, -1070, 1000, g);
    const repro_acc ref = sequential<W>(v);
    for (int w = 0; w < repro_acc::windows - W; ++w) ASSERT_EQ(ref.w[w], 0) << "window " << w << " is not kept";
    const double want = repro_round<double>(ref);
    const float want_f = repro_round<float>(ref);
    for (int k = 0; k < 5; ++k) {
      const repro_acc a = grouped<W>(v, g);
      ASSERT_EQ(a.top, ref.top);
      for (int w = 0; w < repro_acc::windows; ++w) ASSERT_EQ(a.w[w], ref.w[w]) << "window " << w;
      ASSERT_EQ(bits_of(repro_round<double>(a)), bits_of(want));
      ASSERT_EQ(bits_of(repro_round<float>(a)), bits_of(want_f));
    }
  }
}
TEST(Reproducible, SameBitsForAnyGroupingAndOrder) { same_bits_for_any_grouping<4>(); }
TEST(Reproducible, SameBitsForAnyGroupingAndOrderWithThreeWindows) { same_bits_for_any_grouping<3>(); }

// The float overload of the running accumulator (bit widening, float limit, zeros skipped)
// deposits exactly what the double overload deposits for the same values: normal floats of every
// exponent, subnormals, zeros of both signs, infinities and NaNs, in random order.
template <int W>
void float_terms_deposit_as_doubles() {
  std::mt19937_64 g(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> v(1 + g() % 2000);
    const int lo = -149 + static_cast<int>(g() % 200);  // the smallest exponent of this trial
    for (auto& x : v) {
      const auto r = g() % 1000;
      if (r == 0) x = (g() & 1) ? 0.0f : -0.0f;
      else if (r == 1 && trial % 4 == 0) x = std::numeric_limits<float>::infinity() * ((g() & 1) ? 1 : -1);
      else if (r == 2 && trial % 8 == 0) x = std::numeric_limits<float>::quiet_NaN();
      else if (r < 20) x = std::ldexp(static_cast<float>(1 + g() % 0x7fffff), -149) * ((g() & 1) ? 1 : -1);  // subnormal
      else {
        const int e = lo + static_cast<int>(g() % static_cast<unsigned>(128 - lo));
        x = std::ldexp(1.0f + static_cast<float>(g() % 0x800000) / 0x800000, e) * ((g() & 1) ? 1 : -1);
      }
    }
    strata::detail::repro_thread<W> f, d;
    for (float x : v) {
      f.add(x);
      d.add(static_cast<double>(x));
    }
    const repro_acc a = f.get(), b = d.get();
    ASSERT_EQ(a.top, b.top);
    ASSERT_EQ(a.special, b.special);
    for (int w = 0; w < repro_acc::windows; ++w) ASSERT_EQ(a.w[w], b.w[w]) << "window " << w << ", trial " << trial;
    EXPECT_EQ(strata::detail::repro_widen_normal(1.5f), 1.5);
    EXPECT_EQ(strata::detail::repro_widen_normal(-std::numeric_limits<float>::min()), -double(std::numeric_limits<float>::min()));
    EXPECT_EQ(strata::detail::repro_widen_normal(std::numeric_limits<float>::max()), double(std::numeric_limits<float>::max()));
  }
}
TEST(Reproducible, FloatTermsDepositAsTheirDoubles) {
  float_terms_deposit_as_doubles<4>();
  float_terms_deposit_as_doubles<3>();
}

// Values within 80 bits of each other (under the four kept windows): the sum is exact before the
// final rounding, so cancelling pairs vanish and a small exact remainder survives.
// A running accumulator whose top rises with almost every element (ascending magnitudes, across
// the scaled tops near the largest doubles) holds what the elements deposit with the final top.
TEST(Reproducible, RunningAccumulatorRaisesExactly) {
  std::mt19937_64 g(std::random_device{}());
  for (int lo : {-1070, -300, 600, 900}) {
    auto v = wide_data(3000, lo, 1023, g);
    std::sort(v.begin(), v.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); });
    strata::detail::repro_thread t;
    for (double x : v) t.add(x);
    const repro_acc a = t.get(), ref = sequential(v);
    ASSERT_EQ(a.top, ref.top);
    for (int w = 0; w < repro_acc::windows; ++w) ASSERT_EQ(a.w[w], ref.w[w]) << "window " << w << ", from 2^" << lo;
    strata::detail::repro_thread<3> t3;
    for (double x : v) t3.add(x);
    const repro_acc a3 = t3.get(), ref3 = sequential<3>(v);
    ASSERT_EQ(a3.top, ref3.top);
    for (int w = 0; w < repro_acc::windows; ++w) ASSERT_EQ(a3.w[w], ref3.w[w]) << "three windows: window " << w << ", from 2^" << lo;
  }
}

TEST(Reproducible, ExactWhenTheDataSpansFewerBitsThanTheWindows) {
  std::mt19937_64 g(std::random_device{}());
  for (int trial = 0; trial < 100; ++trial) {
    auto v = wide_data(500, -15, 55, g);
    const std::size_t half = v.size();
    for (std::size_t i = 0; i < half; ++i) v.push_back(-v[i]);
    double exact = 0;  // small integers: their double sum is exact
    for (int i = 0; i < 50; ++i) {
      const double s = static_cast<double>(static_cast<int>(g() % 2001) - 1000);
      v.push_back(s);
      exact += s;
    }
    EXPECT_EQ(repro_round<double>(grouped(v, g)), exact);
  }
}

// The exact sum, in long double (Neumaier's compensated sum over the values by magnitude).
long double reference_sum(const std::vector<double>& v) {
  std::vector<long double> sorted(v.begin(), v.end());
  std::sort(sorted.begin(), sorted.end(), [](long double a, long double b) { return std::fabs(a) < std::fabs(b); });
  long double ref = 0, comp = 0;
  for (long double x : sorted) {
    const long double t = ref + x;
    comp += std::fabs(ref) >= std::fabs(x) ? (ref - t) + x : (x - t) + ref;
    ref = t;
  }
  return ref + comp;
}

// Data over the whole exponent range: within N * 2^-90 * max|x| (dropped windows) plus half an
// ulp of the result, against a long double reference summed by magnitude; float sums (three
// windows) within N * 2^-60 * max|x| plus half a float ulp, over the floats' range.
TEST(Reproducible, ErrorBoundOverTheWholeRange) {
  std::mt19937_64 g(std::random_device{}());
  for (int trial = 0; trial < 100; ++trial) {
    for (const bool as_float : {false, true}) {
      auto v = as_float ? wide_data(2000, -120, 100, g) : wide_data(2000, -300, 300, g);
      if (as_float)
        for (auto& x : v) x = static_cast<float>(x);
      const long double ref = reference_sum(v);
      double max_abs = 0;
      for (double x : v) max_abs = std::max(max_abs, std::fabs(x));
      const double got = as_float ? repro_round<float>(grouped<3>(v, g)) : repro_round<double>(grouped(v, g));
      const long double bound = static_cast<long double>(v.size()) * std::ldexp(max_abs, as_float ? -60 : -90) +
                                0.5L * std::ldexp(1.0L, std::ilogb(got == 0 ? 1.0 : got) - (as_float ? 23 : 52)) +
                                std::fabs(ref) * std::ldexp(1.0L, -62);
      EXPECT_LE(std::fabs(static_cast<long double>(got) - ref), bound) << "trial " << trial << (as_float ? " (float)" : "");
    }
  }
}

TEST(Reproducible, RoundsOnceToNearestEven) {
  const auto sum = [](std::initializer_list<double> xs) {
    repro_acc a = repro_zero();
    for (double x : xs) a = repro_combine(a, repro_of(x));
    return a;
  };
  EXPECT_EQ(repro_round<double>(sum({1.0, std::ldexp(1.0, -53)})), 1.0);  // a tie: to even
  EXPECT_EQ(repro_round<double>(sum({1.0, std::ldexp(1.0, -53), std::ldexp(1.0, -80)})), 1.0 + std::ldexp(1.0, -52));
  EXPECT_EQ(repro_round<double>(sum({1.0 + std::ldexp(1.0, -52), std::ldexp(1.0, -53)})), 1.0 + std::ldexp(1.0, -51));
  // Float: once from the exact sum, not through double.
  EXPECT_EQ(repro_round<float>(sum({1.0, std::ldexp(1.0, -24)})), 1.0f);
  EXPECT_EQ(repro_round<float>(sum({1.0, std::ldexp(1.0, -24), std::ldexp(1.0, -60)})), 1.0f + std::ldexp(1.0f, -23));
  // Subnormals from 2^-1072 up are exact (smaller ones are below the lowest window); overflow goes
  // to infinity.
  const double tiny = std::ldexp(1.0, -1072) * 3;
  EXPECT_EQ(repro_round<double>(sum({tiny, tiny, tiny})), 3 * tiny);
  EXPECT_EQ(repro_round<double>(sum({std::numeric_limits<double>::denorm_min()})), 0.0);
  EXPECT_EQ(repro_round<double>(sum({1.5e308, 1.5e308})), std::numeric_limits<double>::infinity());
  EXPECT_EQ(repro_round<double>(sum({-1.5e308, -1.5e308})), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(repro_round<float>(sum({3e38, 3e38})), std::numeric_limits<float>::infinity());
  // The doubles nearest 0.1, 0.2 and 0.3 sum exactly to 2^-55 (left to right in double: 2^-54).
  EXPECT_EQ(repro_round<double>(sum({0.1, 0.2, -0.3})), std::ldexp(1.0, -55));
  EXPECT_EQ(bits_of(repro_round<double>(sum({2.5, -2.5}))), bits_of(0.0));  // a zero sum is +0
  EXPECT_EQ(repro_round<double>(sum({})), 0.0);
}

TEST(Reproducible, InfinitiesAndNaNsFollowIeeeAddition) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const auto sum = [](std::initializer_list<double> xs) {
    repro_acc a = repro_zero();
    for (double x : xs) a = repro_combine(a, repro_of(x));
    return repro_round<double>(a);
  };
  EXPECT_EQ(sum({1.0, inf, 2.0}), inf);
  EXPECT_EQ(sum({-inf, 1e300}), -inf);
  EXPECT_TRUE(std::isnan(sum({inf, -inf})));
  EXPECT_TRUE(std::isnan(sum({1.0, nan})));
  EXPECT_TRUE(std::isnan(repro_round<float>(repro_combine(repro_of(inf), repro_of(-inf)))));
}
