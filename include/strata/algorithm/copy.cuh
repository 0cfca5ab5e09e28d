// copy between distributed ranges (of any two layouts, on any two device sets) and between a
// distributed range and host memory.
#pragma once

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

// Copies `bytes` from (src, src_dev) to (dst, dst_dev) on `stream`, a stream of dst_dev:
// within a device a device-to-device copy, across devices a peer copy (the driver routes it
// over NVLink/PCIe peer access where enabled and stages it otherwise).
inline void copy_bytes(void* dst, int dst_dev, const void* src, int src_dev, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  if (dst_dev == src_dev)
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  else
    STRATA_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, stream));
}

template <class T>
void copy_same_layout(const distributed_span<const T>& in, const distributed_span<T>& out, bool sync) {
  call_scope scope(in.places().state(), "strata::copy");
  for_each_segment(scope.state(), in.partition(), [&](std::size_t i, place_state& p) {
    const auto s = in.segment_at(i);
    copy_bytes(out.segment_at(i).data, p.device(), s.data, p.device(), s.count * sizeof(T), p.stream());
  });
  if (sync) wait_segments(scope.state(), in.partition());
}

// Different layouts: every destination segment pulls the overlapping piece of every source
// segment on its own stream, after the source place's earlier work (event); afterwards each
// source place waits for the destinations it fed, so later writes to the source are ordered
// after the reads.
template <class T>
void copy_relayout(const distributed_span<const T>& in, const distributed_span<T>& out, bool sync) {
  set_state& ss = in.places().state();
  set_state& ds = out.places().state();
  nvtx_range range("strata::copy");
  std::unique_lock<std::mutex> l1(ss.call_mutex, std::defer_lock), l2(ds.call_mutex, std::defer_lock);
  if (&ss == &ds)
    l1.lock();
  else
    std::lock(l1, l2);

  const partition& sp = in.partition();
  const partition& dp = out.partition();
  for_each_segment(ss, sp, [&](std::size_t, place_state& p) { STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream())); });
  std::vector<std::vector<std::size_t>> fed(sp.places());
  for_each_segment(ds, dp, [&](std::size_t j, place_state& dst) {
    const std::uint64_t d0 = dp.offset(j), d1 = d0 + dp.count(j);
    for (std::size_t i = 0; i < sp.places(); ++i) {
      const std::uint64_t s0 = sp.offset(i), s1 = s0 + sp.count(i);
      const std::uint64_t lo = std::max(s0, d0), hi = std::min(s1, d1);
      if (lo >= hi) continue;
      place_state& src = *ss.places[i];
      if (&src != &dst) STRATA_CUDA_CHECK(cudaStreamWaitEvent(dst.stream(), src.event(), 0));
      copy_bytes(out.segment_at(j).data + (lo - d0), dst.device(), in.segment_at(i).data + (lo - s0), src.device(),
                 (hi - lo) * sizeof(T), dst.stream());
      fed[i].push_back(j);
    }
    STRATA_CUDA_CHECK(cudaEventRecord(dst.event(), dst.stream()));
  });
  for_each_segment(ss, sp, [&](std::size_t i, place_state& src) {
    for (std::size_t j : fed[i]) {
      place_state& dst = *ds.places[j];
      if (&src != &dst) STRATA_CUDA_CHECK(cudaStreamWaitEvent(src.stream(), dst.event(), 0));
    }
  });
  if (sync) wait_segments(ds, dp);
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
/// overlapping piece moves by a peer copy (or a device copy within one device). Waits for the
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
