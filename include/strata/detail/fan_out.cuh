// The fan-out: argument checks shared by all algorithms, the per-call scope, the two-phase CUB
// call with cached temp storage, and the loop over a partition's non-empty segments.
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

/// Tag for element-wise algorithms: return once the work is enqueued on every place instead of
/// waiting for it. Later Strata calls on the same places are ordered after it (stream order);
/// synchronise (device_set::synchronize) before reading the data any other way.
struct nosync_t {
  explicit constexpr nosync_t() = default;
};
/// The nosync tag value.
inline constexpr nosync_t nosync{};

namespace detail {

inline std::string algo_name(const char* algo) { return std::string(algo); }

/// The span's device_set, or std::invalid_argument if it has none.
template <class T>
const device_set& require_places(const char* algo, const distributed_span<T>& s) {
  if (!s.has_places())
    throw std::invalid_argument(algo_name(algo) +
                                ": the range has no device_set (default-constructed or moved-from container)");
  return s.places();
}

/// Checks that two ranges have the same size (std::invalid_argument otherwise).
template <class A, class B>
void require_same_size(const char* algo, const distributed_span<A>& a, const distributed_span<B>& b) {
  require_places(algo, a);
  require_places(algo, b);
  if (a.size() != b.size())
    throw std::invalid_argument(algo_name(algo) + ": the ranges have different sizes (" + std::to_string(a.size()) +
                                " and " + std::to_string(b.size()) + " elements)");
}

/// Checks that two ranges have the same size, device_set and partition, so that segment i of
/// one meets segment i of the other on place i (std::invalid_argument otherwise).
template <class A, class B>
void require_same_layout(const char* algo, const distributed_span<A>& a, const distributed_span<B>& b) {
  require_same_size(algo, a, b);
  if (a.places() != b.places())
    throw std::invalid_argument(algo_name(algo) +
                                ": the ranges live on different device_sets; strata::copy one onto the other's "
                                "layout first");
  if (a.partition() != b.partition())
    throw std::invalid_argument(algo_name(algo) +
                                ": the ranges are partitioned differently; strata::copy one onto the other's "
                                "layout first");
}

/// Checks that an input and an output range either do not share memory or are exactly the
/// same range (in place); any other overlap throws std::invalid_argument.
template <class A, class B>
void require_no_partial_overlap(const char* algo, const distributed_span<A>& in, const distributed_span<B>& out) {
  for (std::size_t i = 0; i < in.segment_count(); ++i) {
    const auto a = in.segment_at(i);
    if (a.count == 0 || a.data == nullptr) continue;  // (null with elements: another process's)
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data), a1 = a0 + a.count * sizeof(A);
    for (std::size_t j = 0; j < out.segment_count(); ++j) {
      const auto b = out.segment_at(j);
      if (b.count == 0 || b.data == nullptr || b.device != a.device) continue;
      const auto b0 = reinterpret_cast<std::uintptr_t>(b.data), b1 = b0 + b.count * sizeof(B);
      if (a0 < b1 && b0 < a1 && !(i == j && a0 == b0 && a1 == b1))
        throw std::invalid_argument(algo_name(algo) + ": the input and the output overlap in memory (input segment " +
                                    std::to_string(i) + ", output segment " + std::to_string(j) +
                                    "); only the very same range (in place) is allowed");
    }
  }
}

/// True if `a` and `b` are the very same memory, segment for segment (an in-place call).
template <class A, class B>
bool same_range(const distributed_span<A>& a, const distributed_span<B>& b) {
  if (a.size() != b.size() || a.segment_count() != b.segment_count()) return false;
  for (std::size_t i = 0; i < a.segment_count(); ++i)
    if (static_cast<const void*>(a.segment_at(i).data) != static_cast<const void*>(b.segment_at(i).data)) return false;
  return true;
}

/// Checks that two ranges share no memory at all (not even as the very same range, which
/// require_no_partial_overlap allows for in-place work); std::invalid_argument otherwise.
template <class A, class B>
void require_disjoint(const char* algo, const distributed_span<A>& a, const distributed_span<B>& b) {
  require_no_partial_overlap(algo, a, b);
  for (std::size_t i = 0; i < a.segment_count() && i < b.segment_count(); ++i)
    if (a.partition().count(i) > 0 && a.segment_at(i).data != nullptr &&
        static_cast<const void*>(a.segment_at(i).data) == static_cast<const void*>(b.segment_at(i).data))
      throw std::invalid_argument(algo_name(algo) + ": the two ranges are the same range; they must not share memory");
}

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
