// inclusive_scan_by_key, exclusive_scan_by_key: a scan that restarts at every run of equal
// consecutive keys, as Thrust's, with a run that straddles places (or ranks) scanned as one run.
//
// A segment's keyed-scan total is a lifted element (run_acc below: the aggregate of its last run,
// its first and last keys, whether it is all one run), and the run-aware operator that combines
// such totals (run_op) is associative whenever the user's is. So the keyed scans are the scan
// family's reduce-then-scan (detail::scan_segments), with CUB's own keyed scans doing the work:
// every place but the last computes its total with one cub::DeviceScan::InclusiveScanByKey over
// (value, 1) pairs that writes only its last element (the last run's aggregate and length); the
// root folds the totals into per-segment seeds in segment order; each place then runs CUB's keyed
// scan (inclusive or exclusive) of its segment with its seed put in front (key: the last key
// before the segment; value: the aggregate of its run so far), read on the device, and writes all
// but that first output. The first non-empty segment has no predecessor: it runs the plain CUB
// call, so a lone segment (one place) is exactly the CUB call. (Scanning lifted elements under
// run_op directly, as before 2026-12-07, ran at 0.06-0.10x CUB on 2-8 places of an H100.)
// An inclusive scan whose output type is the accumulator's takes a shorter way (the direct path
// in scan_by_key_impl): every place scans its own segment at once with the plain CUB call, takes
// its total from its output and its leading run's length, and after the fold only the leading
// run of a place that its predecessor's last run continues into is corrected.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/first_index.cuh>
#include <strata/detail/fold.cuh>
#include <strata/algorithm/scan.cuh>
#include <strata/distributed_span.cuh>
#include <strata/tags.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_scan.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace strata {

namespace detail {

/// A lifted element of a keyed scan: the keys at both ends of what it covers, the aggregate of
/// its last run, whether it is all one run, and `empty` for the identity (an exclusive scan's
/// seed before anything).
template <class K, class V>
struct run_acc {
  K first, last;
  V value;
  unsigned char whole, empty;
};

/// The run-aware operator: b's last-run aggregate grows with a's when b is all one run that
/// continues a's last. Associative when `op` is (`op` need not commute).
template <class K, class V, class Op>
struct run_op {
  Op op;
  __host__ __device__ run_acc<K, V> operator()(const run_acc<K, V>& a, const run_acc<K, V>& b) const {
    if (a.empty) return b;
    if (b.empty) return a;
    const bool joined = a.last == b.first;
    run_acc<K, V> r = b;
    r.first = a.first;
    r.whole = a.whole && b.whole && joined ? 1 : 0;
    if (joined && b.whole) r.value = static_cast<V>(op(a.value, b.value));
    return r;
  }
};

template <class V>
struct cast_to {
  template <class U>
  __host__ __device__ V operator()(const U& u) const { return static_cast<V>(u); }
};

/// The values as the accumulator type, so CUB's own keyed scan adds in the same type as the lifted one.
template <class V, class VIn>
auto values_as(const VIn* values) {
  if constexpr (std::is_same_v<V, VIn>)
    return values;
  else
    return thrust::make_transform_iterator(values, cast_to<V>{});
}

/// A value with the length of the run it aggregates (a segment's total).
template <class V>
struct counted {
  V value;
  std::uint64_t count;
};

template <class V, class Op>
struct counted_op {
  Op op;
  __host__ __device__ counted<V> operator()(const counted<V>& a, const counted<V>& b) const {
    return counted<V>{static_cast<V>(op(a.value, b.value)), a.count + b.count};
  }
};

/// Element i as (value, 1).
template <class VIn, class V>
struct count_one {
  const VIn* values;
  __host__ __device__ counted<V> operator()(std::uint64_t i) const { return counted<V>{static_cast<V>(values[i]), 1}; }
};

/// Writes a segment's total from its counted keyed scan's last element: the first and last keys,
/// the last run's aggregate, and whether that run is the whole segment.
template <class K, class V>
struct total_writer {
  const K* keys;
  std::uint64_t n;
  run_acc<K, V>* slot;
  __host__ __device__ void operator()(std::int64_t i, const counted<V>& c) const {
    if (static_cast<std::uint64_t>(i) == n - 1)
      *slot = run_acc<K, V>{keys[0], keys[n - 1], c.value, static_cast<unsigned char>(c.count == n ? 1 : 0), 0};
  }
};

/// Element j of a segment with its seed in front: the seed's last key at j = 0, else keys[j - 1].
template <class K, class V>
struct seeded_key {
  const K* keys;
  const run_acc<K, V>* seed;
  __host__ __device__ K operator()(std::uint64_t j) const { return j == 0 ? seed->last : keys[j - 1]; }
};

/// The value at j of a segment with its seed in front: the seed's last-run aggregate at j = 0.
template <class K, class VIn, class V>
struct seeded_value {
  const VIn* values;
  const run_acc<K, V>* seed;
  __host__ __device__ V operator()(std::uint64_t j) const { return j == 0 ? seed->value : static_cast<V>(values[j - 1]); }
};

/// Output j of a seeded scan goes to out[j - 1]; the seed's own output is dropped.
template <class O>
struct after_seed_writer {
  O* out;
  template <class U>
  __host__ __device__ void operator()(std::int64_t j, const U& v) const {
    if (j > 0) out[j - 1] = static_cast<O>(v);
  }
};

/// !(k[i] == k[i - 1]): a run starts at i (i >= 1).
template <class K>
struct key_change {
  const K* k;
  __host__ __device__ bool operator()(std::uint64_t i) const { return !(k[i] == k[i - 1]); }
};

/// The length of a segment's leading run from first_index's answer (no_index: all one run).
__host__ __device__ inline std::uint64_t leading_run(const std::uint64_t* first_change, std::uint64_t n) {
  if (n < 2) return n;
  const std::uint64_t c = *first_change;
  return c == no_index ? n : c;
}

/// A segment's total from its own finished keyed scan (the direct path): the last output is the
/// last run's aggregate, and the segment is one run when its leading run is all of it.
template <class K, class V>
struct scanned_total_writer {
  const K* keys;
  const V* out;
  std::uint64_t n;
  const std::uint64_t* first_change;
  run_acc<K, V>* slot;
  __host__ __device__ void operator()(std::uint32_t) const {
    *slot = run_acc<K, V>{keys[0], keys[n - 1], out[n - 1],
                          static_cast<unsigned char>(leading_run(first_change, n) == n ? 1 : 0), 0};
  }
};

/// The direct path's correction: where the seed's last run continues into the segment, the
/// segment's leading run (already scanned locally) gets the seed's aggregate in front:
/// out[j] = op(seed, out[j]) for j below the run's length, `stride` threads striding over it.
template <class K, class V, class Op>
struct leading_run_fix {
  const K* keys;
  V* out;
  std::uint64_t n;
  const std::uint64_t* first_change;
  const run_acc<K, V>* seed;
  Op op;
  std::uint64_t stride;
  __host__ __device__ void operator()(std::uint64_t t) const {
    if (!(seed->last == keys[0])) return;
    const std::uint64_t run = leading_run(first_change, n);
    const V carry = seed->value;
    for (std::uint64_t j = t; j < run; j += stride) out[j] = static_cast<V>(op(carry, out[j]));
  }
};

template <bool Exclusive, class V, class KR, class VR, class Out, class Op>
void scan_by_key_impl(const char* name, const KR& keys_r, const VR& values_r, Out&& out_r, Op op, const V& init,
                      bool sync) {
  using K = range_value_t<KR>;
  using VIn = range_value_t<VR>;
  using O = range_value_t<Out>;
  using acc = run_acc<K, V>;
  static_assert(sizeof(K) <= 64 && sizeof(V) <= 64, "Strata's keyed scans take keys and values of at most 64 bytes each");
  static_assert(detail::callable_v<Op, V, V>,
                "Strata's keyed scans: op(a, b) must combine two values (a __device__ or __host__ __device__ functor or "
                "lambda). The argument order is (keys, values, out, op) and (keys, values, out, init, op)");
  static_assert(std::is_convertible_v<decltype(std::declval<const K&>() == std::declval<const K&>()), bool>,
                "Strata's keyed scans compare keys with ==");
  require_mutable<Out>(name);
  const auto keys = as_span(keys_r);
  const auto values = as_span(values_r);
  const distributed_span<O> out = as_span(out_r);
  require_same_layout(name, keys, values);
  require_same_layout(name, keys, out);
  require_no_partial_overlap(name, values, out);
  require_disjoint(name, keys, out);
  call_scope scope(keys.places().state(), name);
  set_state& s = scope.state();
  const partition& part = keys.partition();
  const run_op<K, V, Op> rop{op};
  // What CUB's keyed scans call: op with its result type stated, since CUB asks for it on the
  // host, where an extended __device__ lambda cannot tell it.
  const auto vop = stated_result<V>(op);

  // The direct path (an inclusive scan whose output type is the accumulator's): every place but
  // the last runs CUB's keyed scan of its segment on raw pointers in the totals phase, finds its
  // leading run's length (a search that stops at the first key change, kept in the place's
  // scratch: a small kernel where runs are short, a read of the keys where the segment is one
  // run) and takes its total from its own output; after the fold, a place whose seed's last run
  // continues into it corrects only that leading run. The data is read once (plus the keys of the
  // leading run) instead of twice through iterators. An exclusive scan, or an output
  // narrower than the accumulator, cannot be corrected afterwards: it keeps the seeded path.
  constexpr bool direct = !Exclusive && std::is_same_v<O, V>;
  std::size_t nonempty = 0, last = 0;
  for (std::size_t i = 0; i < part.places(); ++i)
    if (part.count(i) > 0) {
      ++nonempty;
      last = i;
    }
  const auto plain = [&](std::size_t i, place_state& p) {
    const auto n = part.count(i);
    const K* k = keys.segment_at(i).data;
    const VIn* v = values.segment_at(i).data;
    O* dst = out.segment_at(i).data;
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      if constexpr (Exclusive)
        return cub::DeviceScan::ExclusiveScanByKey(temp, bytes, k, values_as<V>(v), dst, vop, init,
                                                   static_cast<std::int64_t>(n), ::cuda::std::equal_to<>{}, p.stream());
      else
        return cub::DeviceScan::InclusiveScanByKey(temp, bytes, k, values_as<V>(v), dst, vop, static_cast<std::int64_t>(n),
                                                   ::cuda::std::equal_to<>{}, p.stream());
    });
  };
  // The first key change of segment i into the place's scratch (nothing to find below 2 elements).
  const auto find_first_change = [&](std::size_t i, place_state& p) {
    auto* at = static_cast<std::uint64_t*>(p.scratch(sizeof(std::uint64_t)));
    const auto n = part.count(i);
    if (n >= 2) first_index_early(p, 1, n, key_change<K>{keys.segment_at(i).data}, at);
    return at;
  };

  const auto total = [&](std::size_t i, place_state& p, acc* slot) {
    const auto n = part.count(i);
    if constexpr (direct) {
      plain(i, p);
      const std::uint64_t* at = find_first_change(i, p);
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
          1u, scanned_total_writer<K, V>{keys.segment_at(i).data, out.segment_at(i).data, n, at, slot}, p.stream()));
      return;
    }
    const K* k = keys.segment_at(i).data;
    const auto in = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0),
                                                    count_one<VIn, V>{values.segment_at(i).data});
    const tabulate_output<total_writer<K, V>, counted<V>> sink{{k, n, slot}, 0};
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      return cub::DeviceScan::InclusiveScanByKey(temp, bytes, k, in, sink, counted_op<V, Op>{op},
                                                 static_cast<std::int64_t>(n), ::cuda::std::equal_to<>{}, p.stream());
    });
  };
  // `seed` is the lifted aggregate of everything before the segment, read on the device; null for
  // the first non-empty segment, which runs CUB's own keyed scan as it is.
  const auto scan = [&](std::size_t i, place_state& p, const acc* seed) {
    const auto n = part.count(i);
    const K* k = keys.segment_at(i).data;
    const VIn* v = values.segment_at(i).data;
    O* dst = out.segment_at(i).data;
    if constexpr (direct) {
      const bool scanned = nonempty > 1 && i != last;  // in the totals phase
      if (!scanned) plain(i, p);
      if (seed == nullptr) return;
      const std::uint64_t* at = scanned ? static_cast<const std::uint64_t*>(p.scratch(sizeof(std::uint64_t)))
                                        : find_first_change(i, p);
      const std::uint64_t stride = n < (std::uint64_t{1} << 18) ? n : (std::uint64_t{1} << 18);
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(stride, leading_run_fix<K, V, decltype(vop)>{k, dst, n, at, seed, vop, stride},
                                             p.stream()));
      return;
    }
    if (seed == nullptr) {
      plain(i, p);
      return;
    }
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      const thrust::counting_iterator<std::uint64_t> j(0);
      const auto seeded_keys = thrust::make_transform_iterator(j, seeded_key<K, V>{k, seed});
      const auto seeded_values = thrust::make_transform_iterator(j, seeded_value<K, VIn, V>{v, seed});
      const tabulate_output<after_seed_writer<O>, V> sink{{dst}, 0};
      if constexpr (Exclusive)
        return cub::DeviceScan::ExclusiveScanByKey(temp, bytes, seeded_keys, seeded_values, sink, vop, init,
                                                   static_cast<std::int64_t>(n + 1), ::cuda::std::equal_to<>{}, p.stream());
      else
        return cub::DeviceScan::InclusiveScanByKey(temp, bytes, seeded_keys, seeded_values, sink, vop,
                                                   static_cast<std::int64_t>(n + 1), ::cuda::std::equal_to<>{}, p.stream());
    });
  };
  scan_segments<acc>(s, part, total, inclusive_offsets<acc, run_op<K, V, Op>>{rop}, scan);
  if (sync) wait_segments(s, part);
}

template <class KR, class VR, class Out>
inline constexpr bool by_key_ranges_v =
    is_distributed_range_v<KR> && is_distributed_range_v<VR> && is_distributed_range_v<Out>;

}  // namespace detail

/// Inclusive scan of `values` restarting at every run of equal consecutive keys (==), as
/// thrust::inclusive_scan_by_key: out[i] = op over the values of i's run up to and including
/// values[i]. A run that straddles places or ranks is scanned as one run. The sums are kept in
/// the common type of the values' and the output's types. `op` must be associative (it need not
/// commute); keys and values of at most 64 bytes each, default-constructible. `keys`, `values`
/// and `out` share one layout; `out` may be `values` itself (in place) but no other overlap, and
/// it must not share memory with `keys`. An empty range writes nothing. Waits for the work. Throws
/// std::invalid_argument for mismatched or overlapping ranges, strata::cuda_error for CUDA
/// failures; on a set spanning processes it is a collective (every rank calls it).
template <class KR, class VR, class Out, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<detail::by_key_ranges_v<KR, VR, Out> && detail::not_nosync_v<Op>>>
void inclusive_scan_by_key(const KR& keys, const VR& values, Out&& out, Op op = {}) {
  using V = detail::scan_acc_t<VR, Out>;
  detail::scan_by_key_impl<false, V>("strata::inclusive_scan_by_key", keys, values, out, op, V{}, true);
}
/// As inclusive_scan_by_key(keys, values, out, op), returning once the work is enqueued (see
/// strata::nosync).
template <class KR, class VR, class Out, class Op, class = std::enable_if_t<detail::by_key_ranges_v<KR, VR, Out>>>
void inclusive_scan_by_key(const KR& keys, const VR& values, Out&& out, Op op, nosync_t) {
  using V = detail::scan_acc_t<VR, Out>;
  detail::scan_by_key_impl<false, V>("strata::inclusive_scan_by_key", keys, values, out, op, V{}, false);
}

/// Exclusive scan of `values` restarting at every run of equal consecutive keys (==), as
/// thrust::exclusive_scan_by_key: out[i] = init at the head of a run, init op (the run's values
/// before i) elsewhere, accumulated in the type of `init`. A run that straddles places or ranks is
/// scanned as one run. Requirements, in-place use and exceptions as inclusive_scan_by_key.
template <class KR, class VR, class Out, class T, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<detail::by_key_ranges_v<KR, VR, Out> && detail::not_nosync_v<T> &&
                                   detail::not_nosync_v<Op>>>
void exclusive_scan_by_key(const KR& keys, const VR& values, Out&& out, T init, Op op = {}) {
  detail::scan_by_key_impl<true, T>("strata::exclusive_scan_by_key", keys, values, out, op, init, true);
}
/// As exclusive_scan_by_key(keys, values, out, init, op), returning once the work is enqueued (see
/// strata::nosync).
template <class KR, class VR, class Out, class T, class Op, class = std::enable_if_t<detail::by_key_ranges_v<KR, VR, Out>>>
void exclusive_scan_by_key(const KR& keys, const VR& values, Out&& out, T init, Op op, nosync_t) {
  detail::scan_by_key_impl<true, T>("strata::exclusive_scan_by_key", keys, values, out, op, init, false);
}

}  // namespace strata
