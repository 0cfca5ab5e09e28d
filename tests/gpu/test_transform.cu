// Element-wise algorithms and copies against host references.
#include "test_util.cuh"

#include <algorithm>
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
  const auto staged = staged_set(2);
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

// ---- Issue 18: zip, the indexed forms, the public fan-out, slices -----------------------------

struct nstream_fn {
  float s;
  __host__ __device__ float operator()(float a, float b, float c) const { return a + b + s * c; }
};
struct accumulate_into {
  __host__ __device__ void operator()(double& acc, float x, std::int32_t y) const { acc += x * static_cast<double>(y); }
};
struct mul_wide {
  __host__ __device__ double operator()(float x, std::int32_t y) const { return x * static_cast<double>(y); }
};
struct square_index {
  __host__ __device__ std::int64_t operator()(std::uint64_t i) const {
    return static_cast<std::int64_t>(i) * static_cast<std::int64_t>(i) - 3;
  }
};
struct add_index {
  __host__ __device__ void operator()(std::uint64_t i, std::int64_t& x) const { x += static_cast<std::int64_t>(i); }
};

// The user's own kernel over one segment: x[i] = 2 * x[i] + y[i].
__global__ void user_axpy(float* x, const float* y, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    x[i] = 2.0f * x[i] + y[i];
}

TEST(Transform, ZipIndexedAndUserKernels) {
  for_each_set_and_size([](const named_set& s, std::uint64_t n, std::uint64_t seed) {
    const auto a = random_vector<float>(n, seed), b = random_vector<float>(n, seed + 1), c = random_vector<float>(n, seed + 2);
    strata::distributed_vector<float> va(a, s.set), vb(b, s.set), vc(c, s.set), out(n, s.set);
    // nstream, out of place and in place (a = a + b + s * c).
    poison(out);
    strata::transform(strata::zip(va, vb, vc), out, nstream_fn{3.0f});
    auto got = out.to_std_vector();
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], a[i] + b[i] + 3.0f * c[i], 1e-5f) << i;
    strata::transform(strata::zip(va, vb, vc), va, nstream_fn{3.0f}, strata::nosync);
    s.set.synchronize();
    EXPECT_EQ(va.to_std_vector(), got);

    // for_each over a zip with references, mixed element types.
    const auto hi = random_vector<std::int32_t>(n, seed + 3);
    strata::distributed_vector<std::int32_t> vi(hi, s.set);
    strata::distributed_vector<double> acc(n, 0.5, s.set);
    strata::for_each(strata::zip(acc, vc, vi), accumulate_into{});
    const auto gacc = acc.to_std_vector();
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(gacc[i], 0.5 + c[i] * static_cast<double>(hi[i])) << i;
    // n-ary transform_reduce.
    double want = 0;
    for (std::uint64_t i = 0; i < n; ++i) want += static_cast<double>(c[i]) * hi[i];
    const double dot = strata::transform_reduce(strata::zip(vc, vi), 0.0, cuda::std::plus<>{}, mul_wide{});
    EXPECT_NEAR(dot, want, 1e-9 * (1 + std::fabs(want)) + 1e-6);

    // tabulate and for_each_indexed use the global index.
    strata::distributed_vector<std::int64_t> t(n, s.set);
    poison(t);
    strata::tabulate(t, square_index{});
    strata::for_each_indexed(t, add_index{});
    const auto gt = t.to_std_vector();
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(gt[i], square_index{}(i) + static_cast<std::int64_t>(i)) << i;

    // The user's kernel on every segment: one range, then a zip.
    std::size_t visits = 0;
    strata::for_each_segment(vb, [&](cudaStream_t stream, strata::segment<float> seg) {
      int dev = -1;
      ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
      EXPECT_EQ(dev, seg.device);
      EXPECT_EQ(stream, s.set.stream(seg.place));
      EXPECT_GT(seg.count, 0u);
      ++visits;
    });
    std::size_t nonempty = 0;
    for (const auto& seg : vb.segments()) nonempty += seg.count > 0 ? 1 : 0;
    EXPECT_EQ(visits, nonempty);
    strata::distributed_vector<float> x(a, s.set);
    strata::for_each_segment(
        strata::zip(x, vb),
        [](cudaStream_t stream, strata::segment<float> sx, strata::segment<float> sy) {
          user_axpy<<<128, 256, 0, stream>>>(sx.data, sy.data, sx.count);
        },
        strata::nosync);
    // Ordered like any Strata call: the reduce after it sees the kernel's writes.
    double wsum = 0;
    for (std::uint64_t i = 0; i < n; ++i) wsum += 2.0 * a[i] + b[i];
    EXPECT_NEAR(strata::reduce(x, 0.0), wsum, 1e-5 * (1 + wsum));
  });
}

TEST(Transform, SubspansWorkWithEveryAlgorithm) {
  for (const auto& s : sets())
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{1009}, std::uint64_t{100003}}) {
      const std::uint64_t seed = fresh_seed();
      SCOPED_TRACE(where(s, n, seed));
      const auto h = random_vector<std::int64_t>(n, seed);
      strata::distributed_vector<std::int64_t> v(h, s.set), w(n, s.set);
      std::mt19937_64 g(seed);
      for (int trial = 0; trial < 4; ++trial) {
        const std::uint64_t off = g() % (n + 1), cnt = g() % (n - off + 1);
        SCOPED_TRACE("slice [" + std::to_string(off) + ", +" + std::to_string(cnt) + ")");
        const auto sv = v.subspan(off, cnt);
        auto sw = w.subspan(off, cnt);
        EXPECT_EQ(sv.size(), cnt);
        EXPECT_EQ(sv.segment_count(), s.set.size());
        std::int64_t want = 0;
        for (std::uint64_t i = off; i < off + cnt; ++i) want += h[i];
        EXPECT_EQ(strata::reduce(sv), want);
        poison(w);
        strata::inclusive_scan(sv, sw);  // sliced alike: one layout
        const auto got = w.to_std_vector();
        std::int64_t acc = 0;
        for (std::uint64_t i = off; i < off + cnt; ++i) ASSERT_EQ(got[i], acc += h[i]) << i;
        // Untouched outside the slice.
        for (std::uint64_t i = 0; i < off; ++i) ASSERT_EQ(got[i], poison_value<std::int64_t>()) << i;
        strata::fill(sw, 4);
        EXPECT_EQ(strata::count(w, 4), cnt);
        if (cnt > 0) {
          const auto m = strata::min_element(sv);
          EXPECT_EQ(m.value, *std::min_element(h.begin() + off, h.begin() + off + cnt));
          EXPECT_EQ(h[off + m.index], m.value);
        }
      }
      EXPECT_THROW((void)v.subspan(n, 1), std::out_of_range);
      EXPECT_THROW((void)v.span().last(n + 1), std::out_of_range);
      EXPECT_EQ(v.span().last(1).size(), 1u);
      EXPECT_EQ(strata::reduce(v.span().last(1)), h[n - 1]);
      EXPECT_EQ(strata::reduce(v.span().first(1)), h[0]);
    }
}
