// Moving elements by global index (gather, scatter): where an index lives, how many indices every
// place sends to every owner, and the two ways elements travel. Where every place reaches every
// other's memory (one process, one device or peer access), a kernel on each place reads or writes
// the owners' segments directly, ordered by events (with_direct_access). Anywhere else (forced
// host staging, places without peer access, sets spanning processes) the indices are bucketed by
// owner: every place sorts its entries' positions by owner (one short CUB radix sort), the local
// indices go to their owners through the one exchange (detail/exchange.cuh), and the values travel
// back or along through it too (owner_requests). Both first count the indices per owner, which
// checks every index before anything is written. (Over 500 lines: both paths start from the same
// count of indices per owner and the same bucketing, which would otherwise sit in a third header
// that each of two includes; kept together.)
#pragma once

#include <strata/detail/cub_glue.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/host_counts.cuh>
#include <strata/detail/place_state.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/distributed_span.cuh>
#include <strata/partition.hpp>

#include <cub/device/device_for.cuh>
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_transform.cuh>

#include <cuda/std/functional>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::detail {

static_assert(max_places < 255, "owners are bucketed in one byte");

// Tables that kernels index by a computed position (a partition's offsets, its segments'
// pointers, the searches' first elements) live in device memory, in each place's lookup table,
// never by value in a functor: indexing an array there makes every thread copy the whole functor
// into local memory (1 KB per thread at 64 places), which ran gather at 0.11x thrust::gather and
// lower_bound at 0.6x thrust::lower_bound on an H100 (2026-12-07).

/// The first words of a lookup table for a range laid out as `part`: its P + 1 global offsets.
inline std::vector<std::uint64_t> offset_table(const partition& part) {
  std::vector<std::uint64_t> words(part.places() + 1);
  for (std::size_t i = 0; i < part.places(); ++i) words[i] = part.offset(i);
  words[part.places()] = part.size();
  return words;
}

/// A range's lookup table: offset_table, then its P segments' pointers (as segment_lookup reads).
template <class S>
std::vector<std::uint64_t> segment_table(const S& r) {
  std::vector<std::uint64_t> words = offset_table(r.partition());
  for (std::size_t i = 0; i < r.segment_count(); ++i)
    words.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(r.segment_at(i).data)));
  return words;
}

/// Appends `v` to a lookup table at a 16-byte boundary (for elements of up to 16 bytes); returns
/// the word it starts at.
template <class T>
std::size_t append_table(std::vector<std::uint64_t>& words, const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 16, "a lookup table holds plain values");
  if (words.size() % 2 != 0) words.push_back(0);
  const std::size_t at = words.size();
  words.resize(at + (v.size() * sizeof(T) + 15) / 16 * 2, 0);
  if (!v.empty()) std::memcpy(words.data() + at, v.data(), v.size() * sizeof(T));
  return at;
}

/// The copy of up to 128 table words into device memory, one thread a word (picked with constant
/// indices, so that the words stay in the kernel's parameters and no thread copies them).
struct store_words {
  std::uint64_t word[128];
  std::uint64_t* to;
  __device__ void operator()(std::uint32_t i) const {
    std::uint64_t w = 0;
#pragma unroll
    for (std::uint32_t j = 0; j < 128; ++j)
      if (j == i) w = word[j];
    to[i] = w;
  }
};

/// Enqueues on `p`'s stream the copy of `words` into p's lookup table and returns the table (its
/// device current): kernels enqueued after it on the stream may read it, until the next upload.
inline const std::uint64_t* upload_table(place_state& p, const std::vector<std::uint64_t>& words) {
  std::uint64_t* to = p.lookup_table(words.size());
  for (std::size_t at = 0; at < words.size(); at += 128) {
    store_words w{};
    const std::size_t n = words.size() - at < 128 ? words.size() - at : 128;
    for (std::size_t j = 0; j < n; ++j) w.word[j] = words[at + j];
    w.to = to + at;
    STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(static_cast<std::uint32_t>(n), w, p.stream()));
  }
  return to;
}

/// A partition's global offsets in a lookup table: which place holds a global index.
struct owner_lookup {
  const std::uint64_t* offset;  // P + 1 words
  int places;
  __host__ __device__ std::uint64_t size() const { return offset[places]; }
  /// The place whose segment holds global index g (requires g < size()): the non-empty segment
  /// with offset[o] <= g < offset[o + 1].
  __host__ __device__ int owner(std::uint64_t g) const {
    int lo = 0, hi = places;  // offset[lo] <= g < offset[hi]
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (offset[mid] <= g)
        lo = mid;
      else
        hi = mid;
    }
    return lo;
  }
};

/// A range's segments in its lookup table (segment_table): element g (global index) of the range.
template <class T>
struct segment_lookup {
  owner_lookup t;
  __host__ __device__ T* data(int o) const {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(t.offset[t.places + 1 + o]));
  }
  __host__ __device__ T& operator[](std::uint64_t g) const {
    const int o = t.owner(g);
    return data(o)[g - t.offset[o]];
  }
};

/// The owner of an index, or `places` (the out-of-range bucket) for one outside [0, size()).
template <class I>
struct owner_of {
  owner_lookup t;
  __host__ __device__ std::uint8_t operator()(I x) const {
    if constexpr (std::is_signed_v<I>)
      if (x < 0) return static_cast<std::uint8_t>(t.places);
    const auto g = static_cast<std::uint64_t>(x);
    return static_cast<std::uint8_t>(g < t.size() ? t.owner(g) : t.places);
  }
};

/// The histogram bins each owner bucket of count_owners is spread over: a power of two that keeps
/// all bins within 2048 (CUB's per-block shared-memory histogram). One bin per owner serialised
/// CUB's atomics: at one place every sample hit one counter (gather ran at 0.14x thrust::gather on
/// an H100, 2026-12-07).
inline int owner_spread(std::size_t buckets) {
  int spread = 1;
  while (spread < 256 && static_cast<std::size_t>(spread) * 2 * buckets <= 2048) spread *= 2;
  return spread;
}

/// The histogram sample of position j of a segment: its element's owner bucket, spread over
/// `spread` bins by the position's low bits (neighbouring threads add into different counters).
template <class T, class Owner>
struct spread_owner_key {
  const T* data;
  Owner owner;
  int spread;
  __host__ __device__ int operator()(std::uint64_t j) const {
    return static_cast<int>(owner(data[j])) * spread + static_cast<int>(j & static_cast<std::uint64_t>(spread - 1));
  }
};

/// words[b * k + i] = the sum of bucket b's `spread` counters.
struct sum_spread_counters {
  const unsigned long long* counters;
  std::uint64_t* words;
  std::size_t k, i;
  int spread;
  __device__ void operator()(std::uint64_t b) const {
    std::uint64_t sum = 0;
    for (int j = 0; j < spread; ++j) sum += counters[b * static_cast<std::uint64_t>(spread) + static_cast<std::uint64_t>(j)];
    words[b * k + i] = sum;
  }
};

/// Counts, for every place i of `in` and every bucket b < `buckets`, the elements x of in's
/// segment i with owner(x) == b, where `owner = owner_at(place)` is the one-byte owner key of the
/// place (reading its lookup table: upload it first), by CUB's histogram, each bucket spread over
/// owner_spread(buckets) bins and summed on the device: word b * k + i of the result (k = in's
/// places), read on the host once and the same on every rank.
template <class S, class OwnerAt>
std::vector<std::uint64_t> count_owners(set_state& s, const S& in, std::size_t buckets, const OwnerAt& owner_at) {
  const partition& part = in.partition();
  const std::size_t k = part.places();
  const int spread = owner_spread(buckets);
  const int bins = static_cast<int>(buckets) * spread;
  return kept_counts(s, part, buckets, [&](std::uint64_t* words) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) {
      const auto seg = in.segment_at(i);
      using T = std::remove_const_t<std::remove_reference_t<decltype(*seg.data)>>;
      const auto owner = owner_at(p);
      using Owner = decltype(owner);
      const auto keys = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0),
                                                        spread_owner_key<T, Owner>{seg.data, owner, spread});
      using counter = unsigned long long;  // (what CUB's atomics add into)
      const auto histogram = [&](void* temp, std::size_t& bytes, counter* c) {
        return cub::DeviceHistogram::HistogramEven(temp, bytes, keys, c, bins + 1, 0, bins,
                                                   static_cast<std::int64_t>(seg.count), p.stream());
      };
      std::size_t bytes = 0;
      STRATA_CUDA_CHECK(histogram(nullptr, bytes, nullptr));
      const std::size_t at = (bytes + 255) / 256 * 256;  // the counters after CUB's temp storage
      char* temp = static_cast<char*>(p.temp_storage(at + static_cast<std::size_t>(bins) * sizeof(counter)));
      auto* c = reinterpret_cast<counter*>(temp + at);
      STRATA_CUDA_CHECK(histogram(temp, bytes, c));
      STRATA_CUDA_CHECK(cub::DeviceFor::Bulk(static_cast<std::uint64_t>(buckets), sum_spread_counters{c, words, k, i, spread},
                                             p.stream()));
    });
  });
}

/// The owner key of an index into the range laid out as `target`, on a place whose lookup table
/// begins with the target's offset_table.
template <class I>
owner_of<I> owner_of_index(place_state& p, const partition& target) {
  return {{p.lookup_table(), static_cast<int>(target.places())}};
}

/// Throws std::out_of_range (naming `name`, the number of bad indices and the range) if the `k`
/// per-place counts of indices outside [0, size) at `bad` add up to more than 0.
inline void throw_if_bad_indices(const char* name, const std::uint64_t* bad, std::size_t k, std::uint64_t size) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < k; ++i) sum += bad[i];
  if (sum > 0)
    throw std::out_of_range(std::string(name) + ": " + std::to_string(sum) + " of the map's indices lie outside [0, " +
                            std::to_string(size) + "); nothing was written");
}

/// count_owners of a map of indices into the range laid out as `target` (map's places hold its
/// offset_table first in their lookup tables): word j * k + i counts the entries of map's segment
/// i that place j owns. Throws std::out_of_range (naming `name`, the number of bad indices and the
/// range) if an index lies outside [0, target.size()); nothing has been written then.
template <class I>
std::vector<std::uint64_t> count_by_owner(const char* name, set_state& s, const distributed_span<const I>& map,
                                          const partition& target) {
  const std::size_t k = map.partition().places(), buckets = target.places() + 1;
  std::vector<std::uint64_t> counts =
      count_owners(s, map, buckets, [&](place_state& p) { return owner_of_index<I>(p, target); });
  throw_if_bad_indices(name, counts.data() + (buckets - 1) * k, k, target.size());
  return counts;
}

/// 1 for an index outside [0, size), else 0.
template <class I>
struct index_outside {
  std::uint64_t size;
  __host__ __device__ std::uint64_t operator()(I x) const {
    if constexpr (std::is_signed_v<I>)
      if (x < 0) return 1;
    return static_cast<std::uint64_t>(x) < size ? 0 : 1;
  }
};

/// Checks `map`'s indices into a range of `size` elements where nothing needs the per-owner counts
/// (the direct moves): one CUB reduction per place counts those outside [0, size), one host wait.
/// Throws std::out_of_range as count_by_owner.
template <class I>
void check_indices(const char* name, set_state& s, const distributed_span<const I>& map, std::uint64_t size) {
  const std::vector<std::uint64_t> bad = kept_counts(s, map.partition(), [&](std::size_t i, place_state& p, std::uint64_t* word) {
    const auto seg = map.segment_at(i);
    run_cub(p, [&](void* temp, std::size_t& bytes) {
      return reduce_no_init<std::uint64_t>(temp, bytes, seg.data, word, seg.count, ::cuda::std::plus<std::uint64_t>{},
                                           index_outside<I>{size}, p.stream());
    });
  });
  throw_if_bad_indices(name, bad.data(), bad.size(), size);
}

/// True if, in one process, every place with entries of `map_part` reaches every place with
/// elements of `owner_part` directly (then kernels move the elements; else the exchange does).
inline bool owners_reached(const set_state& s, const partition& map_part, const partition& owner_part) {
  if (s.link != nullptr) return false;
  for (std::size_t i = 0; i < map_part.places(); ++i)
    for (std::size_t j = 0; j < owner_part.places(); ++j)
      if (map_part.count(i) > 0 && owner_part.count(j) > 0 && !places_reach(s, i, s, j)) return false;
  return true;
}

/// Runs `f(i, place)` on every place with a non-empty segment of `actors`, each of which touches
/// the memory of the places with elements of `targets` directly (reads or writes), ordered by
/// events with no host wait: every target first records an event after its earlier work, every
/// actor waits for those before `f` and records an event after it, and every target then waits for
/// every actor, so that later work on a target stays behind what the actors did to it. Requires
/// owners_reached(s, actors, targets).
template <class F>
void with_direct_access(set_state& s, const partition& actors, const partition& targets, F&& f) {
  for_each_segment(s, targets, [](std::size_t, place_state& p) {
    STRATA_CUDA_CHECK(cudaEventRecord(p.exchange_ready(), p.stream()));
  });
  for_each_segment(s, actors, [&](std::size_t i, place_state& p) {
    for (std::size_t j = 0; j < targets.places(); ++j)
      if (targets.count(j) > 0 && j != i) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), s.places[j]->exchange_ready(), 0));
    f(i, p);
    STRATA_CUDA_CHECK(cudaEventRecord(p.exchange_done(), p.stream()));
  });
  for_each_segment(s, targets, [&](std::size_t j, place_state& p) {
    for (std::size_t i = 0; i < actors.places(); ++i)
      if (actors.count(i) > 0 && i != j) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), s.places[i]->exchange_done(), 0));
  });
}

struct identity_index {
  __host__ __device__ std::uint64_t operator()(std::uint64_t i) const { return i; }
};

/// The local index, at its owner, of the entry at sorted position t: map[pos[t]] - offset[owner].
template <class I>
struct local_index_at {
  const I* map;
  const std::uint64_t* pos;
  const std::uint8_t* owner;
  owner_lookup t;
  __host__ __device__ std::uint64_t operator()(std::uint64_t k) const {
    return static_cast<std::uint64_t>(map[pos[k]]) - t.offset[owner[k]];
  }
};

/// values[t] = data[index[t]] (a place's local read by local indices).
template <class T>
struct read_local {
  const T* data;
  __host__ __device__ T operator()(std::uint64_t i) const { return data[i]; }
};

/// data[index[t]] = values[t] (a place's local write by local indices), converted to T.
template <class T, class V = T>
struct write_local {
  T* data;
  const std::uint64_t* index;
  const V* values;
  __host__ __device__ void operator()(std::uint64_t k) const { data[index[k]] = static_cast<T>(values[k]); }
};

template <class T>
std::vector<const void*> const_pointers(const std::vector<T*>& v) {
  return std::vector<const void*>(v.begin(), v.end());
}

/// The bucketed form of a move by owner, prepared: every place i of the entries has their
/// positions sorted by owner (`pos[i]`, stable, so each owner's share keeps the entries' order)
/// and, in that order, what each entry sends its owner (`payload[i]`: a local index, a query);
/// `sent[i]` has room for n_i values (what comes back, or goes along). `to_owners` are the pieces
/// that carry place i's share for owner j to j, into `served[j]` (R_j payloads, from the places in
/// order, with room `served_values[j]` for R_j values); `from_owners` are the same pieces
/// reversed. The buffers live in the places' cached scratch.
struct owner_requests {
  std::vector<std::uint64_t> served_count;  // R_j
  std::vector<std::uint64_t*> pos;
  std::vector<void*> payload, served, sent, served_values;
  std::vector<piece> to_owners, from_owners;
};

inline std::size_t aligned_256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// The host half of request_owners: from the counts (word j * k + i: entries of place i, of k,
/// owned by place j, of `owners`) the pieces that carry place i's share for owner j to j (its
/// entries sorted by owner, so the share starts after those for owners < j; at j after the shares
/// of places < i), the same pieces reversed, and R_j. Host-tested.
inline void plan_owner_pieces(const std::vector<std::uint64_t>& counts, std::size_t k, std::size_t owners,
                              owner_requests& r) {
  r.to_owners.clear();
  r.from_owners.clear();
  r.served_count.assign(owners, 0);
  std::vector<std::uint64_t> sent(k, 0);  // per place: its shares for the owners before j
  for (std::size_t j = 0; j < owners; ++j)
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t c = counts[j * k + i];
      if (c > 0) {
        r.to_owners.push_back({i, sent[i], j, r.served_count[j], c});
        r.from_owners.push_back({j, r.served_count[j], i, sent[i], c});
      }
      sent[i] += c;
      r.served_count[j] += c;
    }
}

/// Prepares owner_requests for the entries `in` (its places i) against `owners` owning places
/// (the same set's places j), from count_owners' `counts` under the same `owner_at`, with payloads of
/// `payload_bytes` and values of `value_bytes` bytes. Takes every place's scratch before any
/// device work beyond the counting (and, on a set spanning processes, the ranks agree on any
/// allocation failure first), so running out of memory throws strata::cuda_error with nothing
/// written. Then enqueues on each place the owners' computation, a one-byte CUB radix sort of the
/// positions by owner, and `fill(i, place, pos, sorted_owners, payload)`, which writes the
/// payloads; nothing waits.
template <class S, class OwnerAt, class Fill>
owner_requests request_owners(const char* name, set_state& s, const S& in, const OwnerAt& owner_at, std::size_t owners,
                              const std::vector<std::uint64_t>& counts, std::size_t payload_bytes,
                              std::size_t value_bytes, Fill&& fill) {
  const partition& part = in.partition();
  const std::size_t k = part.places();
  owner_requests r;
  r.pos.assign(k, nullptr);
  r.payload.assign(k, nullptr);
  r.sent.assign(k, nullptr);
  r.served.assign(owners, nullptr);
  r.served_values.assign(owners, nullptr);
  plan_owner_pieces(counts, k, owners, r);
  // One scratch per place (a place may hold entries and be an owner): owner keys twice, positions
  // twice (the presorted ones' buffer then holds payloads of up to 8 bytes), larger payloads, n_i
  // values, and R_j payloads and values.
  const int end_bit = owners <= 1 ? 1 : static_cast<int>(32 - __builtin_clz(static_cast<unsigned>(owners - 1)));
  std::vector<std::uint8_t*> keys(k, nullptr), sorted_keys(k, nullptr);
  std::vector<std::uint64_t*> spare(k, nullptr);  // the sort's second value buffer
  std::vector<void*> wide(k, nullptr);            // payloads of more than 8 bytes
  const auto sort = [&](std::size_t i, place_state& p, void* temp, std::size_t& bytes) {
    const std::uint64_t n = part.count(i);
    cub::DoubleBuffer<std::uint8_t> dk(keys[i], keys[i] + aligned_256(n));
    cub::DoubleBuffer<std::uint64_t> dv(spare[i], r.pos[i]);
    const cudaError_t e =
        cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, static_cast<std::int64_t>(n), 0, end_bit, p.stream());
    if (temp != nullptr) {
      sorted_keys[i] = dk.Current();
      if (dv.Current() != r.pos[i]) std::swap(r.pos[i], spare[i]);  // pos: the sorted positions
    }
    return e;
  };
  if (s.link != nullptr) reserve_all_gather(s, sizeof(rank_verdict));
  std::exception_ptr failed;
  try {
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!s.local(i)) continue;
      const std::uint64_t n = i < k ? part.count(i) : 0, m = i < owners ? r.served_count[i] : 0;
      if (n == 0 && m == 0) continue;
      at_place(s, i, [&](place_state& p) {
        const std::size_t kb = aligned_256(n), pb = aligned_256(8 * n),
                          xb = payload_bytes > 8 ? aligned_256(payload_bytes * n) : 0, vb = aligned_256(value_bytes * n),
                          sb = aligned_256(payload_bytes * m);
        char* sc = static_cast<char*>(p.scratch(2 * kb + 2 * pb + xb + vb + sb + aligned_256(value_bytes * m)));
        if (n > 0) {
          keys[i] = reinterpret_cast<std::uint8_t*>(sc);
          spare[i] = reinterpret_cast<std::uint64_t*>(sc + 2 * kb);
          r.pos[i] = reinterpret_cast<std::uint64_t*>(sc + 2 * kb + pb);
          wide[i] = sc + 2 * kb + 2 * pb;
          r.sent[i] = sc + 2 * kb + 2 * pb + xb;
          std::size_t bytes = 0;
          STRATA_CUDA_CHECK(sort(i, p, nullptr, bytes));
          (void)p.temp_storage(bytes);
        }
        if (m > 0) {
          r.served[i] = sc + 2 * kb + 2 * pb + xb + vb;
          r.served_values[i] = sc + 2 * kb + 2 * pb + xb + vb + sb;
        }
      });
    }
    reserve_exchange(s);
  } catch (...) {
    failed = std::current_exception();
  }
  throw_if_any_rank_failed(s, failed, name, "reserving its exchange memory", [] {});

  for_each_segment(s, part, [&](std::size_t i, place_state& p) {
    const auto seg = in.segment_at(i);
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(seg.data, keys[i], seg.count, owner_at(p), p.stream()));
    STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(thrust::counting_iterator<std::uint64_t>(0), spare[i], seg.count,
                                                      identity_index{}, p.stream()));
    run_cub(p, [&](void* temp, std::size_t& bytes) { return sort(i, p, temp, bytes); });
    // Payloads of up to 8 bytes take the spare buffer; larger ones their own, before the values.
    r.payload[i] = payload_bytes > 8 ? wide[i] : static_cast<void*>(spare[i]);
    fill(i, p, static_cast<const std::uint64_t*>(r.pos[i]), static_cast<const std::uint8_t*>(sorted_keys[i]), r.payload[i]);
  });
  return r;
}

/// request_owners for a map of indices into the range laid out as `t` (gather, scatter): each
/// entry's payload is its index local to its owner (8 bytes).
template <class I>
owner_requests request_by_index(const char* name, set_state& s, const distributed_span<const I>& map,
                                const partition& target, const std::vector<std::uint64_t>& counts, std::size_t value_bytes) {
  const auto owner_at = [&](place_state& p) { return owner_of_index<I>(p, target); };
  return request_owners(name, s, map, owner_at, target.places(), counts, sizeof(std::uint64_t), value_bytes,
                        [&](std::size_t i, place_state& p, const std::uint64_t* pos, const std::uint8_t* owner, void* payload) {
                          const auto seg = map.segment_at(i);
                          STRATA_CUDA_CHECK(cub::DeviceTransform::Transform(
                              thrust::counting_iterator<std::uint64_t>(0), static_cast<std::uint64_t*>(payload), seg.count,
                              local_index_at<I>{seg.data, pos, owner, owner_at(p).t}, p.stream()));
                        });
}

/// Runs `f(j, place)` on every owner place of this process that was sent entries (R_j > 0), its
/// device current: the owners' side of a bucketed move.
template <class F>
void for_each_owner(set_state& s, const owner_requests& r, F&& f) {
  for (std::size_t j = 0; j < r.served_count.size(); ++j)
    if (s.local(j) && r.served_count[j] > 0) at_place(s, j, [&](place_state& p) { f(j, p); });
}

/// The shape gather and scatter share, for a map of indices into the range `target` (the other
/// side of the move): every place of the map uploads target's segment_table into its lookup
/// table; then, where every place reaches the others, the indices are checked (check_indices, the
/// one host wait) and `direct(i, place, target's segments)` (a segment_lookup<T> reading the
/// table) runs on every place of the map (with_direct_access); elsewhere the indices are counted
/// per owner and checked (count_by_owner, the one host wait) and `bucketed(state, requests)` runs
/// with owner_requests for values of sizeof(T) bytes. An empty map does nothing.
template <class I, class T, class Direct, class Bucketed>
void move_by_index(const char* name, const distributed_span<const I>& map, const distributed_span<T>& target,
                   Direct&& direct, Bucketed&& bucketed) {
  if (map.size() == 0) return;
  call_scope scope(map.places().state(), name);
  set_state& s = scope.state();
  const std::vector<std::uint64_t> table = segment_table(target);
  for_each_segment(s, map.partition(), [&](std::size_t, place_state& p) { (void)upload_table(p, table); });
  if (owners_reached(s, map.partition(), target.partition())) {
    check_indices(name, s, map, target.size());
    with_direct_access(s, map.partition(), target.partition(), [&](std::size_t i, place_state& p) {
      direct(i, p, segment_lookup<T>{owner_of_index<I>(p, target.partition()).t});
    });
    return;
  }
  const std::vector<std::uint64_t> counts = count_by_owner(name, s, map, target.partition());
  owner_requests r = request_by_index(name, s, map, target.partition(), counts, sizeof(T));
  bucketed(s, r);
}

}  // namespace strata::detail
