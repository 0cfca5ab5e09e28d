// What value-returning algorithms return beside plain values: an element with its global index
// (min_element, max_element) and the pair minmax returns.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {

/// An element found by min_element / max_element: its global index and its value. For an
/// empty range, `index` is the range's size (the end position, as the standard returns `last`)
/// and `value` is value-initialised.
template <class T>
struct element_result {
  std::uint64_t index;  ///< global index of the element (size() for an empty range)
  T value;              ///< the element
};

/// What minmax returns: the first smallest and the last largest element, as
/// std::minmax_element. For an empty range both indices equal the size.
template <class T>
struct minmax_result {
  element_result<T> min;  ///< the first smallest element
  element_result<T> max;  ///< the last largest element
};

/// What top_k returns: the k selected elements in order (smallest or largest first) and their
/// global indices, on the host.
template <class T>
struct top_k_result {
  std::vector<T> values;               ///< the elements, in the order asked for
  std::vector<std::uint64_t> indices;  ///< the global index of each element
};

}  // namespace strata
