// The fold across the ranks of a device set spanning processes: each rank gathers its own places'
// partials on its root (fold_slots.cuh), packs them with the call's stamp into its slot, the slots
// are all-gathered (rank_collectives.cuh), and every rank folds every rank's partials in global
// segment order, so every rank gets the same value and order-sensitive folds stay exact.
#pragma once

#include <strata/detail/fold_slots.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::detail {

/// The slots of one collective over the ranks of a set spanning processes, for values of P: one
/// slot per rank holding its places' values `stride` bytes apart (by local place index), then the
/// stamp (rank_link.cuh). The same on every rank: it depends only on the rank map.
template <class P>
struct rank_slots {
  std::size_t stride, slot, stamp_at;
  explicit rank_slots(const set_state& s)
      : stride((sizeof(P) + 15) / 16 * 16),
        slot(gather_slot_bytes(stride * s.ranks.most())),
        stamp_at(gather_stamp_at(stride * s.ranks.most())) {}
};

/// Root task before a collective: this rank's values (the local table) and the call's stamp
/// into its slot.
template <class P>
struct pack_task {
  slot_table<P> local;
  char* slot;
  std::size_t first, stride, stamp_at;
  std::uint64_t stamp;
  __device__ void operator()() const {
    for (int j = 0; j < local.size; ++j)
      ::memcpy(slot + (static_cast<std::size_t>(local.place[j]) - first) * stride, local.ptr[j], sizeof(P));
    ::memcpy(slot + stamp_at, &stamp, sizeof stamp);
  }
};

/// One collective of a set spanning processes: the local values of `local` (already gathered on
/// the root) packed with a fresh stamp into this rank's slot of the set's rank buffer, then the
/// all-gather, both on the root's stream. Returns the stamp the folds check.
template <class P>
std::uint64_t all_gather_partials(set_state& s, const slot_table<P>& local, const rank_slots<P>& rs, char* buffer) {
  const std::uint64_t stamp = s.link->next_stamp();
  const auto me = static_cast<std::size_t>(s.ranks.rank());
  pack_and_all_gather(s, buffer, rs.slot,
                      pack_task<P>{local, buffer + me * rs.slot, s.ranks.first(s.ranks.rank()), rs.stride, rs.stamp_at, stamp});
  return stamp;
}

/// The global slot table of a call over `part` on a set spanning processes: every non-empty
/// segment of every rank, in segment order; this rank's values in its fold slots of `region`,
/// the other ranks' in their slots of the gathered `buffer` (region 0) or, for the offsets a
/// scan's fold writes and nobody here reads (region 1), in scratch after the slots.
template <class P>
slot_table<P> global_table(set_state& s, const partition& part, const rank_slots<P>& rs, char* buffer, int region) {
  slot_table<P> t{};
  const std::size_t after = rs.slot * static_cast<std::size_t>(s.ranks.ranks());
  for (std::size_t i = 0; i < part.places(); ++i) {
    if (part.count(i) == 0) continue;
    const int j = t.size++;
    if (s.local(i)) {
      t.ptr[j] = fold_slot<P>(s, i, region);
    } else {
      const int r = s.ranks.owner(i);
      char* at = region == 0 ? buffer + static_cast<std::size_t>(r) * rs.slot + (i - s.ranks.first(r)) * rs.stride
                             : buffer + after + static_cast<std::size_t>(j) * rs.stride;
      t.ptr[j] = reinterpret_cast<P*>(at);
    }
    t.offset[j] = part.offset(i);
    t.place[j] = static_cast<int>(i);
  }
  return t;
}

/// The cross-rank step of every fold on a set spanning processes, after the local gather to the
/// root (`local`): the partials all-gathered between the ranks (all_gather_partials), then on the
/// root `make_task(rank_slots, buffer)`'s task, checked for missing ranks (checked_task).
/// `scratch` bytes after the slots in `buffer` are the task's (global_table, region 1).
template <class P, class MakeTask>
void fold_across_ranks(set_state& s, const slot_table<P>& local, std::size_t scratch, const MakeTask& make_task) {
  const rank_slots<P> rs(s);
  char* buffer = s.rank_buffer(rs.slot * static_cast<std::size_t>(s.ranks.ranks()) + scratch);
  int* missing = s.missing_rank_word();
  const std::uint64_t stamp = all_gather_partials(s, local, rs, buffer);
  const auto task = make_task(rs, buffer);
  run_on_root(s, checked_task<decltype(task)>{task, buffer, s.ranks.ranks(), rs.slot, rs.stamp_at, stamp, missing});
}


}  // namespace strata::detail
