// copy between distributed ranges (of any two layouts, on any two device sets) and between a
// distributed range and host memory.
#pragma once

#include <strata/detail/copies.cuh>
#include <strata/distributed_span.cuh>
#include <strata/tags.cuh>

#include <type_traits>

namespace strata {

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
/// pageable or pinned. On a set spanning processes `src` holds the whole (global) range and each
/// rank copies only its own elements (no collective). Throws std::invalid_argument if `src` is
/// null while `out` is not empty or
/// `out` has no places; strata::cuda_error if a CUDA call fails.
template <class Out, class T, class = std::enable_if_t<is_distributed_range_v<Out>>>
void copy_from_host(const T* src, Out&& out) {
  detail::copy_from_host_impl(src, distributed_span<T>(detail::as_span(out)));
}

/// Copies every element of `in` to host memory at `dst` (which must hold `in.size()`
/// elements), and waits. On a set spanning processes it is a collective: every rank must call it,
/// and every rank receives every element (broadcast from its rank through NCCL, in chunks of the
/// staging ring: meant for checking and output, not for speed). Throws std::invalid_argument if
/// `dst` is null while `in` is not empty or `in` has no places; strata::cuda_error if a CUDA call
/// fails; on a set spanning processes, the process group's error on a failed or silent peer.
template <class In, class T, class = std::enable_if_t<is_distributed_range_v<In>>>
void copy_to_host(const In& in, T* dst) {
  detail::copy_to_host_impl(distributed_span<const T>(detail::as_span(in)), dst);
}

}  // namespace strata
