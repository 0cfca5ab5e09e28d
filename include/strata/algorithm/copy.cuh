// copy between distributed ranges (of any two layouts, on any two device sets) and between a
// distributed range and host memory.
#pragma once

#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

template <class T>
void copy_same_layout(const distributed_span<const T>& in, const distributed_span<T>& out, bool sync) {
  call_scope scope(in.places().state(), "strata::copy");
  for_each_segment(scope.state(), in.partition(), [&](std::size_t i, place_state& p) {
    const auto s = in.segment_at(i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(out.segment_at(i).data, s.data, s.count * sizeof(T), cudaMemcpyDeviceToDevice,
                                      p.stream()));
  });
  if (sync) wait_segments(scope.state(), in.partition());
}

// Different layouts or sets: one exchange of the overlapping pieces (detail/exchange.cuh).
template <class T>
void copy_relayout(const distributed_span<const T>& in, const distributed_span<T>& out, bool sync) {
  set_state& ss = in.places().state();
  set_state& ds = out.places().state();
  two_set_scope scope(ss, ds, "strata::copy");
  const auto from = segment_data(in);
  const auto to = segment_data(out);
  exchange(ss, std::vector<const void*>(from.begin(), from.end()), ds, std::vector<void*>(to.begin(), to.end()),
           sizeof(T), relayout_pieces(in.partition(), out.partition()));
  if (sync) wait_segments(ds, out.partition());
}

template <class In, class Out>
void copy_impl(const In& in_r, Out&& out_r, bool sync) {
  using T = range_value_t<In>;
  static_assert(std::is_same_v<T, range_value_t<Out>>, "strata::copy: the ranges must have the same element type");
  static_assert(!std::is_const_v<typename span_of_t<Out>::element_type>, "strata::copy: the output must be mutable");
  const distributed_span<const T> in = as_span(in_r);
  const distributed_span<T> out = as_span(out_r);
  require_same_size("strata::copy", in, out);
  require_no_partial_overlap("strata::copy", in, out);
  if (in.empty()) return;
  if (in.places() == out.places() && in.partition() == out.partition())
    copy_same_layout(in, out, sync);
  else
    copy_relayout(in, out, sync);
}

}  // namespace detail

/// Copies `in` into `out` element by element (global index order). The ranges must have the
/// same size and element type; their partitions and device sets may differ, in which case each
/// overlapping piece moves through the exchange: a device copy within one device, a peer copy
/// between devices with peer access, pinned host staging otherwise. Waits for the
/// work. Throws std::invalid_argument for different sizes or a range without places,
/// strata::cuda_error if a CUDA call fails. `in` and `out` must not overlap in memory.
template <class In, class Out, class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void copy(const In& in, Out&& out) {
  detail::copy_impl(in, out, true);
}
/// As copy(in, out), returning once the work is enqueued (see strata::nosync).
template <class In, class Out, class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
void copy(const In& in, Out&& out, nosync_t) {
  detail::copy_impl(in, out, false);
}

/// Copies `out.size()` elements from host memory at `src` into `out`, and waits. `src` may be
/// pageable or pinned. Throws std::invalid_argument if `src` is null while `out` is not empty or
/// `out` has no places; strata::cuda_error if a CUDA call fails.
template <class Out, class T, class = std::enable_if_t<is_distributed_range_v<Out>>>
void copy_from_host(const T* src, Out&& out_r) {
  const distributed_span<T> out = detail::as_span(out_r);
  detail::require_places("strata::copy_from_host", out);
  if (out.empty()) return;
  if (src == nullptr) throw std::invalid_argument("strata::copy_from_host: the host pointer is null");
  detail::call_scope scope(out.places().state(), "strata::copy_from_host");
  detail::for_each_segment(scope.state(), out.partition(), [&](std::size_t i, detail::place_state& p) {
    const auto s = out.segment_at(i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(s.data, src + s.offset, s.count * sizeof(T), cudaMemcpyHostToDevice, p.stream()));
  });
  detail::wait_segments(scope.state(), out.partition());
}

/// Copies every element of `in` to host memory at `dst` (which must hold `in.size()`
/// elements), and waits. Throws std::invalid_argument if `dst` is null while `in` is not empty
/// or `in` has no places; strata::cuda_error if a CUDA call fails.
template <class In, class T, class = std::enable_if_t<is_distributed_range_v<In>>>
void copy_to_host(const In& in_r, T* dst) {
  const distributed_span<const T> in = detail::as_span(in_r);
  detail::require_places("strata::copy_to_host", in);
  if (in.empty()) return;
  if (dst == nullptr) throw std::invalid_argument("strata::copy_to_host: the host pointer is null");
  detail::call_scope scope(in.places().state(), "strata::copy_to_host");
  detail::for_each_segment(scope.state(), in.partition(), [&](std::size_t i, detail::place_state& p) {
    const auto s = in.segment_at(i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst + s.offset, s.data, s.count * sizeof(T), cudaMemcpyDeviceToHost, p.stream()));
  });
  detail::wait_segments(scope.state(), in.partition());
}

}  // namespace strata
