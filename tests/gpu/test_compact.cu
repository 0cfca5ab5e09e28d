// Stream compaction and reduce_by_key against host references: copy_if (into a range and into a new container),
// remove_if / remove, unique / unique_copy with runs across segment boundaries, partition_copy,
// erase_if / erase, on every set and size, weighted layouts with empty places, and over 2^31
// elements (remove, and reduce_by_key).
#include "test_util.cuh"

#include <algorithm>
#include <iterator>
#include <limits>

using namespace strata_test;

namespace {

struct is_odd {
  __host__ __device__ bool operator()(std::int64_t x) const { return (x & 1) != 0; }
};
struct below {
  float t;
  __host__ __device__ bool operator()(float x) const { return x < t; }
};
struct same_tens {
  __host__ __device__ bool operator()(std::int64_t a, std::int64_t b) const { return a / 10 == b / 10; }
};

// The elements of a result span, and its layout: every place keeps what it held, so place i's
// survivors are exactly the survivors of its input segment.
template <class T>
void expect_compacted(const strata::distributed_span<T>& got, const std::vector<std::remove_const_t<T>>& want,
                      const strata::partition& in_layout, const std::vector<std::uint64_t>& want_counts,
                      const std::string& what) {
  EXPECT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(got.partition().counts(), want_counts) << what;
  EXPECT_EQ(got.partition().places(), in_layout.places()) << what;
  strata::distributed_vector<std::remove_const_t<T>> copy(got.size(), got.places(), strata::partition_policy::explicit_sizes(want_counts));
  strata::copy(got, copy);
  EXPECT_TRUE(copy.to_std_vector() == want) << what;
}

// Host reference of a per-place compaction: survivors in order, and how many each place kept.
template <class T, class Keep>
std::pair<std::vector<T>, std::vector<std::uint64_t>> host_compact(const std::vector<T>& h, const strata::partition& p,
                                                                   Keep keep) {
  std::vector<T> out;
  std::vector<std::uint64_t> counts(p.places(), 0);
  for (std::size_t i = 0; i < p.places(); ++i)
    for (std::uint64_t k = p.offset(i); k < p.offset(i) + p.count(i); ++k)
      if (keep(k)) {
        out.push_back(h[k]);
        ++counts[i];
      }
  return {out, counts};
}

// The layouts each case runs on: even, and weighted with an empty place where there are several.
std::vector<strata::partition_policy> layouts(const strata::device_set& set) {
  std::vector<strata::partition_policy> l{strata::partition_policy::even()};
  if (set.size() > 1) {
    std::vector<double> w(set.size(), 1.0);
    w[1] = 0;
    w[0] = 3;
    l.push_back(strata::partition_policy::weighted(w));
  }
  return l;
}

// Every keyed case: each set, size and layout with runs of equal int32 keys (one key; 3 keys in
// long sorted runs that straddle places and cross empty ones; 1000 keys, half shuffled) and random
// 2x2 matrices; `f(set, n, policy, rng, keys, matrices)`.
template <class F>
void for_each_keyed_case(F&& f) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes())
      for (const auto& policy : layouts(s.set))
        for (int distinct : {1, 3, 1000}) {
          const std::uint64_t seed = fresh_seed();
          SCOPED_TRACE(where(s, n, seed) + ", " + std::to_string(distinct) + " distinct");
          std::mt19937_64 g(seed);
          std::vector<std::int32_t> hk(n);
          for (auto& x : hk) x = static_cast<std::int32_t>(g() % static_cast<std::uint64_t>(distinct));
          std::sort(hk.begin(), hk.end());
          if (distinct == 1000 && n > 2) std::shuffle(hk.begin(), hk.begin() + static_cast<std::ptrdiff_t>(n / 2), g);
          std::vector<mat2> hm(n);
          for (auto& m : hm) m = {static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g()), static_cast<std::uint32_t>(g())};
          f(s, n, policy, g, hk, hm);
        }
}

}  // namespace

TEST(Compact, CopyIfRemoveIfPartitionCopyAndErase) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes())
      for (const auto& policy : layouts(s.set)) {
        const std::uint64_t seed = fresh_seed();
        SCOPED_TRACE(where(s, n, seed));
        const auto h = random_vector<std::int64_t>(n, seed);
        strata::distributed_vector<std::int64_t> in(h, s.set, policy), out(n, s.set, policy), no(n, s.set, policy);
        const auto& p = in.partition();
        const auto odd = host_compact(h, p, [&](std::uint64_t k) { return is_odd{}(h[k]); });
        const auto even = host_compact(h, p, [&](std::uint64_t k) { return !is_odd{}(h[k]); });

        poison(out);
        expect_compacted(strata::copy_if(in, out, is_odd{}), odd.first, p, odd.second, "copy_if into a range");
        const auto made = strata::copy_if(in, is_odd{});
        EXPECT_EQ(made.to_std_vector(), odd.first) << "copy_if into a new container";
        EXPECT_EQ(made.partition().counts(), odd.second);
        EXPECT_EQ(made.places(), s.set);

        poison(out);
        poison(no);
        const auto [yes_part, no_part] = strata::partition_copy(in, out, no, is_odd{});
        expect_compacted(yes_part, odd.first, p, odd.second, "partition_copy, true part");
        expect_compacted(no_part, even.first, p, even.second, "partition_copy, false part");

        strata::distributed_vector<std::int64_t> work(in);
        expect_compacted(strata::remove_if(work, is_odd{}), even.first, p, even.second, "remove_if in place");
        EXPECT_EQ(work.size(), n) << "remove_if keeps the container's size";

        strata::distributed_vector<std::int64_t> er(in);
        EXPECT_EQ(strata::erase_if(er, is_odd{}), odd.first.size());
        EXPECT_EQ(er.to_std_vector(), even.first);
        EXPECT_EQ(er.partition().counts(), even.second);
        const std::int64_t v0 = n > 0 ? h[n / 2] : 0;
        const auto not_v0 = host_compact(even.first, er.partition(), [&](std::uint64_t k) { return even.first[k] != v0; });
        EXPECT_EQ(strata::erase(er, v0), even.first.size() - not_v0.first.size());
        EXPECT_EQ(er.to_std_vector(), not_v0.first);
        // The erased container still works with every algorithm, and copies at its new size.
        strata::distributed_vector<std::int64_t> er_copy(er);
        EXPECT_EQ(er_copy.to_std_vector(), not_v0.first);
        EXPECT_EQ(strata::count_if(er, is_odd{}), 0u);

        strata::distributed_vector<std::int64_t> rm(in);
        const auto kept = host_compact(h, p, [&](std::uint64_t k) { return h[k] != v0; });
        expect_compacted(strata::remove(rm, v0), kept.first, p, kept.second, "remove");
      }
}

// Runs of equal keys that cross segment boundaries (sorted data with few distinct values), and a
// custom equivalence: the first element of each run survives, wherever the run starts.
TEST(Compact, UniqueAcrossSegmentBoundaries) {
  for_each_keyed_case([](const named_set& s, std::uint64_t n, const strata::partition_policy& policy, std::mt19937_64&,
                         const std::vector<std::int32_t>& hk, const std::vector<mat2>&) {
          std::vector<std::int64_t> h(n);
          for (std::uint64_t k = 0; k < n; ++k) h[k] = static_cast<std::int64_t>(hk[k]) * 5;
          strata::distributed_vector<std::int64_t> in(h, s.set, policy), out(n, s.set, policy);
          const auto& p = in.partition();
          const auto first_of_run = host_compact(h, p, [&](std::uint64_t k) { return k == 0 || h[k - 1] != h[k]; });
          poison(out);
          expect_compacted(strata::unique_copy(in, out), first_of_run.first, p, first_of_run.second, "unique_copy");
          const auto tens = host_compact(h, p, [&](std::uint64_t k) { return k == 0 || !same_tens{}(h[k - 1], h[k]); });
          poison(out);
          expect_compacted(strata::unique_copy(in, out, same_tens{}), tens.first, p, tens.second, "unique_copy, custom");
          expect_compacted(strata::unique(in), first_of_run.first, p, first_of_run.second, "unique in place");
  });
}

TEST(Compact, FloatsAndBadArguments) {
  const auto set = strata::device_set::repeat(0, 3);
  const auto h = random_vector<float>(100003, fresh_seed());
  strata::distributed_vector<float> in(h, set), out(h.size(), set);
  const auto got = strata::copy_if(in, out, below{0.25f});
  std::vector<float> want;
  std::copy_if(h.begin(), h.end(), std::back_inserter(want), [](float x) { return x < 0.25f; });
  strata::distributed_vector<float> back(got.size(), set, strata::partition_policy::explicit_sizes(got.partition().counts()));
  strata::copy(got, back);
  EXPECT_EQ(back.to_std_vector(), want);

  strata::distributed_vector<float> shorter(h.size() - 1, set);
  EXPECT_THROW(strata::copy_if(in, shorter, below{0.5f}), std::invalid_argument);
  EXPECT_THROW(strata::copy_if(in, in, below{0.5f}), std::invalid_argument);  // use remove_if in place
  EXPECT_THROW(strata::unique_copy(in, in), std::invalid_argument);
  EXPECT_THROW(strata::partition_copy(in, out, out, below{0.5f}), std::invalid_argument);
  EXPECT_THROW(strata::copy_if(strata::distributed_span<float>{}, below{0.5f}), std::invalid_argument);
  EXPECT_EQ(in.to_std_vector(), h);
}

namespace {
// A predicate that is not a function of the element: false for the first `n` calls (the counting
// pass of the returning copy_if), true after (the selecting pass).
struct changes_its_mind {
  unsigned long long* calls;
  unsigned long long n;
  __device__ bool operator()(float) const { return atomicAdd(calls, 1ull) >= n; }
};
}  // namespace

// The returning copy_if reads its input twice; a predicate that selects more the second time is
// refused with std::logic_error, and the selecting pass writes nothing past the result's counted
// room (here none: every place counted 0, so a write would land at a null pointer and fault).
TEST(Compact, APredicateThatChangesItsAnswerIsRefusedWithNoWritePastTheResult) {
  const auto set = strata::device_set::repeat(0, 3);
  const auto h = random_vector<float>(30011, fresh_seed());
  const strata::distributed_vector<float> in(h, set);
  unsigned long long* calls = nullptr;
  ASSERT_EQ(cudaMalloc(&calls, sizeof *calls), cudaSuccess);
  ASSERT_EQ(cudaMemset(calls, 0, sizeof *calls), cudaSuccess);
  EXPECT_THROW((void)strata::copy_if(in, changes_its_mind{calls, h.size()}), std::logic_error);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "the selecting pass wrote past the result";
  EXPECT_EQ(cudaFree(calls), cudaSuccess);
  EXPECT_EQ(strata::count_if(in, below{2.0f}), h.size()) << "the set works afterwards";
}

TEST(Compact, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 4099;
  std::vector<std::uint8_t> h(n);
  std::mt19937_64 g(fresh_seed());
  for (auto& x : h) x = static_cast<std::uint8_t>(g());
  for (std::size_t k : {1, 2}) {
    SCOPED_TRACE(std::to_string(k) + " places");
    const auto set = strata::device_set::repeat(0, k);
    strata::distributed_vector<std::uint8_t> v(h, set);
    const auto want = host_compact(h, v.partition(), [&](std::uint64_t k) { return h[k] != 7; });
    const auto kept = strata::remove(v, std::uint8_t{7});
    // Every survivor, in order, and each place's count (over 2 GiB compared on the host).
    expect_compacted(kept, want.first, v.partition(), want.second, "remove past 2^31");
  }
}

// reduce_by_key: runs of equal keys (one key; 3 keys in long sorted runs that straddle places and
// cross empty ones; 1000 keys, half shuffled) with int64 sums and a non-commutative product of
// 2x2 matrices; the runs, their aggregates, and the layout (a run counts on the place where it
// ends) against the host.
TEST(ReduceByKey, RunsAcrossPlacesAgreeWithTheHost) {
  for_each_keyed_case([](const named_set& s, std::uint64_t n, const strata::partition_policy& policy, std::mt19937_64& g,
                         const std::vector<std::int32_t>& hk, const std::vector<mat2>& hm) {
          const auto hv = random_vector<std::int64_t>(n, g());
          const strata::distributed_vector<std::int32_t> keys(hk, s.set, policy);
          const strata::distributed_vector<std::int64_t> values(hv, s.set, policy);
          const strata::distributed_vector<mat2> mats(hm, s.set, policy);
          const auto& p = keys.partition();
          // The host's runs: key, sum, product, and the place of the run's last element.
          std::vector<std::int32_t> want_keys;
          std::vector<std::int64_t> want_sums;
          std::vector<mat2> want_prods;
          std::vector<std::uint64_t> want_counts(p.places(), 0);
          for (std::uint64_t k = 0; k < n; ++k) {
            if (k == 0 || hk[k] != hk[k - 1]) {
              want_keys.push_back(hk[k]);
              want_sums.push_back(hv[k]);
              want_prods.push_back(hm[k]);
            } else {
              want_sums.back() += hv[k];
              want_prods.back() = mat2_mul{}(want_prods.back(), hm[k]);
            }
            if (k + 1 == n || hk[k + 1] != hk[k]) ++want_counts[p.owner(k)];
          }
          strata::distributed_vector<std::int32_t> keys_out(n, s.set, policy);
          strata::distributed_vector<std::int64_t> sums(n, s.set, policy);
          strata::distributed_vector<mat2> prods(n, s.set, policy);
          poison(keys_out);
          poison(sums);
          const auto r = strata::reduce_by_key(keys, values, keys_out, sums);
          expect_compacted(r.keys, want_keys, p, want_counts, "keys");
          expect_compacted(r.values, want_sums, p, want_counts, "sums");
          poison(prods);
          const auto rm = strata::reduce_by_key(keys, mats, keys_out, prods, mat2_mul{});
          expect_compacted(rm.values, want_prods, p, want_counts, "2x2 products (not commutative)");
  });
}

// Over 2^31 one-byte keys in runs of 1000 (adjacent runs differ; runs straddle the places'
// boundaries), one-byte values i mod 251 summed in 32 bits, on one place (one CUB call past 2^31)
// and on three: every run's key and sum and each place's run count against the host.
TEST(ReduceByKey, MoreThan2To31Elements) {
  STRATA_SKIP_IF_QUICK();
  const std::uint64_t n = (1ull << 31) + 4099, run = 1000;
  std::vector<std::uint8_t> hk(n), hv(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    hk[i] = static_cast<std::uint8_t>((i / run) % 7);
    hv[i] = static_cast<std::uint8_t>(i % 251);
  }
  std::vector<std::uint8_t> want_keys;
  std::vector<std::uint32_t> want_sums;
  for (std::uint64_t i = 0; i < n; i += run) {
    want_keys.push_back(hk[i]);
    std::uint32_t sum = 0;
    for (std::uint64_t j = i; j < std::min(n, i + run); ++j) sum += hv[j];
    want_sums.push_back(sum);
  }
  for (const std::size_t k : {std::size_t{1}, std::size_t{3}}) {
    SCOPED_TRACE(std::to_string(k) + " places");
    const auto set = strata::device_set::repeat(0, k);
    const strata::distributed_vector<std::uint8_t> keys(hk, set), values(hv, set);
    const auto& p = keys.partition();
    std::vector<std::uint64_t> want_counts(k, 0);
    for (std::uint64_t i = 0; i < n; i += run) ++want_counts[p.owner(std::min(n, i + run) - 1)];
    strata::distributed_vector<std::uint8_t> keys_out(n, set);
    strata::distributed_vector<std::uint32_t> sums(n, set);
    poison(keys_out);
    poison(sums);
    const auto r = strata::reduce_by_key(keys, values, keys_out, sums);
    expect_compacted(r.keys, want_keys, p, want_counts, "keys past 2^31");
    expect_compacted(r.values, want_sums, p, want_counts, "32-bit sums past 2^31");
  }
}

TEST(ReduceByKey, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = private_set(3);
  const strata::distributed_vector<int> keys(100, 1, set), values(100, 2, set), shorter(99, 2, set);
  strata::distributed_vector<int> keys_out(100, 7, set), values_out(100, 7, set);
  strata::distributed_vector<int> skewed(100, 7, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  EXPECT_THROW(strata::reduce_by_key(keys, shorter, keys_out, values_out), std::invalid_argument);
  EXPECT_THROW(strata::reduce_by_key(keys, values, skewed, values_out), std::invalid_argument);
  EXPECT_THROW(strata::reduce_by_key(keys, values, keys_out, keys_out), std::invalid_argument) << "keys_out and values_out the same range";
  EXPECT_THROW(strata::reduce_by_key(keys, values, keys_out, const_cast<strata::distributed_vector<int>&>(values)),
               std::invalid_argument) << "values_out is values";
  EXPECT_EQ(keys_out.to_std_vector(), std::vector<int>(100, 7));
  EXPECT_EQ(values_out.to_std_vector(), std::vector<int>(100, 7));
  const auto r = strata::reduce_by_key(keys, values, keys_out, values_out);
  EXPECT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(strata::reduce(r.values), 200) << "one run of 100 twos across three places";
}

// Keyed scans: runs of equal keys (one key; 3 keys in long sorted runs that straddle places and
// cross empty ones; 1000 keys, half shuffled) with int32 values summed in int64, an exclusive sum
// with an initial value, a non-commutative 2x2 matrix product both ways, and in place, against the
// host.
TEST(ScanByKey, RunsAcrossPlacesAgreeWithTheHost) {
  for_each_keyed_case([](const named_set& s, std::uint64_t n, const strata::partition_policy& policy, std::mt19937_64& g,
                         const std::vector<std::int32_t>& hk, const std::vector<mat2>& hm) {
          std::vector<std::int32_t> hv(n);
          for (auto& x : hv) x = static_cast<std::int32_t>(g() >> 33);  // sums of a run overflow 32 bits
          const strata::distributed_vector<std::int32_t> keys(hk, s.set, policy);
          const strata::distributed_vector<std::int32_t> values(hv, s.set, policy);
          const strata::distributed_vector<mat2> mats(hm, s.set, policy);
          std::vector<std::int64_t> want_inc(n), want_exc(n);
          std::vector<mat2> want_minc(n), want_mexc(n);
          const std::int64_t init = -7;
          const mat2 minit{3, 1, 4, 1};
          for (std::uint64_t k = 0; k < n; ++k) {
            const bool head = k == 0 || hk[k] != hk[k - 1];
            want_exc[k] = head ? init : want_exc[k - 1] + hv[k - 1];
            want_inc[k] = head ? hv[k] : want_inc[k - 1] + hv[k];
            want_mexc[k] = head ? minit : mat2_mul{}(want_mexc[k - 1], hm[k - 1]);
            want_minc[k] = head ? hm[k] : mat2_mul{}(want_minc[k - 1], hm[k]);
          }
          strata::distributed_vector<std::int64_t> out(n, s.set, policy);
          strata::distributed_vector<mat2> mout(n, s.set, policy);
          poison(out);
          strata::inclusive_scan_by_key(keys, values, out);
          EXPECT_EQ(out.to_std_vector(), want_inc) << "inclusive sums in int64";
          poison(out);
          strata::exclusive_scan_by_key(keys, values, out, init);
          EXPECT_EQ(out.to_std_vector(), want_exc) << "exclusive sums from -7";
          poison(mout);
          strata::inclusive_scan_by_key(keys, mats, mout, mat2_mul{});
          EXPECT_TRUE(mout.to_std_vector() == want_minc) << "inclusive 2x2 products (not commutative)";
          poison(mout);
          strata::exclusive_scan_by_key(keys, mats, mout, minit, mat2_mul{}, strata::nosync);
          EXPECT_TRUE(mout.to_std_vector() == want_mexc) << "exclusive 2x2 products from an initial matrix, nosync";
          strata::inclusive_scan_by_key(keys, mats, mout, mat2_mul{});
          strata::inclusive_scan_by_key(keys, mout, mout, mat2_mul{});  // in place: a second pass over the first
          std::vector<mat2> twice(n);
          for (std::uint64_t k = 0; k < n; ++k)
            twice[k] = k == 0 || hk[k] != hk[k - 1] ? want_minc[k] : mat2_mul{}(twice[k - 1], want_minc[k]);
          EXPECT_TRUE(mout.to_std_vector() == twice) << "in place";
  });
}

TEST(ScanByKey, BadArgumentsThrowBeforeDeviceWork) {
  const auto set = private_set(3);
  const strata::distributed_vector<int> keys(100, 1, set), values(100, 2, set), shorter(99, 2, set);
  strata::distributed_vector<int> out(100, 7, set);
  strata::distributed_vector<int> skewed(100, 7, set, strata::partition_policy::explicit_sizes({100, 0, 0}));
  EXPECT_THROW(strata::inclusive_scan_by_key(keys, shorter, out), std::invalid_argument);
  EXPECT_THROW(strata::inclusive_scan_by_key(keys, values, skewed), std::invalid_argument);
  EXPECT_THROW(strata::exclusive_scan_by_key(keys, values, const_cast<strata::distributed_vector<int>&>(keys), 0),
               std::invalid_argument) << "out is keys";
  EXPECT_THROW(strata::inclusive_scan_by_key(keys, values, out.subspan(1, 99)), std::invalid_argument);
  EXPECT_EQ(out.to_std_vector(), std::vector<int>(100, 7));
  EXPECT_EQ(skewed.to_std_vector(), std::vector<int>(100, 7));
  strata::inclusive_scan_by_key(keys, values, out);
  EXPECT_EQ(strata::reduce(out), 101 * 100) << "one run of 100 twos across three places: 2, 4, ..., 200";
}

// segmented_reduce: random offsets of three kinds (a few long segments, cut anywhere, with a gap
// before the first and after the last and an empty one; many short ones, so places run CUB's
// segmented reduction; none), int64 sums from an initial value and maxima, against the host.
TEST(SegmentedReduce, SegmentsAcrossPlacesAgreeWithTheHost) {
  for (const auto& s : sets())
    for (std::uint64_t n : sizes())
      for (const auto& policy : layouts(s.set))
        for (int kind = 0; kind < 3; ++kind) {
          const std::uint64_t seed = fresh_seed();
          SCOPED_TRACE(where(s, n, seed) + ", offsets of kind " + std::to_string(kind));
          std::mt19937_64 g(seed);
          const auto h = random_vector<std::int64_t>(n, g());
          std::vector<std::uint64_t> offsets;
          if (kind == 0) {
            for (int j = 0; j < 6; ++j) offsets.push_back(n == 0 ? 0 : g() % (n + 1));
            offsets.push_back(offsets.back());  // an empty segment
          } else if (kind == 1) {
            for (std::uint64_t o = n == 0 ? 0 : g() % 3; o <= n; o += g() % 7) offsets.push_back(o);
            if (offsets.empty()) offsets.push_back(0);
          } else {
            offsets.push_back(n / 2);
          }
          std::sort(offsets.begin(), offsets.end());
          const std::size_t segs = offsets.size() - 1;
          std::vector<std::int64_t> want_sum(segs, -5), want_max(segs, std::numeric_limits<std::int64_t>::min());
          for (std::size_t j = 0; j < segs; ++j)
            for (std::uint64_t k = offsets[j]; k < offsets[j + 1]; ++k) {
              want_sum[j] += h[k];
              want_max[j] = std::max(want_max[j], h[k]);
            }
          const strata::distributed_vector<std::int64_t> x(h, s.set, policy);
          EXPECT_EQ(strata::segmented_reduce(x, offsets, std::int64_t{-5}), want_sum) << "sums from -5";
          EXPECT_EQ(strata::segmented_reduce(x, offsets, std::numeric_limits<std::int64_t>::min(),
                                             cuda::maximum<std::int64_t>{}),
                    want_max)
              << "maxima";
        }
}

TEST(SegmentedReduce, BadOffsetsThrowBeforeDeviceWork) {
  const auto set = private_set(3);
  const strata::distributed_vector<int> x(100, 1, set);
  EXPECT_THROW(strata::segmented_reduce(x, {}, 0), std::invalid_argument);
  EXPECT_THROW(strata::segmented_reduce(x, {0, 50, 40, 100}, 0), std::invalid_argument);
  EXPECT_THROW(strata::segmented_reduce(x, {0, 101}, 0), std::invalid_argument);
  EXPECT_THROW(strata::segmented_reduce(strata::distributed_span<int>{}, {0}, 0), std::invalid_argument) << "no device_set";
  EXPECT_EQ(strata::segmented_reduce(x, {0, 10, 100}, 0), (std::vector<int>{10, 90}));
  EXPECT_EQ(strata::segmented_reduce(x, {7}, 0), std::vector<int>{});
}
