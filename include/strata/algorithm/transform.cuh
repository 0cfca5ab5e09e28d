// Element-wise algorithms: transform (unary and binary), for_each, fill, iota. Each is one CUB
// call per segment; nothing is merged. All wait for their work unless given strata::nosync.
#pragma once

#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>

#include <thrust/iterator/counting_iterator.h>

#include <cuda/std/tuple>

#include <cstdint>
#include <type_traits>

namespace strata {

namespace detail {

template <class Out>
void require_mutable(const char*) {
  static_assert(!std::is_const_v<typename span_of_t<Out>::element_type>,
                "strata: the output range must be mutable (not a const container or a span of const)");
}

// The fan-out shared by all element-wise algorithms: per non-empty segment of `part`,
// `launch(i, place)` enqueues one CUB call; then wait unless nosync.
template <class Launch>
void elementwise(const char* name, const device_set& set, const partition& part, bool sync, Launch&& launch) {
  call_scope scope(set.state(), name);
  for_each_segment(scope.state(), part, launch);
  if (sync) wait_segments(scope.state(), part);
}

template <class T>
struct fill_fn {
  T value;
  __host__ __device__ T operator()() const { return value; }
};

template <class T>
struct iota_fn {
  T start;
  __host__ __device__ T operator()(std::uint64_t i) const { return static_cast<T>(start + static_cast<T>(i)); }
};

template <class In, class Out, class Op>
void transform_impl(const In& in_r, Out&& out_r, Op op, bool sync) {
  require_mutable<Out>("strata::transform");
  auto in = as_span(in_r);
  auto out = as_span(out_r);
  require_same_layout("strata::transform", in, out);
  require_no_partial_overlap("strata::transform", in, out);
  elementwise("strata::transform", in.places(), in.partition(), sync, [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(in.segment_at(i).data, out.segment_at(i).data,
                                                      in.partition().count(i), op, p.stream()));
  });
}

template <class In1, class In2, class Out, class Op>
void transform2_impl(const In1& a_r, const In2& b_r, Out&& out_r, Op op, bool sync) {
  require_mutable<Out>("strata::transform");
  auto a = as_span(a_r);
  auto b = as_span(b_r);
  auto out = as_span(out_r);
  require_same_layout("strata::transform", a, b);
  require_same_layout("strata::transform", a, out);
  require_no_partial_overlap("strata::transform", a, out);
  require_no_partial_overlap("strata::transform", b, out);
  elementwise("strata::transform", a.places(), a.partition(), sync, [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(
        ::cuda::std::make_tuple(a.segment_at(i).data, b.segment_at(i).data), out.segment_at(i).data,
        a.partition().count(i), op, p.stream()));
  });
}

template <class R, class F>
void for_each_impl(R&& r_in, F f, bool sync) {
  auto r = as_span(r_in);
  require_places("strata::for_each", r);
  elementwise("strata::for_each", r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceFor::ForEachN(r.segment_at(i).data, r.partition().count(i), f, p.stream()));
  });
}

template <class R, class T>
void fill_impl(R&& r_in, const T& value, bool sync) {
  require_mutable<R>("strata::fill");
  auto r = as_span(r_in);
  require_places("strata::fill", r);
  using V = typename decltype(r)::value_type;
  const fill_fn<V> gen{static_cast<V>(value)};
  elementwise("strata::fill", r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(::cuda::std::tuple<>{}, r.segment_at(i).data,
                                                      r.partition().count(i), gen, p.stream()));
  });
}

template <class R, class T>
void iota_impl(R&& r_in, const T& start, bool sync) {
  require_mutable<R>("strata::iota");
  auto r = as_span(r_in);
  require_places("strata::iota", r);
  using V = typename decltype(r)::value_type;
  const iota_fn<V> gen{static_cast<V>(start)};
  elementwise("strata::iota", r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
    const auto s = r.segment_at(i);
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(thrust::counting_iterator<std::uint64_t>(s.offset), s.data,
                                                      s.count, gen, p.stream()));
  });
}

}  // namespace detail

/// out[i] = op(in[i]) for every i. `in` and `out` must have the same size, device_set and
/// partition (they may be the same range: in place). `op` is a `__host__ __device__` callable
/// or extended lambda. Waits for the work to finish.
/// Throws std::invalid_argument if the layouts differ, strata::cuda_error if a CUDA call fails.
template <class In, class Out, class Op,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void transform(const In& in, Out&& out, Op op) {
  detail::transform_impl(in, out, op, true);
}
/// As transform(in, out, op), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void transform(const In& in, Out&& out, Op op, nosync_t) {
  detail::transform_impl(in, out, op, false);
}

/// out[i] = op(in1[i], in2[i]) for every i. All three ranges must have the same size,
/// device_set and partition. Throws std::invalid_argument otherwise; strata::cuda_error if a
/// CUDA call fails. Waits for the work to finish.
template <class In1, class In2, class Out, class Op,
          class = std::enable_if_t<is_distributed_range_v<In1> && is_distributed_range_v<In2> &&
                                   is_distributed_range_v<Out>>>
void transform(const In1& in1, const In2& in2, Out&& out, Op op) {
  detail::transform2_impl(in1, in2, out, op, true);
}
/// As the binary transform, returning once the work is enqueued (see strata::nosync).
template <class In1, class In2, class Out, class Op,
          class = std::enable_if_t<is_distributed_range_v<In1> && is_distributed_range_v<In2> &&
                                   is_distributed_range_v<Out>>>
void transform(const In1& in1, const In2& in2, Out&& out, Op op, nosync_t) {
  detail::transform2_impl(in1, in2, out, op, false);
}

/// Calls `f(x)` for every element `x` (by reference: `f` may modify it), in no particular
/// order. Throws std::invalid_argument for a range without places, strata::cuda_error if a
/// CUDA call fails. Waits for the work to finish.
template <class R, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
void for_each(R&& r, F f) {
  detail::for_each_impl(r, f, true);
}
/// As for_each(r, f), returning once the work is enqueued (see strata::nosync).
template <class R, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
void for_each(R&& r, F f, nosync_t) {
  detail::for_each_impl(r, f, false);
}

/// Sets every element to `value` (converted to the element type). Throws
/// std::invalid_argument for a range without places, strata::cuda_error if a CUDA call fails.
/// Waits for the work to finish.
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
void fill(R&& r, const T& value) {
  detail::fill_impl(r, value, true);
}
/// As fill(r, value), returning once the work is enqueued (see strata::nosync).
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
void fill(R&& r, const T& value, nosync_t) {
  detail::fill_impl(r, value, false);
}

/// Sets element i (global index order) to `start + i`, computed per element (no accumulated
/// rounding for floating types). Throws std::invalid_argument for a range without places,
/// strata::cuda_error if a CUDA call fails. Waits for the work to finish.
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
void iota(R&& r, const T& start) {
  detail::iota_impl(r, start, true);
}
/// As iota(r, start), returning once the work is enqueued (see strata::nosync).
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
void iota(R&& r, const T& start, nosync_t) {
  detail::iota_impl(r, start, false);
}

}  // namespace strata
