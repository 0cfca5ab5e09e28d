// Selection: top_k, the k smallest or largest elements of a range with their global indices.
// A threshold that at least k elements reach, then a sort of the few candidates per place:
//  0. For k up to 2^16, a sample pass: every place reduces strided chunks of its segment (about
//     4k / (k + max(2^16, k)) of it, e.g. 1/16 for k = 1024) to their minimum keys
//     (cub::DeviceSegmentedReduce); the k-th smallest of all places' minima, found on the host
//     (across ranks after the per-place counts' all-gather), is a key that at least k elements
//     reach (the k chunks with the smallest minima hold k distinct such elements), and for data
//     in no adversarial order few more. Every place collects the elements at or below it in one
//     read of its segment (a warp-aggregated append of key and position, capped at its room, in
//     no particular order); if a place has more than its room (adversarial order, many equal
//     keys), the radix select below decides instead.
//  1. Histograms of the next 11 bits of the elements' order-preserving unsigned image (sort's
//     radix order), counted by cub::DeviceHistogram on every place and added by the array fold
//     (on the root, across ranks too), narrow down the digit prefix of the k-th element, pass by
//     pass, until the bucket holding it is small (at most max(2^16, k) elements) or one value.
//  2. Every place selects its candidates (cub::DeviceSelect::If over its positions): the elements
//     below that bucket (all of them in the answer) and those in it (for one value, at most the
//     number still needed: the lowest indices win ties). The host waits once for the counts.
//  3. Every place sorts its candidates by (key image, position) (cub::DeviceRadixSort::SortPairs,
//     stable: by key alone where step 2 left them in position order, else by position first) and
//     sends its first k to the host, so the lowest indices win ties; the host merges
//     the places' lists (and, across ranks, the ranks' lists after one all-gather) by (key, index).
// (Over 500 lines: those steps are one algorithm whose state passes from each to the next.)
#pragma once

#include <strata/detail/array_fold.cuh>
#include <strata/detail/checks.cuh>
#include <strata/detail/cub_glue.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/host_counts.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/distributed_span.cuh>
#include <strata/results.cuh>
#include <strata/tags.cuh>

#include <cub/device/device_for.cuh>
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <queue>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

namespace detail {

template <class T>
using radix_unsigned_t =
    std::conditional_t<sizeof(T) == 1, std::uint8_t,
                       std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                          std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

/// The order-preserving unsigned image of an element in sort's radix order (-0.0 and +0.0 equal,
/// negative NaNs before -inf, positive NaNs after +inf), complemented for the largest-first order.
template <class T>
struct radix_key {
  using U = radix_unsigned_t<T>;
  bool largest;
  __host__ __device__ U operator()(const T& x) const {
    constexpr U sign = static_cast<U>(U{1} << (8 * sizeof(U) - 1));
    U u;
    if constexpr (std::is_floating_point_v<T>) {
      const T y = x == T(0) ? T(0) : x;
      ::memcpy(&u, &y, sizeof u);
      u = (u & sign) != 0 ? static_cast<U>(~u) : static_cast<U>(u | sign);
    } else {
      ::memcpy(&u, &x, sizeof u);
      if constexpr (std::is_signed_v<T>) u = static_cast<U>(u ^ sign);
    }
    return largest ? static_cast<U>(~u) : u;
  }
};

/// The radix select's state: the top `decided` bits of the k-th element's key are `prefix`.
template <class U>
struct radix_prefix {
  U prefix = 0;
  int decided = 0;
  static constexpr int bits = 8 * sizeof(U);
  /// The key's top `decided` bits.
  __host__ __device__ U top(U u) const { return decided == 0 ? U{0} : static_cast<U>(u >> (bits - decided)); }
};

/// Bits per histogram pass (2048 bins).
inline constexpr int top_k_digit_bits = 11;

/// The radix select stops once the bucket holding the k-th element has at most this many
/// elements: each place's candidates are then at most the elements below it plus this many.
inline std::uint64_t top_k_bucket_limit(std::uint64_t k) { return std::max<std::uint64_t>(std::uint64_t{1} << 16, k); }

/// The histogram sample of an element: the next `width` bits of its key where its top bits are
/// the prefix, `bins` (outside the histogram's levels, so not counted) elsewhere.
template <class T>
struct top_k_digit {
  radix_key<T> key;
  radix_prefix<radix_unsigned_t<T>> at;
  int width;
  __host__ __device__ int operator()(const T& x) const {
    const auto u = key(x);
    if (at.top(u) != at.prefix) return 1 << width;
    return static_cast<int>((u >> (at.bits - at.decided - width)) & ((1ull << width) - 1));
  }
};

/// Candidate position test: the key's top bits below the prefix (`below`), or equal to it.
template <class T>
struct top_k_candidate {
  const T* data;
  radix_key<T> key;
  radix_prefix<radix_unsigned_t<T>> at;
  bool below_only, equal_only;
  __host__ __device__ bool operator()(std::uint64_t i) const {
    const auto t = at.top(key(data[i]));
    if (below_only) return t < at.prefix;
    if (equal_only) return t == at.prefix;
    return t <= at.prefix;
  }
};

/// Output of a capped selection: the first `cap` selected go after the `*base` candidates already
/// there (base: an earlier selection's count, in pinned host memory; null for none).
struct capped_after {
  std::uint64_t* out;
  const std::uint64_t* base;
  std::uint64_t cap;
  template <class Index>
  __host__ __device__ void operator()(Index i, std::uint64_t position) const {
    if (static_cast<std::uint64_t>(i) < cap) out[(base != nullptr ? *base : 0) + static_cast<std::uint64_t>(i)] = position;
  }
};

/// The largest k for which top_k tries the sample pass first.
inline constexpr std::uint64_t top_k_sample_k_limit = std::uint64_t{1} << 16;

/// The sample pass's chunks on one place: `count` chunks of `length` elements, `stride` apart.
struct top_k_chunks {
  std::uint64_t count = 0, stride = 0, length = 0;
};

/// The sample pass's chunks for a place of `n_i` of the range's `n` elements: the places together
/// have about max(4k, 4096) chunks (at least k in all, since k <= n), in proportion to their
/// elements; a chunk covers about 4k / (k + max(2^16, k)) of its stride, so that the elements at or
/// below the threshold are expected to be about a quarter of the room. Pure host code.
inline top_k_chunks top_k_sample_plan(std::uint64_t n_i, std::uint64_t n, std::uint64_t k) {
  top_k_chunks c;
  if (n_i == 0) return c;
  const std::uint64_t total = std::max<std::uint64_t>(4 * k, 4096);
  const auto want = static_cast<std::uint64_t>(
      std::ceil(static_cast<long double>(total) * static_cast<long double>(n_i) / static_cast<long double>(n)));
  c.count = std::min<std::uint64_t>(n_i, std::max<std::uint64_t>(want, 1));
  c.stride = n_i / c.count;
  const long double share = std::min<long double>(1.0L, 4.0L * static_cast<long double>(k) /
                                                           static_cast<long double>(k + top_k_bucket_limit(k)));
  c.length = std::min<std::uint64_t>(
      c.stride, std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(share * static_cast<long double>(c.stride)))));
  return c;
}

/// The first (`length` 0) or one-past-last element of sample chunk j.
struct top_k_chunk_edge {
  std::uint64_t stride, length;
  __host__ __device__ std::uint64_t operator()(std::uint64_t j) const { return j * stride + length; }
};

/// The smaller of two keys.
struct key_min {
  template <class U>
  __host__ __device__ U operator()(const U& a, const U& b) const {
    return b < a ? b : a;
  }
};

/// Word j * places + i of pinned host memory: chunk j's minimum on place i.
struct strided_word {
  std::uint64_t* words;
  std::size_t places;
  template <class Index, class U>
  __host__ __device__ void operator()(Index j, U key) const {
    words[static_cast<std::size_t>(j) * places] = static_cast<std::uint64_t>(key);
  }
};

/// The sample path's collection (step 0): element i whose key is at most the threshold is
/// appended, key and position, to the place's candidates, one atomicAdd per group of the warp's
/// lanes that hold one (cooperative groups' coalesced threads); the first `room` are written,
/// `*count` counts them all. The order is the atomics' (the sort puts them back in order).
template <class T>
struct collect_at_most {
  const T* data;
  radix_key<T> key;
  radix_unsigned_t<T> threshold;
  radix_unsigned_t<T>* keys;
  std::uint64_t* positions;
  unsigned long long* count;
  std::uint64_t room;
  __device__ void operator()(std::uint64_t i) const {
    const auto u = key(data[i]);
    if (u > threshold) return;
    const auto g = cooperative_groups::coalesced_threads();
    unsigned long long first = 0;
    if (g.thread_rank() == 0) first = atomicAdd(count, static_cast<unsigned long long>(g.size()));
    const std::uint64_t at = g.shfl(first, 0) + g.thread_rank();
    if (at < room) {
      keys[at] = u;
      positions[at] = i;
    }
  }
};

/// The number of low bits that hold every position below n (at least 1).
inline int position_bits(std::uint64_t n) {
  int b = 1;
  while (b < 64 && (n - 1) >> b != 0) ++b;
  return b;
}

/// keys[j] = key(data[positions[j]]).
template <class T>
struct keys_of_positions {
  const T* data;
  const std::uint64_t* positions;
  radix_unsigned_t<T>* keys;
  radix_key<T> key;
  __device__ void operator()(std::uint64_t j) const { keys[j] = key(data[positions[j]]); }
};

/// values[j] = data[positions[j]].
template <class T>
struct values_of_positions {
  const T* data;
  const std::uint64_t* positions;
  T* values;
  __device__ void operator()(std::uint64_t j) const { values[j] = data[positions[j]]; }
};

/// One entry of a place's or rank's sorted list on the host.
template <class T>
struct top_k_entry {
  radix_unsigned_t<T> key;
  std::uint64_t index;
  T value;
};

/// The first `k` entries of sorted lists `lists` (each ascending by (key, index)), merged by
/// (key, index). Pure host code.
template <class T>
std::vector<top_k_entry<T>> merge_top_k(const std::vector<std::vector<top_k_entry<T>>>& lists, std::uint64_t k) {
  using cursor = std::pair<std::size_t, std::size_t>;  // (list, position)
  const auto after = [&](const cursor& a, const cursor& b) {
    const auto& x = lists[a.first][a.second];
    const auto& y = lists[b.first][b.second];
    return x.key != y.key ? x.key > y.key : x.index > y.index;
  };
  std::priority_queue<cursor, std::vector<cursor>, decltype(after)> heads(after);
  for (std::size_t l = 0; l < lists.size(); ++l)
    if (!lists[l].empty()) heads.push({l, 0});
  std::vector<top_k_entry<T>> out;
  while (!heads.empty() && out.size() < k) {
    const cursor c = heads.top();
    heads.pop();
    out.push_back(lists[c.first][c.second]);
    if (c.second + 1 < lists[c.first].size()) heads.push({c.first, c.second + 1});
  }
  return out;
}

/// The sample pass (step 0 at the top of this file): a key that at least k elements of `r` reach
/// (the k-th smallest of the places' chunk minima), the same on every rank. One host wait.
template <class T, class S>
radix_unsigned_t<T> top_k_sample_threshold(set_state& s, const S& r, std::uint64_t k, bool largest) {
  using U = radix_unsigned_t<T>;
  const partition& part = r.partition();
  const std::size_t places = part.places();
  std::vector<top_k_chunks> plan(places);
  std::uint64_t most = 0;
  for (std::size_t i = 0; i < places; ++i) {
    plan[i] = top_k_sample_plan(part.count(i), r.size(), k);
    most = std::max(most, plan[i].count);
  }
  const std::vector<std::uint64_t> minima = kept_counts(s, part, most, [&](std::uint64_t* words) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) {
      const top_k_chunks c = plan[i];
      const auto keys = thrust::make_transform_iterator(r.segment_at(i).data, radix_key<T>{largest});
      const thrust::counting_iterator<std::uint64_t> chunk(0);
      const auto begins = thrust::make_transform_iterator(chunk, top_k_chunk_edge{c.stride, 0});
      const auto ends = thrust::make_transform_iterator(chunk, top_k_chunk_edge{c.stride, c.length});
      const tabulate_output<strided_word, U> out{{words + i, places}, 0};
      run_cub(p, [&](void* temp, std::size_t& bytes) {
        return cub::DeviceSegmentedReduce::Reduce(temp, bytes, keys, out, static_cast<int>(c.count), begins, ends,
                                                  key_min{}, static_cast<U>(~U{0}), p.stream());
      });
    });
  });
  std::vector<U> all;
  for (std::size_t i = 0; i < places; ++i)
    for (std::uint64_t j = 0; j < plan[i].count; ++j) all.push_back(static_cast<U>(minima[j * places + i]));
  std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k - 1), all.end());
  return all[k - 1];
}

/// The radix select's pass 1 (see the top of this file): the prefix of the k-th element's key and
/// how many elements below it are in the answer. `hist` is the host array the histograms land in.
template <class T, class S>
std::pair<radix_prefix<radix_unsigned_t<T>>, std::uint64_t> top_k_prefix(const char* name, set_state& s, const S& r,
                                                                         std::uint64_t k, bool largest) {
  using U = radix_unsigned_t<T>;
  radix_prefix<U> at;
  std::uint64_t need = k;  // still needed from the elements whose key has the prefix
  const std::uint64_t small = top_k_bucket_limit(k);
  std::vector<unsigned long long> hist;
  while (at.decided < at.bits) {
    const int width = std::min(top_k_digit_bits, at.bits - at.decided);
    const int bins = 1 << width;
    hist.assign(static_cast<std::size_t>(bins), 0);
    const top_k_digit<T> digit{radix_key<T>{largest}, at, width};
    fold_arrays<unsigned long long>(
        name, s, r.partition(), static_cast<std::uint64_t>(bins), 0,
        [&](std::size_t i, place_state& p, unsigned long long* out, void*) {
          const auto seg = r.segment_at(i);
          run_cub(p, [&](void* temp, std::size_t& bytes) {
            return cub::DeviceHistogram::HistogramEven(temp, bytes, thrust::make_transform_iterator(seg.data, digit), out,
                                                       bins + 1, 0, bins, static_cast<std::int64_t>(seg.count),
                                                       p.stream());
          });
        },
        0ull, ::cuda::std::plus<unsigned long long>{}, hist.data());
    std::uint64_t below = 0;
    int b = 0;
    while (b < bins - 1 && below + hist[static_cast<std::size_t>(b)] < need) below += hist[static_cast<std::size_t>(b++)];
    need -= below;
    at.prefix = static_cast<U>((at.decided == 0 ? U{0} : static_cast<U>(at.prefix << width)) | static_cast<U>(b));
    at.decided += width;
    if (hist[static_cast<std::size_t>(b)] <= small) break;
  }
  return {at, k - need};
}

template <class T, class S>
top_k_result<T> top_k_impl(const S& r, std::uint64_t k, bool largest) {
  constexpr const char* name = "strata::top_k";
  using U = radix_unsigned_t<T>;
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                "strata::top_k: the elements must be numbers (integers or floating point), as sort's radix path");
  static_assert(sizeof(T) <= 8, "strata::top_k: elements of at most 8 bytes (no long double)");
  require_places(name, r);
  if (k > r.size())
    throw std::invalid_argument(std::string(name) + ": k is " + std::to_string(k) + " but the range holds " +
                                std::to_string(r.size()) + " elements");
  top_k_result<T> result;
  if (k == 0) return result;
  call_scope scope(r.places().state(), name);
  set_state& s = scope.state();
  const partition& part = r.partition();
  const radix_key<T> key{largest};
  // Candidates per place: at most `room` (the sample path's cap; the radix path's are at most the
  // elements below the bucket, < k, plus the bucket, bounded by the pass loop, or equal_cap <= k).
  // Scratch per place: positions and keys, twice, and k values.
  const std::uint64_t room = k + top_k_bucket_limit(k);
  const auto scratch_of = [&](place_state& p, std::uint64_t count) {
    const std::uint64_t m = std::min(count, room);
    const std::size_t pos_bytes = (m * sizeof(std::uint64_t) + 255) / 256 * 256;
    const std::size_t key_bytes = (m * sizeof(U) + 255) / 256 * 256;
    const std::size_t value_bytes = (k * sizeof(T) + 255) / 256 * 256;
    char* base = static_cast<char*>(p.scratch(2 * pos_bytes + 2 * key_bytes + value_bytes + 256));
    struct {
      std::uint64_t *pos, *pos_sorted;
      U *keys, *keys_sorted;
      T* values;
      unsigned long long* count;
    } b{reinterpret_cast<std::uint64_t*>(base), reinterpret_cast<std::uint64_t*>(base + pos_bytes),
        reinterpret_cast<U*>(base + 2 * pos_bytes), reinterpret_cast<U*>(base + 2 * pos_bytes + key_bytes),
        reinterpret_cast<T*>(base + 2 * pos_bytes + 2 * key_bytes),
        reinterpret_cast<unsigned long long*>(base + 2 * pos_bytes + 2 * key_bytes + value_bytes)};
    return b;
  };
  const thrust::counting_iterator<std::uint64_t> positions(0);
  std::vector<std::uint64_t> candidates(part.places(), 0);
  bool sampled = false;
  if (k <= top_k_sample_k_limit) {  // step 0: every element at or below the sample's threshold
    const U threshold = top_k_sample_threshold<T>(s, r, k, largest);
    candidates = kept_counts(s, part, [&](std::size_t i, place_state& p, std::uint64_t* count) {
      const auto seg = r.segment_at(i);
      const auto b = scratch_of(p, seg.count);
      STRATA_CUDA_CHECK(cudaMemsetAsync(b.count, 0, sizeof(unsigned long long), p.stream()));
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(
          seg.count, collect_at_most<T>{seg.data, key, threshold, b.keys, b.pos, b.count, room}, p.stream()));
      STRATA_CUDA_CHECK(cudaMemcpyAsync(count, b.count, sizeof(std::uint64_t), cudaMemcpyDeviceToHost, p.stream()));
    });
    sampled = std::all_of(candidates.begin(), candidates.end(), [&](std::uint64_t c) { return c <= room; });
  }
  if (!sampled) {  // steps 1 and 2: the radix select
    const auto found = top_k_prefix<T>(name, s, r, k, largest);
    const radix_prefix<U> at = found.first;  // (not a structured binding: lambdas capture it below)
    const std::uint64_t below = found.second;
    // One value left (every bit decided): of the elements equal to it, at most k - below per place.
    const bool one_value = at.decided == at.bits;
    const std::uint64_t equal_cap = k - below;
    const std::vector<std::uint64_t> counts = kept_counts(s, part, 2, [&](std::uint64_t* words) {
      for_each_segment(s, part, [&](std::size_t i, place_state& p) {
        const auto seg = r.segment_at(i);
        const auto b = scratch_of(p, seg.count);
        const auto n = static_cast<std::int64_t>(seg.count);
        std::uint64_t* first_count = words + i;
        run_cub(p, [&](void* temp, std::size_t& bytes) {
          return cub::DeviceSelect::If(temp, bytes, positions, b.pos, first_count, n,
                                       top_k_candidate<T>{seg.data, key, at, one_value, false}, p.stream());
        });
        if (!one_value) return;
        const tabulate_output<capped_after, std::uint64_t> sink{{b.pos, first_count, equal_cap}, 0};
        run_cub(p, [&](void* temp, std::size_t& bytes) {
          return cub::DeviceSelect::If(temp, bytes, positions, sink, words + part.places() + i, n,
                                       top_k_candidate<T>{seg.data, key, at, false, true}, p.stream());
        });
      });
    });
    for (std::size_t i = 0; i < part.places(); ++i)
      candidates[i] = counts[i] + std::min(counts[part.places() + i], one_value ? equal_cap : std::uint64_t{0});
  }
  // Sort each place's candidates and bring its first k to the host.
  std::vector<std::uint64_t> taken(part.places(), 0), at_entry(part.places() + 1, 0);
  for (std::size_t i = 0; i < part.places(); ++i) {
    taken[i] = s.local(i) ? std::min(candidates[i], k) : 0;
    at_entry[i + 1] = at_entry[i] + taken[i];
  }
  const std::size_t entry_bytes = sizeof(U) + sizeof(std::uint64_t) + sizeof(T);
  char* host = reinterpret_cast<char*>(s.host_words((at_entry.back() * entry_bytes + 7) / 8 + 1));
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    const std::uint64_t m = candidates[i];
    if (m == 0) return;
    const auto seg = r.segment_at(i);
    const auto b = scratch_of(p, seg.count);
    const auto sort = [&](const auto* keys_in, auto* keys_out, const auto* values_in, auto* values_out, int bits) {
      run_cub(p, [&](void* temp, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, values_in, values_out,
                                               static_cast<std::int64_t>(m), 0, bits, p.stream());
      });
    };
    // By (key, position): the sample path's candidates came in no order, so first by position
    // (into the *_sorted buffers), then stably by key (back); the radix path's are in position
    // order already.
    const U* keys_done = b.keys;
    const std::uint64_t* pos_done = b.pos;
    if (sampled) {
      sort(b.pos, b.pos_sorted, b.keys, b.keys_sorted, position_bits(seg.count));
      sort(b.keys_sorted, b.keys, b.pos_sorted, b.pos, static_cast<int>(8 * sizeof(U)));
    } else {
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(m, keys_of_positions<T>{seg.data, b.pos, b.keys, key}, p.stream()));
      sort(b.keys, b.keys_sorted, b.pos, b.pos_sorted, static_cast<int>(8 * sizeof(U)));
      keys_done = b.keys_sorted;
      pos_done = b.pos_sorted;
    }
    const std::uint64_t t = taken[i];
    STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(t, values_of_positions<T>{seg.data, pos_done, b.values}, p.stream()));
    char* mine = host + at_entry[i] * entry_bytes;  // keys, then positions, then values
    STRATA_CUDA_CHECK(cudaMemcpyAsync(mine, keys_done, t * sizeof(U), cudaMemcpyDeviceToHost, p.stream()));
    STRATA_CUDA_CHECK(cudaMemcpyAsync(mine + t * sizeof(U), pos_done, t * sizeof(std::uint64_t),
                                      cudaMemcpyDeviceToHost, p.stream()));
    STRATA_CUDA_CHECK(cudaMemcpyAsync(mine + t * (sizeof(U) + sizeof(std::uint64_t)), b.values, t * sizeof(T),
                                      cudaMemcpyDeviceToHost, p.stream()));
  });
  wait_segments(s, part);
  std::vector<std::vector<top_k_entry<T>>> lists;
  for (std::size_t i = 0; i < part.places(); ++i) {
    const std::uint64_t t = taken[i];
    if (t == 0) continue;
    const char* mine = host + at_entry[i] * entry_bytes;
    std::vector<top_k_entry<T>> l(t);
    for (std::uint64_t j = 0; j < t; ++j) {
      std::memcpy(&l[j].key, mine + j * sizeof(U), sizeof(U));
      std::uint64_t position;
      std::memcpy(&position, mine + t * sizeof(U) + j * sizeof(std::uint64_t), sizeof position);
      l[j].index = part.offset(i) + position;
      std::memcpy(&l[j].value, mine + t * (sizeof(U) + sizeof(std::uint64_t)) + j * sizeof(T), sizeof(T));
    }
    lists.push_back(std::move(l));
  }
  std::vector<top_k_entry<T>> best = merge_top_k(lists, k);
  if (s.link != nullptr) {
    // Across ranks: every rank's best k (sizes first), all-gathered, merged again in rank order.
    const auto sizes = all_gather_to_host(s, static_cast<std::uint64_t>(best.size()), name);
    const auto ranks = static_cast<std::size_t>(s.ranks.ranks()), me = static_cast<std::size_t>(s.ranks.rank());
    std::vector<std::size_t> region(ranks + 1, 0);
    std::size_t largest_region = 0;
    for (std::size_t q = 0; q < ranks; ++q) {
      region[q + 1] = region[q] + sizes[q] * sizeof(top_k_entry<T>);
      largest_region = std::max<std::size_t>(largest_region, sizes[q] * sizeof(top_k_entry<T>));
    }
    char* buffer = s.rank_buffer(rank_gather::bytes(s.ranks.ranks(), largest_region));
    char* all = reinterpret_cast<char*>(s.host_words((region.back() + 7) / 8 + 1));
    if (!best.empty()) std::memcpy(all + region[me], best.data(), best.size() * sizeof(top_k_entry<T>));
    all_gather_regions(s, all, region, buffer, {});
    wait_root(s, name);
    std::vector<std::vector<top_k_entry<T>>> per_rank(ranks);
    for (std::size_t q = 0; q < ranks; ++q) {
      per_rank[q].resize(sizes[q]);
      if (sizes[q] > 0) std::memcpy(per_rank[q].data(), all + region[q], sizes[q] * sizeof(top_k_entry<T>));
    }
    best = merge_top_k(per_rank, k);
  }
  result.values.reserve(best.size());
  result.indices.reserve(best.size());
  for (const auto& e : best) {
    result.values.push_back(e.value);
    result.indices.push_back(e.index);
  }
  return result;
}

}  // namespace detail

/// The `k` smallest elements of `r` and their global indices, smallest first, as a stable sort
/// by sort's radix order would place them (`-0.0` and `+0.0` equal, negative NaNs first, positive
/// NaNs last; equal elements in index order, so the lowest indices win ties). For k up to 2^16 a
/// sample pass (cub::DeviceSegmentedReduce of strided chunks, about 4k / (k + 2^16) of the data)
/// gives a threshold at least k elements reach, and every place collects the elements at or below
/// it in one read of its segment (a warp-aggregated append); where that leaves a place too many (data in an adversarial order,
/// many equal elements), and for larger k, a radix select (one cub::DeviceHistogram pass of 11
/// bits over every place per step, combined by the array fold) finds the bucket holding the k-th
/// element and every place selects from it (cub::DeviceSelect::If). Every place then sorts its
/// candidates by (key, index) with cub::DeviceRadixSort and hands its first k to the host, which merges the places' (and ranks')
/// lists. Requires arithmetic elements (not bool). Returns host vectors of k values and k indices;
/// the same on every rank of a set spanning processes (a collective there). Extra device memory per
/// place: about (k + max(2^16, k)) * (16 + 2 * sizeof(T)) bytes of its cached scratch, plus the
/// sample's minima or a 2048-bin histogram; pinned host memory for k entries per place. Waits twice
/// on the sample path (the minima, the candidates' counts), and once per radix step more where it
/// falls back. Throws std::invalid_argument (a range without places, k > r.size())
/// before any device work, strata::cuda_error for CUDA failures, the process group's error if a
/// rank fails or leaves.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
top_k_result<range_value_t<R>> top_k(const R& r, std::uint64_t k, smallest_t) {
  return detail::top_k_impl<std::remove_const_t<range_value_t<R>>>(detail::as_span(r), k, false);
}

/// The `k` largest elements of `r` and their global indices, largest first (sort's radix order
/// reversed: positive NaNs first; equal elements in index order, the lowest indices winning
/// ties). Everything else as top_k(r, k, strata::smallest).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
top_k_result<range_value_t<R>> top_k(const R& r, std::uint64_t k, largest_t) {
  return detail::top_k_impl<std::remove_const_t<range_value_t<R>>>(detail::as_span(r), k, true);
}

}  // namespace strata
