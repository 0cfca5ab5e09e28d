// The scan family: inclusive_scan, exclusive_scan, transform_inclusive_scan,
// transform_exclusive_scan. One segment: a plain CUB scan. Several: reduce-then-scan. Every
// place but the last computes its segment's total, the root folds the totals into per-segment
// offsets in segment order (on the device), and each place runs CUB's scan seeded with its
// offset read from device memory. Correct for associative operators that are not commutative.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold.cuh>
#include <strata/distributed_span.cuh>
#include <strata/tags.cuh>

#include <thrust/iterator/transform_iterator.h>

#include <cuda/functional>
#include <cuda/std/functional>

#include <cstdint>
#include <type_traits>

namespace strata {

namespace detail {

// The input of a segment's scan: the raw pointer (so CUB can vectorise) or a transform view
// (an extended __device__ lambda with its result type stated as the accumulator's).
template <class Acc, class T, class Tf>
auto scan_input(const T* p, const Tf& tf) {
  if constexpr (std::is_same_v<Tf, identity_fn>)
    return p;
  else
    return thrust::make_transform_iterator(p, stated_result<Acc>(tf));
}

// Inclusive offsets: segment 0 needs none; segment j gets p0 op ... op p(j-1). The last
// segment's total is never computed (scan_segments), so it is never read.
template <class Acc, class Op>
struct inclusive_offsets {
  Op op;
  __device__ void operator()(const slot_table<Acc>& totals, const slot_table<Acc>& offsets) const {
    Acc acc = *totals.ptr[0];
    for (int j = 1; j < totals.size; ++j) {
      *offsets.ptr[j] = acc;
      if (j + 1 < totals.size) acc = op(acc, *totals.ptr[j]);
    }
  }
};

// Exclusive offsets: segment j >= 1 gets init op p0 op ... op p(j-1) (segment 0 is seeded
// with init itself); the last total is not read.
template <class Acc, class Op>
struct exclusive_offsets {
  Acc init;
  Op op;
  __device__ void operator()(const slot_table<Acc>& totals, const slot_table<Acc>& offsets) const {
    Acc acc = init;
    for (int j = 1; j < totals.size; ++j) *offsets.ptr[j] = acc = op(acc, *totals.ptr[j - 1]);
  }
};

enum class scan_kind { inclusive, inclusive_init, exclusive };

template <scan_kind Kind, class Acc, class In, class Out, class Op, class Tf>
void scan_impl(const char* name, const In& in_r, Out&& out_r, Op op, Tf tf, const Acc& init, bool sync) {
  static_assert(!std::is_const_v<typename span_of_t<Out>::element_type>, "strata: the scan output must be mutable");
  static_assert(detail::callable_v<Op, Acc, Acc>,
                "strata scan: the operator must combine two accumulators, op(acc, acc). Strata's argument order is "
                "std::inclusive_scan's: inclusive_scan(in, out, op, init) and exclusive_scan(in, out, init, op); "
                "Thrust's inclusive_scan(first, last, result, init, op) puts init before op");
  static_assert(detail::callable_v<Tf, range_value_t<In>>,
                "strata transform scan: the transform must take one element of the input, f(x)");
  const auto in = as_span(in_r);
  const auto out = as_span(out_r);
  require_same_layout(name, in, out);
  require_no_partial_overlap(name, in, out);
  call_scope scope(in.places().state(), name);
  set_state& s = scope.state();
  const partition& part = in.partition();

  const auto total = [&](std::size_t i, place_state& p, Acc* slot) {
    const auto seg = in.segment_at(i);
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      if constexpr (is_commutative<Op>::value)
        return reduce_no_init<Acc>(temp, bytes, seg.data, slot, seg.count, op, tf, p.stream());
      else
        return ordered_total<Acc>(temp, bytes, scan_input<Acc>(seg.data, tf), slot, seg.count, op, p.stream());
    });
  };
  // `offset` is the segment's seed read on the device; null for the first segment, whose seed (if
  // any) is `init` itself.
  const auto scan = [&](std::size_t i, place_state& p, const Acc* offset) {
    const auto seg = in.segment_at(i);
    const auto it = scan_input<Acc>(seg.data, tf);
    auto* dst = out.segment_at(i).data;
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      if constexpr (Kind == scan_kind::exclusive) {
        return exclusive_scan<Acc>(temp, bytes, it, dst, seg.count, op, offset, init, p.stream());
      } else {
        if (Kind == scan_kind::inclusive && offset == nullptr) return inclusive_scan<Acc>(temp, bytes, it, dst, seg.count, op, p.stream());
        return inclusive_scan_seeded<Acc>(temp, bytes, it, dst, seg.count, op, offset, init, p.stream());
      }
    });
  };
  // With an initial value, segment j's seed is init op p0 op ... op p(j-1), as an exclusive
  // scan's offsets are.
  if constexpr (Kind == scan_kind::inclusive)
    scan_segments<Acc>(s, part, total, inclusive_offsets<Acc, Op>{op}, scan);
  else
    scan_segments<Acc>(s, part, total, exclusive_offsets<Acc, Op>{init, op}, scan);
  if (sync) wait_segments(s, part);
}

// The accumulator of a scan without an initial value: the common type of the (transformed)
// input and the output, so a scan of int into int64 adds in int64; the input's own type where
// the two have no common type.
template <class V, class O, class = void>
struct scan_accumulator {
  using type = V;
};
template <class V, class O>
struct scan_accumulator<V, O, std::void_t<std::common_type_t<V, O>>> {
  using type = std::common_type_t<V, O>;
};
// The transform's result type; for an extended __device__ lambda, whose result type host code
// cannot deduce, the output's value type.
template <class In, class Out, class Tf, bool = is_device_lambda_v<Tf>>
struct transformed_value {
  using type = std::decay_t<std::invoke_result_t<Tf, const range_value_t<In>&>>;
};
template <class In, class Out, class Tf>
struct transformed_value<In, Out, Tf, true> {
  using type = range_value_t<Out>;
};
template <class In, class Out, class Tf = identity_fn>
using scan_acc_t = typename scan_accumulator<typename transformed_value<In, Out, Tf>::type, range_value_t<Out>>::type;

template <class In, class Out>
inline constexpr bool scan_ranges_v = is_distributed_range_v<In> && is_distributed_range_v<Out>;

}  // namespace detail

/// Inclusive scan: out[i] = in[0] op in[1] op ... op in[i]. The sums are accumulated in the common
/// type of the input's and the output's value types (so `int` into `int64_t` adds in 64 bits);
/// pass an initial value to choose the accumulator explicitly. `op` must be associative (it need
/// not be commutative; see strata::is_commutative for the faster path of commutative ones).
/// `in` and `out` must have the same size, device_set and partition; they may be the same range
/// (in place). An empty range writes nothing. Waits for the work. Throws std::invalid_argument for
/// mismatched layouts or partially overlapping ranges, strata::cuda_error for CUDA failures.
template <class In, class Out, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<detail::scan_ranges_v<In, Out> && detail::not_nosync_v<Op>>>
void inclusive_scan(const In& in, Out&& out, Op op = {}) {
  using Acc = detail::scan_acc_t<In, Out>;
  detail::scan_impl<detail::scan_kind::inclusive, Acc>("strata::inclusive_scan", in, out, op, detail::identity_fn{},
                                                       Acc{}, true);
}
/// As inclusive_scan(in, out, op), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void inclusive_scan(const In& in, Out&& out, Op op, nosync_t) {
  using Acc = detail::scan_acc_t<In, Out>;
  detail::scan_impl<detail::scan_kind::inclusive, Acc>("strata::inclusive_scan", in, out, op, detail::identity_fn{},
                                                       Acc{}, false);
}
/// As inclusive_scan(in, out) (a sum), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void inclusive_scan(const In& in, Out&& out, nosync_t) {
  strata::inclusive_scan(in, out, ::cuda::std::plus<>{}, nosync);
}
/// Inclusive scan with an initial value, as std::inclusive_scan's form with `init`:
/// out[i] = init op in[0] op ... op in[i], accumulated in the type of `init`. Requirements and
/// exceptions as inclusive_scan(in, out, op).
template <class In, class Out, class Op, class T,
          class = std::enable_if_t<detail::scan_ranges_v<In, Out> && detail::not_nosync_v<T>>>
void inclusive_scan(const In& in, Out&& out, Op op, T init) {
  detail::scan_impl<detail::scan_kind::inclusive_init, T>("strata::inclusive_scan", in, out, op, detail::identity_fn{},
                                                          init, true);
}
/// As inclusive_scan(in, out, op, init), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op, class T, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void inclusive_scan(const In& in, Out&& out, Op op, T init, nosync_t) {
  detail::scan_impl<detail::scan_kind::inclusive_init, T>("strata::inclusive_scan", in, out, op, detail::identity_fn{},
                                                          init, false);
}

/// Exclusive scan: out[i] = init op in[0] op ... op in[i-1] (out[0] = init), accumulated in
/// the type of `init`. Requirements, in-place use and exceptions as inclusive_scan.
template <class In, class Out, class T, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<detail::scan_ranges_v<In, Out> && detail::not_nosync_v<T> && detail::not_nosync_v<Op>>>
void exclusive_scan(const In& in, Out&& out, T init, Op op = {}) {
  detail::scan_impl<detail::scan_kind::exclusive, T>("strata::exclusive_scan", in, out, op, detail::identity_fn{}, init,
                                                     true);
}
/// As exclusive_scan(in, out, init, op), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class T, class Op, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void exclusive_scan(const In& in, Out&& out, T init, Op op, nosync_t) {
  detail::scan_impl<detail::scan_kind::exclusive, T>("strata::exclusive_scan", in, out, op, detail::identity_fn{}, init,
                                                     false);
}
/// As exclusive_scan(in, out, init) (a sum), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class T,
          class = std::enable_if_t<detail::scan_ranges_v<In, Out> && detail::not_nosync_v<T>>>
void exclusive_scan(const In& in, Out&& out, T init, nosync_t) {
  strata::exclusive_scan(in, out, init, ::cuda::std::plus<>{}, nosync);
}

/// Transform inclusive scan: out[i] = f(in[0]) op ... op f(in[i]), accumulated in the common type
/// of f's result and the output's value type (in the output's type where f is an extended
/// `__device__` lambda, whose result type host code cannot see). Requirements, in-place use and
/// exceptions as inclusive_scan.
template <class In, class Out, class Op, class F, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void transform_inclusive_scan(const In& in, Out&& out, Op op, F f) {
  using Acc = detail::scan_acc_t<In, Out, F>;
  detail::scan_impl<detail::scan_kind::inclusive, Acc>("strata::transform_inclusive_scan", in, out, op, f, Acc{}, true);
}
/// As transform_inclusive_scan(in, out, op, f), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op, class F, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void transform_inclusive_scan(const In& in, Out&& out, Op op, F f, nosync_t) {
  using Acc = detail::scan_acc_t<In, Out, F>;
  detail::scan_impl<detail::scan_kind::inclusive, Acc>("strata::transform_inclusive_scan", in, out, op, f, Acc{}, false);
}
/// Transform inclusive scan with an initial value: out[i] = init op f(in[0]) op ... op f(in[i]),
/// accumulated in the type of `init`. Requirements, in-place use and exceptions as inclusive_scan.
template <class In, class Out, class Op, class F, class T,
          class = std::enable_if_t<detail::scan_ranges_v<In, Out> && detail::not_nosync_v<T>>>
void transform_inclusive_scan(const In& in, Out&& out, Op op, F f, T init) {
  detail::scan_impl<detail::scan_kind::inclusive_init, T>("strata::transform_inclusive_scan", in, out, op, f, init, true);
}
/// As transform_inclusive_scan(in, out, op, f, init), returning once the work is enqueued (see
/// strata::nosync).
template <class In, class Out, class Op, class F, class T, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void transform_inclusive_scan(const In& in, Out&& out, Op op, F f, T init, nosync_t) {
  detail::scan_impl<detail::scan_kind::inclusive_init, T>("strata::transform_inclusive_scan", in, out, op, f, init, false);
}

/// Transform exclusive scan: out[i] = init op f(in[0]) op ... op f(in[i-1]), accumulated in the
/// type of `init`. Requirements, in-place use and exceptions as inclusive_scan.
template <class In, class Out, class T, class Op, class F, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void transform_exclusive_scan(const In& in, Out&& out, T init, Op op, F f) {
  detail::scan_impl<detail::scan_kind::exclusive, T>("strata::transform_exclusive_scan", in, out, op, f, init, true);
}
/// As transform_exclusive_scan, returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class T, class Op, class F, class = std::enable_if_t<detail::scan_ranges_v<In, Out>>>
void transform_exclusive_scan(const In& in, Out&& out, T init, Op op, F f, nosync_t) {
  detail::scan_impl<detail::scan_kind::exclusive, T>("strata::transform_exclusive_scan", in, out, op, f, init, false);
}

}  // namespace strata
