// The merge: per-segment partials to the root place (directly where the place reaches the
// root's memory, through mapped pinned host memory where it does not), a fold on the root in
// segment order, and for scans the per-segment offsets back to each place. Cross-device
// ordering is by events only; the host never waits in the middle.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>
#include <strata/future.cuh>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

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
    t.ptr[j] = merge_slot<P>(s, i, 0);
    t.offset[j] = part.offset(i);
    t.place[j] = static_cast<int>(i);
  }
  return t;
}

/// Phase one of every merge. For each non-empty segment of `part`, `partial(i, place, out)`
/// enqueues on place i the CUB call that writes the segment's partial to `out`; the place
/// first waits until the root has consumed the previous call's partials. Afterwards the root
/// stream waits on every place's event. Returns the table of partials, in segment order.
template <class P, class Partial>
slot_table<P> gather(set_state& s, const partition& part, Partial&& partial) {
  const slot_table<P> t = slot_table_of<P>(s, part);
  const cudaEvent_t merge_done = s.merge_done_event();
  int j = 0;
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    // (Inside a capture the fork from the root orders the places after the previous merge.)
    if (i != s.root_index && s.merge_used && !p.capturing)
      STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), merge_done, 0));
    partial(i, p, t.ptr[j++]);
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
  });
  device_guard g(s.root_device());
  active_place_scope a(static_cast<int>(s.root_index));
  root_waits_for(s, t);
  return t;
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

/// Phase two: runs `task()` on one thread of the root place, then marks the merge workspace
/// consumed (the event later gathers wait on).
template <class F>
void run_on_root(set_state& s, const F& task) {
  launch_on_root(s, task);
  device_guard g(s.root_device());
  STRATA_CUDA_CHECK(cudaEventRecord(s.merge_done_event(), s.root().stream()));
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

/// Appends what a captured call bakes in of a range: its places, segment pointers and counts.
template <class T>
void add_span_key(call_key& key, const distributed_span<T>& r) {
  key.add(&r.places().state());
  for (std::size_t i = 0; i < r.segment_count(); ++i) {
    key.add(static_cast<const void*>(r.segment_at(i).data));
    key.add(r.partition().count(i));
  }
}

/// Appends a functor's state, if it can be compared bytewise; returns false otherwise (the
/// call is then never captured).
template <class F>
bool add_state_key(call_key& key, const F& f) {
  if constexpr (std::is_empty_v<F>) {
    // No state, and the one byte of an empty object is indeterminate: the type says it all.
    (void)f;
    key.add_type(typeid(F));
    return true;
  } else if constexpr (std::is_trivially_copyable_v<F>) {
    // Bytewise: equal bytes are equal state. (Padding bytes can only cause a needless miss.)
    key.add_type(typeid(F));
    key.add(f);
    return true;
  } else {
    (void)key;
    (void)f;
    return false;
  }
}

template <class Task>
void set_fold_params(cached_graph& g, Task& task) {
  void* args[] = {&task};
  g.fold_params.kernelParams = args;
  STRATA_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(g.exec, g.fold_node, &g.fold_params));
}

/// Captures gather + fold of one call into a graph (the root stream forks to every place that
/// has a segment and joins them back). Returns nullptr, leaving nothing behind, if the work
/// cannot be captured.
template <class P, class R, class Fold, class Partial>
std::unique_ptr<cached_graph> capture_reduce(set_state& s, const partition& part, Partial& partial, const Fold& fold) {
  using task_t = fold_task<P, R, Fold>;
  place_state& root = s.root();
  device_guard g(root.device());
  if (cudaStreamBeginCapture(root.stream(), cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  for (auto& p : s.places) p->capturing = true;
  bool ok = true;
  std::vector<place_state*> forked;
  // Ends the capture and restores the flags, whatever happens inside it. Every place that was
  // forked into the capture is joined back first: ending a capture with unjoined work is an
  // error of its own (seen under compute-sanitizer when a fault hit a capture).
  const auto end_capture = [&]() -> cudaGraph_t {
    for (place_state* p : forked) {
      device_guard pg(p->device());
      (void)cudaEventRecord(p->event(), p->stream());
      (void)cudaStreamWaitEvent(root.stream(), p->event(), 0);
    }
    (void)cudaGetLastError();
    for (auto& p : s.places) p->capturing = false;
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(root.stream(), &graph) != cudaSuccess) {
      (void)cudaGetLastError();
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      return nullptr;
    }
    return graph;
  };
  try {
    STRATA_CUDA_CHECK(cudaEventRecord(root.event(), root.stream()));
    for_each_segment(s, part, [&](std::size_t i, place_state& p) {
      if (i == s.root_index) return;
      // Listed first: should the fork report a failure after all, joining a stream that is not
      // capturing is harmless, while leaving a forked one unjoined would poison the capture.
      forked.push_back(&p);
      STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), root.event(), 0));
    });
    const slot_table<P> t = gather<P>(s, part, partial);
    forked.clear();  // gather joined every place to the root
    device_guard rg(root.device());
    root_task_kernel<<<1, 1, 0, root.stream()>>>(task_t{t, nullptr, fold});
    STRATA_CUDA_CHECK(cudaGetLastError());
  } catch (const capture_abort&) {
    ok = false;  // the work needs something a capture cannot hold: run it eagerly
  } catch (...) {
    // A CUDA failure is the caller's to see, as in an eager call.
    if (cudaGraph_t g = end_capture()) (void)cudaGraphDestroy(g);
    throw;
  }
  cudaGraph_t graph = end_capture();
  auto cg = std::make_unique<cached_graph>();
  cg->graph = graph;
  if (!ok || graph == nullptr || cudaGraphInstantiate(&cg->exec, graph, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  std::size_t count = 0;
  if (cudaGraphGetNodes(graph, nullptr, &count) != cudaSuccess) return nullptr;
  std::vector<cudaGraphNode_t> nodes(count);
  if (cudaGraphGetNodes(graph, nodes.data(), &count) != cudaSuccess) return nullptr;
  const void* fold_fn = reinterpret_cast<const void*>(&root_task_kernel<task_t>);
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(n, &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams kp{};
    if (cudaGraphKernelNodeGetParams(n, &kp) == cudaSuccess && kp.func == fold_fn) {
      cg->fold_node = n;
      cg->fold_params = kp;
    }
  }
  (void)cudaGetLastError();
  if (cg->fold_node == nullptr) return nullptr;
  ++s.graphs.captures;
  return cg;
}

/// Replays a captured call: the graph is ordered after earlier work on every place that takes
/// part (events into the root) and later work on those places after it (the merge event), as an
/// eager call would be.
template <class P, class R, class Fold>
void replay_reduce(set_state& s, const partition& part, cached_graph& g, const slot_table<P>& t, R* out,
                   const Fold& fold) {
  place_state& root = s.root();
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
  });
  device_guard g0(root.device());
  active_place_scope a(static_cast<int>(s.root_index));
  root_waits_for(s, t);
  fold_task<P, R, Fold> task{t, out, fold};
  set_fold_params(g, task);
  STRATA_CUDA_CHECK(cudaGraphLaunch(g.exec, root.stream()));
  STRATA_CUDA_CHECK(cudaEventRecord(s.merge_done_event(), root.stream()));
  s.merge_used = true;
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), s.merge_done_event(), 0));
  });
  ++s.graphs.replays;
}

// ---- across the ranks of a set spanning processes ------------------------------------------

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

/// A root task after a collective: records the first rank whose slot the collective did not
/// write (sticky, in the set's missing-rank word), then runs `task`.
template <class Task>
struct checked_task {
  Task task;
  const char* gathered;
  int ranks;
  std::size_t slot, stamp_at;
  std::uint64_t stamp;
  int* missing;
  __device__ void operator()() const {
    const int m = first_unstamped(gathered, ranks, slot, stamp_at, stamp);
    if (m >= 0 && *missing < 0) *missing = m;
    task();
  }
};

/// On the root's stream of a set spanning processes: `pack()` on one thread (it fills this rank's
/// slot of `buffer`), then the in-place all-gather of `slot` bytes per rank. The one way a
/// collective's slots are filled and gathered.
template <class Pack>
void pack_and_all_gather(set_state& s, char* buffer, std::size_t slot, const Pack& pack) {
  launch_on_root(s, pack);
  device_guard g(s.root_device());
  active_place_scope a(static_cast<int>(s.root_index));
  s.link->all_gather(buffer, slot, s.root().stream());
}

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
/// segment of every rank, in segment order; this rank's values in its merge slots of `region`,
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
      t.ptr[j] = merge_slot<P>(s, i, region);
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

/// The cross-rank step of every merge on a set spanning processes, after the local gather to the
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

// ---- all-gathers whose result the host or other places read (sets spanning processes) ----------

/// The slots of one all-gather at `base` in a set's rank buffer: one per rank, `payload` bytes
/// padded, then the stamp (rank_link.cuh). The same on every rank for the same payload.
struct rank_gather {
  char* base;
  std::size_t slot, stamp_at;
  int ranks;
  /// Bytes the slots of `ranks` ranks take for a payload of `payload` bytes.
  static std::size_t bytes(int ranks, std::size_t payload) {
    return static_cast<std::size_t>(ranks) * gather_slot_bytes(payload);
  }
  rank_gather(const set_state& s, char* at, std::size_t payload)
      : base(at), slot(gather_slot_bytes(payload)), stamp_at(gather_stamp_at(payload)), ranks(s.ranks.ranks()) {}
  /// Rank r's slot.
  char* of(int r) const { return base + static_cast<std::size_t>(r) * slot; }
};

/// Root task before a gather_slots: the stamp into this rank's slot.
struct stamp_slot_task {
  char* slot;
  std::size_t stamp_at;
  std::uint64_t stamp;
  __device__ void operator()() const { ::memcpy(slot + stamp_at, &stamp, sizeof stamp); }
};
struct no_task {
  __device__ void operator()() const {}
};

/// Enqueues on the root's stream of a set spanning processes the all-gather of `g`'s slots, this
/// rank's payload already in its slot (by earlier work on the root's stream): the root stamps the
/// slot, all-gathers, and checks every rank's stamp (a missing rank goes into the set's
/// missing-rank word, so the next wait on the set throws). Work enqueued on the root's stream
/// afterwards sees every rank's slot.
inline void gather_slots(set_state& s, const rank_gather& g) {
  const std::uint64_t stamp = s.link->next_stamp();
  pack_and_all_gather(s, g.base, g.slot, stamp_slot_task{g.of(s.ranks.rank()), g.stamp_at, stamp});
  launch_on_root(s, checked_task<no_task>{no_task{}, g.base, g.ranks, g.slot, g.stamp_at, stamp, s.missing_rank_word()});
}

/// A collective on a set spanning processes, for arrays in pinned host memory that every rank
/// fills in part: `host` holds one region per rank, rank r's the bytes [at[r], at[r + 1]) (the
/// same `at` on every rank). This rank's region is written, by the host or by the places
/// `writers` on their streams (each recorded its event() after). Enqueues on the root's stream:
/// the copy of this rank's region into its slot of an all-gather at `buffer` (device memory of the
/// root, rank_gather::bytes(ranks, the largest region) of it, e.g. in the set's rank buffer), the
/// all-gather with its stamp check, the copies of every other rank's slot into its region, and
/// the root's event(). The caller waits for that event (or the root) before it reads `host`.
inline void all_gather_regions(set_state& s, char* host, const std::vector<std::size_t>& at, char* buffer,
                               const std::vector<std::size_t>& writers) {
  const int ranks = s.ranks.ranks(), me = s.ranks.rank();
  std::size_t payload = 0;
  for (int r = 0; r < ranks; ++r) payload = std::max(payload, at[r + 1] - at[r]);
  const rank_gather g(s, buffer, payload);
  at_place(s, s.root_index, [&](place_state& root) {
    for (std::size_t i : writers)
      if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(root.stream(), s.places[i]->event(), 0));
    if (at[me + 1] > at[me])
      STRATA_CUDA_CHECK(cudaMemcpyAsync(g.of(me), host + at[me], at[me + 1] - at[me], cudaMemcpyHostToDevice, root.stream()));
  });
  gather_slots(s, g);
  at_place(s, s.root_index, [&](place_state& root) {
    for (int r = 0; r < ranks; ++r)
      if (r != me && at[r + 1] > at[r])
        STRATA_CUDA_CHECK(cudaMemcpyAsync(host + at[r], g.of(r), at[r + 1] - at[r], cudaMemcpyDeviceToHost, root.stream()));
    STRATA_CUDA_CHECK(cudaEventRecord(root.event(), root.stream()));
  });
}

/// Waits for the root of a set spanning processes through its link (never hanging on a dead
/// peer), then throws the link's error if a collective found a rank missing.
inline void wait_root(set_state& s, const char* who) {
  at_place(s, s.root_index, [](place_state& root) { root.synchronize(); });
  s.check_ranks(who);
}

/// Grows the set's rank buffer and host words to what all_gather_to_host of a `value_bytes`-byte
/// value needs, so that the collective cannot then fail to allocate on this rank alone. Throws
/// strata::cuda_error if an allocation fails.
inline void reserve_all_gather(set_state& s, std::size_t value_bytes) {
  const int ranks = s.ranks.ranks();
  (void)s.rank_buffer(rank_gather::bytes(ranks, value_bytes));
  (void)s.host_words((static_cast<std::size_t>(ranks) * value_bytes + 7) / 8);
}

/// A collective on a set spanning processes: every rank's `mine` (trivially copyable), in rank
/// order, on every host. Uses the first bytes of the set's rank buffer and of its host words
/// (rank_gather::bytes(ranks, sizeof(V)) and ranks * sizeof(V) of them, which the caller may
/// reserve first so that this cannot fail to allocate); waits through the link; throws the
/// link's error if a rank did not take part.
template <class V>
std::vector<V> all_gather_to_host(set_state& s, const V& mine, const char* who) {
  static_assert(std::is_trivially_copyable_v<V>, "a trivially copyable value");
  const auto ranks = static_cast<std::size_t>(s.ranks.ranks()), me = static_cast<std::size_t>(s.ranks.rank());
  char* buffer = s.rank_buffer(rank_gather::bytes(s.ranks.ranks(), sizeof(V)));
  auto* host = reinterpret_cast<char*>(s.host_words((ranks * sizeof(V) + 7) / 8));
  std::memcpy(host + me * sizeof(V), &mine, sizeof(V));
  std::vector<std::size_t> at(ranks + 1);
  for (std::size_t r = 0; r <= ranks; ++r) at[r] = r * sizeof(V);
  all_gather_regions(s, host, at, buffer, {});
  wait_root(s, who);
  std::vector<V> all(ranks);
  std::memcpy(all.data(), host, ranks * sizeof(V));
  return all;
}

/// What a rank of a set spanning processes tells the others after a step that may fail on it
/// alone: whether it failed and, if so, the CUDA error and device.
struct rank_verdict {
  int failed, code, device;
};

/// A collective on a set spanning processes, after a step (e.g. reserving memory) that may have
/// failed on some ranks (`failed`: this rank's exception, or null): returns this rank's own
/// exception if it failed, else a strata::cuda_error naming the first rank that did (`name` on
/// rank r (`what`), with its CUDA error and device), else null, the same on every rank. The
/// caller reserves rank_gather::bytes(ranks, sizeof(rank_verdict)) of the rank buffer and the
/// host words first (all_gather_to_host); throws the link's error if a rank did not take part.
inline std::exception_ptr agree_on_failure(set_state& s, std::exception_ptr failed, const char* name, const char* what) {
  rank_verdict mine{};
  if (failed) {
    mine = {1, static_cast<int>(cudaErrorUnknown), -1};
    try {
      std::rethrow_exception(failed);
    } catch (const cuda_error& e) {
      mine.code = static_cast<int>(e.code());
      mine.device = e.device();
    } catch (const std::bad_alloc&) {
      mine.code = static_cast<int>(cudaErrorMemoryAllocation);
    } catch (...) {
    }
  }
  const std::vector<rank_verdict> all = all_gather_to_host(s, mine, name);
  for (std::size_t r = 0; r < all.size() && !failed; ++r)
    if (all[r].failed != 0)
      failed = std::make_exception_ptr(cuda_error(static_cast<cudaError_t>(all[r].code),
                                                  std::string(name) + " on rank " + std::to_string(r) + " (" + what + ")",
                                                  all[r].device, __FILE__, __LINE__));
  return failed;
}

/// Ends a step that may have failed on one rank alone (`failed`: this rank's exception, or null).
/// On a set spanning processes the ranks first agree (agree_on_failure, with its reservations);
/// then, if any rank failed, `undo()` runs and every rank throws: its own exception, or a
/// strata::cuda_error naming the first rank that failed. `undo()` also runs if the agreement
/// itself throws (a rank that did not take part). Returns normally only when no rank failed.
template <class Undo>
void throw_if_any_rank_failed(set_state& s, std::exception_ptr failed, const char* name, const char* what, Undo&& undo) {
  if (s.link != nullptr) {
    try {
      failed = agree_on_failure(s, failed, name, what);
    } catch (...) {
      undo();
      throw;
    }
  }
  if (failed) {
    undo();
    std::rethrow_exception(failed);
  }
}

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
  static_assert(sizeof(R) <= max_merge_value_bytes, "Strata returns values of at most 256 bytes");
  call_scope scope(set.state(), name);
  if (part.size() == 0) return future<R>(empty_value);
  set_state& s = scope.state();

  graph_cache::entry* cached = nullptr;
  if (s.use_graphs && s.link == nullptr) {  // (a collective is not replayed from one rank's graph)
    call_key key;
    key.add_type(typeid(Fold));
    bool keyable = partial.append_key(key);
    for (std::size_t i = 0; i < part.places(); ++i) {  // host state only: no device switch
      if (part.count(i) == 0) continue;
      key.add(s.places[i]->temp_storage_pointer());
      key.add(s.places[i]->temp_storage_bytes());
    }
    if (keyable) cached = &s.graphs.lookup(key.bytes());
  }
  if (cached != nullptr && !cached->graph && !cached->failed && ++cached->seen >= 2) {
    cached->graph = capture_reduce<P, R>(s, part, partial, fold);
    if (!cached->graph) cached->failed = true;
  }

  result_slot slot = s.acquire_slot();
  try {
    if (s.link != nullptr) {
      // Across ranks: the same fold on every rank, over every rank's partials in global segment
      // order, so every rank gets the same value and order-sensitive folds stay exact.
      fold_across_ranks(s, gather<P>(s, part, partial), 0, [&](const rank_slots<P>& rs, char* buffer) {
        return fold_task<P, R, Fold>{global_table(s, part, rs, buffer, 0), static_cast<R*>(slot.host), fold};
      });
    } else if (cached != nullptr && cached->graph) {
      replay_reduce<P>(s, part, *cached->graph, slot_table_of<P>(s, part), static_cast<R*>(slot.host), fold);
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
template <class P, class Total, class Fold, class Scan>
void scan_segments(set_state& s, const partition& part, Total&& total, const Fold& fold, Scan&& scan) {
  std::size_t nonempty = 0, last = 0;
  for (std::size_t i = 0; i < part.places(); ++i)
    if (part.count(i) > 0) {
      ++nonempty;
      last = i;
    }
  if (nonempty == 0) return;
  if (nonempty == 1) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) { scan(i, p, static_cast<const P*>(nullptr)); });
    return;
  }
  // The last place still joins the gather with nothing to compute: the root's wait on it orders
  // the fold's write of its offset slot after that place's previous scan read it.
  const slot_table<P> local = gather<P>(s, part, [&](std::size_t i, place_state& p, P* out) {
    if (i != last) total(i, p, out);
  });
  slot_table<P> totals = local;
  slot_table<P> offsets;
  if (s.link == nullptr) {
    offsets = totals;
    for (int j = 0; j < totals.size; ++j) offsets.ptr[j] = merge_slot<P>(s, static_cast<std::size_t>(totals.place[j]), 1);
    run_on_root(s, offsets_task<P, Fold>{totals, offsets, fold});
  } else {
    // Across ranks: every rank's totals all-gathered, the offsets of every segment folded on
    // every rank in global segment order (each rank keeps those of its own places).
    fold_across_ranks(s, local, max_places * rank_slots<P>(s).stride, [&](const rank_slots<P>& rs, char* buffer) {
      totals = global_table(s, part, rs, buffer, 0);
      offsets = global_table(s, part, rs, buffer, 1);
      return offsets_task<P, Fold>{totals, offsets, fold};
    });
  }
  const cudaEvent_t ready = s.merge_done_event();
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    int j = 0;
    while (static_cast<std::size_t>(offsets.place[j]) != i) ++j;
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), ready, 0));
    scan(i, p, j == 0 ? nullptr : static_cast<const P*>(offsets.ptr[j]));
  });
}

}  // namespace strata::detail
