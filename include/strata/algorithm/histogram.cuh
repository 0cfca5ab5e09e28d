// Histograms: histogram_even (equal-width bins between two levels) and histogram_range (bins
// between given edges). Every place counts its own segment with cub::DeviceHistogram into 64-bit
// counters on its own device; the places' bins are added on the root (the array fold,
// detail/array_fold.cuh) and, on a set spanning processes, across ranks, so every rank gets the
// same bins.
#pragma once

#include <strata/detail/array_fold.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>
#include <strata/views.cuh>

#include <cub/device/device_histogram.cuh>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

// CUB adds into its counters with atomicAdd, which has no overload for std::uint64_t where that
// is `unsigned long`: the counters are `unsigned long long`, the same 64 bits.
using histogram_counter = unsigned long long;
static_assert(sizeof(histogram_counter) == sizeof(std::uint64_t), "64-bit counters");

template <class T>
void require_histogram_samples() {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                "strata::histogram_even / histogram_range: the elements must be numbers (integers or floating point)");
}

inline void require_bins(const char* name, std::int64_t bins) {
  if (bins < 1 || bins >= INT_MAX)
    throw std::invalid_argument(std::string(name) + ": " + std::to_string(bins) + " bins; at least 1 and fewer than 2^31 - 1");
}

// The bins of every place, added on the root (and across ranks), into a host vector.
template <class S, class Count>
std::vector<std::uint64_t> histogram_of(const char* name, const S& r, int bins, std::size_t levels_bytes, Count count) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(bins));
  call_scope scope(r.places().state(), name);
  fold_arrays<histogram_counter>(name, scope.state(), r.partition(), static_cast<std::uint64_t>(bins), levels_bytes,
                                 count, histogram_counter{0}, ::cuda::std::plus<histogram_counter>{},
                                 reinterpret_cast<histogram_counter*>(out.data()));
  return out;
}

}  // namespace detail

/// Counts the elements of `r` in `bins` bins of equal width between `lower` (inclusive) and
/// `upper` (exclusive), as cub::DeviceHistogram::HistogramEven with `bins + 1` levels: bin b holds
/// the elements x with lower + b * w <= x < lower + (b + 1) * w, w = (upper - lower) / bins (for
/// integers, computed exactly; for floating point, as CUB rounds). Elements outside [lower, upper)
/// and NaNs are not counted. Returns the `bins` counts (64-bit, exact for any size), the same on
/// every rank of a set spanning processes (a collective there: every rank calls it). Requires
/// arithmetic elements; `Level` is the type CUB compares them in (the elements' type, or float for
/// integer samples binned by fractional levels). Extra device memory: one array of `bins` counters
/// per place on its device and on the root (pinned host memory where a place has no direct path to
/// the root). Waits for the work. Throws std::invalid_argument (a range without places, `bins`
/// outside [1, 2^31 - 1), or not lower < upper) before any device work, strata::cuda_error for CUDA
/// failures, and on a set spanning processes the process group's error if a rank fails or leaves.
template <class R, class Level, class = std::enable_if_t<is_readable_range_v<R>>>
std::vector<std::uint64_t> histogram_even(const R& r_in, int bins, Level lower, Level upper) {
  constexpr const char* name = "strata::histogram_even";
  const auto r = detail::as_span(r_in);
  using T = typename decltype(r)::value_type;
  detail::require_histogram_samples<T>();
  detail::require_places(name, r);
  detail::require_bins(name, bins);
  if (!(lower < upper)) throw std::invalid_argument(std::string(name) + ": the lower level must be below the upper one");
  return detail::histogram_of(name, r, bins, 0,
                              [&](std::size_t i, detail::place_state& p, detail::histogram_counter* out, void*) {
                                const auto seg = r.segment_at(i);
                                detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
                                  return cub::DeviceHistogram::HistogramEven(temp, bytes, seg.data, out, bins + 1, lower,
                                                                             upper, static_cast<std::int64_t>(seg.count),
                                                                             p.stream());
                                });
                              });
}

/// Counts the elements of `r` in the bins between consecutive `edges` (ascending; edges.size() - 1
/// bins), as cub::DeviceHistogram::HistogramRange: bin b holds the elements x with
/// edges[b] <= x < edges[b + 1]; elements below edges.front(), at or above edges.back(), and NaNs
/// are not counted. Returns the counts (64-bit), the same on every rank of a set spanning
/// processes (a collective there). The edges are copied to every place's device. Requirements,
/// memory, waiting and errors as histogram_even; std::invalid_argument also for fewer than two
/// edges or edges out of order.
template <class R, class Level, class = std::enable_if_t<is_readable_range_v<R>>>
std::vector<std::uint64_t> histogram_range(const R& r_in, const std::vector<Level>& edges) {
  constexpr const char* name = "strata::histogram_range";
  const auto r = detail::as_span(r_in);
  using T = typename decltype(r)::value_type;
  detail::require_histogram_samples<T>();
  detail::require_places(name, r);
  if (edges.size() < 2) throw std::invalid_argument(std::string(name) + ": at least two edges (one bin) are needed");
  detail::require_bins(name, static_cast<std::int64_t>(edges.size()) - 1);
  for (std::size_t b = 1; b < edges.size(); ++b)
    if (!(edges[b - 1] < edges[b]))
      throw std::invalid_argument(std::string(name) + ": the edges must ascend (edge " + std::to_string(b) +
                                  " is not above edge " + std::to_string(b - 1) + ")");
  const int levels = static_cast<int>(edges.size());
  const std::size_t levels_bytes = edges.size() * sizeof(Level);
  return detail::histogram_of(name, r, levels - 1, levels_bytes,
                              [&](std::size_t i, detail::place_state& p, detail::histogram_counter* out, void* own) {
                                const auto seg = r.segment_at(i);
                                auto* d_levels = static_cast<Level*>(own);
                                STRATA_CUDA_CHECK(cudaMemcpyAsync(d_levels, edges.data(), levels_bytes,
                                                                  cudaMemcpyHostToDevice, p.stream()));
                                detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
                                  return cub::DeviceHistogram::HistogramRange(temp, bytes, seg.data, out, levels, d_levels,
                                                                              static_cast<std::int64_t>(seg.count),
                                                                              p.stream());
                                });
                              });
}

}  // namespace strata
