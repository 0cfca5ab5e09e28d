// The CUB calls that CUB's public API does not offer as a multi-device algorithm needs them (a
// reduce that applies no initial value; a scan whose initial value is read from device memory):
// this calls CUB's dispatch layer directly, the way Thrust does, and absorbs the differences
// between CCCL versions there. Public CUB entry points that serve as they are (DeviceHistogram,
// DeviceSelect, DeviceRadixSort, DeviceMergeSort, DeviceMerge, DeviceTransform, DeviceFor) are
// called by the algorithm headers directly, through detail::run_cub (docs/design.md, "Adding an
// algorithm").
#pragma once

#include <strata/detail/callable.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_transform.cuh>
#include <cub/version.cuh>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <iterator>

static_assert(CUB_VERSION >= 200800, "Strata needs CUB (CCCL) 2.8 or newer");

// cub::DeviceFind::FindIf (the first position where a predicate holds, its blocks stopping once
// an earlier hit is known): absent from CCCL 3.0, present in 3.5 (the newest Strata is tested with;
// releases in between are not assumed to have the same call).
#if CUB_VERSION >= 300500 && __has_include(<cub/device/device_find.cuh>)
#define STRATA_HAS_CUB_FIND 1
#include <cub/device/device_find.cuh>
#include <cuda/stream_ref>
#else
#define STRATA_HAS_CUB_FIND 0
#endif

namespace strata::detail {

/// CUB's offset type for Strata's 64-bit counts.
using cub_offset = unsigned long long;

/// The identity transform.
struct identity_fn {
  template <class T>
  __host__ __device__ T operator()(const T& x) const {
    return x;
  }
};

/// Reduces `transform(in[0..n))` with `op` and no initial value into `*out` (n > 0): the
/// per-segment partial of every reduce-family algorithm. The initial value passed to CUB is only
/// for empty problems, which Strata never hands it. `Offset` is CUB's index type inside the
/// kernels: 64-bit by default; a 32-bit one (n < 2^32) is what CUB's own arg-reductions use.
template <class Acc, class Offset = cub_offset, class It, class Out, class Op, class Transform>
cudaError_t reduce_no_init(void* temp, std::size_t& bytes, It in, Out out, std::uint64_t n, Op op,
                           Transform transform, cudaStream_t stream) {
  if constexpr (is_device_lambda_v<Op> || is_device_lambda_v<Transform>) {
    return reduce_no_init<Acc, Offset>(temp, bytes, in, out, n, stated_result<Acc>(op), stated_result<Acc>(transform),
                                       stream);
  } else {
    using init_t = cub::detail::reduce::empty_problem_init_t<Acc>;
#if CUB_VERSION >= 300300
    // CCCL 3.3 moved DeviceReduce onto policy selectors: the DispatchTransformReduce alias no
    // longer builds with its default policy hub, and cub::detail::reduce::dispatch (what
    // DeviceReduce itself calls, with the accumulator type overridden) takes its place.
    return cub::detail::reduce::dispatch<Acc>(temp, bytes, in, out, static_cast<Offset>(n), op, init_t{}, stream,
                                              transform);
#else
    return cub::DispatchTransformReduce<It, Out, Offset, Op, Transform, init_t, Acc>::Dispatch(
        temp, bytes, in, out, static_cast<Offset>(n), op, init_t{}, stream, transform);
#endif
  }
}

/// Writes only the last value a scan produces: lets a CUB scan compute an ordered segment
/// total for operators that are associative but not commutative.
template <class Acc>
struct last_value_writer {
  Acc* out;
  std::uint64_t last;
  template <class Index, class V>
  __host__ __device__ void operator()(Index i, V v) const {
    if (static_cast<std::uint64_t>(i) == last) *out = static_cast<Acc>(v);
  }
};

/// Output iterator that hands (index, value) to a functor (a minimal tabulate output iterator).
template <class F, class V>
struct tabulate_output {
  using iterator_category = std::random_access_iterator_tag;
  using difference_type = std::int64_t;
  using value_type = V;
  using pointer = void;
  struct proxy {
    F f;
    std::int64_t i;
    template <class U>
    __host__ __device__ const proxy& operator=(const U& v) const {
      f(i, v);
      return *this;
    }
  };
  using reference = proxy;
  F f;
  std::int64_t i = 0;
  __host__ __device__ proxy operator*() const { return {f, i}; }
  __host__ __device__ proxy operator[](difference_type k) const { return {f, i + k}; }
  __host__ __device__ tabulate_output operator+(difference_type k) const { return {f, i + k}; }
  __host__ __device__ tabulate_output& operator+=(difference_type k) {
    i += k;
    return *this;
  }
  __host__ __device__ tabulate_output& operator++() {
    ++i;
    return *this;
  }
  __host__ __device__ difference_type operator-(const tabulate_output& o) const { return i - o.i; }
};

#if STRATA_HAS_CUB_FIND
/// cub::DeviceFind::FindIf on `stream`: writes to `*out` the offset in [0, n) of the first item
/// of `in` where `hit` holds, or n for none.
template <class In, class Out, class Hit>
cudaError_t cub_find_if(void* temp, std::size_t& bytes, In in, Out out, Hit hit, std::uint64_t n, cudaStream_t stream) {
  return cub::DeviceFind::FindIf(temp, bytes, in, out, hit, n, ::cuda::stream_ref{stream});
}
#endif

/// CUB's scan dispatch, with the accumulator type `Acc` and an initial value `init` (cub::NullType
/// for none); `ForceInclusive` scans inclusively even with an initial value. CCCL 3.4 added
/// cub::detail::scan::dispatch_with_accum (what DeviceScan itself calls; 3.5 deprecates
/// DispatchScan); CCCL 3.0 to 3.3 take the flag as a scoped enum after the accumulator; CCCL 2.8
/// as a bool after the policy hub.
template <class Acc, bool ForceInclusive, class It, class Out, class Op, class Init>
cudaError_t scan_dispatch(void* temp, std::size_t& bytes, It in, Out out, Op op, Init init, std::uint64_t n,
                          cudaStream_t stream) {
  if constexpr (is_device_lambda_v<Op>) {
    const auto stated = stated_result<Acc>(op);
    return scan_dispatch<Acc, ForceInclusive>(temp, bytes, in, out, stated, init, n, stream);
  } else {
#if CUB_VERSION >= 300400
    constexpr auto force = ForceInclusive ? cub::ForceInclusive::Yes : cub::ForceInclusive::No;
    return cub::detail::scan::dispatch_with_accum<Acc, force>(temp, bytes, in, out, op, init, static_cast<cub_offset>(n),
                                                              stream);
#elif CUB_VERSION >= 300000
    constexpr auto force = ForceInclusive ? cub::ForceInclusive::Yes : cub::ForceInclusive::No;
    return cub::DispatchScan<It, Out, Op, Init, cub_offset, Acc, force>::Dispatch(temp, bytes, in, out, op, init,
                                                                                 static_cast<cub_offset>(n), stream);
#else
    using hub = cub::detail::scan::policy_hub<cub::detail::value_t<It>, cub::detail::value_t<Out>, Acc, cub_offset, Op>;
    return cub::DispatchScan<It, Out, Op, Init, cub_offset, Acc, hub, ForceInclusive>::Dispatch(
        temp, bytes, in, out, op, init, static_cast<cub_offset>(n), stream);
#endif
  }
}

/// Ordered (non-commutative-safe) total of `in[0..n)` under `op`, through a scan whose
/// output keeps only the last value.
template <class Acc, class It, class Op>
cudaError_t ordered_total(void* temp, std::size_t& bytes, It in, Acc* out, std::uint64_t n, Op op,
                          cudaStream_t stream) {
  tabulate_output<last_value_writer<Acc>, Acc> sink{{out, n - 1}, 0};
  return scan_dispatch<Acc, false>(temp, bytes, in, sink, op, cub::NullType{}, n, stream);
}

/// Inclusive scan of `in[0..n)` into `out` with no initial value.
template <class Acc, class It, class Out, class Op>
cudaError_t inclusive_scan(void* temp, std::size_t& bytes, It in, Out out, std::uint64_t n, Op op,
                           cudaStream_t stream) {
  return scan_dispatch<Acc, false>(temp, bytes, in, out, op, cub::NullType{}, n, stream);
}

/// The initial value of a seeded scan: `*init` read on the device when the scan runs (a
/// multi-place scan's offset for this segment; init != nullptr), else `value`. One kernel
/// instantiation serves both.
template <class Acc>
cub::detail::InputValue<Acc, const Acc*> scan_seed(const Acc* init, const Acc& value) {
  using init_t = cub::detail::InputValue<Acc, const Acc*>;
  return init != nullptr ? init_t(cub::FutureValue<Acc, const Acc*>(init)) : init_t(value);
}

/// Inclusive scan seeded with scan_seed(init, value): out[i] = seed op in[0] op ... op in[i].
template <class Acc, class It, class Out, class Op>
cudaError_t inclusive_scan_seeded(void* temp, std::size_t& bytes, It in, Out out, std::uint64_t n, Op op,
                                  const Acc* init, const Acc& value, cudaStream_t stream) {
  return scan_dispatch<Acc, true>(temp, bytes, in, out, op, scan_seed(init, value), n, stream);
}

/// Exclusive scan seeded with scan_seed(init, value).
template <class Acc, class It, class Out, class Op>
cudaError_t exclusive_scan(void* temp, std::size_t& bytes, It in, Out out, std::uint64_t n, Op op,
                           const Acc* init, const Acc& value, cudaStream_t stream) {
  return scan_dispatch<Acc, false>(temp, bytes, in, out, op, scan_seed(init, value), n, stream);
}

}  // namespace strata::detail
