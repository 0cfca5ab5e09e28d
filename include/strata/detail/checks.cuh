// The argument checks every algorithm makes before any device work: a range has places, ranges
// agree in size and layout, inputs and outputs do not partially overlap, outputs are mutable, sets
// can exchange elements. Each throws std::invalid_argument (std::logic_error where the combination
// is unsupported) naming the algorithm; none touches a device.
#pragma once

#include <strata/detail/set_state.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

namespace strata::detail {

inline std::string algo_name(const char* algo) { return std::string(algo); }

/// The range's device_set, or std::invalid_argument if it has none (a span or a lazy range).
template <class S>
const device_set& require_places(const char* algo, const S& s) {
  if (!s.has_places())
    throw std::invalid_argument(algo_name(algo) +
                                ": the range has no device_set (default-constructed or moved-from container)");
  return s.places();
}

/// Checks that two ranges have the same size (std::invalid_argument otherwise).
template <class A, class B>
void require_same_size(const char* algo, const A& a, const B& b) {
  require_places(algo, a);
  require_places(algo, b);
  if (a.size() != b.size())
    throw std::invalid_argument(algo_name(algo) + ": the ranges have different sizes (" + std::to_string(a.size()) +
                                " and " + std::to_string(b.size()) + " elements)");
}

/// Checks that two ranges have the same size, device_set and partition, so that segment i of
/// one meets segment i of the other on place i (std::invalid_argument otherwise).
template <class A, class B>
void require_same_layout(const char* algo, const A& a, const B& b) {
  require_same_size(algo, a, b);
  if (a.places() != b.places())
    throw std::invalid_argument(algo_name(algo) +
                                ": the ranges live on different device_sets; strata::copy one onto the other's "
                                "layout first");
  if (a.partition() != b.partition())
    throw std::invalid_argument(algo_name(algo) +
                                ": the ranges are partitioned differently; strata::copy one onto the other's "
                                "layout first");
}

/// Checks that an input and an output range either do not share memory or are exactly the
/// same range (in place); any other overlap throws std::invalid_argument.
template <class A, class B>
void require_no_partial_overlap(const char* algo, const distributed_span<A>& in, const distributed_span<B>& out) {
  for (std::size_t i = 0; i < in.segment_count(); ++i) {
    const auto a = in.segment_at(i);
    if (a.count == 0 || a.data == nullptr) continue;  // (null with elements: another process's)
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data), a1 = a0 + a.count * sizeof(A);
    for (std::size_t j = 0; j < out.segment_count(); ++j) {
      const auto b = out.segment_at(j);
      if (b.count == 0 || b.data == nullptr || b.device != a.device) continue;
      const auto b0 = reinterpret_cast<std::uintptr_t>(b.data), b1 = b0 + b.count * sizeof(B);
      if (a0 < b1 && b0 < a1 && !(i == j && a0 == b0 && a1 == b1))
        throw std::invalid_argument(algo_name(algo) + ": the input and the output overlap in memory (input segment " +
                                    std::to_string(i) + ", output segment " + std::to_string(j) +
                                    "); only the very same range (in place) is allowed");
    }
  }
}

/// A lazy range as an input: a counting range holds no memory; a transform view reads its base,
/// which is checked in its place (so that an output shifted against the base is refused too).
template <class V, class B, std::enable_if_t<is_lazy_range_v<V>, int> = 0>
void require_no_partial_overlap(const char* algo, const V& in, const distributed_span<B>& out) {
  if constexpr (std::is_same_v<V, counting_range<typename V::value_type>>) {
    (void)algo;
    (void)in;
    (void)out;
  } else {
    require_no_partial_overlap(algo, in.base(), out);
  }
}

/// True if `a` and `b` are the very same memory, segment for segment (an in-place call).
template <class A, class B>
bool same_range(const distributed_span<A>& a, const distributed_span<B>& b) {
  if (a.size() != b.size() || a.segment_count() != b.segment_count()) return false;
  for (std::size_t i = 0; i < a.segment_count(); ++i)
    if (static_cast<const void*>(a.segment_at(i).data) != static_cast<const void*>(b.segment_at(i).data)) return false;
  return true;
}

/// Checks that two ranges share no memory at all (not even as the very same range, which
/// require_no_partial_overlap allows for in-place work); std::invalid_argument otherwise.
template <class A, class B>
void require_disjoint(const char* algo, const distributed_span<A>& a, const distributed_span<B>& b) {
  require_no_partial_overlap(algo, a, b);
  for (std::size_t i = 0; i < a.segment_count() && i < b.segment_count(); ++i)
    if (a.partition().count(i) > 0 && a.segment_at(i).data != nullptr &&
        static_cast<const void*>(a.segment_at(i).data) == static_cast<const void*>(b.segment_at(i).data))
      throw std::invalid_argument(algo_name(algo) + ": the two ranges are the same range; they must not share memory");
}

/// Fails to compile unless the output range `Out` is mutable.
template <class Out>
void require_mutable(const char*) {
  static_assert(!std::is_const_v<typename span_of_t<Out>::element_type>,
                "strata: the output range must be mutable (not a const container or a span of const)");
}

/// Throws before any work unless an exchange from `ss` to `ds` can run: both sets in this process,
/// or both spanning the ranks of one process group (then the exchange is collective: every rank
/// makes the call). std::logic_error for a set spanning processes with one that does not;
/// std::invalid_argument for sets spanning different groups.
inline void require_exchangeable(const char* algo, const set_state& ss, const set_state& ds) {
  if ((ss.link == nullptr) != (ds.link == nullptr))
    throw std::logic_error(std::string(algo) +
                           ": one device_set spans processes and the other does not; moves between such sets are not "
                           "supported (see docs/api.md, \"Beyond one process\")");
  if (ss.link != ds.link)
    throw std::invalid_argument(std::string(algo) + ": the device_sets span the ranks of different process groups");
}

/// The output range of an out-of-place compaction: the input's layout, and no shared memory.
template <class In, class Out>
void require_compaction_output(const char* name, const In& in, const Out& out) {
  require_same_layout(name, in, out);
  require_disjoint(name, in, out);
}

/// Checks that a range to sort is mutable (at compile time) and has places.
template <class R>
void require_sortable(const char* name, const R& r) {
  static_assert(!std::is_const_v<typename R::element_type>, "strata: the range to sort must be mutable");
  require_places(name, r);
}

/// Checks that no zipped input partially overlaps `out` (the very same range is allowed: in place).
template <class Z, class O>
void require_zip_no_partial_overlap(const char* algo, const Z& z, const distributed_span<O>& out) {
  std::apply([&](const auto&... s) { (require_no_partial_overlap(algo, s, out), ...); }, z.spans());
}

/// Most elements of one reproducible sum (the integer windows could overflow beyond).
inline constexpr std::uint64_t repro_max_elements = std::uint64_t{1} << 33;

/// Checks a reproducible sum's accumulator type (float or double) and size.
template <class T>
void require_reproducible(const char* name, std::uint64_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "strata::reproducible sums accumulate float or double (the type of init)");
  if (n > repro_max_elements)
    throw std::invalid_argument(std::string(name) + " (reproducible): " + std::to_string(n) +
                                " elements; at most 2^33 per call");
}

}  // namespace strata::detail
