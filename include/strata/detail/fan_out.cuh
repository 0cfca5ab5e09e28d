// The fan-out: the two-phase CUB call with cached temp storage, the loop over a partition's
// non-empty segments (each with its place's device current), and the wait for them. The argument
// checks are in detail/checks.cuh, the per-call scope in detail/set_state.cuh.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/nvtx.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata {

namespace detail {

/// The segments' data pointers, in place order.
template <class T>
std::vector<T*> segment_data(const distributed_span<T>& r) {
  std::vector<T*> d(r.segment_count());
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = r.segment_at(i).data;
  return d;
}

/// Runs a CUB-style two-phase call `call(temp, bytes)` on place `p` (its device current): asks
/// for the temp size, takes the place's cached buffer, runs.
template <class Call>
void run_cub(place_state& p, Call&& call) {
  std::size_t bytes = 0;
  STRATA_CUDA_CHECK(call(static_cast<void*>(nullptr), bytes));
  void* temp = p.temp_storage(bytes);
  STRATA_CUDA_CHECK(call(temp, bytes));
}

/// Calls `f(i, place)` for every non-empty segment `i` of `part` that is this process's (all of
/// them, unless the set spans processes), with that place's device current, in place order.
/// Every launch is enqueued; nothing waits.
template <class F>
void for_each_segment(set_state& s, const partition& part, F&& f) {
  for (std::size_t i = 0; i < part.places(); ++i)
    if (part.count(i) > 0 && s.local(i)) at_place(s, i, [&](place_state& p) { f(i, p); });
}

/// Waits for every place of this process that has a non-empty segment of `part` (on a set
/// spanning processes: without hanging on a failed peer, and throwing if a collective found a
/// rank missing).
inline void wait_segments(set_state& s, const partition& part) {
  for_each_segment(s, part, [](std::size_t, place_state& p) { p.synchronize(); });
  s.check_ranks("strata: waiting for the places");
}

}  // namespace detail
}  // namespace strata
