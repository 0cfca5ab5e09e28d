// distributed_vector<T>: an owning container of elements partitioned over a device_set's places.
#pragma once

#include <strata/detail/copies.cuh>
#include <strata/detail/elementwise.cuh>
#include <strata/detail/memory.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

template <class T>
class distributed_vector;

namespace detail {
/// Shrinks every segment of `v` to its first counts[i] elements (the layout becomes those counts;
/// the allocations stay). Used by erase_if.
template <class T>
void keep_prefixes(distributed_vector<T>& v, const std::vector<std::uint64_t>& counts);
}  // namespace detail

/// Turns the container memory cache on or off for the whole process (default off, or on with
/// STRATA_MEMORY_CACHING=1 in the environment). With it on, the device memory containers free is
/// kept, per device and by size, and handed to the next container segment of about that size (a
/// kept block serves requests from 4/5 of its size up to its size): making a container of a size
/// seen before costs a lookup instead of a cudaMalloc (about 0.27 ms per GiB on an H200), which
/// is what `redistribute` and containers made in a loop pay. The memory stays reserved for Strata
/// until release_memory_cache() or turning the cache off: out of memory in any Strata allocation
/// first returns the device's kept blocks and tries again, but the application's own cudaMalloc
/// does not (call release_memory_cache() before large allocations of your own). A freed block is
/// kept once its device has finished its work (the destructor waits, as cudaFree does).
/// Thread-safe; never throws.
inline void set_memory_caching(bool on) noexcept { detail::container_cache::get().enable(on); }

/// True while the container memory cache is on (see set_memory_caching).
inline bool memory_caching() noexcept { return detail::container_cache::get().enabled(); }

/// Frees the device memory the container cache keeps, on every device (what containers still
/// hold stays theirs). A device_set's own scratch and CUB temp storage are
/// another cache: device_set::release_cached_memory(). Never throws.
inline void release_memory_cache() noexcept { detail::container_cache::get().release_all(); }

/// Bytes the container cache keeps, over every device. Never throws.
inline std::size_t memory_cache_bytes() noexcept { return detail::container_cache::get().cached_bytes(); }

/// Tag asking a container constructor to leave the elements uninitialised (no device work).
struct no_init_t {
  explicit constexpr no_init_t() = default;
};
/// The no_init tag value.
inline constexpr no_init_t no_init{};

/// An owning container of `size()` elements of T laid out over the places of a device_set by a
/// partition: one device allocation per place that owns elements, on that place's device.
///
/// Any size is valid, 0 and fewer elements than places included (places then own nothing).
/// Copying makes an independent deep copy with the same layout; moving is cheap and leaves the
/// source empty and without places. Destruction frees every segment on its own device.
/// Views of it (distributed_span, segments()) are invalidated by destruction, move and
/// assignment from another container.
template <class T>
class distributed_vector {
  static_assert(std::is_trivially_copyable_v<T>,
                "strata::distributed_vector<T>: T must be trivially copyable (it is copied between devices bytewise)");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>,
                "strata::distributed_vector<T>: T must not be const or volatile");

 public:
  /// The element type.
  using value_type = T;
  /// Sizes and indices are 64-bit.
  using size_type = std::uint64_t;

  /// An empty container without places.
  distributed_vector() = default;

  /// `n` value-initialised elements over `set`, laid out by `policy` (even by default).
  /// Throws std::invalid_argument for an invalid policy, strata::cuda_error (naming the device)
  /// if an allocation fails; nothing stays allocated then.
  distributed_vector(size_type n, device_set set, partition_policy policy = partition_policy::even())
      : distributed_vector(n, std::move(set), std::move(policy), no_init) {
    detail::fill_impl(*this, T{}, true);
  }

  /// `n` elements equal to `value` over `set`, laid out by `policy`. Throws as above.
  distributed_vector(size_type n, const T& value, device_set set, partition_policy policy = partition_policy::even())
      : distributed_vector(n, std::move(set), std::move(policy), no_init) {
    detail::fill_impl(*this, value, true);
  }

  /// `n` uninitialised elements over `set`, laid out by `policy`: no device work beyond the
  /// allocations. Throws as above.
  distributed_vector(size_type n, device_set set, partition_policy policy, no_init_t)
      : distributed_vector(std::optional<device_set>(std::move(set)), policy, n) {}

  /// The elements of a host range [first, last), copied over `set` laid out by `policy`.
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  distributed_vector(It first, It last, device_set set, partition_policy policy = partition_policy::even())
      : distributed_vector(static_cast<size_type>(std::distance(first, last)), std::move(set), std::move(policy),
                           no_init) {
    assign(first, last);
  }

  /// The elements of a host vector, copied over `set` laid out by `policy`.
  distributed_vector(const std::vector<T>& host, device_set set, partition_policy policy = partition_policy::even())
      : distributed_vector(host.begin(), host.end(), std::move(set), std::move(policy)) {}

  /// Deep copy with the same device_set and partition. Waits for the copy. Throws
  /// strata::cuda_error if an allocation or the copy fails; nothing stays allocated then.
  distributed_vector(const distributed_vector& other) : distributed_vector(other.set_, other.partition_) {
    // Delegating: the object is complete here, so a throwing copy runs the destructor.
    if (set_) detail::copy_impl(other, *this, true);
  }

  /// Takes other's elements and layout without copying; other is left empty, without places.
  distributed_vector(distributed_vector&& other) noexcept { swap(other); }

  /// Deep copy assignment (this takes other's layout).
  distributed_vector& operator=(const distributed_vector& other) {
    if (this != &other) {
      distributed_vector tmp(other);
      swap(tmp);
    }
    return *this;
  }
  /// Frees this container's elements and takes other's; other is left empty, without places.
  distributed_vector& operator=(distributed_vector&& other) noexcept {
    if (this != &other) {
      release();
      swap(other);
    }
    return *this;
  }

  ~distributed_vector() { release(); }

  /// Number of elements.
  size_type size() const noexcept { return partition_.size(); }
  /// True if there are no elements.
  bool empty() const noexcept { return size() == 0; }
  /// The device_set. Throws std::invalid_argument for a container without places (default
  /// constructed or moved from).
  const device_set& places() const {
    if (!set_)
      throw std::invalid_argument("strata::distributed_vector: the container has no device_set (default-constructed or moved-from)");
    return *set_;
  }
  /// The layout of the elements over the places.
  const strata::partition& partition() const noexcept { return partition_; }
  /// The segments: place, device, pointer, count and global offset of each place's share.
  std::vector<segment<T>> segments() { return span().segments(); }
  /// The segments, read-only.
  std::vector<segment<const T>> segments() const { return span().segments(); }

  /// A view of the whole container.
  distributed_span<T> span() {
    if (!set_) return {};
    return distributed_span<T>(*set_, partition_, segment_pointers<T>());
  }
  /// A read-only view of the whole container.
  distributed_span<const T> span() const {
    if (!set_) return {};
    return distributed_span<const T>(*set_, partition_, segment_pointers<const T>());
  }
  /// A view of the elements [offset, offset + count): see distributed_span::subspan. Throws
  /// std::out_of_range if the slice exceeds size().
  distributed_span<T> subspan(size_type offset, size_type count) { return span().subspan(offset, count); }
  /// A read-only view of the elements [offset, offset + count).
  distributed_span<const T> subspan(size_type offset, size_type count) const {
    return span().subspan(offset, count);
  }
  /// Implicit view of the whole container.
  operator distributed_span<T>() { return span(); }
  /// Implicit read-only view of the whole container.
  operator distributed_span<const T>() const { return span(); }

  /// Copies the elements to host memory at `dst` (room for size() elements) and waits.
  void copy_to_host(T* dst) const { detail::copy_to_host_impl(span(), dst); }
  /// The elements as a host vector (a `std::vector<bool>` for `bool` elements).
  std::vector<T> to_std_vector() const {
    if constexpr (std::is_same_v<T, bool>) {
      // std::vector<bool> packs bits and has no data(): stage through plain bools.
      std::unique_ptr<bool[]> staged(new bool[static_cast<std::size_t>(size())]);
      if (size() > 0) copy_to_host(staged.get());
      return std::vector<bool>(staged.get(), staged.get() + size());
    } else {
      std::vector<T> h(static_cast<std::size_t>(size()));
      if (!h.empty()) copy_to_host(h.data());
      return h;
    }
  }

  /// Replaces the elements with those of the host range [first, last), whose length must
  /// equal size() (the layout does not change). Any input iterator whose values convert to T
  /// works (`std::vector<bool>`'s included); pointers and `std::vector<T>` iterators are copied
  /// from directly, others through a host staging copy. Throws std::invalid_argument otherwise.
  template <class It>
  void assign(It first, It last) {
    const auto n = static_cast<size_type>(std::distance(first, last));
    if (n != size())
      throw std::invalid_argument("strata::distributed_vector::assign: the host range has " + std::to_string(n) +
                                  " elements but the container has " + std::to_string(size()));
    if (n == 0) return;
    constexpr bool contiguous =
        std::is_pointer_v<It> ||
        (!std::is_same_v<T, bool> && (std::is_same_v<It, typename std::vector<T>::const_iterator> ||
                                      std::is_same_v<It, typename std::vector<T>::iterator>));
    if constexpr (contiguous) {
      detail::copy_from_host_impl(&*first, span());
    } else if constexpr (std::is_same_v<T, bool>) {
      std::unique_ptr<bool[]> staged(new bool[static_cast<std::size_t>(n)]);
      std::copy(first, last, staged.get());
      detail::copy_from_host_impl(staged.get(), span());
    } else {
      std::vector<T> staged(first, last);
      detail::copy_from_host_impl(staged.data(), span());
    }
  }
  /// Replaces the elements with those of `host` (same size required).
  distributed_vector& operator=(const std::vector<T>& host) {
    assign(host.begin(), host.end());
    return *this;
  }

  /// Element `i` (global index), read from its device; waits. Takes the set's call lock like an
  /// algorithm call, so it is safe while other host threads run algorithms on the same set.
  /// Throws std::out_of_range if `i >= size()`, std::invalid_argument if element `i` is another
  /// rank's (a set spanning processes), strata::cuda_error if the copy fails.
  T get(size_type i) const {
    const element_at at = locate("get", i);
    T v;
    on_place(at.place, "strata::distributed_vector::get", [&](cudaStream_t stream) {
      STRATA_CUDA_CHECK(cudaMemcpyAsync(&v, at.ptr, sizeof(T), cudaMemcpyDeviceToHost, stream));
    });
    return v;
  }
  /// Writes element `i` (global index) on its device; waits. Takes the set's call lock, as get()
  /// does. Throws std::out_of_range if `i >= size()`, std::invalid_argument if element `i` is
  /// another rank's, strata::cuda_error if the copy fails.
  void set(size_type i, const T& value) {
    const element_at at = locate("set", i);
    on_place(at.place, "strata::distributed_vector::set", [&](cudaStream_t stream) {
      STRATA_CUDA_CHECK(cudaMemcpyAsync(at.ptr, &value, sizeof(T), cudaMemcpyHostToDevice, stream));
    });
  }

  /// Exchanges contents and layouts with `other`.
  void swap(distributed_vector& other) noexcept {
    std::swap(set_, other.set_);
    std::swap(partition_, other.partition_);
    std::swap(data_, other.data_);
  }

 private:
  // Runs `enqueue(stream)` on place `place` with its device current and waits for it, all under
  // the set's call lock: a copy enqueued on a place stream while another thread's call is being
  // captured into a graph would land inside (and break) that capture.
  template <class Enqueue>
  void on_place(std::size_t place, const char* name, Enqueue&& enqueue) const {
    detail::call_scope scope(set_->state(), name);
    detail::at_place(scope.state(), place, [&](detail::place_state& p) {
      enqueue(p.stream());
      p.synchronize();
    });
  }

  // Uninitialised storage laid out by `part` over `set` (none without a set). Every public
  // constructor that does device work after allocating delegates to this one (directly or
  // through the no_init constructor), so an exception from that work runs the destructor.
  distributed_vector(std::optional<device_set> set, strata::partition part)
      : set_(std::move(set)), partition_(std::move(part)) {
    if (set_) allocate();
  }
  distributed_vector(std::optional<device_set> set, const partition_policy& policy, size_type n)
      : distributed_vector(set, policy.apply(n, set->size())) {}

  // The segments' pointers, null where a place owns no element (after erase_if a place may keep
  // its allocation while owning nothing).
  template <class E>
  std::vector<E*> segment_pointers() const {
    std::vector<E*> p(data_.size(), nullptr);
    for (std::size_t i = 0; i < data_.size(); ++i)
      if (partition_.count(i) > 0) p[i] = data_[i];
    return p;
  }

  // erase_if: the first counts[i] elements of every segment stay, in place; the allocations do
  // not change.
  template <class U>
  friend void detail::keep_prefixes(distributed_vector<U>& v, const std::vector<std::uint64_t>& counts);

  // Where element `i` lives: its place and its address there.
  struct element_at {
    std::size_t place;
    T* ptr;
  };
  element_at locate(const char* what, size_type i) const {
    if (i >= size())
      throw std::out_of_range(std::string("strata::distributed_vector::") + what + ": index " + std::to_string(i) +
                              " is out of range for " + std::to_string(size()) + " elements");
    const std::size_t place = partition_.owner(i);
    if (!set_->state().local(place))
      throw std::invalid_argument(std::string("strata::distributed_vector::") + what + ": element " + std::to_string(i) +
                                  " lives on rank " + std::to_string(set_->owner_rank(place)) +
                                  " (the set spans processes); only this rank's elements can be read or written");
    return {place, data_[place] + (i - partition_.offset(place))};
  }

  // One allocation per place that owns elements, each on its own device; on failure the ones
  // already made are freed before the exception leaves.
  // (Through the container cache when it is on: strata::set_memory_caching.)
  void allocate() {
    data_.assign(partition_.places(), nullptr);
    try {
      for (std::size_t i = 0; i < partition_.places(); ++i)
        if (set_->state().local(i))  // (a set spanning processes: other ranks' places allocate there)
          data_[i] = static_cast<T*>(detail::container_cache::get().allocate(set_->device(i), partition_.count(i) * sizeof(T)));
    } catch (...) {
      release();
      throw;
    }
  }

  void release() noexcept {
    if (set_) {
      for (std::size_t i = 0; i < data_.size(); ++i)
        if (data_[i] != nullptr) detail::container_cache::get().free(set_->device(i), data_[i]);
    }
    data_.clear();
    set_.reset();
    partition_ = strata::partition();
  }

  std::optional<device_set> set_;
  strata::partition partition_;
  std::vector<T*> data_;
};

namespace detail {
template <class T>
void keep_prefixes(distributed_vector<T>& v, const std::vector<std::uint64_t>& counts) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > v.partition_.count(i)) throw std::logic_error("strata: keep_prefixes grows a segment");
    n += counts[i];
  }
  v.partition_ = partition::explicit_sizes(n, counts);
}
}  // namespace detail

}  // namespace strata
