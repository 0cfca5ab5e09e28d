// Multi-place sort: sort, stable_sort, sort_by_key, stable_sort_by_key. Every place sorts its
// segment with CUB; an exact splitter search finds, for every place's share of the output, the
// piece of every sorted segment that belongs there; one exchange moves each key once; every place
// merges the sorted runs it received with CUB. The layout does not change. docs/design.md says
// why this algorithm and what it costs. Its phases live in detail/sort/: the order
// (order.cuh), the buffers and the reservation (buffers.cuh), the splitter search
// (splitters.cuh), the merges of runs (merge_runs.cuh) and the benchmarks' profile (profile.cuh);
// this header runs them in turn (sort_impl) and holds the public calls.
#pragma once

#include <strata/detail/checks.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/sort/buffers.cuh>
#include <strata/detail/sort/merge_runs.cuh>
#include <strata/detail/sort/order.cuh>
#include <strata/detail/sort/profile.cuh>
#include <strata/detail/sort/splitters.cuh>
#include <strata/distributed_span.cuh>
#include <strata/tags.cuh>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/util_type.cuh>

#include <cuda/std/functional>

#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

namespace detail {

template <class KS, class VS, class Comp>
void sort_impl(const char* name, const KS& keys, const VS* values, Comp comp, bool sync) {
  using K = typename KS::value_type;
  using V = std::conditional_t<std::is_same_v<VS, void>, no_values, typename std::conditional_t<std::is_same_v<VS, void>, KS, VS>::value_type>;
  constexpr bool has_values = !std::is_same_v<VS, void>;
  const auto ord = sort_order<K>(comp);
  sort_phases phases;

  call_scope scope(keys.places().state(), name);
  set_state& s = scope.state();
  const partition& part = keys.partition();
  const std::size_t k = part.places();
  std::size_t nonempty = 0;
  for (std::size_t i = 0; i < k; ++i) nonempty += part.count(i) > 0 ? 1 : 0;
  if (nonempty == 0) return;

  // Scratch first, for every place: an allocation failure leaves the input untouched, and what
  // this call grew is released again.
  std::vector<sort_buffers<K, V>> buf(k);
  std::vector<std::pair<std::size_t, std::size_t>> cached(k);
  for (std::size_t i = 0; i < k; ++i)
    if (s.local(i)) cached[i] = {s.places[i]->temp_storage_bytes(), s.places[i]->scratch_bytes()};
  const auto local_sort = [&](void* temp, std::size_t& bytes, sort_buffers<K, V>& b, cudaStream_t stream) {
    const auto n = static_cast<std::int64_t>(b.count);
    if constexpr (radix_path_v<K, Comp>) {
      constexpr bool desc = comparator_kind<std::decay_t<Comp>>::value == 2;
      cub::DoubleBuffer<K> dk(b.keys[0], b.keys[1]);
      cudaError_t e;
      if constexpr (has_values) {
        cub::DoubleBuffer<V> dv(b.values[0], b.values[1]);
        e = desc ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, dk, dv, n, 0, int(8 * sizeof(K)), stream)
                 : cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, 0, int(8 * sizeof(K)), stream);
      } else {
        e = desc ? cub::DeviceRadixSort::SortKeysDescending(temp, bytes, dk, n, 0, int(8 * sizeof(K)), stream)
                 : cub::DeviceRadixSort::SortKeys(temp, bytes, dk, n, 0, int(8 * sizeof(K)), stream);
      }
      if (temp != nullptr) b.cur = dk.selector;
      return e;
    } else {
      if constexpr (has_values)
        return cub::DeviceMergeSort::StableSortPairs(temp, bytes, b.keys[0], b.values[0], n, comp, stream);
      else
        return cub::DeviceMergeSort::StableSortKeys(temp, bytes, b.keys[0], n, comp, stream);
    }
  };
  // On a set spanning processes every rank takes part in the collectives below, so each first
  // reserves what the verdict takes (a failure there is thrown on its rank alone, and the others'
  // waits run into the link's timeout).
  const bool spans = s.link != nullptr;
  if (spans) reserve_all_gather(s, sizeof(rank_verdict));
  const auto release_grown = [&] {
    for (std::size_t i = 0; i < k; ++i) {
      if (!s.local(i)) continue;
      place_state& p = *s.places[i];
      if (cached[i] == std::make_pair(p.temp_storage_bytes(), p.scratch_bytes())) continue;
      try {
        device_guard g(p.device());
        p.release_cached();
      } catch (...) {  // the first failure is the one to report
      }
    }
  };
  std::exception_ptr failed;
  try {
    if constexpr (!radix_path_v<K, Comp>) {  // before anything else: a comparator such as <= is refused
      std::size_t first = 0;  // this process's first non-empty place
      while (first < k && (part.count(first) == 0 || !s.local(first))) ++first;
      if (first < k)
        at_place(s, first, [&](place_state& p) { require_irreflexive(name, p, keys.segment_at(first).data, comp, s.host_words(1)); });
    }
    for_each_segment(s, part, [&](std::size_t i, place_state& p) {
      sort_buffers<K, V>& b = buf[i];
      b.count = part.count(i);
      b.keys[0] = keys.segment_at(i).data;
      if constexpr (has_values) b.values[0] = values->segment_at(i).data;
      // One place alone needs no scratch on the comparison path (CUB sorts in place).
      const bool needs_scratch = nonempty > 1 || radix_path_v<K, Comp>;
      std::size_t need = 0;  // what this sort needs on the place (the caches may hold more)
      if (needs_scratch) {
        const std::size_t key_bytes = (b.count * sizeof(K) + 255) / 256 * 256;
        need = key_bytes + (has_values ? b.count * sizeof(V) : 0);
        char* sc = static_cast<char*>(p.scratch(need));
        b.keys[1] = reinterpret_cast<K*>(sc);
        if constexpr (has_values) b.values[1] = reinterpret_cast<V*>(sc + key_bytes);
      }
      auto ls = [&](void* temp, std::size_t& bytes, sort_buffers<K, V>& bb) { return local_sort(temp, bytes, bb, p.stream()); };
      if (nonempty > 1)
        need += reserve_sort_temp(p, b.count, ord, ls, b);
      else {
        std::size_t bytes = 0;
        STRATA_CUDA_CHECK(ls(nullptr, bytes, b));
        (void)p.temp_storage(bytes);
        need += bytes;
      }
      phases.needs(need);
    });
    // Then the splitter search's host words and, across ranks, its rank buffer: set-wide caches,
    // grown last so that a place that cannot reserve its memory leaves them as they were.
    if (nonempty > 1) {
      const std::uint64_t n = splitter_windows(part).pivots();
      (void)s.host_words(splitter_host_words<K>(n, k));
      if (spans) (void)s.rank_buffer(splitter_rank_bytes<K>(s, n));
      // The exchange's events and, on a staged set, its pinned ring (else allocated by the
      // exchange itself, after the local sorts have permuted the range).
      reserve_exchange(s);
    }
  } catch (...) {
    failed = std::current_exception();
  }
  throw_if_any_rank_failed(s, failed, name, "reserving its sort memory", release_grown);

  // 1. Local sorts.
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    sort_buffers<K, V>& b = buf[i];
    run_cub(p, [&](void* temp, std::size_t& bytes) { return local_sort(temp, bytes, b, p.stream()); });
    if (nonempty == 1) merge_runs(p, b, {0, b.count}, ord);  // one run: back into the user's buffer
  });
  if (nonempty == 1) {
    if (sync) wait_segments(s, part);
    return;
  }
  wait_segments(s, part);
  phases.local_done();

  // 2. Exact splitters.
  int rounds = 0;
  const auto splits = find_splitters(s, part, buf, ord, rounds);
  phases.splitters_done(rounds);

  // 3. One exchange: place j receives, from every place i in place order, the elements of i's
  // sorted segment between the splits of j's boundaries, into the buffer i's data is not in.
  std::vector<piece> pieces;
  std::vector<std::vector<std::uint64_t>> runs(k, std::vector<std::uint64_t>{0});
  for (std::size_t j = 0; j < k; ++j) {
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t from = splits[j][i], to = splits[j + 1][i];
      if (to > from) {
        pieces.push_back({i, from, j, at, to - from});
        at += to - from;
        runs[j].push_back(at);
      }
    }
  }
  std::vector<const void*> src_k(k, nullptr), src_v(k, nullptr);
  std::vector<void*> dst_k(k, nullptr), dst_v(k, nullptr);
  for (std::size_t i = 0; i < k; ++i) {
    if (buf[i].count == 0) continue;
    src_k[i] = buf[i].keys[buf[i].cur];
    dst_k[i] = buf[i].keys[1 - buf[i].cur];
    if constexpr (has_values) {
      src_v[i] = buf[i].values[buf[i].cur];
      dst_v[i] = buf[i].values[1 - buf[i].cur];
    }
  }
  exchange(s, src_k, s, dst_k, sizeof(K), pieces);
  if constexpr (has_values) exchange(s, src_v, s, dst_v, sizeof(V), pieces);
  // 4. Every place merges what it received (after its own segment's readers are done: the
  // exchange ordered them).
  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    buf[i].cur = 1 - buf[i].cur;
    merge_runs(p, buf[i], runs[i], ord);
  });
  if (sync) wait_segments(s, part);
  phases.exchange_done();
}

template <class R, class Comp>
void sort_keys(const char* name, R&& r_in, Comp comp, bool sync) {
  const auto r = as_span(r_in);
  require_sortable(name, r);
  sort_impl<std::decay_t<decltype(r)>, void>(name, r, nullptr, comp, sync);
}

template <class RK, class RV, class Comp>
void sort_pairs(const char* name, RK&& k_in, RV&& v_in, Comp comp, bool sync) {
  const auto keys = as_span(k_in);
  const auto values = as_span(v_in);
  require_sortable(name, keys);
  require_sortable(name, values);
  require_same_layout(name, keys, values);
  require_disjoint(name, keys, values);
  sort_impl(name, keys, &values, comp, sync);
}

}  // namespace detail

/// Sorts the range in place under `comp` (default `<`), across all its places: afterwards every
/// place holds the same number of elements as before (the layout does not change) and the whole
/// range is in order. Arithmetic keys with `cuda::std::less`/`greater` or `std::less`/`greater`
/// take the radix path (cub::DeviceRadixSort) and follow CUB's radix order: `-0.0` and `+0.0` are
/// equal, negative NaNs come before `-inf` and positive NaNs after `+inf`. Any other strict weak
/// order takes the comparison path (cub::DeviceMergeSort); it must be a `__host__ __device__`
/// callable or an extended lambda. Equal elements may end up in any order (see stable_sort).
/// A comparator that is no strict weak order (e.g. not transitive) is undefined behaviour, as for
/// CUB's sorts and std::sort: CUB's merge sort can then read out of bounds and fault the device.
/// Strata checks comp(x, x) (below), and its splitter search throws std::logic_error where it sees
/// the order contradict itself across places, before any element crosses places.
///
/// Extra device memory per place: one more segment of keys (none on the comparison path with a
/// single non-empty place) plus CUB's temporary storage, both kept by the place for later calls
/// (device_set::release_cached_memory frees them). Waits for the work (the host
/// also waits a few times in the middle, for the splitter search). Throws std::invalid_argument
/// for a range without places, and on the comparison path for a comparator with comp(x, x) true
/// for the first key (<= instead of <: checked before any key moves); strata::cuda_error if an allocation fails (naming the device:
/// the range is then unchanged and nothing stays allocated) or if a CUDA call fails (the range's
/// contents are then unspecified).
///
/// On a device_set spanning processes the sort is a collective: every rank calls it, with the
/// same comparator, and each sorts, searches and merges on its own places while the splitter
/// search's pivots and counts cross ranks in two all-gathers per round and the elements in one
/// exchange (grouped ncclSend/ncclRecv). Before any element moves the ranks agree that every one
/// of them reserved its memory: if one could not, every rank throws strata::cuda_error (naming
/// that rank, its device and the CUDA error; the range unchanged on every rank). A rank that fails
/// or stops taking part makes the others abort the communicator and throw strata::nccl_error
/// instead of waiting forever.
template <class R, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<R> && detail::not_nosync_v<Comp>>>
void sort(R&& r, Comp comp = {}) {
  detail::sort_keys("strata::sort", r, comp, true);
}
/// As sort(r, comp), returning once the last merges are enqueued (see strata::nosync).
template <class R, class Comp, class = std::enable_if_t<is_distributed_range_v<R>>>
void sort(R&& r, Comp comp, nosync_t) {
  detail::sort_keys("strata::sort", r, comp, false);
}
/// As sort(r), returning once the last merges are enqueued (see strata::nosync).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
void sort(R&& r, nosync_t) {
  detail::sort_keys("strata::sort", r, ::cuda::std::less<>{}, false);
}

/// As sort, and equal elements keep their relative order (as std::stable_sort). Same cost: the
/// local sorts are stable, the splitters break ties by place and position, and the merges take
/// the earlier place's element first.
template <class R, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<R> && detail::not_nosync_v<Comp>>>
void stable_sort(R&& r, Comp comp = {}) {
  detail::sort_keys("strata::stable_sort", r, comp, true);
}
/// As stable_sort(r, comp), returning once the last merges are enqueued (see strata::nosync).
template <class R, class Comp, class = std::enable_if_t<is_distributed_range_v<R>>>
void stable_sort(R&& r, Comp comp, nosync_t) {
  detail::sort_keys("strata::stable_sort", r, comp, false);
}
/// As stable_sort(r), returning once the last merges are enqueued (see strata::nosync).
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
void stable_sort(R&& r, nosync_t) {
  detail::sort_keys("strata::stable_sort", r, ::cuda::std::less<>{}, false);
}

/// Sorts `keys` as sort does and applies the same permutation to `values` (as thrust::sort_by_key).
/// `values` must have the keys' size, device_set and partition and must not overlap them. Extra
/// device memory per place: one more segment of keys and one of values, plus CUB's temporary
/// storage. Throws as sort, and std::invalid_argument for mismatched layouts.
template <class RK, class RV, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV> &&
                                   detail::not_nosync_v<Comp>>>
void sort_by_key(RK&& keys, RV&& values, Comp comp = {}) {
  detail::sort_pairs("strata::sort_by_key", keys, values, comp, true);
}
/// As sort_by_key(keys, values, comp), returning once the last merges are enqueued (see strata::nosync).
template <class RK, class RV, class Comp, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void sort_by_key(RK&& keys, RV&& values, Comp comp, nosync_t) {
  detail::sort_pairs("strata::sort_by_key", keys, values, comp, false);
}
/// As sort_by_key(keys, values), returning once the last merges are enqueued (see strata::nosync).
template <class RK, class RV, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void sort_by_key(RK&& keys, RV&& values, nosync_t) {
  detail::sort_pairs("strata::sort_by_key", keys, values, ::cuda::std::less<>{}, false);
}

/// As sort_by_key, and values of equal keys keep their relative order (as thrust::stable_sort_by_key).
template <class RK, class RV, class Comp = ::cuda::std::less<>,
          class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV> &&
                                   detail::not_nosync_v<Comp>>>
void stable_sort_by_key(RK&& keys, RV&& values, Comp comp = {}) {
  detail::sort_pairs("strata::stable_sort_by_key", keys, values, comp, true);
}
/// As stable_sort_by_key(keys, values, comp), returning once the last merges are enqueued (see
/// strata::nosync).
template <class RK, class RV, class Comp, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void stable_sort_by_key(RK&& keys, RV&& values, Comp comp, nosync_t) {
  detail::sort_pairs("strata::stable_sort_by_key", keys, values, comp, false);
}
/// As stable_sort_by_key(keys, values), returning once the last merges are enqueued (see strata::nosync).
template <class RK, class RV, class = std::enable_if_t<is_distributed_range_v<RK> && is_distributed_range_v<RV>>>
void stable_sort_by_key(RK&& keys, RV&& values, nosync_t) {
  detail::sort_pairs("strata::stable_sort_by_key", keys, values, ::cuda::std::less<>{}, false);
}

}  // namespace strata
