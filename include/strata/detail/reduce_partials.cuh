// The partials and root folds of the reduce family (algorithm/reduce.cuh): per segment, one CUB
// reduction without an initial value (or Strata's reproducible kernels); on the root, the fold in
// segment order. Indexed partials (the extrema) carry 32-bit indices inside CUB and are made
// global on the root with each segment's offset.
#pragma once

#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold_slots.cuh>
#include <strata/detail/graph_cache.cuh>
#include <strata/detail/graph_replay.cuh>
#include <strata/detail/repro.cuh>
#include <strata/results.cuh>
#include <strata/zip.cuh>

#include <thrust/iterator/counting_iterator.h>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <typeinfo>

namespace strata::detail {

// ---- per-segment partials -------------------------------------------------------------

// The partial of one segment of a (transform-)reduce: CUB over the segment, no initial value.
template <class Acc, class S, class Op, class Tf>
struct reduce_partial {
  const S& r;
  Op op;
  Tf tf;
  void operator()(std::size_t i, place_state& p, Acc* out) const {
    const auto s = r.segment_at(i);
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      return reduce_no_init<Acc>(temp, bytes, s.data, out, s.count, op, tf, p.stream());
    });
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(reduce_partial));
    return add_range_key(key, r) && add_state_key(key, op) && add_state_key(key, tf);
  }
};
template <class Acc, class S, class Op, class Tf>
reduce_partial<Acc, S, Op, Tf> make_reduce_partial(const S& r, Op op, Tf tf) {
  return {r, op, tf};
}

// The partial of an n-ary transform_reduce over a zip: CUB over the segment's indices, each
// read from every zipped range and combined by `f` (binary transform_reduce and equal are zips of
// two).
template <class Acc, class Z, class Op, class F>
struct zip_reduce_partial {
  const Z& z;
  Op op;
  F f;
  void operator()(std::size_t i, place_state& p, Acc* out) const {
    const auto tf = make_zip_apply(zip_pointers(z, i), f);
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      return reduce_no_init<Acc>(temp, bytes, thrust::counting_iterator<std::uint64_t>(0), out, z.partition().count(i),
                                 op, tf, p.stream());
    });
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(zip_reduce_partial));
    return std::apply([&](const auto&... s) { return (add_range_key(key, s) && ...); }, z.spans()) &&
           add_state_key(key, op) && add_state_key(key, f);
  }
};

// The most elements one CUB call of an indexed reduction covers: its indices are 32-bit, as in
// CUB's own ArgMin (which splits its input at 2^31 - 4096 for the same reason).
inline constexpr std::uint64_t index_chunk = std::uint64_t{1} << 31;

// Output of one chunk of an indexed reduction: the chunk's result, its indices moved by the
// chunk's offset in the segment, folded with `op` into what the segment's earlier chunks left
// in *out (they ran before it on the same stream).
template <class P, class Op>
struct chunk_writer {
  P* out;
  std::uint64_t offset;
  bool first;
  Op op;
  template <class Index, class V>
  __host__ __device__ void operator()(Index, const V& v) const {
    const P w = shifted(v, offset);
    *out = first ? w : op(*out, w);
  }
};

// The partial of min_element / max_element / minmax: CUB over (value, 32-bit index) pairs, in
// chunks of at most index_chunk elements. A 64-bit index would double the accumulator of every
// thread for a float and cost up to 8% of throughput against cub::DeviceReduce::ArgMin.
template <class P, class S, class Op, class Seed>
struct indexed_partial {
  const S& r;
  Op op;
  void operator()(std::size_t i, place_state& p, P* out) const {
    const auto s = r.segment_at(i);
    using Acc = decltype(Seed{s.data}(std::uint32_t{0}));
    for (std::uint64_t c = 0; c < s.count; c += index_chunk) {
      const std::uint64_t n = s.count - c < index_chunk ? s.count - c : index_chunk;
      const Seed tf{s.data + c};
      const tabulate_output<chunk_writer<P, Op>, Acc> sink{{out, c, c == 0, op}, 0};
      run_cub(p, [&](void* temp, std::size_t& bytes) {
        return reduce_no_init<Acc, std::uint32_t>(temp, bytes, thrust::counting_iterator<std::uint32_t>(0), sink, n,
                                                  op, tf, p.stream());
      });
    }
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(indexed_partial));
    return add_range_key(key, r) && add_state_key(key, op);
  }
};

// ---- root folds ----------------------------------------------------------------------

// init op p0 op p1 ... in segment order.
template <class Acc, class Op>
struct fold_with_init {
  Acc init;
  Op op;
  __device__ Acc operator()(const slot_table<Acc>& t) const {
    Acc acc = init;
    for (int j = 0; j < t.size; ++j) acc = op(acc, *t.ptr[j]);
    return acc;
  }
};

enum class quantifier { all, any, none };

// all_of / any_of / none_of from the count of elements that satisfy the predicate.
struct fold_quantifier {
  quantifier q;
  std::uint64_t n;
  __device__ bool operator()(const slot_table<std::uint64_t>& t) const {
    std::uint64_t c = 0;
    for (int j = 0; j < t.size; ++j) c += *t.ptr[j];
    return q == quantifier::all ? c == n : (q == quantifier::any ? c > 0 : c == 0);
  }
};

template <class Pred>
struct count_fn {
  Pred pred;
  template <class T>
  __host__ __device__ std::uint64_t operator()(const T& x) const {
    return pred(x) ? 1u : 0u;
  }
};

template <class T>
struct equal_to_value {
  T value;
  __host__ __device__ bool operator()(const T& x) const { return x == value; }
};

struct not_equal_fn {
  template <class A, class B>
  __host__ __device__ std::uint64_t operator()(const A& a, const B& b) const {
    return a == b ? 0u : 1u;
  }
};

// ---- extrema --------------------------------------------------------------------------

// An element and its index: 32-bit and local to a chunk inside CUB, 64-bit and local to the
// segment in a partial; the root's fold makes it global.
template <class T, class I = std::uint64_t>
struct indexed {
  T value;
  I index;
};

template <class T, class I = std::uint64_t>
struct extrema {
  indexed<T, I> lo;
  indexed<T, I> hi;
};

// The same element(s) with a 64-bit index moved by `offset`.
template <class T, class I>
__host__ __device__ indexed<T> shifted(const indexed<T, I>& a, std::uint64_t offset) {
  return {a.value, static_cast<std::uint64_t>(a.index) + offset};
}
template <class T, class I>
__host__ __device__ extrema<T> shifted(const extrema<T, I>& a, std::uint64_t offset) {
  return {shifted(a.lo, offset), shifted(a.hi, offset)};
}

// Element i of a segment (a pointer, or a lazy range's iterator) with its 32-bit index.
template <class T, class It = const T*>
struct index_value {
  It data;
  __host__ __device__ indexed<T, std::uint32_t> operator()(std::uint32_t i) const { return {data[i], i}; }
};
template <class T, class It = const T*>
struct index_value2 {
  It data;
  __host__ __device__ extrema<T, std::uint32_t> operator()(std::uint32_t i) const {
    return {{data[i], i}, {data[i], i}};
  }
};

// The first smallest under `comp`: commutative and associative thanks to the index tie-break.
template <class Comp>
struct first_min {
  Comp comp;
  template <class T, class I>
  __host__ __device__ indexed<T, I> operator()(const indexed<T, I>& a, const indexed<T, I>& b) const {
    if (comp(b.value, a.value)) return b;
    if (comp(a.value, b.value)) return a;
    return b.index < a.index ? b : a;
  }
};
// The first largest under `comp` (std::max_element).
template <class Comp>
struct first_max {
  Comp comp;
  template <class T, class I>
  __host__ __device__ indexed<T, I> operator()(const indexed<T, I>& a, const indexed<T, I>& b) const {
    if (comp(a.value, b.value)) return b;
    if (comp(b.value, a.value)) return a;
    return b.index < a.index ? b : a;
  }
};
// The last largest under `comp` (the max of std::minmax_element).
template <class Comp>
struct last_max {
  Comp comp;
  template <class T, class I>
  __host__ __device__ indexed<T, I> operator()(const indexed<T, I>& a, const indexed<T, I>& b) const {
    if (comp(a.value, b.value)) return b;
    if (comp(b.value, a.value)) return a;
    return b.index > a.index ? b : a;
  }
};
template <class Comp>
struct minmax_op {
  Comp comp;
  template <class T, class I>
  __host__ __device__ extrema<T, I> operator()(const extrema<T, I>& a, const extrema<T, I>& b) const {
    return {first_min<Comp>{comp}(a.lo, b.lo), last_max<Comp>{comp}(a.hi, b.hi)};
  }
};

// The root fold of the extrema: each partial's indices made global, combined in segment order.
template <class P, class Op>
__device__ P fold_shifted(const slot_table<P>& t, const Op& op) {
  P best = shifted(*t.ptr[0], t.offset[0]);
  for (int j = 1; j < t.size; ++j) best = op(best, shifted(*t.ptr[j], t.offset[j]));
  return best;
}

template <class T, class Better>
struct fold_element {
  Better better;
  __device__ element_result<T> operator()(const slot_table<indexed<T>>& t) const {
    const indexed<T> best = fold_shifted(t, better);
    return {best.index, best.value};
  }
};
template <class T, class Comp>
struct fold_minmax {
  Comp comp;
  __device__ minmax_result<T> operator()(const slot_table<extrema<T>>& t) const {
    const extrema<T> best = fold_shifted(t, minmax_op<Comp>{comp});
    return {{best.lo.index, best.lo.value}, {best.hi.index, best.hi.value}};
  }
};

// init + the places' accumulators, combined exactly, rounded once.
template <class T>
struct fold_repro {
  repro_acc init;
  __device__ T operator()(const slot_table<repro_acc>& t) const {
    repro_acc acc = init;
    for (int j = 0; j < t.size; ++j) acc = repro_combine<repro_windows_for<T>>(acc, *t.ptr[j]);
    return repro_round<T>(acc);
  }
};

// The partial of a reproducible sum over a zip (a single range is a zip of one): Strata's own
// kernels (repro.cuh) over the segment, in the place's temp storage, the block accumulators
// combined by one more block into *out. T: the sum's type (how many windows it keeps).
template <class T, class Z, class F>
struct repro_partial {
  static constexpr int W = repro_windows_for<T>;
  const Z& z;
  F f;
  void operator()(std::size_t i, place_state& p, repro_acc* out) const {
    const auto g = make_zip_apply(zip_pointers(z, i), f);
    const std::uint64_t n = z.partition().count(i);
    int sms = 0, per_sm = 0;
    STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, p.device()));
    STRATA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, repro_blocks_kernel<W, decltype(g)>, repro_block, 0));
    const unsigned blocks = repro_grid(n, std::uint64_t(sms) * std::uint64_t(per_sm > 0 ? per_sm : 1));
    run_cub(p, [&](void* temp, std::size_t& bytes) -> cudaError_t {
      if (temp == nullptr) {
        bytes = blocks * sizeof(repro_acc);
        return cudaSuccess;
      }
      auto* partials = static_cast<repro_acc*>(temp);
      repro_blocks_kernel<W><<<blocks, repro_block, 0, p.stream()>>>(g, n, partials);
      repro_fold_kernel<W><<<1, repro_block, 0, p.stream()>>>(partials, blocks, out);
      return cudaGetLastError();
    });
  }
  bool append_key(call_key& key) const {
    key.add_type(typeid(repro_partial));
    return std::apply([&](const auto&... s) { return (add_range_key(key, s) && ...); }, z.spans()) &&
           add_state_key(key, f);
  }
};

}  // namespace strata::detail
