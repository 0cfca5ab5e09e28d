// The fold: what every algorithm that combines per-segment partials calls. reduce_to_future
// (one partial per segment, folded on the root in segment order into a value the caller's future
// holds; replayed from a CUDA graph when repeated) and scan_segments (reduce-then-scan: totals
// folded into per-segment offsets on the device). On a set spanning processes both cross ranks
// (rank_fold.cuh). docs/design.md, "Adding an algorithm", says how an algorithm uses them.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold_slots.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/graph_replay.cuh>
#include <strata/detail/rank_fold.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>
#include <strata/future.cuh>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <typeinfo>

namespace strata::detail {

/// A value-returning algorithm over one partition: gather one partial of type P per non-empty
/// segment, fold them on the root into an R written to a pinned result slot, and return a
/// future for it. An empty partition does no device work and returns `empty_value`, ready.
///
/// `partial(i, place, out)` enqueues segment i's partial; `partial.append_key(key)` describes
/// what its kernels bake in (returning false keeps the call out of the graph cache). Repeated
/// identical calls are replayed from a CUDA graph (see graph_cache.cuh).
template <class R, class P, class Partial, class Fold>
future<R> reduce_to_future(const char* name, const device_set& set, const partition& part, Partial&& partial,
                           const Fold& fold, const R& empty_value) {
  static_assert(sizeof(R) <= max_fold_value_bytes, "Strata returns values of at most 256 bytes");
  call_scope scope(set.state(), name);
  if (part.size() == 0) return future<R>(empty_value);
  set_state& s = scope.state();

  // The graph cache: this rank's own part of the call (all of it in one process), keyed by what
  // its kernels bake in; on a set spanning processes the collective half has graphs of its own,
  // keyed alike on every rank (rank_fold.cuh).
  graph_cache::entry* cached = nullptr;
  if (s.use_graphs) {
    call_key key;
    key.add_type(typeid(Fold));
    bool keyable = partial.append_key(key);
    for (std::size_t i = 0; i < part.places(); ++i) {  // host state only: no device switch
      if (part.count(i) == 0 || !s.local(i)) continue;
      key.add(s.places[i]->temp_storage_pointer());
      key.add(s.places[i]->temp_storage_bytes());
    }
    if (keyable) cached = &s.graphs.lookup(key.bytes());
  }
  if (cached != nullptr && !cached->graph && !cached->failed && ++cached->seen >= 2) {
    if (s.link == nullptr)
      cached->graph = capture_fold<P>(s, part, partial, [&](const slot_table<P>& t) { return fold_task<P, R, Fold>{t, nullptr, fold}; });
    else  // the local half: the gather and the packing of this rank's partials (parameters set at replay)
      cached->graph = capture_fold<P>(s, part, partial, [&](const slot_table<P>& t) { return pack_task<P>{t, nullptr, 0, 0, 0, 0}; });
    if (!cached->graph) cached->failed = true;
  }

  result_slot slot = s.acquire_slot();
  try {
    if (s.link != nullptr) {
      // Across ranks: the same fold on every rank, over every rank's partials in global segment
      // order, so every rank gets the same value and order-sensitive folds stay exact.
      fold_value_across_ranks<P>(s, part, partial, fold, static_cast<R*>(slot.host), cached);
    } else if (cached != nullptr && cached->graph) {
      const slot_table<P> t = slot_table_of<P>(s, part);
      replay_fold<P>(s, part, *cached->graph, t, fold_task<P, R, Fold>{t, static_cast<R*>(slot.host), fold});
    } else {
      const slot_table<P> t = gather<P>(s, part, partial);
      run_on_root(s, fold_task<P, R, Fold>{t, static_cast<R*>(slot.host), fold});
    }
    device_guard g(s.root_device());
    STRATA_CUDA_CHECK(cudaEventRecord(slot.done, s.root().stream()));
  } catch (...) {
    s.release_slot(slot);
    throw;
  }
  return future<R>(set.shared_state(), slot);
}

/// Root task of a scan: `fold(totals, offsets)` writes offsets.ptr[j] for every j.
template <class P, class Fold>
struct offsets_task {
  slot_table<P> totals;
  slot_table<P> offsets;
  Fold fold;
  __device__ void operator()() const { fold(totals, offsets); }
};

/// A reduce-then-scan over one partition. `total(i, place, out)` writes each segment's total
/// (gathered on the root), `fold(totals, offsets)` computes on the root the offset of the j-th
/// non-empty segment into offsets.ptr[j] for j >= 1 (a slot the place reaches), and
/// `scan(i, place, offset_ptr)` runs once its place has waited for the offsets. The first
/// non-empty segment has no predecessor: its `offset_ptr` is null (and a lone segment runs
/// alone, without totals: a plain CUB scan).
/// No offset depends on the last segment's total, so it is not computed (that place reads its
/// segment once instead of twice) and `fold` must not read totals.ptr[totals.size - 1].
///
/// With `every_segment` (a fold whose results also depend on later segments, as reduce_by_key's
/// runs that continue onto the next place), every non-empty segment computes its total, even a
/// lone one, `fold` writes offsets.ptr[j] for every j and may read every total, and `scan` gets
/// its segment's slot for every segment (never null).
template <class P, class Total, class Fold, class Scan>
void scan_segments(set_state& s, const partition& part, Total&& total, const Fold& fold, Scan&& scan,
                   bool every_segment = false) {
  std::size_t nonempty = 0, last = 0;
  for (std::size_t i = 0; i < part.places(); ++i)
    if (part.count(i) > 0) {
      ++nonempty;
      last = i;
    }
  if (nonempty == 0) return;
  if (nonempty == 1 && !every_segment) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) { scan(i, p, static_cast<const P*>(nullptr)); });
    return;
  }
  // The last place still joins the gather with nothing to compute: the root's wait on it orders
  // the fold's write of its offset slot after that place's previous scan read it.
  const slot_table<P> local = gather<P>(s, part, [&](std::size_t i, place_state& p, P* out) {
    if (i != last || every_segment) total(i, p, out);
  });
  slot_table<P> totals = local;
  slot_table<P> offsets;
  if (s.link == nullptr) {
    offsets = totals;
    for (int j = 0; j < totals.size; ++j) offsets.ptr[j] = fold_slot<P>(s, static_cast<std::size_t>(totals.place[j]), 1);
    run_on_root(s, offsets_task<P, Fold>{totals, offsets, fold});
  } else {
    // Across ranks: every rank's totals all-gathered, the offsets of every segment folded on
    // every rank in global segment order (each rank keeps those of its own places).
    fold_across_ranks<P>(
        s, max_places * rank_slots<P>(s).stride, [&](const auto& pack) { launch_on_root(s, pack(local)); },
        [&](const rank_slots<P>& rs, char* buffer) {
          totals = global_table(s, part, rs, buffer, 0);
          offsets = global_table(s, part, rs, buffer, 1);
          return offsets_task<P, Fold>{totals, offsets, fold};
        });
  }
  const cudaEvent_t ready = s.fold_done_event();
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    int j = 0;
    while (static_cast<std::size_t>(offsets.place[j]) != i) ++j;
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), ready, 0));
    scan(i, p, j == 0 && !every_segment ? nullptr : static_cast<const P*>(offsets.ptr[j]));
  });
}

/// Root fold of with_predecessors: segment j's predecessor is segment j-1's last element (the
/// last segment's is never read).
template <class T>
struct predecessor_fold {
  __device__ void operator()(const slot_table<T>& last, const slot_table<T>& prev) const {
    for (int j = 1; j < last.size; ++j) *prev.ptr[j] = *last.ptr[j - 1];
  }
};

/// Hands every non-empty segment of `in` the element just before it in global order: the last
/// element of the previous non-empty segment, on another place or rank (unique's and
/// adjacent_difference's neighbour). A scan_segments whose totals are the segments' last
/// elements: `use(i, place, prev)` then runs for each non-empty segment on its place, `prev` a
/// device pointer to read on the place's stream (null for the first non-empty segment). Every
/// last element is copied out before any `use` runs, so `use` may overwrite its segment.
template <class S, class Use>
void with_predecessors(set_state& s, const S& in, Use&& use) {
  using T = std::remove_const_t<typename S::element_type>;
  static_assert(sizeof(T) <= max_fold_value_bytes, "Strata hands on elements of at most 256 bytes");
  const auto last = [&](std::size_t i, place_state& p, T* slot) {
    const auto seg = in.segment_at(i);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(slot, seg.data + seg.count - 1, sizeof(T), cudaMemcpyDefault, p.stream()));
  };
  scan_segments<T>(s, in.partition(), last, predecessor_fold<T>{}, use);
}

}  // namespace strata::detail
