// The reduce family: reduce, transform_reduce (unary and binary), count, count_if,
// min_element, max_element, minmax, all_of / any_of / none_of, equal. Each runs one CUB
// reduction per segment, gathers the partials on the root place and folds them there in
// segment order. Every algorithm has an `_async` form returning strata::future.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold.cuh>
#include <strata/detail/repro.cuh>
#include <strata/distributed_span.cuh>
#include <strata/future.cuh>
#include <strata/tags.cuh>
#include <strata/zip.cuh>

#include <thrust/iterator/counting_iterator.h>

#include <cuda/std/functional>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>

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

namespace detail {

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
    add_span_key(key, r);
    return add_state_key(key, op) && add_state_key(key, tf);
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
    std::apply([&](const auto&... s) { (add_span_key(key, s), ...); }, z.spans());
    return add_state_key(key, op) && add_state_key(key, f);
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
    add_span_key(key, r);
    return add_state_key(key, op);
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

template <class T>
struct index_value {
  const T* data;
  __host__ __device__ indexed<T, std::uint32_t> operator()(std::uint32_t i) const { return {data[i], i}; }
};
template <class T>
struct index_value2 {
  const T* data;
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

template <class T, class S, class Better>
future<element_result<T>> extremum_async(const char* name, const S& r, Better better) {
  using P = indexed<T>;
  return reduce_to_future<element_result<T>, P>(name, require_places(name, r), r.partition(),
                                                indexed_partial<P, S, Better, index_value<T>>{r, better},
                                                fold_element<T, Better>{better}, element_result<T>{r.size(), T{}});
}

template <class Pred, class R>
future<bool> quantifier_async(const char* name, const R& r_in, Pred pred, quantifier q) {
  const auto r = as_span(r_in);
  return reduce_to_future<bool, std::uint64_t>(
      name, require_places(name, r), r.partition(),
      make_reduce_partial<std::uint64_t>(r, ::cuda::std::plus<std::uint64_t>{}, count_fn<Pred>{pred}),
      fold_quantifier{q, r.size()}, q != quantifier::any);
}

}  // namespace detail

/// Asynchronous transform_reduce: `init op transform(x0) op transform(x1) op ...` over the whole
/// range. `op` must be associative and commutative (CUB reorders operands within a segment);
/// segments are combined in order. Returns `init` for an empty range. The accumulator type is
/// the type of `init`. Throws std::invalid_argument for a range without places,
/// strata::cuda_error if a CUDA call fails (from get()/wait() for failures in the device work).
template <class R, class Acc, class Op, class Tf, class = std::enable_if_t<is_distributed_range_v<R>>>
future<Acc> transform_reduce_async(const R& r_in, Acc init, Op op, Tf transform) {
  const auto r = detail::as_span(r_in);
  return detail::reduce_to_future<Acc, Acc>("strata::transform_reduce", detail::require_places("strata::transform_reduce", r),
                                            r.partition(), detail::make_reduce_partial<Acc>(r, op, transform),
                                            detail::fold_with_init<Acc, Op>{init, op}, init);
}
/// transform_reduce, waiting for the value. See transform_reduce_async.
template <class R, class Acc, class Op, class Tf, class = std::enable_if_t<is_distributed_range_v<R>>>
Acc transform_reduce(const R& r, Acc init, Op op, Tf transform) {
  return transform_reduce_async(r, init, op, transform).get();
}

/// Asynchronous n-ary transform_reduce over a zip: `init op f(a0, b0, ...) op f(a1, b1, ...) ...`,
/// with one argument of `f` per zipped range (see strata::zip, which checks the layouts). `op`
/// must be associative and commutative. Returns `init` for empty ranges.
template <class Z, class Acc, class Op, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
future<Acc> transform_reduce_async(const Z& z, Acc init, Op op, F f) {
  return detail::reduce_to_future<Acc, Acc>("strata::transform_reduce", z.places(), z.partition(),
                                            detail::zip_reduce_partial<Acc, Z, Op, F>{z, op, f},
                                            detail::fold_with_init<Acc, Op>{init, op}, init);
}
/// n-ary transform_reduce over a zip, waiting for the value. See the async form.
template <class Z, class Acc, class Op, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
Acc transform_reduce(const Z& z, Acc init, Op op, F f) {
  return transform_reduce_async(z, init, op, f).get();
}

/// Asynchronous binary transform_reduce (inner product): `init op f(a0, b0) op f(a1, b1) ...`.
/// `a` and `b` must have the same size, device_set and partition (std::invalid_argument
/// otherwise, before any device work: strata::copy one onto the other's layout first). `op` must
/// be associative and commutative. Returns `init` for empty ranges.
template <class RA, class RB, class Acc, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<Acc> transform_reduce_async(const RA& a, const RB& b, Acc init, Op op, F f) {
  return transform_reduce_async(detail::zip_for("strata::transform_reduce", a, b), init, op, f);
}
/// Binary transform_reduce, waiting for the value. See the async form.
template <class RA, class RB, class Acc, class Op, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
Acc transform_reduce(const RA& a, const RB& b, Acc init, Op op, F f) {
  return transform_reduce_async(a, b, init, op, f).get();
}

/// Asynchronous reduce: `init op x0 op x1 op ...`. `op` must be associative and commutative
/// (as CUB requires); segments are combined in segment order. Returns `init` for an empty range.
/// Throws std::invalid_argument for a range without places, strata::cuda_error for CUDA failures.
template <class R, class Acc, class Op, class = std::enable_if_t<is_distributed_range_v<R>>>
future<Acc> reduce_async(const R& r, Acc init, Op op) {
  return transform_reduce_async(r, init, op, detail::identity_fn{});
}
/// Asynchronous sum of the elements plus `init`, accumulated in the type of `init` (as
/// std::reduce(first, last, init)): `reduce_async(r, std::int64_t{0})` sums 32-bit integers in 64
/// bits.
template <class R, class Acc, class = std::enable_if_t<is_distributed_range_v<R>>>
future<Acc> reduce_async(const R& r, Acc init) {
  return reduce_async(r, init, ::cuda::std::plus<>{});
}
/// Asynchronous sum of the elements (value-initialised T as the initial value).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
future<range_value_t<R>> reduce_async(const R& r) {
  return reduce_async(r, range_value_t<R>{}, ::cuda::std::plus<>{});
}
/// reduce, waiting for the value. See reduce_async.
template <class R, class Acc, class Op, class = std::enable_if_t<is_distributed_range_v<R>>>
Acc reduce(const R& r, Acc init, Op op) {
  return reduce_async(r, init, op).get();
}
/// The sum of the elements plus `init`, in the type of `init`, waiting for it (see
/// reduce_async(r, init)).
template <class R, class Acc, class = std::enable_if_t<is_distributed_range_v<R>>>
Acc reduce(const R& r, Acc init) {
  return reduce_async(r, init).get();
}
/// The sum of the elements, waiting for it.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
range_value_t<R> reduce(const R& r) {
  return reduce_async(r).get();
}

/// Asynchronous count of the elements for which `pred(x)` is true.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
future<std::uint64_t> count_if_async(const R& r, Pred pred) {
  return transform_reduce_async(r, std::uint64_t{0}, ::cuda::std::plus<std::uint64_t>{}, detail::count_fn<Pred>{pred});
}
/// The number of elements for which `pred(x)` is true.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
std::uint64_t count_if(const R& r, Pred pred) {
  return count_if_async(r, pred).get();
}
/// Asynchronous count of the elements equal to `value` (compared with ==).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
future<std::uint64_t> count_async(const R& r, const range_value_t<R>& value) {
  return count_if_async(r, detail::equal_to_value<range_value_t<R>>{value});
}
/// The number of elements equal to `value`.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
std::uint64_t count(const R& r, const range_value_t<R>& value) {
  return count_async(r, value).get();
}

/// Asynchronous min_element: the first smallest element under `comp` (default `<`) and its
/// global index. For an empty range the index is size() and the value is value-initialised.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
future<element_result<range_value_t<R>>> min_element_async(const R& r, Comp comp = {}) {
  return detail::extremum_async<range_value_t<R>>("strata::min_element", detail::as_span(r),
                                                  detail::first_min<Comp>{comp});
}
/// The first smallest element and its global index (see min_element_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
element_result<range_value_t<R>> min_element(const R& r, Comp comp = {}) {
  return min_element_async(r, comp).get();
}
/// Asynchronous max_element: the first largest element under `comp` (default `<`) and its
/// global index. For an empty range the index is size() and the value is value-initialised.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
future<element_result<range_value_t<R>>> max_element_async(const R& r, Comp comp = {}) {
  return detail::extremum_async<range_value_t<R>>("strata::max_element", detail::as_span(r),
                                                  detail::first_max<Comp>{comp});
}
/// The first largest element and its global index (see max_element_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
element_result<range_value_t<R>> max_element(const R& r, Comp comp = {}) {
  return max_element_async(r, comp).get();
}

/// Asynchronous minmax: in one pass, the first smallest and the last largest element under
/// `comp` with their global indices (std::minmax_element's choice). Empty range: both indices
/// equal size().
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
future<minmax_result<range_value_t<R>>> minmax_async(const R& r_in, Comp comp = {}) {
  using T = range_value_t<R>;
  using P = detail::extrema<T>;
  const auto r = detail::as_span(r_in);
  const detail::indexed_partial<P, decltype(r), detail::minmax_op<Comp>, detail::index_value2<T>> partial{
      r, detail::minmax_op<Comp>{comp}};
  const element_result<T> none{r.size(), T{}};
  return detail::reduce_to_future<minmax_result<T>, P>("strata::minmax", detail::require_places("strata::minmax", r),
                                                       r.partition(), partial, detail::fold_minmax<T, Comp>{comp},
                                                       minmax_result<T>{none, none});
}
/// The first smallest and last largest elements (see minmax_async).
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
minmax_result<range_value_t<R>> minmax(const R& r, Comp comp = {}) {
  return minmax_async(r, comp).get();
}

/// Asynchronous all_of: true if `pred(x)` holds for every element (true for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
future<bool> all_of_async(const R& r, Pred pred) {
  return detail::quantifier_async("strata::all_of", r, pred, detail::quantifier::all);
}
/// Asynchronous any_of: true if `pred(x)` holds for some element (false for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
future<bool> any_of_async(const R& r, Pred pred) {
  return detail::quantifier_async("strata::any_of", r, pred, detail::quantifier::any);
}
/// Asynchronous none_of: true if `pred(x)` holds for no element (true for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
future<bool> none_of_async(const R& r, Pred pred) {
  return detail::quantifier_async("strata::none_of", r, pred, detail::quantifier::none);
}
/// True if `pred(x)` holds for every element. All three quantifiers read every element.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
bool all_of(const R& r, Pred pred) {
  return all_of_async(r, pred).get();
}
/// True if `pred(x)` holds for some element.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
bool any_of(const R& r, Pred pred) {
  return any_of_async(r, pred).get();
}
/// True if `pred(x)` holds for no element.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
bool none_of(const R& r, Pred pred) {
  return none_of_async(r, pred).get();
}

/// Asynchronous equal: true if a[i] == b[i] for every i. The ranges must have the same size,
/// device_set and partition (std::invalid_argument otherwise, before any device work).
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<bool> equal_async(const RA& a, const RB& b) {
  const auto z = detail::zip_for("strata::equal", a, b);
  return detail::reduce_to_future<bool, std::uint64_t>(
      "strata::equal", z.places(), z.partition(),
      detail::zip_reduce_partial<std::uint64_t, decltype(z), ::cuda::std::plus<std::uint64_t>, detail::not_equal_fn>{
          z, {}, {}},
      detail::fold_quantifier{detail::quantifier::none, z.size()}, true);
}
/// True if the ranges hold equal elements at every index (see equal_async).
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
bool equal(const RA& a, const RB& b) {
  return equal_async(a, b).get();
}

namespace detail {

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
    std::apply([&](const auto&... s) { (add_span_key(key, s), ...); }, z.spans());
    return add_state_key(key, f);
  }
};

}  // namespace detail

/// Asynchronous reproducible n-ary transform_reduce over a zip: `init + f(a0, b0, ...) + ...`,
/// rounded once, the same bits for any layout (see strata::reproducible); `reproducible` dot
/// products are `transform_reduce(reproducible, zip(a, b), 0.0, mul)`. `T` is float or double; `f`
/// returns something convertible to double. Throws std::invalid_argument for ranges without places
/// or of more than 2^33 elements, strata::cuda_error for CUDA failures.
template <class Z, class T, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
future<T> transform_reduce_async(reproducible_t, const Z& z, T init, F f) {
  detail::require_reproducible<T>("strata::transform_reduce", z.size());
  return detail::reduce_to_future<T, detail::repro_acc>("strata::transform_reduce", z.places(), z.partition(),
                                                       detail::repro_partial<T, Z, F>{z, f},
                                                       detail::fold_repro<T>{detail::repro_of<detail::repro_windows_for<T>>(static_cast<double>(init))}, init);
}
/// Reproducible n-ary transform_reduce over a zip, waiting for the value.
template <class Z, class T, class F, std::enable_if_t<is_zip_range_v<Z>, int> = 0>
T transform_reduce(reproducible_t tag, const Z& z, T init, F f) {
  return transform_reduce_async(tag, z, init, f).get();
}

/// Asynchronous reproducible transform_reduce: `init + f(x0) + f(x1) + ...`, rounded once (see the
/// zip form).
template <class R, class T, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
future<T> transform_reduce_async(reproducible_t tag, const R& r, T init, F f) {
  detail::require_places("strata::transform_reduce", detail::as_span(r));
  return transform_reduce_async(tag, detail::zip_for("strata::transform_reduce", r), init, f);
}
/// Reproducible transform_reduce, waiting for the value (see the async form).
template <class R, class T, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
T transform_reduce(reproducible_t tag, const R& r, T init, F f) {
  return transform_reduce_async(tag, r, init, f).get();
}

/// Asynchronous reproducible binary transform_reduce (a dot product with `f = a * b`):
/// `init + f(a0, b0) + f(a1, b1) + ...`, rounded once. `a` and `b` must have the same size,
/// device_set and partition (std::invalid_argument otherwise).
template <class RA, class RB, class T, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
future<T> transform_reduce_async(reproducible_t tag, const RA& a, const RB& b, T init, F f) {
  return transform_reduce_async(tag, detail::zip_for("strata::transform_reduce", a, b), init, f);
}
/// Reproducible binary transform_reduce, waiting for the value.
template <class RA, class RB, class T, class F,
          class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
T transform_reduce(reproducible_t tag, const RA& a, const RB& b, T init, F f) {
  return transform_reduce_async(tag, a, b, init, f).get();
}

/// Asynchronous reproducible sum `init + x0 + x1 + ...` of a float or double range, rounded once
/// (see strata::reproducible).
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
future<T> reduce_async(reproducible_t tag, const R& r, T init) {
  return transform_reduce_async(tag, r, init, detail::identity_fn{});
}
/// Reproducible sum with `init`, waiting for it.
template <class R, class T, class = std::enable_if_t<is_distributed_range_v<R>>>
T reduce(reproducible_t tag, const R& r, T init) {
  return reduce_async(tag, r, init).get();
}
/// Reproducible sum of the elements, in their own type (float or double), waiting for it.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
range_value_t<R> reduce(reproducible_t tag, const R& r) {
  return reduce_async(tag, r, range_value_t<R>{}).get();
}

}  // namespace strata
