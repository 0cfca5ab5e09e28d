// Collectives between the ranks of a device set spanning processes, over the set's rank_link: every
// rank's slot stamped (rank_link.cuh) and all-gathered on the root's stream, the stamps checked on
// the device (a rank that did not take part is recorded, and the next wait on the set throws),
// all-gathers of host regions, and the agreement on a step that may fail on one rank alone (before
// anything moves). Used by the fold across ranks, sort, compaction and measure_topology.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold_slots.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::detail {

/// A root task after a collective: records the first rank whose slot the collective did not
/// write (sticky, in the set's missing-rank word), then runs `task`.
template <class Task>
struct checked_task {
  Task task;
  const char* gathered;
  int ranks;
  std::size_t slot, stamp_at;
  std::uint64_t stamp;
  int* missing;
  __device__ void operator()() const {
    const int m = first_unstamped(gathered, ranks, slot, stamp_at, stamp);
    if (m >= 0 && *missing < 0) *missing = m;
    task();
  }
};

/// On the root's stream of a set spanning processes: `pack()` on one thread (it fills this rank's
/// slot of `buffer`), then the in-place all-gather of `slot` bytes per rank. The one way a
/// collective's slots are filled and gathered.
template <class Pack>
void pack_and_all_gather(set_state& s, char* buffer, std::size_t slot, const Pack& pack) {
  launch_on_root(s, pack);
  device_guard g(s.root_device());
  active_place_scope a(static_cast<int>(s.root_index));
  s.link->all_gather(buffer, slot, s.root().stream());
}

/// The slots of one all-gather at `base` in a set's rank buffer: one per rank, `payload` bytes
/// padded, then the stamp (rank_link.cuh). The same on every rank for the same payload.
struct rank_gather {
  char* base;
  std::size_t slot, stamp_at;
  int ranks;
  /// Bytes the slots of `ranks` ranks take for a payload of `payload` bytes.
  static std::size_t bytes(int ranks, std::size_t payload) {
    return static_cast<std::size_t>(ranks) * gather_slot_bytes(payload);
  }
  rank_gather(const set_state& s, char* at, std::size_t payload)
      : base(at), slot(gather_slot_bytes(payload)), stamp_at(gather_stamp_at(payload)), ranks(s.ranks.ranks()) {}
  /// Rank r's slot.
  char* of(int r) const { return base + static_cast<std::size_t>(r) * slot; }
};

/// Root task before a gather_slots: the stamp into this rank's slot.
struct stamp_slot_task {
  char* slot;
  std::size_t stamp_at;
  std::uint64_t stamp;
  __device__ void operator()() const { ::memcpy(slot + stamp_at, &stamp, sizeof stamp); }
};
struct no_task {
  __device__ void operator()() const {}
};

/// Enqueues on the root's stream of a set spanning processes the all-gather of `g`'s slots, this
/// rank's payload already in its slot (by earlier work on the root's stream): the root stamps the
/// slot, all-gathers, and checks every rank's stamp (a missing rank goes into the set's
/// missing-rank word, so the next wait on the set throws). Work enqueued on the root's stream
/// afterwards sees every rank's slot.
inline void gather_slots(set_state& s, const rank_gather& g) {
  const std::uint64_t stamp = s.link->next_stamp();
  pack_and_all_gather(s, g.base, g.slot, stamp_slot_task{g.of(s.ranks.rank()), g.stamp_at, stamp});
  launch_on_root(s, checked_task<no_task>{no_task{}, g.base, g.ranks, g.slot, g.stamp_at, stamp, s.missing_rank_word()});
}

/// A collective on a set spanning processes, for arrays in pinned host memory that every rank
/// fills in part: `host` holds one region per rank, rank r's the bytes [at[r], at[r + 1]) (the
/// same `at` on every rank). This rank's region is written, by the host or by the places
/// `writers` on their streams (each recorded its event() after). Enqueues on the root's stream:
/// the copy of this rank's region into its slot of an all-gather at `buffer` (device memory of the
/// root, rank_gather::bytes(ranks, the largest region) of it, e.g. in the set's rank buffer), the
/// all-gather with its stamp check, the copies of every other rank's slot into its region, and
/// the root's event(). The caller waits for that event (or the root) before it reads `host`.
inline void all_gather_regions(set_state& s, char* host, const std::vector<std::size_t>& at, char* buffer,
                               const std::vector<std::size_t>& writers) {
  const int ranks = s.ranks.ranks(), me = s.ranks.rank();
  std::size_t payload = 0;
  for (int r = 0; r < ranks; ++r) payload = std::max(payload, at[r + 1] - at[r]);
  const rank_gather g(s, buffer, payload);
  at_place(s, s.root_index, [&](place_state& root) {
    for (std::size_t i : writers)
      if (i != s.root_index) STRATA_CUDA_CHECK(cudaStreamWaitEvent(root.stream(), s.places[i]->event(), 0));
    if (at[me + 1] > at[me])
      STRATA_CUDA_CHECK(cudaMemcpyAsync(g.of(me), host + at[me], at[me + 1] - at[me], cudaMemcpyHostToDevice, root.stream()));
  });
  gather_slots(s, g);
  at_place(s, s.root_index, [&](place_state& root) {
    for (int r = 0; r < ranks; ++r)
      if (r != me && at[r + 1] > at[r])
        STRATA_CUDA_CHECK(cudaMemcpyAsync(host + at[r], g.of(r), at[r + 1] - at[r], cudaMemcpyDeviceToHost, root.stream()));
    STRATA_CUDA_CHECK(cudaEventRecord(root.event(), root.stream()));
  });
}

/// Waits for the root of a set spanning processes through its link (never hanging on a dead
/// peer), then throws the link's error if a collective found a rank missing.
inline void wait_root(set_state& s, const char* who) {
  at_place(s, s.root_index, [](place_state& root) { root.synchronize(); });
  s.check_ranks(who);
}

/// Grows the set's rank buffer and host words to what all_gather_to_host of a `value_bytes`-byte
/// value needs, so that the collective cannot then fail to allocate on this rank alone. Throws
/// strata::cuda_error if an allocation fails.
inline void reserve_all_gather(set_state& s, std::size_t value_bytes) {
  const int ranks = s.ranks.ranks();
  (void)s.rank_buffer(rank_gather::bytes(ranks, value_bytes));
  (void)s.host_words((static_cast<std::size_t>(ranks) * value_bytes + 7) / 8);
}

/// A collective on a set spanning processes: every rank's `mine` (trivially copyable), in rank
/// order, on every host. Uses the first bytes of the set's rank buffer and of its host words
/// (rank_gather::bytes(ranks, sizeof(V)) and ranks * sizeof(V) of them, which the caller may
/// reserve first so that this cannot fail to allocate); waits through the link; throws the
/// link's error if a rank did not take part.
template <class V>
std::vector<V> all_gather_to_host(set_state& s, const V& mine, const char* who) {
  static_assert(std::is_trivially_copyable_v<V>, "a trivially copyable value");
  const auto ranks = static_cast<std::size_t>(s.ranks.ranks()), me = static_cast<std::size_t>(s.ranks.rank());
  char* buffer = s.rank_buffer(rank_gather::bytes(s.ranks.ranks(), sizeof(V)));
  auto* host = reinterpret_cast<char*>(s.host_words((ranks * sizeof(V) + 7) / 8));
  std::memcpy(host + me * sizeof(V), &mine, sizeof(V));
  std::vector<std::size_t> at(ranks + 1);
  for (std::size_t r = 0; r <= ranks; ++r) at[r] = r * sizeof(V);
  all_gather_regions(s, host, at, buffer, {});
  wait_root(s, who);
  std::vector<V> all(ranks);
  std::memcpy(all.data(), host, ranks * sizeof(V));
  return all;
}

/// What a rank of a set spanning processes tells the others after a step that may fail on it
/// alone: whether it failed and, if so, what it threw (its kind, the CUDA error and device of a
/// strata::cuda_error, the start of its message), so that the others throw the same kind.
struct rank_verdict {
  enum kind_t : int { none = 0, cuda = 1, out_of_memory = 2, invalid_argument = 3, out_of_range = 4, logic = 5, other = 6 };
  int failed, kind, code, device;
  char message[192];
};

/// The verdict of a rank whose step threw `failed` (null: it did not fail). Host only.
inline rank_verdict verdict_of(std::exception_ptr failed) {
  rank_verdict v{};
  if (!failed) return v;
  v.failed = 1;
  v.kind = rank_verdict::other;
  v.code = static_cast<int>(cudaErrorUnknown);
  v.device = -1;
  const auto keep = [&](const char* what) {
    std::strncpy(v.message, what, sizeof v.message - 1);
    v.message[sizeof v.message - 1] = '\0';
  };
  try {
    std::rethrow_exception(failed);
  } catch (const cuda_error& e) {
    v.kind = rank_verdict::cuda;
    v.code = static_cast<int>(e.code());
    v.device = e.device();
    keep(e.what());
  } catch (const std::bad_alloc& e) {
    v.kind = rank_verdict::out_of_memory;
    v.code = static_cast<int>(cudaErrorMemoryAllocation);
    keep(e.what());
  } catch (const std::invalid_argument& e) {
    v.kind = rank_verdict::invalid_argument;
    keep(e.what());
  } catch (const std::out_of_range& e) {
    v.kind = rank_verdict::out_of_range;
    keep(e.what());
  } catch (const std::logic_error& e) {
    v.kind = rank_verdict::logic;
    keep(e.what());
  } catch (const std::exception& e) {
    keep(e.what());
  } catch (...) {
  }
  return v;
}

/// What a rank throws for another rank's failed verdict `v` (rank `rank`, in step `what` of
/// `name`): the same kind of exception, naming that rank and carrying its message; CUDA failures
/// and allocation failures as strata::cuda_error with that rank's CUDA error and device, anything
/// else of no standard kind as strata::cuda_error (cudaErrorUnknown). Host only.
inline std::exception_ptr exception_from(const rank_verdict& v, int rank, const char* name, const char* what) {
  const std::string where = std::string(name) + " on rank " + std::to_string(rank) + " (" + what + ")";
  const std::string message = where + ": " + std::string(v.message, strnlen(v.message, sizeof v.message));
  switch (v.kind) {
    case rank_verdict::invalid_argument: return std::make_exception_ptr(std::invalid_argument(message));
    case rank_verdict::out_of_range: return std::make_exception_ptr(std::out_of_range(message));
    case rank_verdict::logic: return std::make_exception_ptr(std::logic_error(message));
    default:
      return std::make_exception_ptr(
          cuda_error(static_cast<cudaError_t>(v.code), where, v.device, __FILE__, __LINE__));
  }
}

/// A collective on a set spanning processes, after a step (e.g. reserving memory) that may have
/// failed on some ranks (`failed`: this rank's exception, or null): returns this rank's own
/// exception if it failed, else the exception of the first rank that did, rebuilt by
/// exception_from (the same kind: strata::cuda_error naming that rank with its CUDA error and
/// device; std::invalid_argument, std::out_of_range, std::logic_error with its message), else
/// null, the same on every rank. The caller reserves rank_gather::bytes(ranks,
/// sizeof(rank_verdict)) of the rank buffer and the host words first (all_gather_to_host); throws
/// the link's error if a rank did not take part.
inline std::exception_ptr agree_on_failure(set_state& s, std::exception_ptr failed, const char* name, const char* what) {
  const std::vector<rank_verdict> all = all_gather_to_host(s, verdict_of(failed), name);
  for (std::size_t r = 0; r < all.size() && !failed; ++r)
    if (all[r].failed != 0) failed = exception_from(all[r], static_cast<int>(r), name, what);
  return failed;
}

/// Ends a step that may have failed on one rank alone (`failed`: this rank's exception, or null).
/// On a set spanning processes the ranks first agree (agree_on_failure, with its reservations);
/// then, if any rank failed, `undo()` runs and every rank throws: its own exception, or a
/// strata::cuda_error naming the first rank that failed. `undo()` also runs if the agreement
/// itself throws (a rank that did not take part). Returns normally only when no rank failed.
template <class Undo>
void throw_if_any_rank_failed(set_state& s, std::exception_ptr failed, const char* name, const char* what, Undo&& undo) {
  if (s.link != nullptr) {
    try {
      failed = agree_on_failure(s, failed, name, what);
    } catch (...) {
      undo();
      throw;
    }
  }
  if (failed) {
    undo();
    std::rethrow_exception(failed);
  }
}


}  // namespace strata::detail
