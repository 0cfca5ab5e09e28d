// Where the partials of a fold live and how they reach the root place: one slot per place, in root
// memory where the place reaches it, in mapped pinned host memory where it does not; the gather
// (every place's CUB call writes its partial, the root stream waits on the places' events), and a
// task on one thread of the root. Cross-device ordering is by events only; the host never waits.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace strata::detail {

/// The gathered partials of one call, passed by value to the root's kernel: for the j-th
/// non-empty segment (in segment order), where its partial lives and which elements it covers.
template <class P>
struct slot_table {
  P* ptr[max_places];
  std::uint64_t offset[max_places];
  int place[max_places];
  int size;
};

/// A task run by one thread on the root place.
template <class F>
__global__ void root_task_kernel(F f) {
  f();
}

/// The slot of place `i` in region `region` (0: partials, 1: offsets): in root memory when the
/// place reaches it, otherwise in mapped pinned host memory. Slots are per place, so a slot is
/// only ever written from one stream.
template <class P>
P* fold_slot(set_state& s, std::size_t i, int region) {
  static_assert(sizeof(P) <= max_fold_value_bytes, "Strata folds values of at most 256 bytes (larger partials: the array fold)");
  const std::size_t k = s.size();
  s.ensure_fold_workspace(2 * k * max_fold_value_bytes);
  char* base = static_cast<char*>(s.reaches_root(i) ? s.fold_device_buffer() : s.fold_host_buffer());
  return reinterpret_cast<P*>(base + (static_cast<std::size_t>(region) * k + i) * max_fold_value_bytes);
}

/// The root stream waits on the event each other place of `t` recorded last. Call with the
/// root's device current.
template <class P>
void root_waits_for(set_state& s, const slot_table<P>& t) {
  for (int j = 0; j < t.size; ++j)
    if (static_cast<std::size_t>(t.place[j]) != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(s.root().stream(), s.places[t.place[j]]->event(), 0));
}

/// The slot table of a call over `part`: for the j-th non-empty segment of this process (in
/// segment order), its
/// place's partial slot, its global offset and its place. It depends only on the partition,
/// so an eager call and every replay of a captured one use the same table.
template <class P>
slot_table<P> slot_table_of(set_state& s, const partition& part) {
  slot_table<P> t{};
  for (std::size_t i = 0; i < part.places(); ++i) {
    if (part.count(i) == 0 || !s.local(i)) continue;
    const int j = t.size++;
    t.ptr[j] = fold_slot<P>(s, i, 0);
    t.offset[j] = part.offset(i);
    t.place[j] = static_cast<int>(i);
  }
  return t;
}

/// Phase one of every fold. For each non-empty segment of `part`, `partial(i, place, out)`
/// enqueues on place i the CUB call that writes the segment's partial to `out` (its slot of `t`,
/// which lists this process's non-empty segments in order); the place first waits until the root
/// has consumed the previous call's partials. Afterwards the root stream waits on every place's
/// event. Returns `t`.
template <class P, class Partial>
const slot_table<P>& gather_into(set_state& s, const partition& part, const slot_table<P>& t, Partial&& partial) {
  const cudaEvent_t fold_done = s.fold_done_event();
  int j = 0;
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    // (Inside a capture the fork from the root orders the places after the previous fold.)
    if (i != s.root_index && s.fold_used && !p.capturing)
      STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), fold_done, 0));
    partial(i, p, t.ptr[j++]);
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
  });
  device_guard g(s.root_device());
  active_place_scope a(static_cast<int>(s.root_index));
  root_waits_for(s, t);
  return t;
}

/// gather_into the scalar slots of the fold workspace (one partial of type P per segment).
template <class P, class Partial>
slot_table<P> gather(set_state& s, const partition& part, Partial&& partial) {
  const slot_table<P> t = slot_table_of<P>(s, part);
  return gather_into(s, part, t, partial);
}

/// Enqueues `task()` on one thread of the root place.
template <class F>
void launch_on_root(set_state& s, const F& task) {
  place_state& root = s.root();
  device_guard g(root.device());
  active_place_scope a(static_cast<int>(s.root_index));
  root_task_kernel<<<1, 1, 0, root.stream()>>>(task);
  STRATA_CUDA_CHECK(cudaGetLastError());
}

/// Phase two: runs `task()` on one thread of the root place, then marks the fold workspace
/// consumed (the event later gathers wait on).
template <class F>
void run_on_root(set_state& s, const F& task) {
  launch_on_root(s, task);
  s.mark_fold_consumed();
}

/// Root task of a reduction: `*out = fold(table)`.
template <class P, class R, class Fold>
struct fold_task {
  slot_table<P> table;
  R* out;
  Fold fold;
  __device__ void operator()() const { *out = fold(table); }
};

}  // namespace strata::detail
