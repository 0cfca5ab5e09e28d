// redistribute: the same elements, in the same order, onto another layout and/or another
// device_set, through the exchange (detail/exchange.cuh).
#pragma once

#include <strata/algorithm/copy.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>
#include <strata/partition.hpp>
#include <strata/tags.cuh>

#include <type_traits>
#include <utility>

namespace strata {

namespace detail {

template <class R>
distributed_vector<range_value_t<R>> redistribute_impl(const R& in_r, device_set set, const partition_policy& policy,
                                                       bool sync) {
  using T = range_value_t<R>;
  const distributed_span<const T> in = as_span(in_r);
  require_places("strata::redistribute", in);
  require_exchangeable("strata::redistribute", in.places().state(), set.state());
  distributed_vector<T> out(in.size(), std::move(set), policy, no_init);
  if (in.empty()) return out;
  copy_relayout(in, out.span(), sync);
  return out;
}

}  // namespace detail

/// A new container holding the elements of `in`, in order, laid out by `policy` over `set`:
/// rebalancing a weighted or compacted layout (`redistribute(v, partition_policy::even())`),
/// moving a range onto other GPUs, or draining one GPU (`redistribute(v, device_set{0, 2, 3})`).
/// Each element moves at most once, through the exchange: a device copy within a GPU, a peer copy
/// between GPUs with peer access, pinned host staging otherwise; the host does not wait in the
/// middle. Needs room for the new container while `in` exists (assign the result to `in` to
/// replace it). Waits for the moves. Throws std::invalid_argument for a range without places or
/// an invalid policy, strata::cuda_error if an allocation (naming the device) or a copy fails;
/// `in` is unchanged then, and nothing of the new container stays allocated.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_vector<range_value_t<R>> redistribute(const R& in, device_set set,
                                                  partition_policy policy = partition_policy::even()) {
  return detail::redistribute_impl(in, std::move(set), policy, true);
}
/// As redistribute(in, set, policy), returning once the moves are enqueued: later Strata calls on
/// the new container's places are ordered after them, and later writes to `in` after their reads
/// (see strata::nosync).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_vector<range_value_t<R>> redistribute(const R& in, device_set set, partition_policy policy, nosync_t) {
  return detail::redistribute_impl(in, std::move(set), policy, false);
}
/// The elements of `in` on its own device_set, laid out by `policy`. See redistribute(in, set, policy).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_vector<range_value_t<R>> redistribute(const R& in, partition_policy policy) {
  return detail::redistribute_impl(in, detail::as_span(in).places(), policy, true);
}
/// As redistribute(in, policy), returning once the moves are enqueued (see strata::nosync).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_vector<range_value_t<R>> redistribute(const R& in, partition_policy policy, nosync_t) {
  return detail::redistribute_impl(in, detail::as_span(in).places(), policy, false);
}

}  // namespace strata
