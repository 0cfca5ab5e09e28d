// The fold across the ranks of a device set spanning processes: each rank gathers its own places'
// partials on its root (fold_slots.cuh), packs them with the call's stamp into its slot, the slots
// are all-gathered (rank_collectives.cuh), and every rank folds every rank's partials in global
// segment order, so every rank gets the same value and order-sensitive folds stay exact.
#pragma once

#include <strata/detail/fold_slots.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/graph_replay.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <typeinfo>

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

/// The global slot table of a call over `part` on a set spanning processes: every non-empty
/// segment of every rank, in segment order. Region 0 (the partials): every rank's values in its
/// slot of the gathered `buffer`, this rank's included (so the places' fold slots are free again
/// once packed). Region 1 (the offsets a scan's fold writes): this rank's in its places' fold
/// slots, where they read them, the other ranks' (which nobody here reads) in scratch after the
/// slots.
template <class P>
slot_table<P> global_table(set_state& s, const partition& part, const rank_slots<P>& rs, char* buffer, int region) {
  slot_table<P> t{};
  const std::size_t after = rs.slot * static_cast<std::size_t>(s.ranks.ranks());
  for (std::size_t i = 0; i < part.places(); ++i) {
    if (part.count(i) == 0) continue;
    const int j = t.size++;
    if (s.local(i) && region == 1) {
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

// ---- replaying a repeated fold across ranks from graphs --------------------------------------
//
// A rank's collectives can be captured into a CUDA graph only if every rank of the communicator
// captures the same ones (NCCL: "whether an operation launch is graph-captured is ... a collective
// property"). A graph of the whole call would be keyed by this rank's own pointers (segments,
// temp storage), which change at different calls on different ranks. So a repeated value fold on
// a spanning set is two graphs on the root's stream: the local half (the gather and the packing
// of this rank's partials, keyed and captured by this rank alone, as in one process), and the
// collective half (the all-gather and the checked fold), keyed only by what is the same on every
// rank (the types, the global layout, the rank buffer's generation), so every rank captures and
// replays it at the same calls. Both have their root task's parameters rewritten on every replay
// (the stamp, the result slot, the fold's state). The collective graphs are kept by the link, not
// the set: NCCL cannot abort or destroy a communicator while a graph holding one of its
// collectives exists, so the link drops them first (rank_link.cuh).

/// Captures the collective half of a rank fold on the root's stream: the all-gather of `slot`
/// bytes per rank in `buffer`, then `task` on the root. Returns nullptr if it cannot be captured;
/// the caller then runs it eagerly.
template <class Task>
std::unique_ptr<cached_graph> capture_collective(set_state& s, char* buffer, std::size_t slot, const Task& task) {
  place_state& root = s.root();
  device_guard g(root.device());
  active_place_scope a(static_cast<int>(s.root_index));
  if (cudaStreamBeginCapture(root.stream(), cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  bool ok = true;
  try {
    s.link->all_gather(buffer, slot, root.stream());
    root_task_kernel<<<1, 1, 0, root.stream()>>>(task);
    ok = cudaGetLastError() == cudaSuccess;
  } catch (...) {
    ok = false;
  }
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(root.stream(), &graph) != cudaSuccess) ok = false;
  (void)cudaGetLastError();
  auto cg = std::make_unique<cached_graph>();
  cg->graph = graph;
  if (!ok || graph == nullptr || cudaGraphInstantiate(&cg->exec, graph, 0) != cudaSuccess ||
      !find_task_node<Task>(*cg)) {
    (void)cudaGetLastError();
    return nullptr;
  }
  ++s.link->collective_graphs.captures;
  return cg;
}

/// The cross-rank step of every fold on a set spanning processes, in three parts on the root's
/// stream. The local half: `local_half(pack)` enqueues the gather of this rank's partials to its
/// root and then `pack(t)`'s task, which writes the partials of table `t` and the call's stamp
/// into this rank's slot of the rank buffer. The collective half: the all-gather, then
/// `make_task(rank_slots, buffer)`'s task on the root, checked for missing ranks (checked_task).
/// Last the fold workspace is marked consumed. `scratch` bytes after the slots in `buffer` are
/// the task's (global_table, region 1). With `repeat` (the call's partition) and the set's
/// graphs on, the collective half of a repeated call is replayed from a graph of the link's,
/// keyed only by what every rank shares; without, it always runs eagerly.
template <class P, class LocalHalf, class MakeTask>
void fold_across_ranks(set_state& s, std::size_t scratch, const LocalHalf& local_half, const MakeTask& make_task,
                       const partition* repeat = nullptr) {
  const rank_slots<P> rs(s);
  const int ranks = s.ranks.ranks(), me = s.ranks.rank();
  char* buffer = s.rank_buffer(rs.slot * static_cast<std::size_t>(ranks) + scratch);
  int* missing = s.missing_rank_word();
  const std::uint64_t stamp = s.link->next_stamp();
  local_half([&](const slot_table<P>& t) {
    return pack_task<P>{t, buffer + static_cast<std::size_t>(me) * rs.slot, s.ranks.first(me), rs.stride, rs.stamp_at, stamp};
  });
  const auto inner = make_task(rs, buffer);
  using task_t = checked_task<std::decay_t<decltype(inner)>>;
  task_t task{inner, buffer, ranks, rs.slot, rs.stamp_at, stamp, missing};
  graph_cache::entry* coll = nullptr;
  if (repeat != nullptr && s.use_graphs) {
    call_key key;  // the same on every rank
    key.add(s.link_set_id);  // first: the set's entries are dropped by this prefix when it goes
    key.add_type(typeid(task_t));
    key.add(s.rank_buffer_generation());
    key.add(scratch);
    for (std::size_t i = 0; i < repeat->places(); ++i) key.add(repeat->count(i));
    coll = &s.link->collective_graphs.lookup(key.bytes());
    if (!coll->graph && !coll->failed && ++coll->seen >= 2) {
      coll->graph = capture_collective(s, buffer, rs.slot, task);
      if (!coll->graph) coll->failed = true;
    }
  }
  if (coll != nullptr && coll->graph) {
    at_place(s, s.root_index, [&](place_state& root) {
      set_fold_params(*coll->graph, task);
      STRATA_CUDA_CHECK(cudaGraphLaunch(coll->graph->exec, root.stream()));
    });
    ++s.link->collective_graphs.replays;
  } else {
    at_place(s, s.root_index, [&](place_state& root) { s.link->all_gather(buffer, rs.slot, root.stream()); });
    launch_on_root(s, task);
  }
  s.mark_fold_consumed();
}

/// The value fold of reduce_to_future on a set spanning processes: fold_across_ranks with the
/// local half replayed from `local`'s graph where it holds one (else the eager gather), the
/// collective half replayable, and `fold` writing the value to `out` on every rank.
template <class P, class R, class Fold, class Partial>
void fold_value_across_ranks(set_state& s, const partition& part, Partial& partial, const Fold& fold, R* out,
                             graph_cache::entry* local) {
  const auto local_half = [&](const auto& pack) {
    if (local != nullptr && local->graph) {
      const slot_table<P> t = slot_table_of<P>(s, part);
      replay_fold<P>(s, part, *local->graph, t, pack(t));
    } else {
      launch_on_root(s, pack(gather<P>(s, part, partial)));
    }
  };
  fold_across_ranks<P>(
      s, 0, local_half,
      [&](const rank_slots<P>& rs, char* buffer) { return fold_task<P, R, Fold>{global_table(s, part, rs, buffer, 0), out, fold}; },
      &part);
}
}  // namespace strata::detail
