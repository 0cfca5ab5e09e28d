// The partials and folds of the first-index algorithms (algorithm/find.cuh): find, find_if,
// find_if_not, mismatch, is_sorted_until, is_sorted. Per segment, one CUB min-reduction over the
// segment's indices maps each index to itself where the test holds and to `no_index` elsewhere,
// so the partial is the segment's first hit (local); where CUB has DeviceFind (CCCL 3.5), its
// FindIf gives the same answer and stops early. On the root the fold takes the first segment,
// in segment order, with a hit and makes its index global with the segment's offset. The sortedness
// partial also carries the segment's first and last elements, so the fold checks the boundary
// between consecutive non-empty segments (across places and ranks) without moving any element.
#pragma once

#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold_slots.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/graph_replay.cuh>
#include <strata/zip.cuh>

#include <cub/device/device_for.cuh>

#include <thrust/iterator/counting_iterator.h>

#include <cuda/std/tuple>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <typeinfo>

namespace strata::detail {

/// A segment's partial when its test holds nowhere.
inline constexpr std::uint64_t no_index = ~std::uint64_t{0};

/// i if `hit(i)`, else no_index: the transform of the min-reduction.
template <class Hit>
struct index_if {
  Hit hit;
  __host__ __device__ std::uint64_t operator()(std::uint64_t i) const { return hit(i) ? i : no_index; }
};

struct min_index {
  __host__ __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return b < a ? b : a; }
};

/// DeviceFind's answer (an offset from `begin`, `n` for none) written as first_index's.
struct found_at {
  std::uint64_t* out;
  std::uint64_t begin, n;
  template <class Index, class V>
  __host__ __device__ void operator()(Index, V v) const {
    const auto at = static_cast<std::uint64_t>(v);
    *out = at < n ? begin + at : no_index;
  }
};

/// Enqueues on `p` the smallest i in [begin, end) with `hit(i)` (no_index if none) into `*out`:
/// cub::DeviceFind::FindIf where CUB has it (it stops early), else one min-reduction over the
/// indices. Requires begin < end.
template <class Hit>
void first_index(place_state& p, std::uint64_t begin, std::uint64_t end, const Hit& hit, std::uint64_t* out) {
#if STRATA_HAS_CUB_FIND
  const tabulate_output<found_at, std::uint64_t> sink{{out, begin, end - begin}, 0};
  run_cub(p, [&](void* temp, std::size_t& bytes) {
    return cub_find_if(temp, bytes, thrust::counting_iterator<std::uint64_t>(begin), sink, hit, end - begin, p.stream());
  });
#else
  run_cub(p, [&](void* temp, std::size_t& bytes) {
    return reduce_no_init<std::uint64_t>(temp, bytes, thrust::counting_iterator<std::uint64_t>(begin), out, end - begin,
                                         min_index{}, index_if<Hit>{hit}, p.stream());
  });
#endif
}

/// The search of first_index_early without CUB's DeviceFind: `threads` threads stride over
/// [begin, end) in increasing order, four indices a step, each thread stopping at its first hit
/// (atomicMin into *found, which starts at no_index) or as soon as a hit before its next step is
/// known. The first hit is never skipped: *found only ever holds hits, none of them before it.
template <class Hit>
struct first_hit_stride {
  Hit hit;
  std::uint64_t begin, end, threads;
  unsigned long long* found;
  __device__ void operator()(std::uint32_t t) const {
    for (std::uint64_t i = begin + t; i < end; i += 4 * threads) {
      if (*static_cast<volatile unsigned long long*>(found) < i) return;
      bool h[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) h[j] = i + j * threads < end && hit(i + j * threads);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (h[j]) {
          atomicMin(found, static_cast<unsigned long long>(i + j * threads));
          return;
        }
    }
  }
};

/// As first_index, for a hit that is usually near `begin` (a segment's first key change): the
/// search stops early where CUB's DeviceFind is absent too (first_hit_stride), so a short
/// prefix costs one small kernel instead of a pass over [begin, end); with no hit it reads
/// everything, as first_index does. Requires begin < end and `out` in device memory.
template <class Hit>
void first_index_early(place_state& p, std::uint64_t begin, std::uint64_t end, const Hit& hit, std::uint64_t* out) {
#if STRATA_HAS_CUB_FIND
  first_index(p, begin, end, hit, out);
#else
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t), "atomicMin on 64-bit indices");
  const std::uint64_t n = end - begin;
  const std::uint64_t threads = n < (std::uint64_t{1} << 17) ? n : (std::uint64_t{1} << 17);
  STRATA_CUDA_CHECK(cudaMemsetAsync(out, 0xff, sizeof(std::uint64_t), p.stream()));  // no_index
  STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
      static_cast<std::uint32_t>(threads),
      first_hit_stride<Hit>{hit, begin, end, threads, reinterpret_cast<unsigned long long*>(out)}, p.stream()));
#endif
}

// ---- the tests ------------------------------------------------------------------------

/// pred(data[i]) == want.
template <class T, class Pred, class It = const T*>
struct element_test {
  It data;
  Pred pred;
  bool want;
  __host__ __device__ bool operator()(std::uint64_t i) const { return static_cast<bool>(pred(data[i])) == want; }
};

/// comp(data[i], data[i - 1]): element i breaks the order (i >= 1).
template <class T, class Comp>
struct descent_test {
  const T* data;
  Comp comp;
  __host__ __device__ bool operator()(std::uint64_t i) const { return static_cast<bool>(comp(data[i], data[i - 1])); }
};

/// !(a[i] == b[i]) over two zipped segments.
template <class Ptrs>
struct differs_test {
  Ptrs ptrs;
  __host__ __device__ bool operator()(std::uint64_t i) const {
    return !(::cuda::std::get<0>(ptrs)[i] == ::cuda::std::get<1>(ptrs)[i]);
  }
};

// ---- partials -------------------------------------------------------------------------

/// The partial of find_if / find_if_not / find: segment i's first element whose predicate is
/// `want`.
template <class S, class Pred>
struct find_partial {
  const S& r;
  Pred pred;
  bool want;
  void operator()(std::size_t i, place_state& p, std::uint64_t* out) const {
    const auto s = r.segment_at(i);
    first_index(p, 0, s.count, element_test<typename S::value_type, Pred, segment_iterator_t<S>>{s.data, pred, want}, out);
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(find_partial));
    key.add(want);
    return add_range_key(key, r) && add_state_key(key, pred);
  }
};

/// The partial of mismatch: segment i's first index where the two zipped ranges differ.
template <class Z>
struct mismatch_partial {
  const Z& z;
  void operator()(std::size_t i, place_state& p, std::uint64_t* out) const {
    const auto ptrs = zip_pointers(z, i);
    first_index(p, 0, z.partition().count(i), differs_test<decltype(ptrs)>{ptrs}, out);
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(mismatch_partial));
    return std::apply([&](const auto&... s) { return (add_range_key(key, s) && ...); }, z.spans());
  }
};

/// A segment's sortedness: its first descent (local index, no_index if none) and its first and
/// last elements, which the fold compares across segment boundaries.
template <class T>
struct sorted_run {
  std::uint64_t until;
  T first;
  T last;
};

/// Writes a segment's first and last elements into its partial; for a one-element segment also
/// "no descent" (which then has no reduction).
template <class T>
__global__ void segment_ends_kernel(const T* data, std::uint64_t count, sorted_run<T>* out) {
  out->first = data[0];
  out->last = data[count - 1];
  if (count == 1) out->until = no_index;
}

/// The partial of is_sorted_until / is_sorted.
template <class S, class Comp>
struct sorted_partial {
  const S& r;
  Comp comp;
  using T = typename S::value_type;
  void operator()(std::size_t i, place_state& p, sorted_run<T>* out) const {
    const auto s = r.segment_at(i);
    if (s.count > 1) first_index(p, 1, s.count, descent_test<T, Comp>{s.data, comp}, &out->until);
    segment_ends_kernel<<<1, 1, 0, p.stream()>>>(s.data, s.count, out);
    STRATA_CUDA_CHECK(cudaGetLastError());
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(sorted_partial));
    return add_range_key(key, r) && add_state_key(key, comp);
  }
};

// ---- root folds -----------------------------------------------------------------------

/// The first hit in segment order, made global; `n` (the range's size) if none.
struct fold_first_index {
  std::uint64_t n;
  __device__ std::uint64_t operator()(const slot_table<std::uint64_t>& t) const {
    for (int j = 0; j < t.size; ++j)
      if (*t.ptr[j] != no_index) return t.offset[j] + *t.ptr[j];
    return n;
  }
};

/// The first element, in global order, that compares less than its predecessor: a segment's own
/// first descent, or its first element against the previous non-empty segment's last; `n` if
/// none.
template <class T, class Comp>
struct fold_sorted_until {
  std::uint64_t n;
  Comp comp;
  __device__ std::uint64_t operator()(const slot_table<sorted_run<T>>& t) const {
    for (int j = 0; j < t.size; ++j) {
      const sorted_run<T>& s = *t.ptr[j];
      if (j > 0 && comp(s.first, t.ptr[j - 1]->last)) return t.offset[j];
      if (s.until != no_index) return t.offset[j] + s.until;
    }
    return n;
  }
};

/// is_sorted: whether fold_sorted_until finds no descent.
template <class T, class Comp>
struct fold_is_sorted {
  fold_sorted_until<T, Comp> until;
  __device__ bool operator()(const slot_table<sorted_run<T>>& t) const { return until(t) == until.n; }
};

}  // namespace strata::detail
