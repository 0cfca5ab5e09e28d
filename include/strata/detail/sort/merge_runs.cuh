// The last phase of a multi-place sort: every place merges the sorted runs the exchange brought it
// (cub::DeviceMerge, pairwise, left to right), so equal keys keep the order of the places they
// came from.
#pragma once

#include <strata/detail/fan_out.cuh>
#include <strata/detail/place_state.cuh>
#include <strata/detail/sort/buffers.cuh>

#include <cub/device/device_merge.cuh>

#include <cuda/std/cstdint>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::detail {

/// Merges the sorted runs of one place (offsets `runs`, ascending, last = count) pairwise, left to
/// right, ping-ponging between its two buffers, and leaves the result in the user's buffer.
/// Adjacent runs only, the left one first on ties, so equal keys keep the order of the places
/// they came from.
template <class K, class V, class Ord>
void merge_runs(place_state& p, sort_buffers<K, V>& b, std::vector<std::uint64_t> runs, const Ord& ord) {
  while (runs.size() > 2) {
    const int from = b.cur, to = 1 - b.cur;
    std::vector<std::uint64_t> next{0};
    for (std::size_t r = 0; r + 1 < runs.size(); r += 2) {
      const std::uint64_t a0 = runs[r], a1 = runs[r + 1];
      if (r + 2 >= runs.size()) {  // an odd run out: moved along as it is
        b.copy_across(from, a0, a1 - a0, p.stream());
        next.push_back(a1);
        continue;
      }
      const std::uint64_t b1 = runs[r + 2];
      const auto na = static_cast<::cuda::std::int64_t>(a1 - a0), nb = static_cast<::cuda::std::int64_t>(b1 - a1);
      run_cub(p, [&](void* temp, std::size_t& bytes) {
        if constexpr (std::is_same_v<V, no_values>)
          return cub::DeviceMerge::MergeKeys(temp, bytes, b.keys[from] + a0, na, b.keys[from] + a1, nb, b.keys[to] + a0,
                                             ord, p.stream());
        else
          return cub::DeviceMerge::MergePairs(temp, bytes, b.keys[from] + a0, b.values[from] + a0, na, b.keys[from] + a1,
                                              b.values[from] + a1, nb, b.keys[to] + a0, b.values[to] + a0, ord,
                                              p.stream());
      });
      next.push_back(b1);
    }
    runs = std::move(next);
    b.cur = 1 - b.cur;
  }
  if (b.cur != 0) {
    b.copy_across(1, 0, b.count, p.stream());
    b.cur = 0;
  }
}

}  // namespace strata::detail
