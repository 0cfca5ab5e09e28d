// The merge: per-segment partials to the root place (directly where the place reaches the
// root's memory, through mapped pinned host memory where it does not), a fold on the root in
// segment order, and for scans the per-segment offsets back to each place. Cross-device
// ordering is by events only; the host never waits in the middle.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>
#include <strata/future.cuh>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

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
P* merge_slot(set_state& s, std::size_t i, int region) {
  static_assert(sizeof(P) <= max_merge_value_bytes, "Strata merges values of at most 256 bytes");
  const std::size_t k = s.size();
  s.ensure_merge_workspace(2 * k * max_merge_value_bytes);
  char* base = static_cast<char*>(s.reaches_root(i) ? s.merge_device_buffer() : s.merge_host_buffer());
  return reinterpret_cast<P*>(base + (static_cast<std::size_t>(region) * k + i) * max_merge_value_bytes);
}

/// Phase one of every merge. For each non-empty segment of `part`, `partial(i, place, out)`
/// enqueues on place i the CUB call that writes the segment's partial to `out`; the place
/// first waits until the root has consumed the previous call's partials. Afterwards the root
/// stream waits on every place's event. Returns the table of partials, in segment order.
template <class P, class Partial>
slot_table<P> gather(set_state& s, const partition& part, Partial&& partial) {
  slot_table<P> t{};
  t.size = 0;
  const cudaEvent_t merge_done = s.merge_done_event();
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    if (i != 0 && s.merge_used) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), merge_done, 0));
    P* out = merge_slot<P>(s, i, 0);
    partial(i, p, out);
    if (i != 0) STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
    const int j = t.size++;
    t.ptr[j] = out;
    t.offset[j] = part.offset(i);
    t.place[j] = static_cast<int>(i);
  });
  place_state& root = s.root();
  device_guard g(root.device());
  active_place_scope a(0);
  for (int j = 0; j < t.size; ++j)
    if (t.place[j] != 0) STRATA_CUDA_CHECK(cudaStreamWaitEvent(root.stream(), s.places[t.place[j]]->event(), 0));
  return t;
}

/// Phase two: runs `task()` on one thread of the root place, then marks the merge workspace
/// consumed (the event later gathers wait on).
template <class F>
void run_on_root(set_state& s, const F& task) {
  place_state& root = s.root();
  device_guard g(root.device());
  active_place_scope a(0);
  root_task_kernel<<<1, 1, 0, root.stream()>>>(task);
  STRATA_CUDA_CHECK(cudaGetLastError());
  STRATA_CUDA_CHECK(cudaEventRecord(s.merge_done_event(), root.stream()));
  s.merge_used = true;
}

/// Root task of a reduction: `*out = fold(table)`.
template <class P, class R, class Fold>
struct fold_task {
  slot_table<P> table;
  R* out;
  Fold fold;
  __device__ void operator()() const { *out = fold(table); }
};

/// A value-returning algorithm over one partition: gather one partial of type P per non-empty
/// segment, fold them on the root into an R written to a pinned result slot, and return a
/// future for it. An empty partition does no device work and returns `empty_value`, ready.
template <class R, class P, class Partial, class Fold>
future<R> reduce_to_future(const char* name, const device_set& set, const partition& part, Partial&& partial,
                           const Fold& fold, const R& empty_value) {
  static_assert(sizeof(R) <= max_merge_value_bytes, "Strata returns values of at most 256 bytes");
  call_scope scope(set, name);
  if (part.size() == 0) return future<R>(empty_value);
  set_state& s = scope.state();
  const slot_table<P> t = gather<P>(s, part, partial);
  result_slot slot = s.acquire_slot();
  try {
    run_on_root(s, fold_task<P, R, Fold>{t, static_cast<R*>(slot.host), fold});
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

/// A reduce-then-scan over one partition. With one non-empty segment, `scan(i, place, 0,
/// nullptr)` runs alone (a plain CUB scan). Otherwise: `total(i, place, out)` writes each
/// segment's total (gathered on the root), `fold(totals, offsets)` computes on the root the
/// offset of the j-th segment into offsets.ptr[j] (a slot the place reaches), and
/// `scan(i, place, j, offset_ptr)` runs once its place has waited for the offsets.
template <class P, class Total, class Fold, class Scan>
void scan_segments(set_state& s, const partition& part, Total&& total, const Fold& fold, Scan&& scan) {
  std::size_t nonempty = 0;
  for (std::size_t i = 0; i < part.places(); ++i) nonempty += part.count(i) > 0 ? 1 : 0;
  if (nonempty == 0) return;
  if (nonempty == 1) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) { scan(i, p, 0, static_cast<const P*>(nullptr)); });
    return;
  }
  const slot_table<P> totals = gather<P>(s, part, total);
  slot_table<P> offsets = totals;
  for (int j = 0; j < totals.size; ++j) offsets.ptr[j] = merge_slot<P>(s, static_cast<std::size_t>(totals.place[j]), 1);
  run_on_root(s, offsets_task<P, Fold>{totals, offsets, fold});
  const cudaEvent_t ready = s.merge_done_event();
  int j = 0;
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    if (i != 0) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), ready, 0));
    scan(i, p, j, static_cast<const P*>(offsets.ptr[j]));
    ++j;
  });
}

}  // namespace strata::detail
