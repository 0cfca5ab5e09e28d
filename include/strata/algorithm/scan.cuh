// The scan family: inclusive_scan, exclusive_scan, transform_inclusive_scan,
// transform_exclusive_scan. One segment: a plain CUB scan. Several: reduce-then-scan. Every
// place but the last computes its segment's total, the root folds the totals into per-segment
// offsets in segment order (on the device), and each place runs CUB's scan seeded with its
// offset read from device memory. Correct for associative operators that are not commutative.
#pragma once

#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/merge.cuh>
#include <strata/distributed_span.cuh>

#include <thrust/iterator/transform_iterator.h>

#include <cuda/functional>
#include <cuda/std/functional>

#include <cstdint>
#include <type_traits>

namespace strata {

/// Whether a binary operator is commutative. Strata computes the per-segment totals of a
/// multi-place scan with CUB's reduction (which reorders operands) when this is true, and
/// with an order-preserving scan pass otherwise. True for the standard arithmetic, bitwise,
/// logical, min and max function objects; specialise it (`: std::true_type`) for your own
/// commutative operators to get the faster path.
template <class Op>
struct is_commutative : std::false_type {};
template <class T>
struct is_commutative<::cuda::std::plus<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::multiplies<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::bit_and<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::bit_or<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::bit_xor<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::logical_and<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::std::logical_or<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::minimum<T>> : std::true_type {};
template <class T>
struct is_commutative<::cuda::maximum<T>> : std::true_type {};

namespace detail {

// The input of a segment's scan: the raw pointer (so CUB can vectorise) or a transform view.
template <class T, class Tf>
auto scan_input(const T* p, const Tf& tf) {
  if constexpr (std::is_same_v<Tf, identity_fn>)
    return p;
  else
    return thrust::make_transform_iterator(p, tf);
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

// Exclusive offsets: segment j gets init op p0 op ... op p(j-1); the last total is not read.
template <class Acc, class Op>
struct exclusive_offsets {
  Acc init;
  Op op;
  __device__ void operator()(const slot_table<Acc>& totals, const slot_table<Acc>& offsets) const {
    Acc acc = init;
    for (int j = 0; j < totals.size; ++j) {
      *offsets.ptr[j] = acc;
      if (j + 1 < totals.size) acc = op(acc, *totals.ptr[j]);
    }
  }
};

template <bool Exclusive, class Acc, class In, class Out, class Op, class Tf>
void scan_impl(const char* name, const In& in_r, Out&& out_r, Op op, Tf tf, const Acc& init, bool sync) {
  static_assert(!std::is_const_v<typename span_of_t<Out>::element_type>, "strata: the scan output must be mutable");
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
        return ordered_total<Acc>(temp, bytes, scan_input(seg.data, tf), slot, seg.count, op, p.stream());
    });
  };
  const auto scan = [&](std::size_t i, place_state& p, int j, const Acc* offset) {
    const auto seg = in.segment_at(i);
    const auto it = scan_input(seg.data, tf);
    auto* dst = out.segment_at(i).data;
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      if constexpr (Exclusive) {
        (void)j;
        return exclusive_scan<Acc>(temp, bytes, it, dst, seg.count, op, offset, init, p.stream());
      } else {
        if (j == 0) return inclusive_scan<Acc>(temp, bytes, it, dst, seg.count, op, p.stream());
        return inclusive_scan_seeded<Acc>(temp, bytes, it, dst, seg.count, op, offset, p.stream());
      }
    });
  };
  if constexpr (Exclusive)
    scan_segments<Acc>(s, part, total, exclusive_offsets<Acc, Op>{init, op}, scan);
  else
    scan_segments<Acc>(s, part, total, inclusive_offsets<Acc, Op>{op}, scan);
  if (sync) wait_segments(s, part);
}

template <class R, class Tf>
using transformed_t = std::decay_t<std::invoke_result_t<Tf, const range_value_t<R>&>>;

}  // namespace detail

/// Inclusive scan: out[i] = in[0] op in[1] op ... op in[i], accumulated in the input's value
/// type. `op` must be associative (it need not be commutative; see strata::is_commutative for
/// the faster path of commutative ones). `in` and `out` must have the same size, device_set and
/// partition; they may be the same range (in place). An empty range writes nothing. Waits for
/// the work. Throws std::invalid_argument for mismatched layouts, strata::cuda_error for CUDA
/// failures.
template <class In, class Out, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void inclusive_scan(const In& in, Out&& out, Op op = {}) {
  using Acc = range_value_t<In>;
  detail::scan_impl<false, Acc>("strata::inclusive_scan", in, out, op, detail::identity_fn{}, Acc{}, true);
}
/// As inclusive_scan, returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void inclusive_scan(const In& in, Out&& out, Op op, nosync_t) {
  using Acc = range_value_t<In>;
  detail::scan_impl<false, Acc>("strata::inclusive_scan", in, out, op, detail::identity_fn{}, Acc{}, false);
}

/// Exclusive scan: out[i] = init op in[0] op ... op in[i-1] (out[0] = init), accumulated in
/// the type of `init`. Requirements, in-place use and exceptions as inclusive_scan.
template <class In, class Out, class T, class Op = ::cuda::std::plus<>,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void exclusive_scan(const In& in, Out&& out, T init, Op op = {}) {
  detail::scan_impl<true, T>("strata::exclusive_scan", in, out, op, detail::identity_fn{}, init, true);
}
/// As exclusive_scan, returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class T, class Op,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void exclusive_scan(const In& in, Out&& out, T init, Op op, nosync_t) {
  detail::scan_impl<true, T>("strata::exclusive_scan", in, out, op, detail::identity_fn{}, init, false);
}

/// Transform inclusive scan: out[i] = f(in[0]) op ... op f(in[i]), accumulated in f's result
/// type. Requirements, in-place use and exceptions as inclusive_scan.
template <class In, class Out, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void transform_inclusive_scan(const In& in, Out&& out, Op op, F f) {
  using Acc = detail::transformed_t<In, F>;
  detail::scan_impl<false, Acc>("strata::transform_inclusive_scan", in, out, op, f, Acc{}, true);
}
/// As transform_inclusive_scan, returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void transform_inclusive_scan(const In& in, Out&& out, Op op, F f, nosync_t) {
  using Acc = detail::transformed_t<In, F>;
  detail::scan_impl<false, Acc>("strata::transform_inclusive_scan", in, out, op, f, Acc{}, false);
}

/// Transform exclusive scan: out[i] = init op f(in[0]) op ... op f(in[i-1]), accumulated in the
/// type of `init`. Requirements, in-place use and exceptions as inclusive_scan.
template <class In, class Out, class T, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void transform_exclusive_scan(const In& in, Out&& out, T init, Op op, F f) {
  detail::scan_impl<true, T>("strata::transform_exclusive_scan", in, out, op, f, init, true);
}
/// As transform_exclusive_scan, returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class T, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void transform_exclusive_scan(const In& in, Out&& out, T init, Op op, F f, nosync_t) {
  detail::scan_impl<true, T>("strata::transform_exclusive_scan", in, out, op, f, init, false);
}

}  // namespace strata
