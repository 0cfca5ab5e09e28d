// The fan-out of the element-wise algorithms (one CUB call per segment, then a wait unless
// nosync) and fill, which the container's constructors use too: kept below the algorithm headers so
// that distributed_vector needs none of them.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cub/device/device_transform.cuh>

#include <cuda/std/tuple>

#include <cstddef>

namespace strata::detail {

// The fan-out shared by all element-wise algorithms: per non-empty segment of `part`,
// `launch(i, place)` enqueues one CUB call; then wait unless nosync.
template <class Launch>
void elementwise(const char* name, const device_set& set, const partition& part, bool sync, Launch&& launch) {
  call_scope scope(set.state(), name);
  for_each_segment(scope.state(), part, launch);
  if (sync) wait_segments(scope.state(), part);
}

template <class T>
struct fill_fn {
  T value;
  __host__ __device__ T operator()() const { return value; }
};

template <class R, class T>
void fill_impl(R&& r_in, const T& value, bool sync) {
  require_mutable<R>("strata::fill");
  auto r = as_span(r_in);
  require_places("strata::fill", r);
  using V = typename decltype(r)::value_type;
  const fill_fn<V> gen{static_cast<V>(value)};
  elementwise("strata::fill", r.places(), r.partition(), sync, [&](std::size_t i, place_state& p) {
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(::cuda::std::tuple<>{}, r.segment_at(i).data,
                                                      r.partition().count(i), gen, p.stream()));
  });
}

}  // namespace strata::detail
