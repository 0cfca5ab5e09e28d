// reduce_by_key: one key and one aggregate per run of equal consecutive keys, as
// thrust::reduce_by_key, with a run that straddles places (or ranks) counted once. Every place
// reduces its own segment with cub::DeviceReduce::ReduceByKey into its segment of the outputs;
// the runs at the segments' edges are settled by one fold over every segment (detail/fold.cuh,
// scan_segments with every segment): a run that continues onto the next non-empty segment is
// dropped where it starts and completed where it ends (its aggregate there takes what came
// before, in order, so the operator need not commute). The host waits once, for the per-place
// run counts that lay the result out, as a compaction's does.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold.cuh>
#include <strata/detail/host_counts.cuh>
#include <strata/algorithm/compact.cuh>
#include <strata/distributed_span.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_reduce.cuh>

#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace strata {

/// What reduce_by_key returns: views of its two outputs holding one key and one aggregate per run
/// (in order), laid out by the places' run counts (each place keeps the runs that end on it).
template <class K, class V>
struct by_key_result {
  /// One key per run (the part of `keys_out` that holds them).
  distributed_span<K> keys;
  /// One aggregate per run, in the same order and layout (the part of `values_out`).
  distributed_span<V> values;
};

namespace detail {

/// A segment's runs, gathered on the root (the partial), and what the fold decides for the segment
/// (the result, in a slot of the same type).
template <class K, class V>
struct runs_slot {
  K first_key, last_key;     // partial: the keys of the segment's first and last runs
  V first_agg, last_agg;     // partial: their aggregates within the segment
  std::uint64_t runs;        // partial: the segment's runs (CUB writes it); result: the same
  V first_value;             // result: the first run's aggregate including the runs before it
  int fix_first, drop_last;  // result: the first run continues one from before; the last one goes on
};

/// The partial of a segment, read from its outputs once CUB has written `out->runs`.
template <class K, class V>
struct runs_partial_fn {
  const K* keys;
  const V* values;
  runs_slot<K, V>* out;
  __device__ void operator()(int) const {
    const std::uint64_t r = out->runs;
    out->first_key = keys[0];
    out->last_key = keys[r - 1];
    out->first_agg = values[0];
    out->last_agg = values[r - 1];
  }
};

/// The fold on the root, over every non-empty segment in order: a run continues from the segment
/// before when the keys at the boundary are equal; its aggregate grows with every segment it
/// crosses (earlier parts on the left), and it is kept only where it ends.
template <class K, class V, class Op>
struct runs_fold {
  Op op;
  __device__ void operator()(const slot_table<runs_slot<K, V>>& t, const slot_table<runs_slot<K, V>>& res) const {
    K key = t.ptr[0]->first_key;
    V agg = t.ptr[0]->first_agg;
    for (int j = 0; j < t.size; ++j) {
      const runs_slot<K, V>& p = *t.ptr[j];
      runs_slot<K, V>& r = *res.ptr[j];
      const bool in = j > 0 && key == p.first_key;
      const V first = in ? static_cast<V>(op(agg, p.first_agg)) : p.first_agg;
      r.runs = p.runs;
      r.fix_first = in ? 1 : 0;
      r.first_value = first;
      r.drop_last = j + 1 < t.size && p.last_key == t.ptr[j + 1]->first_key ? 1 : 0;
      key = p.last_key;
      agg = p.runs == 1 ? first : p.last_agg;
    }
  }
};

/// A place's share of the fold's decision: its first aggregate completed, its run count (less a
/// run that goes on) into the host word.
template <class K, class V>
struct runs_apply_fn {
  const runs_slot<K, V>* r;
  V* values;
  std::uint64_t* kept;
  __device__ void operator()(int) const {
    if (r->fix_first) values[0] = r->first_value;
    *kept = r->runs - static_cast<std::uint64_t>(r->drop_last);
  }
};

}  // namespace detail

/// Reduces every run of equal consecutive keys (==) of `keys` to one key and one aggregate of its
/// `values` under `op` (default +), as thrust::reduce_by_key: run k's key goes to the result's
/// keys[k], op over its values in order to values[k]. A run that straddles places or ranks is one
/// run; it is kept on the place where it ends, with the key found there (equal under == to its
/// first key). `op` must be associative (it need not commute). `keys` and `values` share one
/// layout, and so do `keys_out` and `values_out` with them; no two of the four ranges may share
/// memory. Returns views of the outputs holding the runs, laid out by the places' run counts (see
/// strata::redistribute to even them out). Waits (the host reads the run counts). Keys and values
/// of at most 64 bytes each. Throws std::invalid_argument for mismatched or overlapping ranges,
/// strata::cuda_error for CUDA failures; on a set spanning processes it is a collective (every
/// rank calls it) and throws the process group's error if a rank fails or leaves.
template <class KR, class VR, class KO, class VO, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<is_distributed_range_v<KR> && is_distributed_range_v<VR> &&
                                   is_distributed_range_v<KO> && is_distributed_range_v<VO>>>
by_key_result<range_value_t<KO>, range_value_t<VO>> reduce_by_key(const KR& keys_r, const VR& values_r, KO&& keys_out_r,
                                                                     VO&& values_out_r, Op op = {}) {
  constexpr const char* name = "strata::reduce_by_key";
  using K = range_value_t<KR>;
  using V = range_value_t<VO>;
  static_assert(std::is_same_v<K, range_value_t<KO>>, "strata::reduce_by_key: keys_out must have the keys' element type");
  static_assert(sizeof(K) <= 64 && sizeof(V) <= 64, "strata::reduce_by_key: keys and values of at most 64 bytes each");
  static_assert(detail::callable_v<Op, V, range_value_t<VR>>,
                "strata::reduce_by_key: op(a, b) must combine two values (a __device__ or __host__ __device__ functor "
                "or lambda)");
  detail::require_mutable<KO>(name);
  detail::require_mutable<VO>(name);
  const auto keys = detail::as_span(keys_r);
  const auto values = detail::as_span(values_r);
  const distributed_span<K> keys_out = detail::as_span(keys_out_r);
  const distributed_span<V> values_out = detail::as_span(values_out_r);
  detail::require_same_layout(name, keys, values);
  detail::require_same_layout(name, keys, keys_out);
  detail::require_same_layout(name, keys, values_out);
  detail::require_disjoint(name, keys, keys_out);
  detail::require_disjoint(name, values, values_out);
  detail::require_disjoint(name, keys, values_out);
  detail::require_disjoint(name, values, keys_out);
  detail::require_disjoint(name, keys_out, values_out);
  using slot = detail::runs_slot<K, V>;
  std::vector<std::uint64_t> counts;
  {
    detail::call_scope scope(keys.places().state(), name);
    detail::set_state& s = scope.state();
    const partition& part = keys.partition();
    counts = detail::kept_counts(s, part, 1, [&](std::uint64_t* words) {
      const auto total = [&](std::size_t i, detail::place_state& p, slot* out) {
        const auto n = static_cast<std::int64_t>(part.count(i));
        K* ko = keys_out.segment_at(i).data;
        V* vo = values_out.segment_at(i).data;
        detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
          return cub::DeviceReduce::ReduceByKey(temp, bytes, keys.segment_at(i).data, ko, values.segment_at(i).data, vo,
                                                &out->runs, detail::stated_result<V>(op), n, p.stream());
        });
        STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(1, detail::runs_partial_fn<K, V>{ko, vo, out}, p.stream()));
      };
      const auto apply = [&](std::size_t i, detail::place_state& p, const slot* r) {
        STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
            1, detail::runs_apply_fn<K, V>{r, values_out.segment_at(i).data, words + i}, p.stream()));
      };
      detail::scan_segments<slot>(s, part, total, detail::runs_fold<K, V, Op>{op}, apply, true);
    });
  }
  return {detail::prefixes(keys_out, counts), detail::prefixes(values_out, counts)};
}

}  // namespace strata
