// segmented_reduce: one value per segment [offsets[j], offsets[j + 1]) of a distributed range,
// where a segment may straddle places and ranks (NVIDIA/cccl#10675 asks for this across GPUs).
//
// Every place reduces the parts of the segments that lie on it: the host knows the offsets, so it
// hands each place only the segments that touch its share. A place that touches a few segments
// runs one CUB reduction per segment (all of the GPU on each, however long it is); one that
// touches more runs cub::DeviceSegmentedReduce over them (a block per segment). Each place's
// values form an array of S partials, where the segments it does not touch hold "nothing" (the
// partials carry a flag, so `init` is applied once however many places a segment crosses; a plain
// sum of arithmetic values needs none: its "nothing" is 0), and the array fold
// (detail/array_fold.cuh) combines the places' arrays on the root, and across ranks, into S values
// on every rank.
#pragma once

#include <strata/detail/array_fold.cuh>
#include <strata/detail/callable.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>

#include <cub/device/device_segmented_reduce.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

/// A segment's partial on one place: its aggregate there, or nothing (has == 0: the place holds no
/// element of the segment).
template <class V>
struct maybe_value {
  V value;
  int has;
};

/// Combines partials that may be nothing: nothing is the identity.
template <class V, class Op>
struct maybe_op {
  Op op;
  __host__ __device__ maybe_value<V> operator()(const maybe_value<V>& a, const maybe_value<V>& b) const {
    if (!a.has) return b;
    if (!b.has) return a;
    return {static_cast<V>(op(a.value, b.value)), 1};
  }
};

template <class V>
struct some_value {
  template <class U>
  __host__ __device__ maybe_value<V> operator()(const U& u) const {
    return {static_cast<V>(u), 1};
  }
};

/// Converts an element to the value type (the sum path's input).
template <class V>
struct as_value {
  template <class U>
  __host__ __device__ V operator()(const U& u) const {
    return static_cast<V>(u);
  }
};

/// Whether `Op` is a plain sum of values of arithmetic type V (cuda::std::plus or std::plus, typed
/// or not; bool left out). Then 0 is the identity, so a place's partial for a segment it does not
/// touch can be 0 rather than a flagged "nothing": partials of V's size instead of V and a flag,
/// and CUB sums the segments as it does for DeviceSegmentedReduce::Sum.
template <class Op, class V>
inline constexpr bool is_plain_sum_v =
    std::is_arithmetic_v<V> && !std::is_same_v<V, bool> &&
    (std::is_same_v<Op, ::cuda::std::plus<>> || std::is_same_v<Op, ::cuda::std::plus<V>> ||
     std::is_same_v<Op, std::plus<>> || std::is_same_v<Op, std::plus<V>>);

/// The segment bounds on a place, relative to the place's first element and clamped to its share:
/// `first ? begin : end` of segment k, from the place's copy of the offsets it needs.
struct local_bound {
  const std::uint64_t* offsets;
  std::uint64_t base, count;
  bool end;
  __host__ __device__ std::int64_t operator()(std::int64_t k) const {
    const std::uint64_t o = offsets[k + (end ? 1 : 0)];
    const std::uint64_t rel = o > base ? o - base : 0;
    return static_cast<std::int64_t>(rel < count ? rel : count);
  }
};

/// The segments [lo, hi) that hold elements of [base, base + count): the first whose end is past
/// base, up to the first that starts at or after base + count. Pure host arithmetic.
inline std::pair<std::size_t, std::size_t> segments_touching(const std::vector<std::uint64_t>& offsets,
                                                             std::uint64_t base, std::uint64_t count) {
  const std::size_t segs = offsets.size() - 1;
  const auto first = offsets.begin() + 1, last = offsets.end();
  std::size_t lo = static_cast<std::size_t>(std::upper_bound(first, last, base) - first);
  std::size_t hi = static_cast<std::size_t>(std::lower_bound(offsets.begin(), offsets.end() - 1, base + count) - offsets.begin());
  lo = std::min(lo, segs);
  hi = std::max(lo, std::min(hi, segs));
  return {lo, hi};
}

/// Up to this many segments on a place, each gets its own CUB reduction (the whole GPU on one
/// long segment); past it, one segmented reduction (a block per segment) serves them all.
inline constexpr std::size_t segments_reduced_one_by_one = 8;

/// Checks `offsets` for a segmented reduction of `size` elements: at least one entry, ascending
/// (equal neighbours are empty segments), the last at most `size`.
inline void require_offsets(const char* name, const std::vector<std::uint64_t>& offsets, std::uint64_t size) {
  if (offsets.empty())
    throw std::invalid_argument(std::string(name) + ": the offsets need at least one entry (S segments take S + 1)");
  for (std::size_t j = 1; j < offsets.size(); ++j)
    if (offsets[j] < offsets[j - 1])
      throw std::invalid_argument(std::string(name) + ": the offsets must not descend (offset " + std::to_string(j) +
                                  " is " + std::to_string(offsets[j]) + ", below offset " + std::to_string(j - 1) +
                                  ", " + std::to_string(offsets[j - 1]) + ")");
  if (offsets.back() > size)
    throw std::invalid_argument(std::string(name) + ": the last offset, " + std::to_string(offsets.back()) +
                                ", is past the range's " + std::to_string(size) + " elements");
}

/// The body of segmented_reduce, for partials of type P: every place writes P{} (all bits zero:
/// the combine's identity) for every segment, then `lift` of its elements combined with `mop` for
/// the segments it touches; the array fold combines the places' arrays after `init` into `result`.
/// `lift` identity_fn: the elements are read as they are (CUB's vectorised loads).
template <class P, class S, class Lift, class Mop>
void segmented_partials(const char* name, const S& r, const std::vector<std::uint64_t>& offsets, Lift lift, Mop mop,
                        const P& init, P* result) {
  const std::size_t segs = offsets.size() - 1;
  {
    call_scope scope(r.places().state(), name);
    const partition& part = r.partition();
    const std::size_t own_bytes = offsets.size() * sizeof(std::uint64_t);
    const auto partial = [&](std::size_t i, place_state& p, P* out, void* own) {
      const auto seg = r.segment_at(i);
      // Nothing everywhere, then the touched segments' partials over it.
      STRATA_CUDA_CHECK(cudaMemsetAsync(out, 0, segs * sizeof(P), p.stream()));
      const auto [lo, hi] = segments_touching(offsets, seg.offset, seg.count);
      const auto in = [&] {
        if constexpr (std::is_same_v<Lift, identity_fn>)
          return seg.data;
        else
          return thrust::make_transform_iterator(seg.data, lift);
      }();
      if (hi - lo <= segments_reduced_one_by_one) {
        for (std::size_t j = lo; j < hi; ++j) {
          const std::uint64_t b = std::max(offsets[j], seg.offset) - seg.offset;
          const std::uint64_t e = std::min(offsets[j + 1], seg.offset + seg.count) - seg.offset;
          if (e <= b) continue;
          run_cub(p, [&](void* temp, std::size_t& bytes) {
            return reduce_no_init<P>(temp, bytes, in + static_cast<std::int64_t>(b), out + j, e - b, mop,
                                             identity_fn{}, p.stream());
          });
        }
        return;
      }
      auto* d_offsets = static_cast<std::uint64_t*>(own);
      STRATA_CUDA_CHECK(cudaMemcpyAsync(d_offsets, offsets.data() + lo, (hi - lo + 1) * sizeof(std::uint64_t),
                                        cudaMemcpyHostToDevice, p.stream()));
      // CCCL 2.8 counts segments in an int: at most 2^30 per call.
      constexpr std::size_t chunk = std::size_t{1} << 30;
      for (std::size_t c = lo; c < hi; c += chunk) {
        const std::size_t k = std::min(chunk, hi - c);
        const thrust::counting_iterator<std::int64_t> at(static_cast<std::int64_t>(c - lo));
        const auto begins = thrust::make_transform_iterator(at, local_bound{d_offsets, seg.offset, seg.count, false});
        const auto ends = thrust::make_transform_iterator(at, local_bound{d_offsets, seg.offset, seg.count, true});
        run_cub(p, [&](void* temp, std::size_t& bytes) {
          return cub::DeviceSegmentedReduce::Reduce(temp, bytes, in, out + c, static_cast<int>(k), begins, ends, mop,
                                                    P{}, p.stream());
        });
      }
    };
    fold_arrays<P>(name, scope.state(), part, segs, own_bytes, partial, init, mop, result);
  }
}

}  // namespace detail

/// Reduces each segment j = [offsets[j], offsets[j + 1]) of `r` (global indices) to
/// init op r[offsets[j]] op ... op r[offsets[j + 1] - 1], as one cub::DeviceSegmentedReduce::Reduce
/// over the whole range would; an empty segment gives `init`. A segment may straddle places and
/// ranks; `init` is applied once per segment. Elements outside every segment are not read. Returns
/// the offsets.size() - 1 values on the host, the same on every rank of a set spanning processes
/// (a collective there: every rank calls it, with the same offsets). `op` must be associative and
/// commutative (CUB reorders operands within a place), and callable on the device; values of at
/// most 64 bytes. Extra memory: S partials per place on its device and on the root (each a value,
/// and for an operator other than a plain sum of arithmetic values, a flag; pinned host memory on
/// the root's side where a place has no direct path to it), and each place's copy of the
/// offsets it touches. Waits for the work. Throws std::invalid_argument (offsets empty, descending,
/// or past the range's end) before any device work, strata::cuda_error for CUDA failures, and on a
/// set spanning processes the process group's error if a rank fails or leaves.
template <class R, class T, class Op = ::cuda::std::plus<>, class = std::enable_if_t<is_distributed_range_v<R>>>
std::vector<T> segmented_reduce(const R& r_in, const std::vector<std::uint64_t>& offsets, T init, Op op = {}) {
  constexpr const char* name = "strata::segmented_reduce";
  static_assert(sizeof(T) <= 64, "strata::segmented_reduce: values of at most 64 bytes");
  static_assert(std::is_trivially_copyable_v<T>, "strata::segmented_reduce: the values are copied bytewise");
  static_assert(detail::callable_v<Op, T, T>,
                "strata::segmented_reduce: op(a, b) must combine two values (a __device__ or __host__ __device__ "
                "functor or lambda); the argument order is (range, offsets, init, op)");
  const auto r = detail::as_span(r_in);
  detail::require_offsets(name, offsets, r.size());
  const std::size_t segs = offsets.size() - 1;
  std::vector<T> values(segs);
  if constexpr (detail::is_plain_sum_v<Op, T>) {  // partials of T, 0 where untouched
    using lift = std::conditional_t<std::is_same_v<range_value_t<R>, T>, detail::identity_fn, detail::as_value<T>>;
    detail::segmented_partials<T>(name, r, offsets, lift{}, op, init, values.data());
  } else {  // partials of T and a flag, "nothing" where untouched
    std::vector<detail::maybe_value<T>> folded(segs);
    detail::segmented_partials<detail::maybe_value<T>>(name, r, offsets, detail::some_value<T>{},
                                                       detail::maybe_op<T, Op>{op}, detail::maybe_value<T>{init, 1},
                                                       folded.data());
    for (std::size_t j = 0; j < segs; ++j) values[j] = folded[j].value;
  }
  return values;
}

}  // namespace strata
