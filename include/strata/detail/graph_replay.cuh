// Graph capture and replay of a fold: a repeated value-returning call (same ranges, functors and
// temp storage) is captured once as a CUDA graph (the root forks to every place, each place's
// partial, the fold on the root) and replayed with the fold node's parameters updated, which takes
// the host's launch overhead off small calls. graph_cache.cuh keeps the graphs and their keys.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold_slots.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/distributed_span.cuh>
#include <strata/views.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace strata::detail {

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

/// Appends what a captured call bakes in of any range it reads; false if that cannot be compared
/// bytewise (a transform view's function with such state), and the call is then never captured.
/// A span: its places, segment pointers and counts. A counting range: its places, first value and
/// counts. A transform view: its base's key and its function's state.
template <class T>
bool add_range_key(call_key& key, const distributed_span<T>& r) {
  key.add(&r.places().state());
  for (std::size_t i = 0; i < r.segment_count(); ++i) {
    key.add(static_cast<const void*>(r.segment_at(i).data));
    key.add(r.partition().count(i));
  }
  return true;
}
template <class I>
bool add_range_key(call_key& key, const counting_range<I>& r) {
  key.add_type(typeid(r));
  key.add(&r.places().state());
  key.add(r.first());
  for (std::size_t i = 0; i < r.segment_count(); ++i) key.add(r.partition().count(i));
  return true;
}
template <class B, class F, class V>
bool add_range_key(call_key& key, const transformed_range<B, F, V>& r) {
  key.add_type(typeid(r));
  return add_range_key(key, r.base()) && add_state_key(key, r.function());
}

template <class Task>
void set_fold_params(cached_graph& g, Task& task) {
  void* args[] = {&task};
  g.fold_params.kernelParams = args;
  STRATA_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(g.exec, g.fold_node, &g.fold_params));
}

/// Finds the kernel node of `root_task_kernel<Task>` in `cg`'s graph (its fold_node and
/// parameters). Returns false if there is none.
template <class Task>
bool find_task_node(cached_graph& cg) {
  std::size_t count = 0;
  if (cudaGraphGetNodes(cg.graph, nullptr, &count) != cudaSuccess) return false;
  std::vector<cudaGraphNode_t> nodes(count);
  if (cudaGraphGetNodes(cg.graph, nodes.data(), &count) != cudaSuccess) return false;
  const void* fn = reinterpret_cast<const void*>(&root_task_kernel<Task>);
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(n, &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams kp{};
    if (cudaGraphKernelNodeGetParams(n, &kp) == cudaSuccess && kp.func == fn) {
      cg.fold_node = n;
      cg.fold_params = kp;
    }
  }
  (void)cudaGetLastError();
  return cg.fold_node != nullptr;
}

/// Captures the gather of one call and the task on the root that consumes the partials
/// (`make_task(table)`: the fold in one process, the packing of the partials across ranks) into a
/// graph: the root stream forks to every place that has a segment and joins them back. The task's
/// parameters are rewritten on every replay (its node is `fold_node`). Returns nullptr, leaving
/// nothing behind, if the work cannot be captured.
template <class P, class Partial, class MakeTask>
std::unique_ptr<cached_graph> capture_fold(set_state& s, const partition& part, Partial& partial, const MakeTask& make_task) {
  using task_t = decltype(make_task(std::declval<const slot_table<P>&>()));
  place_state& root = s.root();
  device_guard g(root.device());
  if (cudaStreamBeginCapture(root.stream(), cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  for (auto& p : s.places)
    if (p != nullptr) p->capturing = true;  // (null: another rank's place)
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
    for (auto& p : s.places)
      if (p != nullptr) p->capturing = false;
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
    root_task_kernel<<<1, 1, 0, root.stream()>>>(make_task(t));
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
  if (!find_task_node<task_t>(*cg)) return nullptr;
  ++s.graphs.captures;
  return cg;
}

/// Replays a captured call with `task` as its root task: the graph is ordered after earlier work
/// on every place that takes part (events into the root) and later work on those places after it
/// (the fold-done event), as an eager call would be.
template <class P, class Task>
void replay_fold(set_state& s, const partition& part, cached_graph& g, const slot_table<P>& t, Task task) {
  place_state& root = s.root();
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaEventRecord(p.event(), p.stream()));
  });
  device_guard g0(root.device());
  active_place_scope a(static_cast<int>(s.root_index));
  root_waits_for(s, t);
  set_fold_params(g, task);
  STRATA_CUDA_CHECK(cudaGraphLaunch(g.exec, root.stream()));
  s.mark_fold_consumed();
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), s.fold_done_event(), 0));
  });
  ++s.graphs.replays;
}


}  // namespace strata::detail
