// After a rank is lost: which global ranges of a range over a spanning set lived on the lost ranks
// (strata::lost_ranges), and the survivors' elements moved onto the group that
// process_group::shrink made of them (strata::salvage). Reads only this rank's own segments of the
// old range: the old group is retired and runs no collective.
#pragma once

#include <strata/detail/copies.cuh>
#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata {

namespace detail {

/// The ranks of [0, ranks) not in `lost`, ascending: the survivors, in the order
/// process_group::shrink numbers them. Throws std::invalid_argument for a rank outside [0, ranks)
/// or named twice (host-tested).
inline std::vector<int> surviving_ranks(int ranks, const std::vector<int>& lost, const char* who) {
  std::vector<char> gone(static_cast<std::size_t>(ranks > 0 ? ranks : 0), 0);
  for (const int r : lost) {
    if (r < 0 || r >= ranks)
      throw std::invalid_argument(std::string(who) + ": rank " + std::to_string(r) + " is not in [0, " +
                                  std::to_string(ranks) + ")");
    if (gone[static_cast<std::size_t>(r)])
      throw std::invalid_argument(std::string(who) + ": rank " + std::to_string(r) + " is named twice");
    gone[static_cast<std::size_t>(r)] = 1;
  }
  std::vector<int> left;
  for (int r = 0; r < ranks; ++r)
    if (!gone[static_cast<std::size_t>(r)]) left.push_back(r);
  return left;
}

/// The global index ranges held by the places that `owner` (each place's rank) gives to a rank in
/// `lost`, under `part`: ascending, adjacent ones merged, empty ones left out (host-tested).
inline std::vector<index_range> ranges_of_ranks(const partition& part, const std::vector<int>& owner,
                                                const std::vector<int>& lost) {
  std::vector<index_range> out;
  for (std::size_t i = 0; i < part.places(); ++i) {
    if (part.count(i) == 0 || std::find(lost.begin(), lost.end(), owner.at(i)) == lost.end()) continue;
    if (!out.empty() && out.back().offset + out.back().count == part.offset(i))
      out.back().count += part.count(i);
    else
      out.push_back(index_range{part.offset(i), part.count(i)});
  }
  return out;
}

/// How many elements each rank holds under `part`, `owner` giving each place's rank (host-tested).
inline std::vector<std::uint64_t> elements_per_rank(const partition& part, const std::vector<int>& owner, int ranks) {
  std::vector<std::uint64_t> n(static_cast<std::size_t>(ranks), 0);
  for (std::size_t i = 0; i < part.places(); ++i) n.at(static_cast<std::size_t>(owner.at(i))) += part.count(i);
  return n;
}

/// The places' sizes of a layout that gives the survivors' ranks (new numbering: `held[q]` elements
/// for rank q) exactly what each held, spread evenly over each rank's places (`places[q]` of them),
/// so that moving the elements onto it is a copy on every rank's own GPU (host-tested).
inline std::vector<std::uint64_t> holding_layout(const std::vector<std::uint64_t>& held,
                                                 const std::vector<std::size_t>& places) {
  std::vector<std::uint64_t> sizes;
  for (std::size_t q = 0; q < held.size(); ++q) {
    const auto share = partition::even(held[q], places.at(q)).counts();
    sizes.insert(sizes.end(), share.begin(), share.end());
  }
  return sizes;
}

inline std::vector<int> place_owners(const device_set& set) {
  std::vector<int> owner;
  for (std::size_t i = 0; i < set.size(); ++i) owner.push_back(set.owner_rank(i));
  return owner;
}

}  // namespace detail

/// The global index ranges of `r` whose elements lived on the ranks in `lost` (the places those
/// ranks own): ascending, adjacent ranges merged. What a rank's loss took from a range over a set
/// spanning processes; on a set of one process, rank 0 holds everything. Local: no collective,
/// so it also works on a range whose group failed. Throws std::invalid_argument if a rank in `lost`
/// is not one of the set's (outside [0, r's set .ranks())) or is named twice.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
std::vector<index_range> lost_ranges(const R& r, const std::vector<int>& lost) {
  const auto in = detail::as_span(r);
  (void)detail::surviving_ranks(in.places().ranks(), lost, "strata::lost_ranges");
  return detail::ranges_of_ranks(in.partition(), detail::place_owners(in.places()), lost);
}

/// Moves the elements that the surviving ranks hold of `old` (a range over a set spanning a group
/// that lost the ranks in `lost`) onto `set`, a set spanning the group process_group::shrink made
/// of the survivors (with the same `lost`): a new distributed_vector over `set`, laid out by
/// `policy`, holding those elements in their global order, the ranges lost_ranges(old, lost) left
/// out. Each survivor copies its own segments of `old` on its GPU (nothing crosses the old,
/// retired group), then one exchange on `set` lays them out by `policy` (none where each rank's
/// share already matches). Waits for the work.
///
/// Collective over the survivors (every rank of `set`). Requires that `old`'s work has finished or
/// was stopped (a failed collective stops it). Throws std::invalid_argument if `old`'s set or `set`
/// does not span processes, if `lost` names a rank outside `old`'s or twice, or if `set`'s ranks are
/// not the survivors (their number, or this rank's number: rank r of the old group is rank r minus
/// the lost ranks below it in the new one); strata::nccl_error or strata::cuda_error if the
/// exchange or a copy fails (nothing of the new container is left then).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_vector<range_value_t<R>> salvage(const R& old, const std::vector<int>& lost, device_set set,
                                             partition_policy policy = partition_policy::even()) {
  using T = range_value_t<R>;
  const char* who = "strata::salvage";
  const distributed_span<const T> in = detail::as_span(old);
  const device_set& from = in.places();
  if (!from.spans_processes() || !set.spans_processes())
    throw std::invalid_argument(std::string(who) + ": both the old range's set and the new set must span processes");
  const std::vector<int> left = detail::surviving_ranks(from.ranks(), lost, who);
  const int me = from.rank();
  const auto mine = std::find(left.begin(), left.end(), me);
  if (mine == left.end())
    throw std::invalid_argument(std::string(who) + ": this rank (" + std::to_string(me) + ") is named lost");
  const int expected = static_cast<int>(mine - left.begin());
  if (set.ranks() != static_cast<int>(left.size()) || set.rank() != expected)
    throw std::invalid_argument(std::string(who) + ": the new set's ranks are not the survivors (it has " +
                                std::to_string(set.ranks()) + " ranks, this process is its rank " +
                                std::to_string(set.rank()) + "; the survivors are " + std::to_string(left.size()) +
                                " and this one is the survivors' rank " + std::to_string(expected) + ")");
  // What every survivor holds (known everywhere from the old layout: no collective).
  const auto per_rank = detail::elements_per_rank(in.partition(), detail::place_owners(from), from.ranks());
  std::vector<std::uint64_t> held;
  std::uint64_t total = 0;
  for (const int r : left) {
    held.push_back(per_rank[static_cast<std::size_t>(r)]);
    total += held.back();
  }
  std::vector<std::size_t> places(left.size(), 0);
  for (std::size_t i = 0; i < set.size(); ++i) ++places[static_cast<std::size_t>(set.owner_rank(i))];
  const partition holding = partition::explicit_sizes(total, detail::holding_layout(held, places));

  // This rank's old segments, in order, after their work (this rank's places only). Waited for
  // place by place rather than with from.synchronize(): the old set's wait also checks its ranks
  // (the sticky missing-rank word), which throws on a set whose group failed, the very case here.
  std::vector<segment<const T>> own;
  for (const auto& s : in.segments())
    if (from.is_local(s.place) && s.count > 0) {
      detail::device_guard g(s.device);
      STRATA_CUDA_CHECK(cudaStreamSynchronize(from.stream(s.place)));
      own.push_back(s);
    }
  distributed_vector<T> moved(total, set, partition_policy::explicit_sizes(holding.counts()), no_init);
  {
    // Each of this rank's new places takes the stretch of the rank's old elements it covers.
    detail::call_scope scope(set.state(), who);
    const std::uint64_t base = holding.offset(set.state().ranks.first(set.rank()));
    detail::for_each_segment(scope.state(), holding, [&](std::size_t i, detail::place_state& p) {
      const std::uint64_t a = holding.offset(i) - base, b = a + holding.count(i);
      T* dst = moved.span().segment_at(i).data;
      std::uint64_t c = 0;
      for (const auto& s : own) {
        const std::uint64_t lo = std::max(a, c), hi = std::min(b, c + s.count);
        if (lo < hi)
          STRATA_CUDA_CHECK(cudaMemcpyAsync(dst + (lo - a), s.data + (lo - c), (hi - lo) * sizeof(T),
                                            cudaMemcpyDeviceToDevice, p.stream()));
        c += s.count;
      }
    });
  }
  const partition wanted = policy.apply(total, set.size());
  if (wanted == holding) {
    set.synchronize();
    return moved;
  }
  distributed_vector<T> out(total, set, policy, no_init);
  detail::copy_impl(moved, out, true);
  return out;
}

}  // namespace strata
