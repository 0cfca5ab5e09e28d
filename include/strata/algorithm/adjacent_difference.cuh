// adjacent_difference: out[0] = in[0], out[i] = op(in[i], in[i-1]). Each place runs CUB's
// DeviceAdjacentDifference over its segment; the one element a segment needs from outside it
// (the previous non-empty segment's last, on another place or rank) comes from
// detail::with_predecessors (detail/fold.cuh), as unique's does, and the place fixes its first
// output with it.
#pragma once

#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold.cuh>
#include <strata/distributed_span.cuh>
#include <strata/tags.cuh>

#include <cub/device/device_adjacent_difference.cuh>
#include <cub/device/device_for.cuh>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

namespace strata {

namespace detail {

/// A segment's first output once its predecessor is known: out[0] = op(in[0], *previous), as
/// one DeviceFor call.
template <class T, class O, class Op>
struct first_difference {
  const T* in;
  O* out;
  const T* previous;
  Op op;
  __device__ void operator()(int) const { *out = op(in[0], *previous); }
};

template <class In, class Out, class Op>
void adjacent_difference_impl(const In& in_r, Out&& out_r, Op op, bool sync) {
  constexpr const char* name = "strata::adjacent_difference";
  const auto in = as_span(in_r);
  const auto out = as_span(out_r);
  using T = typename decltype(in)::value_type;
  using O = typename decltype(out)::value_type;
  static_assert(!std::is_const_v<typename span_of_t<Out>::element_type>,
                "strata::adjacent_difference: the output must be mutable");
  static_assert(detail::callable_v<Op, T, T>,
                "strata::adjacent_difference: the operator must take two elements, op(x[i], x[i-1]), and be callable "
                "on the device");
  require_same_layout(name, in, out);
  require_no_partial_overlap(name, in, out);
  call_scope scope(in.places().state(), name);
  set_state& s = scope.state();
  const auto diff = [&](std::size_t i, place_state& p, const T* previous) {
    const auto src = in.segment_at(i);
    O* dst = out.segment_at(i).data;
    const bool in_place = static_cast<const void*>(src.data) == static_cast<const void*>(dst);
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      if constexpr (std::is_same_v<T, O>)
        if (in_place) return cub::DeviceAdjacentDifference::SubtractLeft(temp, bytes, dst, src.count, op, p.stream());
      return cub::DeviceAdjacentDifference::SubtractLeftCopy(temp, bytes, src.data, dst, src.count, op, p.stream());
    });
    // CUB leaves out[0] = in[0] (in place: untouched); the neighbour before it is the previous
    // segment's last element.
    if (previous != nullptr)
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(1, first_difference<T, O, Op>{src.data, dst, previous, op}, p.stream()));
  };
  with_predecessors(s, in, diff);
  if (sync) wait_segments(s, in.partition());
}

}  // namespace detail

/// adjacent_difference: out[0] = in[0] and out[i] = op(in[i], in[i-1]) for i >= 1
/// (std::adjacent_difference; the default op is subtraction). The neighbour of a place's first
/// element is the previous place's (or rank's) last. `in` and `out` must have the same size,
/// device_set and partition; they may be the same range (in place). `op` runs on the device. An
/// empty range writes nothing. Waits for the work. Throws std::invalid_argument for mismatched
/// layouts or partially overlapping ranges, strata::cuda_error for CUDA failures.
template <class In, class Out, class Op = ::cuda::std::minus<>,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out> && detail::not_nosync_v<Op>>>
void adjacent_difference(const In& in, Out&& out, Op op = {}) {
  detail::adjacent_difference_impl(in, out, op, true);
}
/// As adjacent_difference(in, out, op), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class Op,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void adjacent_difference(const In& in, Out&& out, Op op, nosync_t) {
  detail::adjacent_difference_impl(in, out, op, false);
}
/// As adjacent_difference(in, out) (differences), returning once the work is enqueued.
template <class In, class Out, class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void adjacent_difference(const In& in, Out&& out, nosync_t) {
  detail::adjacent_difference_impl(in, out, ::cuda::std::minus<>{}, false);
}

}  // namespace strata
