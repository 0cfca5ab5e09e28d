// distributed_span: the non-owning view of a range partitioned over a device_set's places,
// which every algorithm takes.
#pragma once

#include <strata/device_set.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <thrust/memory.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

/// One place's share of a distributed range.
template <class T>
struct segment {
  std::size_t place;    ///< index of the place in the device_set
  int device;           ///< device ordinal holding the elements
  T* data;              ///< device pointer to the first element (nullptr when count == 0)
  std::uint64_t count;  ///< number of elements
  std::uint64_t offset; ///< global index of the first element
};

/// A contiguous run of global indices: [offset, offset + count).
struct index_range {
  std::uint64_t offset;  ///< global index of the first element
  std::uint64_t count;   ///< number of elements
};

/// A segment the user owns, for building a distributed_span over their own buffers.
template <class T>
struct user_segment {
  int device;           ///< device ordinal the buffer lives on
  T* data;              ///< device (or managed) pointer; may be nullptr only when count == 0
  std::uint64_t count;  ///< number of elements
};

/// A non-owning view of a range partitioned over the places of a device_set: one segment per
/// place, in place order, each on its place's device. Cheap to copy. Build it from a
/// distributed_vector (implicitly) or from the user's own per-device buffers.
///
/// A default-constructed span, or one made from a moved-from vector, has no device_set; every
/// algorithm rejects it with std::invalid_argument.
template <class T>
class distributed_span {
 public:
  /// The element type without const.
  using value_type = std::remove_cv_t<T>;
  /// The element type as viewed (const for a read-only span).
  using element_type = T;

  static_assert(std::is_trivially_copyable_v<value_type>,
                "strata::distributed_span<T>: T must be trivially copyable (it is copied between devices bytewise)");

  /// A span with no places.
  distributed_span() = default;

  /// A span over user-owned buffers, one per place of `set`, in place order. Throws
  /// std::invalid_argument if the number of segments differs from the number of places, a
  /// segment's device differs from its place's device, a segment with elements has a null
  /// pointer, or a pointer is not device or managed memory of that device.
  distributed_span(device_set set, const std::vector<user_segment<T>>& segments) : set_(std::move(set)) {
    const std::size_t k = set_->size();
    if (segments.size() != k)
      throw std::invalid_argument("strata::distributed_span: " + std::to_string(segments.size()) +
                                  " segments given for a device_set of " + std::to_string(k) + " places");
    std::vector<std::uint64_t> counts(k);
    for (std::size_t i = 0; i < k; ++i) {
      const user_segment<T>& s = segments[i];
      const std::string where = "strata::distributed_span: segment " + std::to_string(i);
      if (s.device != set_->device(i))
        throw std::invalid_argument(where + " is on device " + std::to_string(s.device) + " but place " +
                                    std::to_string(i) + " is device " + std::to_string(set_->device(i)));
      if (s.count > 0 && s.data == nullptr && set_->is_local(i))
        throw std::invalid_argument(where + " has " + std::to_string(s.count) + " elements and a null pointer");
      if (s.data != nullptr) check_pointer(where, s.device, s.data);
      counts[i] = s.count;
    }
    std::uint64_t n = 0;
    for (auto c : counts) n += c;
    partition_ = partition::explicit_sizes(n, counts);
    data_.reserve(k);
    for (auto& s : segments) data_.push_back(s.count > 0 ? s.data : nullptr);
  }

  /// Const view of a non-const span.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  distributed_span(const distributed_span<U>& other)
      : set_(other.set_), partition_(other.partition_), data_(other.data_.begin(), other.data_.end()) {}

  /// Internal: a span over a container's layout (used by distributed_vector).
  distributed_span(device_set set, partition p, std::vector<T*> data)
      : set_(std::move(set)), partition_(std::move(p)), data_(std::move(data)) {}

  /// Total number of elements.
  std::uint64_t size() const noexcept { return partition_.size(); }
  /// True if there are no elements.
  bool empty() const noexcept { return size() == 0; }
  /// True if the span has a device_set (is not default-constructed or from a moved-from vector).
  bool has_places() const noexcept { return set_.has_value(); }
  /// The device_set. Throws std::invalid_argument if the span has none.
  const device_set& places() const {
    if (!set_)
      throw std::invalid_argument(
          "strata::distributed_span: the range has no device_set (default-constructed or moved-from container)");
    return *set_;
  }
  /// The layout of the elements over the places.
  const strata::partition& partition() const noexcept { return partition_; }
  /// Number of segments (the number of places).
  std::size_t segment_count() const noexcept { return data_.size(); }
  /// Segment `i`: place, device, pointer, count, global offset.
  segment<T> segment_at(std::size_t i) const {
    return segment<T>{i, places().device(i), data_.at(i), partition_.count(i), partition_.offset(i)};
  }
  /// The elements [offset, offset + count) as a span over the same device_set: every place keeps
  /// its share of that slice (possibly none), so the slice works with every algorithm, and two
  /// ranges of one layout sliced alike have one layout again. Global indices of the slice start
  /// at 0. Throws std::out_of_range if offset + count exceeds size() (or overflows).
  distributed_span subspan(std::uint64_t offset, std::uint64_t count) const {
    if (offset > size() || count > size() - offset)
      throw std::out_of_range("strata::distributed_span::subspan: [" + std::to_string(offset) + ", " +
                              std::to_string(offset) + " + " + std::to_string(count) + ") is out of range for " +
                              std::to_string(size()) + " elements");
    const std::size_t k = data_.size();
    std::vector<std::uint64_t> counts(k, 0);
    std::vector<T*> data(k, nullptr);
    const std::uint64_t end = offset + count;
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t s0 = partition_.offset(i), s1 = s0 + partition_.count(i);
      const std::uint64_t lo = s0 > offset ? s0 : offset, hi = s1 < end ? s1 : end;
      if (lo >= hi) continue;
      counts[i] = hi - lo;
      data[i] = data_[i] != nullptr ? data_[i] + (lo - s0) : nullptr;  // (null: another process's)
    }
    return distributed_span(places(), partition::explicit_sizes(count, std::move(counts)), std::move(data));
  }
  /// The first `count` elements (subspan(0, count)). Throws std::out_of_range if count > size().
  distributed_span first(std::uint64_t count) const { return subspan(0, count); }
  /// The last `count` elements. Throws std::out_of_range if count > size().
  distributed_span last(std::uint64_t count) const {
    if (count > size())
      throw std::out_of_range("strata::distributed_span::last: " + std::to_string(count) + " elements requested of " +
                              std::to_string(size()));
    return subspan(size() - count, count);
  }

  /// The global indices of this process's elements: on a device_set spanning processes, those of
  /// this rank's places (contiguous, since a rank's places are consecutive in the set; with none,
  /// an empty range at the end); on any other set, the whole range. "My rank's share" of a range
  /// over a spanning set is `r.subspan(r.local_range().offset, r.local_range().count)`: a span of
  /// the same set for this rank's own work (element-wise algorithms, get/set, for_each_segment).
  /// Collectives (reductions, scans, moves, copy_to_host) need the same layout on every rank, so
  /// they take the whole range, not the shares.
  index_range local_range() const {
    const std::size_t k = data_.size();
    std::uint64_t first = 0, end = 0;
    bool seen = false;
    for (std::size_t i = 0; i < k; ++i) {
      if (!places().is_local(i)) continue;
      if (!seen) first = end = partition_.offset(i);
      seen = true;
      end = partition_.offset(i) + partition_.count(i);
    }
    return seen ? index_range{first, end - first} : index_range{size(), 0};
  }

  /// All segments, in place order (empty ones included).
  std::vector<segment<T>> segments() const {
    std::vector<segment<T>> s;
    s.reserve(data_.size());
    for (std::size_t i = 0; i < data_.size(); ++i) s.push_back(segment_at(i));
    return s;
  }

 private:
  template <class U>
  friend class distributed_span;

  static void check_pointer(const std::string& where, int device, const void* p) {
    cudaPointerAttributes attr{};
    const cudaError_t e = cudaPointerGetAttributes(&attr, p);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw std::invalid_argument(where + ": the pointer is not CUDA memory (" + cudaGetErrorString(e) + ")");
    }
    if (attr.type == cudaMemoryTypeManaged) return;
    if (attr.type != cudaMemoryTypeDevice)
      throw std::invalid_argument(where + ": the pointer is host memory, not device memory of device " +
                                  std::to_string(device));
    if (attr.device != device)
      throw std::invalid_argument(where + ": the pointer is memory of device " + std::to_string(attr.device) +
                                  ", not of device " + std::to_string(device));
  }

  std::optional<device_set> set_;
  strata::partition partition_;
  std::vector<T*> data_;
};

/// A span over one container per place, in place order: any container with `data()` and
/// `size()` whose elements live on its place's device (a `thrust::device_vector`, a
/// `std::vector<T*>`-like wrapper of your own, ...). The layout is taken from their sizes, as
/// `distributed_span(set, user_segments)` does, and validated the same way: std::invalid_argument
/// for a count of containers other than the set's places or a container on another device. The
/// span does not own the memory.
template <class Containers>
auto span_over(const device_set& set, Containers& per_place) {
  using C = std::remove_reference_t<decltype(*std::begin(per_place))>;
  using T = std::remove_pointer_t<decltype(thrust::raw_pointer_cast(std::declval<C&>().data()))>;
  std::vector<user_segment<T>> segments;
  std::size_t i = 0;
  for (auto& c : per_place) {
    // (A container past the set's places gets no device: the constructor refuses the count.)
    const int device = i < set.size() && set.is_local(i) ? set.device(i) : -1;
    segments.push_back({device, thrust::raw_pointer_cast(c.data()), static_cast<std::uint64_t>(c.size())});
    ++i;
  }
  return distributed_span<T>(set, segments);
}

template <class T>
class distributed_vector;
template <class I>
class counting_range;
template <class Base, class F, class V>
class transformed_range;

namespace detail {

/// The span of any distributed range argument: a span is itself, a container is viewed whole
/// (const element type for a const container).
template <class T>
distributed_span<T> as_span(const distributed_span<T>& s) {
  return s;
}
template <class T>
distributed_span<T> as_span(distributed_vector<T>& v) {
  return v.span();
}
template <class T>
distributed_span<const T> as_span(const distributed_vector<T>& v) {
  return v.span();
}

/// A lazy range (views.cuh) is its own view.
template <class I>
const counting_range<I>& as_span(const counting_range<I>& v) {
  return v;
}
template <class B, class F, class V>
const transformed_range<B, F, V>& as_span(const transformed_range<B, F, V>& v) {
  return v;
}

template <class R>
struct is_lazy_range_impl : std::false_type {};
template <class I>
struct is_lazy_range_impl<counting_range<I>> : std::true_type {};
template <class B, class F, class V>
struct is_lazy_range_impl<transformed_range<B, F, V>> : std::true_type {};

template <class R>
struct is_distributed_range_impl : std::false_type {};
template <class T>
struct is_distributed_range_impl<distributed_span<T>> : std::true_type {};
template <class T>
struct is_distributed_range_impl<distributed_vector<T>> : std::true_type {};

}  // namespace detail

/// True for distributed_span and distributed_vector (any cv/ref): what Strata algorithms take.
template <class R>
inline constexpr bool is_distributed_range_v =
    detail::is_distributed_range_impl<std::remove_cv_t<std::remove_reference_t<R>>>::value;

/// True for the lazy ranges of views.cuh (strata::counting, strata::transformed), any cv/ref:
/// read-only ranges without memory.
template <class R>
inline constexpr bool is_lazy_range_v = detail::is_lazy_range_impl<std::remove_cv_t<std::remove_reference_t<R>>>::value;

/// True for what the algorithms that only read take: a distributed range or a lazy range.
template <class R>
inline constexpr bool is_readable_range_v = is_distributed_range_v<R> || is_lazy_range_v<R>;

/// The span type an algorithm sees for range argument R (for a lazy range, the range itself).
template <class R>
using span_of_t = std::remove_cv_t<std::remove_reference_t<decltype(detail::as_span(std::declval<R&>()))>>;

namespace detail {
/// What a range's segments hold: a pointer for a span, an iterator for a lazy range.
template <class S>
using segment_iterator_t = decltype(std::declval<const S&>().segment_at(0).data);
}  // namespace detail

/// The element type (without const) of a distributed range.
template <class R>
using range_value_t = typename span_of_t<R>::value_type;

}  // namespace strata
