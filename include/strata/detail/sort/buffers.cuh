// A sort's per-place buffers and its reservation phase: where one place's keys (and values) are
// (the user's segment or the place's scratch), and the pre-growing of the CUB temp storage every
// later CUB call of the sort may ask for, so that an allocation fails before any element moves.
#pragma once

#include <strata/detail/place_state.cuh>
#include <strata/error.hpp>

#include <cub/device/device_merge.cuh>

#include <cuda/std/cstdint>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace strata::detail {

/// Where one place's keys (and values) are during a sort: the user's segment and a scratch
/// buffer of the same size; `cur` says which holds the data now (0: the user's).
struct no_values {};

template <class K, class V>
struct sort_buffers {
  K* keys[2] = {nullptr, nullptr};
  V* values[2] = {nullptr, nullptr};
  std::uint64_t count = 0;
  int cur = 0;

  /// Copies elements [offset, offset + n) (keys, and values if any) from buffer `from` to the
  /// other one, on `stream`.
  void copy_across(int from, std::uint64_t offset, std::uint64_t n, cudaStream_t stream) const {
    const int to = 1 - from;
    STRATA_CUDA_CHECK(cudaMemcpyAsync(keys[to] + offset, keys[from] + offset, n * sizeof(K), cudaMemcpyDeviceToDevice,
                                      stream));
    if constexpr (!std::is_same_v<V, no_values>)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(values[to] + offset, values[from] + offset, n * sizeof(V),
                                        cudaMemcpyDeviceToDevice, stream));
  }
};

/// Pre-grows a place's cached CUB temp storage to what every CUB call of the sort may ask for, so
/// that an allocation failure happens before any element moves.
template <class K, class V, class Ord, class LocalSort>
std::size_t reserve_sort_temp(place_state& p, std::uint64_t count, const Ord& ord, const LocalSort& local_sort,
                              sort_buffers<K, V>& b) {
  std::size_t local = 0, merge = 0;
  STRATA_CUDA_CHECK(local_sort(nullptr, local, b));
  const auto n1 = static_cast<::cuda::std::int64_t>(count / 2), n2 = static_cast<::cuda::std::int64_t>(count - count / 2);
  if constexpr (std::is_same_v<V, no_values>)
    STRATA_CUDA_CHECK(cub::DeviceMerge::MergeKeys(nullptr, merge, b.keys[0], n1, b.keys[0], n2, b.keys[1], ord, p.stream()));
  else
    STRATA_CUDA_CHECK(cub::DeviceMerge::MergePairs(nullptr, merge, b.keys[0], b.values[0], n1, b.keys[0], b.values[0], n2,
                                                   b.keys[1], b.values[1], ord, p.stream()));
  (void)p.temp_storage(local > merge ? local : merge);
  return local > merge ? local : merge;
}

}  // namespace strata::detail
