// How elements are copied between distributed ranges and host memory: one device copy per segment
// for ranges of one layout, the exchange between layouts or sets, and the host copies (a broadcast
// across ranks for copy_to_host on a set spanning processes). algorithm/copy.cuh holds the public
// calls; distributed_vector uses these directly.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/distributed_span.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace strata::detail {

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
  require_exchangeable("strata::copy between layouts", ss, ds);
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

// copy_to_host on a set spanning processes, a collective: every global segment, in order and in
// chunks, is broadcast from its rank (ncclBroadcast through the link, on the root's stream) into
// a device buffer, copied into the pinned staging ring and from there into `dst`; the host waits
// (never hanging) once per ring of chunks.
template <class T>
void copy_to_host_across_ranks(set_state& s, const distributed_span<const T>& in, T* dst) {
  staging_ring& ring = s.staging();
  constexpr std::size_t chunks = staging_ring::slots;
  const std::size_t chunk = ring.chunk_bytes;
  char* dev = s.rank_buffer(chunks * chunk);
  place_state& root = s.root();
  for_each_segment(s, in.partition(), [&](std::size_t i, place_state& p) {
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
  });
  device_guard g(root.device());
  active_place_scope a(static_cast<int>(s.root_index));
  for_each_segment(s, in.partition(), [&](std::size_t i, place_state& p) {
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(root.stream(), p.event(), 0));
  });
  for (std::size_t k = 0; k < chunks; ++k)
    if (ring.free[k] != nullptr) STRATA_CUDA_CHECK(cudaStreamWaitEvent(root.stream(), ring.free[k], 0));
  struct landing {
    char* to;
    std::size_t k, n;
  };
  std::vector<landing> pending;
  const auto flush = [&] {
    s.link->wait(root.stream());
    s.check_ranks("strata::copy_to_host");
    for (const landing& l : pending) std::memcpy(l.to, ring.slot(l.k), l.n);
    pending.clear();
  };
  for (std::size_t i = 0; i < in.partition().places(); ++i) {
    const std::uint64_t count = in.partition().count(i);
    if (count == 0) continue;
    const auto* src = s.local(i) ? reinterpret_cast<const char*>(in.segment_at(i).data) : nullptr;
    char* to = reinterpret_cast<char*>(dst + in.partition().offset(i));
    const std::size_t bytes = count * sizeof(T);
    for (std::size_t done = 0; done < bytes; done += chunk) {
      const std::size_t n = std::min(chunk, bytes - done), k = pending.size();
      s.link->broadcast(src != nullptr ? src + done : nullptr, dev + k * chunk, n, s.ranks.owner(i), root.stream());
      STRATA_CUDA_CHECK(cudaMemcpyAsync(ring.slot(k), dev + k * chunk, n, cudaMemcpyDeviceToHost, root.stream()));
      pending.push_back({to + done, k, n});
      if (pending.size() == chunks) flush();
    }
  }
  flush();
}

/// copy_from_host: `out.size()` elements from host memory at `src`, each place its own; waits.
template <class T>
void copy_from_host_impl(const T* src, const distributed_span<T>& out) {
  require_places("strata::copy_from_host", out);
  if (out.empty()) return;
  if (src == nullptr) throw std::invalid_argument("strata::copy_from_host: the host pointer is null");
  call_scope scope(out.places().state(), "strata::copy_from_host");
  for_each_segment(scope.state(), out.partition(), [&](std::size_t i, place_state& p) {
    const auto s = out.segment_at(i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(s.data, src + s.offset, s.count * sizeof(T), cudaMemcpyHostToDevice, p.stream()));
  });
  wait_segments(scope.state(), out.partition());
}

/// copy_to_host: every element of `in` to host memory at `dst` (a collective on a set spanning
/// processes); waits.
template <class T>
void copy_to_host_impl(const distributed_span<const T>& in, T* dst) {
  require_places("strata::copy_to_host", in);
  if (in.empty()) return;
  if (dst == nullptr) throw std::invalid_argument("strata::copy_to_host: the host pointer is null");
  call_scope scope(in.places().state(), "strata::copy_to_host");
  if (scope.state().link != nullptr) return copy_to_host_across_ranks(scope.state(), in, dst);
  for_each_segment(scope.state(), in.partition(), [&](std::size_t i, place_state& p) {
    const auto s = in.segment_at(i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst + s.offset, s.data, s.count * sizeof(T), cudaMemcpyDeviceToHost, p.stream()));
  });
  wait_segments(scope.state(), in.partition());
}

}  // namespace strata::detail
