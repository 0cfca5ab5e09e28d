// Element-wise algorithms: transform (unary, binary, n-ary over a zip), for_each (also over a
// zip, and with the global index), fill, iota, tabulate, and for_each_segment, the public
// fan-out. Each is one CUB call (or the user's work) per segment; nothing is folded. All wait for
// their work unless given strata::nosync.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/elementwise.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>
#include <strata/views.cuh>
#include <strata/tags.cuh>
#include <strata/zip.cuh>

#include <thrust/iterator/counting_iterator.h>

#include <cuda/std/tuple>

#include <cstdint>
#include <tuple>
#include <type_traits>

namespace strata {

namespace detail {

template <class T>
struct iota_fn {
  T start;
  __host__ __device__ T operator()(std::uint64_t i) const { return static_cast<T>(start + static_cast<T>(i)); }
};

// for_each over a zip: f(a[i], b[i], ...) with references.
template <class F, class Ptrs>
struct zip_each {
  zip_apply<F, Ptrs> apply;
  __host__ __device__ void operator()(std::uint64_t i) const { (void)apply(i); }
};

// for_each_indexed: f(global index, element).
template <class T, class F>
struct indexed_each {
  T* data;
  std::uint64_t offset;
  F f;
  __host__ __device__ void operator()(std::uint64_t i) const { f(offset + i, data[i]); }
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

// r[i] = gen(global index i): tabulate, and iota through it.
template <class R, class Gen>
void tabulate_impl(const char* name, R&& r_in, Gen gen, bool sync) {
  require_mutable<R>(name);
  auto r = as_span(r_in);
  require_places(name, r);
  elementwise(name, r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
    const auto s = r.segment_at(i);
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(thrust::counting_iterator<std::uint64_t>(s.offset), s.data,
                                                      s.count, gen, p.stream()));
  });
}

template <class Z, class Out, class Op>
void transform_zip_impl(const Z& z, Out&& out_r, Op op, bool sync) {
  require_mutable<Out>("strata::transform");
  auto out = as_span(out_r);
  require_same_layout("strata::transform", z.first(), out);
  require_zip_no_partial_overlap("strata::transform", z, out);
  elementwise("strata::transform", z.places(), z.partition(), sync, [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(zip_pointers(z, i), out.segment_at(i).data,
                                                      z.partition().count(i), op, p.stream()));
  });
}

template <class Z, class F>
void for_each_zip_impl(const Z& z, F f, bool sync) {
  elementwise("strata::for_each", z.places(), z.partition(), sync, [&](std::size_t i, place_state& p) {
    const auto ptrs = zip_pointers(z, i);
    const zip_each<F, decltype(ptrs)> each{{ptrs, f}};
    STRATA_CUDA_CHECK(cub::DeviceFor::ForEachN(thrust::counting_iterator<std::uint64_t>(0), z.partition().count(i),
                                               each, p.stream()));
  });
}

template <class R, class F>
void for_each_indexed_impl(R&& r_in, F f, bool sync) {
  auto r = as_span(r_in);
  require_places("strata::for_each_indexed", r);
  elementwise("strata::for_each_indexed", r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
    const auto s = r.segment_at(i);
    using E = std::remove_pointer_t<decltype(s.data)>;
    const indexed_each<E, F> each{s.data, s.offset, f};
    STRATA_CUDA_CHECK(cub::DeviceFor::ForEachN(thrust::counting_iterator<std::uint64_t>(0), s.count, each, p.stream()));
  });
}

// The public fan-out: f(stream, segment of every range...) per non-empty segment, device current.
// A single range is a zip of one.
template <class R, class F>
void for_each_segment_impl(R&& r, F& f, bool sync) {
  if constexpr (!is_zip_range_v<R>) {
    const auto s = as_span(r);
    require_places("strata::for_each_segment", s);
    for_each_segment_impl(zip_range<std::decay_t<decltype(s)>>(s), f, sync);
  } else {
    elementwise("strata::for_each_segment", r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
      std::apply([&](const auto&... s) { f(p.stream(), s.segment_at(i)...); }, r.spans());
    });
  }
}

}  // namespace detail

/// out[i] = op(in[i]) for every i. `in` and `out` must have the same size, device_set and
/// partition (they may be the same range: in place). `in` may be a lazy range (strata::counting,
/// strata::transformed): `transform(counting(0, v), v, f)` fills v with f(index). `op` is a `__host__ __device__` callable
/// or extended lambda. Waits for the work to finish.
/// Throws std::invalid_argument if the layouts differ, strata::cuda_error if a CUDA call fails.
template <class In, class Out, class Op,
          class = std::enable_if_t<is_readable_range_v<In> && is_distributed_range_v<Out>>>
void transform(const In& in, Out&& out, Op op) {
  detail::transform_impl(in, out, op, true);
}
/// As transform(in, out, op), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op,
          class = std::enable_if_t<is_readable_range_v<In> && is_distributed_range_v<Out>>>
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
  detail::tabulate_impl("strata::iota", r, detail::iota_fn<range_value_t<R>>{static_cast<range_value_t<R>>(start)}, true);
}
/// As iota(r, start), returning once the work is enqueued (see strata::nosync).
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
void iota(R&& r, const T& start, nosync_t) {
  detail::tabulate_impl("strata::iota", r, detail::iota_fn<range_value_t<R>>{static_cast<range_value_t<R>>(start)}, false);
}

/// Writes `r[i] = gen(i)` for every global index i (std::uint64_t), as thrust::tabulate. `gen` is a
/// `__host__ __device__` callable or extended lambda. Throws std::invalid_argument for a range
/// without places, strata::cuda_error if a CUDA call fails. Waits for the work to finish.
template <class R, class Gen, class = std::enable_if_t<is_distributed_range_v<R>>>
void tabulate(R&& r, Gen gen) {
  detail::tabulate_impl("strata::tabulate", r, gen, true);
}
/// As tabulate(r, gen), returning once the work is enqueued (see strata::nosync).
template <class R, class Gen, class = std::enable_if_t<is_distributed_range_v<R>>>
void tabulate(R&& r, Gen gen, nosync_t) {
  detail::tabulate_impl("strata::tabulate", r, gen, false);
}

/// Calls `f(i, x)` for every element `x` with its global index `i` (std::uint64_t), in no
/// particular order; `x` is passed by reference, so `f` may modify it. Throws as for_each.
/// Waits for the work to finish.
template <class R, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
void for_each_indexed(R&& r, F f) {
  detail::for_each_indexed_impl(r, f, true);
}
/// As for_each_indexed(r, f), returning once the work is enqueued (see strata::nosync).
template <class R, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
void for_each_indexed(R&& r, F f, nosync_t) {
  detail::for_each_indexed_impl(r, f, false);
}

/// n-ary transform: `out[i] = op(a[i], b[i], ...)` for the ranges of a zip (see strata::zip), e.g.
/// the STREAM "nstream" update `transform(zip(a, b, c), a, f)`. `out` must have the zip's layout;
/// it may be one of the zipped ranges (in place), but must not otherwise overlap them. Throws
/// std::invalid_argument before any device work otherwise, strata::cuda_error if a CUDA call
/// fails. Waits for the work to finish.
template <class Z, class Out, class Op,
          std::enable_if_t<is_zip_range_v<Z> && is_distributed_range_v<Out>, int> = 0>
void transform(const Z& in, Out&& out, Op op) {
  detail::transform_zip_impl(in, out, op, true);
}
/// As the n-ary transform, returning once the work is enqueued (see strata::nosync).
template <class Z, class Out, class Op,
          std::enable_if_t<is_zip_range_v<Z> && is_distributed_range_v<Out>, int> = 0>
void transform(const Z& in, Out&& out, Op op, nosync_t) {
  detail::transform_zip_impl(in, out, op, false);
}

/// Calls `f(a[i], b[i], ...)` for every index of a zip, by reference (`f` may modify the elements
/// of the mutable ranges), in no particular order. Throws strata::cuda_error if a CUDA call
/// fails. Waits for the work to finish.
template <class Z, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
void for_each(const Z& z, F f) {
  detail::for_each_zip_impl(z, f, true);
}
/// As for_each over a zip, returning once the work is enqueued (see strata::nosync).
template <class Z, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
void for_each(const Z& z, F f, nosync_t) {
  detail::for_each_zip_impl(z, f, false);
}

/// Your own work on every GPU's share: calls the host function `f(stream, seg)` once per
/// non-empty segment of `r`, in place order, with that segment's device current and `stream` its
/// place's stream (launch your kernels there), then waits for every place that had a segment. For
/// a zip, `f(stream, seg_a, seg_b, ...)` gets the matching segment of every range. Ordered like any
/// Strata call: after earlier Strata work on those places, before later work; it holds the set's
/// call lock while `f` runs, so `f` must not call Strata on the same set. An exception from `f`
/// propagates (segments not yet visited are skipped; work already enqueued stays queued).
/// Throws std::invalid_argument for a range without places, strata::cuda_error if the wait fails.
template <class R, class F, class = std::enable_if_t<is_distributed_range_v<R> || is_zip_range_v<R>>>
void for_each_segment(R&& r, F f) {
  detail::for_each_segment_impl(r, f, true);
}
/// As for_each_segment(r, f), returning once `f` has run for every segment, without waiting for
/// the work it enqueued (see strata::nosync).
template <class R, class F, class = std::enable_if_t<is_distributed_range_v<R> || is_zip_range_v<R>>>
void for_each_segment(R&& r, F f, nosync_t) {
  detail::for_each_segment_impl(r, f, false);
}

}  // namespace strata
