// Stream compaction: copy_if, remove_if / remove, unique / unique_copy, partition_copy, and for
// containers erase_if / erase. Every place compacts its own segment with one CUB selection, in
// order, so the survivors stay on the place that held them: the result's layout is the
// per-place survivor counts (a partition with explicit sizes). The host waits once, to read
// those counts. strata::redistribute evens such a layout out again.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/fold.cuh>
#include <strata/detail/host_counts.cuh>
#include <strata/algorithm/reduce.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>
#include <strata/tags.cuh>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cub/device/device_transform.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda/std/functional>

#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

namespace detail {

template <class Pred>
struct negated {
  Pred pred;
  template <class T>
  __host__ __device__ bool operator()(const T& x) const {
    return !pred(x);
  }
};

struct equal_fn {
  template <class A, class B>
  __host__ __device__ bool operator()(const A& a, const B& b) const {
    return a == b;
  }
};

// unique's keep flag of element i of a segment: it differs from its predecessor, which for the
// first element is the last element of the previous non-empty segment (`prev`, null for none).
template <class T, class Eq>
struct unique_flag {
  const T* data;
  const T* prev;
  Eq eq;
  __host__ __device__ bool operator()(std::uint64_t i) const {
    if (i == 0) return prev == nullptr || !eq(*prev, data[0]);
    return !eq(data[i - 1], data[i]);
  }
};

/// The first counts[i] elements of every segment of `r`, as a span (the layout of a compaction's
/// result).
template <class T>
distributed_span<T> prefixes(const distributed_span<T>& r, const std::vector<std::uint64_t>& counts) {
  std::vector<T*> data(counts.size(), nullptr);
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) data[i] = r.segment_at(i).data;
    n += counts[i];
  }
  return distributed_span<T>(r.places(), partition::explicit_sizes(n, counts), std::move(data));
}

/// Stores selected element j at out[j] for j below `cap` and drops the rest.
template <class T>
struct store_below {
  T* out;
  std::uint64_t cap;
  template <class Index>
  __host__ __device__ void operator()(Index j, const T& v) const {
    if (static_cast<std::uint64_t>(j) < cap) out[j] = v;
  }
};

// Selection of the elements satisfying `pred` from `in` into per-place destinations `dst[i]`
// (in place when dst[i] is the input segment itself). With `caps`, destination i has room for
// caps[i] elements only: what a predicate selects beyond that is dropped, not written past the
// end (the returned counts still count it, so the caller sees the difference).
template <class T, class Pred>
std::vector<std::uint64_t> select_if(const char* name, const distributed_span<const T>& in, const std::vector<T*>& dst,
                                     Pred pred, const std::vector<std::uint64_t>* caps = nullptr) {
  call_scope scope(in.places().state(), name);
  return kept_counts(scope.state(), in.partition(), [&](std::size_t i, place_state& p, std::uint64_t* kept) {
    const auto s = in.segment_at(i);
    const auto n = static_cast<::cuda::std::int64_t>(s.count);
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      if (caps != nullptr) {
        const tabulate_output<store_below<T>, T> sink{{dst[i], (*caps)[i]}, 0};
        return cub::DeviceSelect::If(temp, bytes, s.data, sink, kept, n, pred, p.stream());
      }
      if (dst[i] == s.data)  // CUB's in-place selection
        return cub::DeviceSelect::If(temp, bytes, dst[i], kept, n, pred, p.stream());
      return cub::DeviceSelect::If(temp, bytes, s.data, dst[i], kept, n, pred, p.stream());
    });
  });
}

template <class T, class Eq>
std::vector<std::uint64_t> unique_impl(const char* name, const distributed_span<const T>& in, const std::vector<T*>& dst,
                                       Eq eq) {
  static_assert(sizeof(T) <= max_fold_value_bytes, "strata::unique: elements of at most 256 bytes");
  call_scope scope(in.places().state(), name);
  set_state& s = scope.state();
  const partition& part = in.partition();
  // Every place selects, comparing its first element with its predecessor (with_predecessors).
  return kept_counts(s, part, 1, [&](std::uint64_t* words) {
    // `prev` is null for the first non-empty segment, which has no predecessor.
    const auto select = [&](std::size_t i, place_state& p, const T* prev) {
      const auto seg = in.segment_at(i);
      const auto n = static_cast<::cuda::std::int64_t>(seg.count);
      const unique_flag<T, Eq> flag{seg.data, prev, eq};
      const auto flag_it = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), flag);
      if (dst[i] != seg.data) {
        run_cub(p, [&](void* temp, std::size_t& bytes) {
          return cub::DeviceSelect::Flagged(temp, bytes, seg.data, flag_it, dst[i], words + i, n, p.stream());
        });
        return;
      }
      // In place: the flags read each element's predecessor, so they are computed, into the
      // place's cached scratch, before any element moves.
      bool* f = static_cast<bool*>(p.scratch(seg.count));
      STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(thrust::counting_iterator<std::uint64_t>(0), f, seg.count, flag,
                                                        p.stream()));
      run_cub(p, [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSelect::Flagged(temp, bytes, dst[i], f, words + i, n, p.stream());
      });
    };
    with_predecessors(s, in, select);
  });
}

}  // namespace detail

/// Copies the elements `x` of `in` for which `pred(x)` is true into `out`, keeping their order:
/// each place compacts its own segment into the start of its segment of `out`. Returns the view
/// of `out` that holds them, laid out by the survivor counts of the places. `out` must have
/// `in`'s size, device_set and partition and must not overlap it. Waits (the host reads the
/// counts). Throws std::invalid_argument before any device work for mismatched or overlapping
/// ranges, strata::cuda_error if a CUDA call fails. On a set spanning processes every compaction
/// is a collective (every rank calls it, in the same order): the kept counts cross ranks in one
/// all-gather, so every rank gets the same global layout of the result (docs/api.md, "Beyond one
/// process"); it throws strata::nccl_error if a rank fails or does not take part.
template <class In, class Out, class Pred,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
distributed_span<range_value_t<Out>> copy_if(const In& in_r, Out&& out_r, Pred pred) {
  using T = range_value_t<In>;
  static_assert(std::is_same_v<T, range_value_t<Out>>, "strata::copy_if: the ranges must have the same element type");
  const distributed_span<const T> in = detail::as_span(in_r);
  const distributed_span<T> out = detail::as_span(out_r);
  detail::require_compaction_output("strata::copy_if", in, out);
  return detail::prefixes(out, detail::select_if("strata::copy_if", in, detail::segment_data(out), pred));
}

/// The elements `x` of `in` for which `pred(x)` is true, in order, as a new container on `in`'s
/// device_set, laid out by the survivor counts of the places (each place keeps what it held; see
/// strata::redistribute to even the layout out). Reads `in` twice (count, then copy) so that the
/// result takes exactly its own size, so `pred` must give the same answer for an element each time.
/// Throws std::invalid_argument for a range without places, strata::cuda_error if an allocation
/// or a CUDA call fails (nothing stays allocated then), std::logic_error if the two passes select
/// different counts on a place (the second pass writes no further than the first counted). Across
/// ranks, the ranks agree on the result's allocation first: if one rank cannot allocate, every
/// rank throws strata::cuda_error (the others' naming that rank).
template <class In, class Pred, class = std::enable_if_t<is_distributed_range_v<In>>>
distributed_vector<range_value_t<In>> copy_if(const In& in_r, Pred pred) {
  using T = range_value_t<In>;
  const distributed_span<const T> in = detail::as_span(in_r);
  detail::require_places("strata::copy_if", in);
  std::vector<std::uint64_t> counts;
  {
    detail::call_scope scope(in.places().state(), "strata::copy_if");
    counts = detail::kept_counts(scope.state(), in.partition(), [&](std::size_t i, detail::place_state& p, std::uint64_t* kept) {
      const auto s = in.segment_at(i);
      detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
        return detail::reduce_no_init<std::uint64_t>(temp, bytes, s.data, kept, s.count, ::cuda::std::plus<std::uint64_t>{},
                                                     detail::count_fn<Pred>{pred}, p.stream());
      });
    });
  }
  std::uint64_t n = 0;
  for (auto c : counts) n += c;
  // Across ranks, the ranks agree on the allocation before any selects into it: a rank out of
  // memory makes every rank throw (the others a strata::cuda_error naming it), none waits for it.
  // (The counts' all-gather above grew the rank buffer and the host words beyond what the
  // verdict needs.)
  std::optional<distributed_vector<T>> made;
  std::exception_ptr failed;
  try {
    made.emplace(n, in.places(), partition_policy::explicit_sizes(counts), no_init);
  } catch (...) {
    failed = std::current_exception();
  }
  {
    detail::call_scope scope(in.places().state(), "strata::copy_if");
    detail::throw_if_any_rank_failed(scope.state(), failed, "strata::copy_if", "allocating the result", [] {});
  }
  distributed_vector<T> out = std::move(*made);
  // Capped at the counts: a predicate that selects more the second time must not write past the
  // result's segments.
  const auto got = detail::select_if("strata::copy_if", in, detail::segment_data(out.span()), pred, &counts);
  if (got != counts)
    throw std::logic_error("strata::copy_if: the predicate gave different answers on two passes (it must depend on the "
                           "element alone); nothing was returned");
  return out;
}

/// Removes the elements `x` for which `pred(x)` is true, in place: each place moves the elements
/// it keeps, in order, to the start of its segment. Returns the view of the kept elements (laid
/// out by the places' kept counts); what lies past them in each segment is unspecified. The
/// container keeps its size (see erase_if to shrink it). Waits. Throws std::invalid_argument for a
/// range without places, strata::cuda_error if a CUDA call fails.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_span<range_value_t<R>> remove_if(R&& r_in, Pred pred) {
  static_assert(!std::is_const_v<typename span_of_t<R>::element_type>, "strata::remove_if: the range must be mutable");
  const auto r = detail::as_span(r_in);
  detail::require_places("strata::remove_if", r);
  return detail::prefixes(r, detail::select_if("strata::remove_if", distributed_span<const range_value_t<R>>(r),
                                               detail::segment_data(r), detail::negated<Pred>{pred}));
}

/// Removes the elements equal to `value` (compared with ==), in place; see remove_if.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_span<range_value_t<R>> remove(R&& r, const range_value_t<R>& value) {
  return strata::remove_if(r, detail::equal_to_value<range_value_t<R>>{value});
}

/// Removes, in place, every element equal (under `eq`, default ==) to the element before it in
/// global order, across segment boundaries too: the first of each run of equal elements stays.
/// Returns the view of the kept elements, laid out by the places' kept counts. Needs
/// `sizeof(T) <= 256` (the boundary elements cross places through the fold slots) and a
/// scratch byte per element on each place (the place's cached scratch, kept for later calls). Waits. Throws as remove_if.
template <class R, class Eq = detail::equal_fn, class = std::enable_if_t<is_distributed_range_v<R>>>
distributed_span<range_value_t<R>> unique(R&& r_in, Eq eq = {}) {
  static_assert(!std::is_const_v<typename span_of_t<R>::element_type>, "strata::unique: the range must be mutable");
  const auto r = detail::as_span(r_in);
  detail::require_places("strata::unique", r);
  return detail::prefixes(
      r, detail::unique_impl("strata::unique", distributed_span<const range_value_t<R>>(r), detail::segment_data(r), eq));
}

/// Copies the first element of every run of equal elements (under `eq`, default ==; runs may span
/// segment boundaries) of `in` into `out`, which must have `in`'s layout and not overlap it.
/// Returns the view of `out` holding them. Waits. Throws as copy_if.
template <class In, class Out, class Eq = detail::equal_fn,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<Out>>>
distributed_span<range_value_t<Out>> unique_copy(const In& in_r, Out&& out_r, Eq eq = {}) {
  using T = range_value_t<In>;
  static_assert(std::is_same_v<T, range_value_t<Out>>, "strata::unique_copy: the ranges must have the same element type");
  const distributed_span<const T> in = detail::as_span(in_r);
  const distributed_span<T> out = detail::as_span(out_r);
  detail::require_compaction_output("strata::unique_copy", in, out);
  return detail::prefixes(out, detail::unique_impl("strata::unique_copy", in, detail::segment_data(out), eq));
}

/// Splits `in` by `pred`, keeping order: the elements satisfying it go to `out_true`, the others
/// to `out_false`, each place compacting its segment into the start of its segments of the two
/// outputs. Returns the views of the two outputs that hold them. Both outputs must have `in`'s
/// layout and overlap neither `in` nor each other. Waits. Throws as copy_if.
template <class In, class OutT, class OutF, class Pred,
          class = std::enable_if_t<is_distributed_range_v<In> && is_distributed_range_v<OutT> &&
                                   is_distributed_range_v<OutF>>>
std::pair<distributed_span<range_value_t<In>>, distributed_span<range_value_t<In>>> partition_copy(
    const In& in_r, OutT&& true_r, OutF&& false_r, Pred pred) {
  using T = range_value_t<In>;
  const distributed_span<const T> in = detail::as_span(in_r);
  const distributed_span<T> yes = detail::as_span(true_r);
  const distributed_span<T> no = detail::as_span(false_r);
  detail::require_compaction_output("strata::partition_copy", in, yes);
  detail::require_compaction_output("strata::partition_copy", in, no);
  detail::require_compaction_output("strata::partition_copy", distributed_span<const T>(yes), no);
  const auto y = detail::segment_data(yes), f = detail::segment_data(no);
  detail::call_scope scope(in.places().state(), "strata::partition_copy");
  const std::size_t k = in.segment_count();
  // Words [0, k): the kept counts of the true part; [k, 2k): of the false part.
  const auto counts = detail::kept_counts(scope.state(), in.partition(), 2, [&](std::uint64_t* words) {
    detail::for_each_segment(scope.state(), in.partition(), [&](std::size_t i, detail::place_state& p) {
      const auto s = in.segment_at(i);
      const auto n = static_cast<::cuda::std::int64_t>(s.count);
      detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSelect::If(temp, bytes, s.data, y[i], words + i, n, pred, p.stream());
      });
      detail::run_cub(p, [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSelect::If(temp, bytes, s.data, f[i], words + k + i, n, detail::negated<Pred>{pred}, p.stream());
      });
    });
  });
  const std::vector<std::uint64_t> nt(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(k)),
      nf(counts.begin() + static_cast<std::ptrdiff_t>(k), counts.end());
  return {detail::prefixes(yes, nt), detail::prefixes(no, nf)};
}

/// Erases the elements `x` for which `pred(x)` is true from the container (as C++20
/// std::erase_if): the survivors keep their order and their places, and the container's layout
/// becomes the places' survivor counts (its allocations are kept, not shrunk). Returns the number
/// of elements erased. Waits. Throws std::invalid_argument for a container without places,
/// strata::cuda_error if a CUDA call fails (the contents are then unspecified; the layout is
/// unchanged).
template <class T, class Pred>
std::uint64_t erase_if(distributed_vector<T>& v, Pred pred) {
  const auto before = v.size();
  const auto kept = remove_if(v, pred);
  detail::keep_prefixes(v, kept.partition().counts());
  return before - v.size();
}

/// Erases the elements equal to `value` from the container; see erase_if.
template <class T>
std::uint64_t erase(distributed_vector<T>& v, const T& value) {
  return erase_if(v, detail::equal_to_value<T>{value});
}

}  // namespace strata
