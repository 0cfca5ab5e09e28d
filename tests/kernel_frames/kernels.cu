// Instantiates Strata's algorithms for kernel_frames.py, which compiles this file with
// `ptxas -v` and fails if a kernel that runs a Strata functor has a stack frame: a functor that
// carries an array by value and indexes it by a computed position makes every thread copy the
// whole functor into local memory (gather and the searches ran 1.5-9x slower than Thrust's that
// way until 2026-12-07). Compiled only, never run.
#include <strata/strata.cuh>

#include <cstdint>
#include <vector>

using floats = strata::distributed_vector<float>;
using u32s = strata::distributed_vector<std::uint32_t>;
using u64s = strata::distributed_vector<std::uint64_t>;
using i32s = strata::distributed_vector<std::int32_t>;

struct positive {
  __host__ __device__ bool operator()(float x) const { return x > 0.0f; }
};
struct twice {
  __host__ __device__ float operator()(float x) const { return 2.0f * x; }
};

void instantiate(floats& x, floats& y, u32s& map, u64s& out, i32s& keys, i32s& keys_out, floats& values_out,
                 u32s& sort_keys) {
  strata::gather(map, x, y);
  strata::scatter(x, map, y);
  strata::lower_bound(x, y, out);
  strata::upper_bound(x, y, out);
  (void)strata::top_k(x, 1024, strata::smallest);
  (void)strata::top_k(sort_keys, 7, strata::largest);
  strata::inclusive_scan_by_key(keys, x, y);
  strata::exclusive_scan_by_key(keys, x, y, 1.0f);
  (void)strata::reduce_by_key(keys, x, keys_out, values_out);
  (void)strata::segmented_reduce(x, std::vector<std::uint64_t>{0, 5, 10}, 0.0f);
  (void)strata::histogram_even(x, 16, 0.0f, 1.0f);
  (void)strata::reduce(x);
  (void)strata::min_element(x);
  (void)strata::count_if(x, positive{});
  strata::inclusive_scan(x, y);
  strata::exclusive_scan(x, y, 0.0f);
  strata::transform(x, y, twice{});
  (void)strata::copy_if(x, y, positive{});
  (void)strata::find_if(x, positive{});
  (void)strata::is_sorted(x);
  strata::adjacent_difference(x, y);
  strata::sort(sort_keys);
  strata::sort_by_key(sort_keys, x);
  strata::merge(x, y, values_out);
}
