// Element-wise algorithms and copies against host references.
#include "test_util.cuh"

#include <numeric>

using namespace strata_test;

struct saxpy {
  float a;
  __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};
struct negate_int {
  __host__ __device__ std::int64_t operator()(std::int32_t x) const { return -static_cast<std::int64_t>(x); }
};
struct scale {
  float a;
  __host__ __device__ float operator()(float x) const { return a * x; }
};
struct add_one {
  __host__ __device__ void operator()(double& x) const { x += 1.0; }
};

TEST(Transform, UnaryBinaryForEachFillIota) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes()) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto x = random_vector<float>(n, seed), y = random_vector<float>(n, seed + 1);
      strata::distributed_vector<float> vx(x, s.set), vy(y, s.set), out(n, s.set);
      poison(out);
      strata::transform(vx, vy, out, saxpy{2.5f});
      auto got = out.to_std_vector();
      // The device contracts a * x + y into one FMA; the host may not: compare to rounding.
      for (std::uint64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], saxpy{2.5f}(x[i], y[i]), 1e-6f * 4) << i;

      const auto hi = random_vector<std::int32_t>(n, seed + 2);
      strata::distributed_vector<std::int32_t> vi(hi, s.set);
      strata::distributed_vector<std::int64_t> vo(n, s.set);
      poison(vo);
      strata::transform(vi, vo, negate_int{});
      const auto goti = vo.to_std_vector();
      for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(goti[i], -static_cast<std::int64_t>(hi[i])) << i;

      strata::distributed_vector<double> vd(n, 1.5, s.set);
      strata::for_each(vd, add_one{});
      EXPECT_EQ(vd.to_std_vector(), std::vector<double>(n, 2.5));

      poison(vo);
      strata::fill(vo, -9);
      EXPECT_EQ(vo.to_std_vector(), std::vector<std::int64_t>(n, -9));
      poison(vo);
      strata::iota(vo, std::int64_t{-5}, strata::nosync);
      s.set.synchronize();
      std::vector<std::int64_t> want(n);
      std::iota(want.begin(), want.end(), std::int64_t{-5});
      EXPECT_EQ(vo.to_std_vector(), want);
    }
}

TEST(Copy, BetweenLayoutsAndDeviceSets) {
  const auto a = strata::device_set::repeat(0, 3);
  const auto b = strata::device_set::repeat(0, 5);
  strata::device_set_options staged_opt;
  staged_opt.force_host_staging = true;
  const auto staged = strata::device_set::repeat(0, 2, staged_opt);
  for (std::uint64_t n : sizes()) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed));
    const auto h = random_vector<std::int32_t>(n, seed);
    strata::distributed_vector<std::int32_t> src(h, a);
    strata::distributed_vector<std::int32_t> same(n, a), weighted(n, a, strata::partition_policy::weighted({3, 0, 1})),
        other(n, b), st(n, staged), all(n, strata::device_set::all());
    for (auto* dst : {&same, &weighted, &other, &st, &all}) {
      poison(*dst);
      strata::copy(src, *dst);
      EXPECT_EQ(dst->to_std_vector(), h);
    }
    // And back, asynchronously, from the 5-place layout onto the 3-place one.
    poison(src);
    strata::copy(other, src, strata::nosync);
    a.synchronize();
    EXPECT_EQ(src.to_std_vector(), h);
  }
}

TEST(Copy, HostCopiesAndErrors) {
  const auto set = strata::device_set::repeat(0, 4);
  const auto h = random_vector<double>(10007, fresh_seed());
  strata::distributed_vector<double> v(10007, set);
  strata::copy_from_host(h.data(), v);
  std::vector<double> back(10007);
  strata::copy_to_host(v, back.data());
  EXPECT_EQ(back, h);
  strata::distributed_vector<double> shorter(10006, set);
  EXPECT_THROW(strata::copy(v, shorter), std::invalid_argument);
  EXPECT_THROW(strata::copy_from_host(static_cast<const double*>(nullptr), v), std::invalid_argument);
  strata::distributed_vector<float> f(10007, set);
  strata::distributed_vector<float> g(10007, set, strata::partition_policy::weighted({1, 1, 1, 5}));
  EXPECT_THROW(strata::transform(f, g, scale{2.0f}), std::invalid_argument);
}
