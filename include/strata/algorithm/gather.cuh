// gather and scatter: elements moved by global index between ranges of one device_set, laid out
// alike or not. Every index is checked first (an index out of range throws before anything is
// written). Where every place reaches every other's memory, one CUB reduction per place counts
// the bad indices, then a kernel on each place reads (gather) or writes (scatter) the owners'
// segments directly; elsewhere (host staging, sets spanning processes) each place counts its
// indices per owning place (one CUB histogram, which checks them too), and they are bucketed by
// owner and travel, with the values, through the one exchange (detail/by_index.cuh).
#pragma once

#include <strata/detail/by_index.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/distributed_span.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_transform.cuh>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

/// gather's direct read: the element at global index x of the source.
template <class T, class I>
struct read_at {
  segment_lookup<const T> src;
  __host__ __device__ T operator()(I x) const { return src[static_cast<std::uint64_t>(x)]; }
};

/// scatter's direct write of entry k: dst[map[k]] = src[k].
template <class T, class I>
struct write_at {
  const T* src;
  const I* map;
  segment_lookup<T> dst;
  __host__ __device__ void operator()(std::uint64_t k) const { dst[static_cast<std::uint64_t>(map[k])] = src[k]; }
};

/// The checks gather and scatter share, before any device work: integral indices; `indexed`
/// (gather's dst, scatter's src) laid out as `map`; `other` (gather's src, scatter's dst) on the
/// same device_set; the output `out` sharing no memory with `map` or the input values `in`.
template <class I, class M, class A, class B, class In, class Out>
void require_by_index(const char* name, const M& map, const A& indexed, const B& other, const In& in, const Out& out) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>,
                "strata::gather / scatter: the map must hold integer indices");
  require_same_layout(name, map, indexed);
  require_places(name, other);
  if (other.places() != map.places())
    throw std::invalid_argument(std::string(name) +
                                ": the source and destination live on different device_sets; strata::copy one onto the "
                                "other's set first");
  require_disjoint(name, map, out);
  require_disjoint(name, in, out);
}

}  // namespace detail

/// Gathers by global index: dst[k] = src[map[k]] for every k, as thrust::gather. `map` (integers)
/// and `dst` share one layout (size, device_set and partition); `src` is any range on the same
/// device_set (its own partition, any size). Every index must lie in [0, src.size()): else
/// std::out_of_range is thrown with nothing written. Waits once (the host reads every place's count
/// of bad indices, or of indices per owning place where they must travel); the moves are enqueued
/// after it and not waited for. Where every place reaches every other's memory directly (one process; one device or
/// peer access), each place reads the owners' segments with one kernel; elsewhere each place sorts
/// its entries by owner (a one-byte CUB radix sort) and the indices and the values travel through
/// the exchange (host staging, or NCCL across ranks), in the places' cached scratch (about
/// 18 + sizeof(T) bytes per map entry, plus 8 + sizeof(T) per element served). `dst` must not
/// overlap `map` or `src`. Throws std::invalid_argument for mismatched layouts, different sets or
/// overlapping ranges, std::out_of_range for an index outside `src`, strata::cuda_error for CUDA
/// failures and allocations (then nothing is written either); on a set spanning processes it is a
/// collective (every rank calls it, in the same order) and throws the process group's error if a
/// rank fails or leaves.
template <class Map, class Src, class Dst,
          class = std::enable_if_t<is_distributed_range_v<Map> && is_distributed_range_v<Src> &&
                                   is_distributed_range_v<Dst>>>
void gather(const Map& map_r, const Src& src_r, Dst&& dst_r) {
  constexpr const char* name = "strata::gather";
  using I = range_value_t<Map>;
  using T = range_value_t<Src>;
  static_assert(std::is_same_v<T, range_value_t<Dst>>, "strata::gather: src and dst must have the same element type");
  detail::require_mutable<Dst>(name);
  const distributed_span<const I> map = detail::as_span(map_r);
  const distributed_span<const T> src = detail::as_span(src_r);
  const distributed_span<T> dst = detail::as_span(dst_r);
  detail::require_by_index<I>(name, map, dst, src, src, dst);
  detail::move_by_index(
      name, map, src,
      [&](std::size_t i, detail::place_state& p, const detail::segment_lookup<const T>& owners) {
        // direct: each place reads the owners' segments
        STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(map.segment_at(i).data, dst.segment_at(i).data,
                                                          map.segment_at(i).count, detail::read_at<T, I>{owners},
                                                          p.stream()));
      },
      [&](detail::set_state& s, detail::owner_requests& r) {  // bucketed: indices out, values back
        detail::exchange(s, detail::const_pointers(r.payload), s, r.served, sizeof(std::uint64_t), r.to_owners);
        detail::for_each_owner(s, r, [&](std::size_t j, detail::place_state& p) {
          STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(static_cast<const std::uint64_t*>(r.served[j]),
                                                            static_cast<T*>(r.served_values[j]), r.served_count[j],
                                                            detail::read_local<T>{src.segment_at(j).data}, p.stream()));
        });
        detail::exchange(s, detail::const_pointers(r.served_values), s, r.sent, sizeof(T), r.from_owners);
        detail::for_each_segment(s, map.partition(), [&](std::size_t i, detail::place_state& p) {
          STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
              map.segment_at(i).count,
              detail::write_local<T>{dst.segment_at(i).data, r.pos[i], static_cast<const T*>(r.sent[i])}, p.stream()));
        });
      });
}

/// Scatters by global index: dst[map[k]] = src[k] for every k, as thrust::scatter. `src` and `map`
/// (integers) share one layout; `dst` is any range on the same device_set. Every index must lie in
/// [0, dst.size()): else std::out_of_range is thrown with nothing written. Where the map repeats an
/// index, which of the values lands there is unspecified (elements wider than 16 bytes may even
/// mix them): pass a map without repeats, as for thrust::scatter. Elements of `dst` no index names
/// are left as they were. Waiting, the two ways the elements travel, scratch, overlap rules and
/// errors as strata::gather.
template <class Src, class Map, class Dst,
          class = std::enable_if_t<is_distributed_range_v<Src> && is_distributed_range_v<Map> &&
                                   is_distributed_range_v<Dst>>>
void scatter(const Src& src_r, const Map& map_r, Dst&& dst_r) {
  constexpr const char* name = "strata::scatter";
  using I = range_value_t<Map>;
  using T = range_value_t<Src>;
  static_assert(std::is_same_v<T, range_value_t<Dst>>, "strata::scatter: src and dst must have the same element type");
  detail::require_mutable<Dst>(name);
  const distributed_span<const T> src = detail::as_span(src_r);
  const distributed_span<const I> map = detail::as_span(map_r);
  const distributed_span<T> dst = detail::as_span(dst_r);
  detail::require_by_index<I>(name, map, src, dst, src, dst);
  detail::move_by_index(
      name, map, dst,
      [&](std::size_t i, detail::place_state& p, const detail::segment_lookup<T>& owners) {
        // direct: each place writes the owners' segments
        STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
            map.segment_at(i).count, detail::write_at<T, I>{src.segment_at(i).data, map.segment_at(i).data, owners},
            p.stream()));
      },
      [&](detail::set_state& s, detail::owner_requests& r) {  // bucketed: indices and values out
        detail::for_each_segment(s, map.partition(), [&](std::size_t i, detail::place_state& p) {
          STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(r.pos[i], static_cast<T*>(r.sent[i]), map.segment_at(i).count,
                                                            detail::read_local<T>{src.segment_at(i).data}, p.stream()));
        });
        detail::exchange(s, detail::const_pointers(r.payload), s, r.served, sizeof(std::uint64_t), r.to_owners);
        detail::exchange(s, detail::const_pointers(r.sent), s, r.served_values, sizeof(T), r.to_owners);
        detail::for_each_owner(s, r, [&](std::size_t j, detail::place_state& p) {
          STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
              r.served_count[j],
              detail::write_local<T>{dst.segment_at(j).data, static_cast<const std::uint64_t*>(r.served[j]),
                                     static_cast<const T*>(r.served_values[j])},
              p.stream()));
        });
      });
}

}  // namespace strata
