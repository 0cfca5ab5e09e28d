// What the core needs of a transport between processes, for device sets whose places span the
// ranks of a process group (strata/nccl.cuh makes them): which rank owns which place, the stamps
// that tell a slot a collective wrote from a stale one, and the interface (rank_link) the NCCL
// layer implements. The core itself stays free of NCCL and MPI.
#pragma once

#include <strata/detail/graph_cache.cuh>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::detail {

// Every rank's slot of an all-gather: its payload, padded to 16 bytes, then a 16-byte stamp
// field whose first 8 bytes are the stamp of the call. NCCL can let a collective finish without a
// rank that left (seen on an H200 with NCCL 2.32: three ranks on one GPU, one aborting instead of
// joining, and one of the others saw its all-gather end normally with that rank's slot never
// written). The stamp tells a slot written by this call from one left over from an earlier call or
// never written, so such a rank is found instead of its stale bytes being used.
/// Bytes of one rank's slot for a payload of `bytes`.
__host__ __device__ constexpr std::size_t gather_slot_bytes(std::size_t bytes) { return (bytes + 15) / 16 * 16 + 16; }
/// Offset of the stamp within a slot for a payload of `bytes`.
__host__ __device__ constexpr std::size_t gather_stamp_at(std::size_t bytes) { return (bytes + 15) / 16 * 16; }
/// The stamp of a group's `call`-th collective (the same on every rank: collectives run in the
/// same order everywhere).
__host__ __device__ constexpr std::uint64_t gather_stamp(std::uint64_t call) { return 0x5354524154412d00ull ^ (call << 8); }
/// The first rank in [0, ranks) whose slot in `gathered` (slots of `slot` bytes, stamps at
/// `stamp_at`) does not hold `stamp`, or -1 if every rank's does.
__host__ __device__ inline int first_unstamped(const char* gathered, int ranks, std::size_t slot, std::size_t stamp_at,
                                               std::uint64_t stamp) {
  for (int r = 0; r < ranks; ++r) {
    std::uint64_t got;
    ::memcpy(&got, gathered + static_cast<std::size_t>(r) * slot + stamp_at, sizeof got);
    if (got != stamp) return r;
  }
  return -1;
}
/// Which rank owns which place of a set that spans processes: the places of rank 0 first, then
/// those of rank 1, and so on, each rank's in its own order. Plain host data, the same on every
/// rank (host-tested).
class rank_map {
 public:
  rank_map() = default;
  /// Ranks with `places_per_rank[r]` places each, seen from rank `rank`. Throws
  /// std::invalid_argument for no ranks, a rank without places, a rank outside [0, ranks), or
  /// more than `max_total` places over all ranks.
  rank_map(const std::vector<std::size_t>& places_per_rank, int rank, std::size_t max_total) : rank_(rank) {
    if (places_per_rank.empty()) throw std::invalid_argument("strata: a set spanning processes needs at least one rank");
    if (rank < 0 || static_cast<std::size_t>(rank) >= places_per_rank.size())
      throw std::invalid_argument("strata: rank " + std::to_string(rank) + " is not in [0, " +
                                  std::to_string(places_per_rank.size()) + ")");
    std::size_t total = 0;
    for (std::size_t r = 0; r < places_per_rank.size(); ++r) {
      if (places_per_rank[r] == 0) throw std::invalid_argument("strata: rank " + std::to_string(r) + " has no places");
      first_.push_back(total);
      total += places_per_rank[r];
      for (std::size_t k = 0; k < places_per_rank[r]; ++k) owner_.push_back(static_cast<int>(r));
    }
    first_.push_back(total);
    if (total > max_total)
      throw std::invalid_argument("strata: " + std::to_string(total) + " places over all ranks, at most " +
                                  std::to_string(max_total) + " are supported");
  }
  /// Number of ranks.
  int ranks() const noexcept { return static_cast<int>(first_.empty() ? 0 : first_.size() - 1); }
  /// The rank this map is seen from.
  int rank() const noexcept { return rank_; }
  /// Number of places over all ranks.
  std::size_t places() const noexcept { return owner_.size(); }
  /// The rank owning global place `g`.
  int owner(std::size_t g) const { return owner_.at(g); }
  /// The global index of rank `r`'s first place (r = ranks(): the number of places).
  std::size_t first(int r) const { return first_.at(static_cast<std::size_t>(r)); }
  /// Number of places of rank `r`.
  std::size_t count(int r) const { return first(r + 1) - first(r); }
  /// The most places any rank has.
  std::size_t most() const noexcept {
    std::size_t m = 0;
    for (int r = 0; r < ranks(); ++r) m = count(r) > m ? count(r) : m;
    return m;
  }
  /// True if global place `g` is this rank's.
  bool local(std::size_t g) const { return owner(g) == rank_; }

 private:
  int rank_ = 0;
  std::vector<std::size_t> first_;
  std::vector<int> owner_;
};

/// One point-to-point transfer of an exchange between ranks: `bytes` bytes of device memory at
/// `data` (of the link's GPU) sent to, or received from, rank `peer`.
struct rank_transfer {
  void* data;
  std::size_t bytes;
  int peer;
};

/// What a set spanning processes needs of the transport between its ranks (strata/nccl.cuh's
/// process_group provides it). Every collective must be entered by every rank, in the same order.
/// Waits never hang: a failed peer or a timeout aborts the transport and throws.
class rank_link {
 public:
  virtual ~rank_link() = default;
  /// This process's rank and the number of ranks.
  virtual int rank() const noexcept = 0;
  virtual int ranks() const noexcept = 0;
  /// The GPU this rank's collectives run on.
  virtual int device() const noexcept = 0;
  /// True if this rank's collectives may be captured into a CUDA graph (enqueued by this thread
  /// on the stream given, nothing else in between): the set's graph replay across ranks needs it
  /// on every rank (spanning_set agrees on it once).
  virtual bool capturable() const noexcept = 0;
  /// The stamp of the next collective (counted: call once per collective, on every rank).
  virtual std::uint64_t next_stamp() = 0;
  /// Enqueues on `stream` an in-place all-gather of `slot_bytes` bytes per rank in `buffer`
  /// (device memory of device(), ranks() slots, this rank's already written by earlier work on
  /// `stream`).
  virtual void all_gather(char* buffer, std::size_t slot_bytes, cudaStream_t stream) = 0;
  /// Enqueues on `stream` a broadcast of `bytes` bytes from rank `root`'s `send` into every
  /// rank's `recv` (device memory of device()).
  virtual void broadcast(const void* send, void* recv, std::size_t bytes, int root, cudaStream_t stream) = 0;
  /// Enqueues on `stream` one group of point-to-point transfers: every send of `sends` (its data
  /// written by earlier work on `stream`) and every receive of `receives`, all in flight at once
  /// (so their order cannot deadlock). The k-th send from rank a to rank b and b's k-th receive
  /// from a must have the same size: both sides list them in the same order. Every rank calls it,
  /// also one with no transfers (it enqueues nothing then; ranks sharing a GPU in one process meet
  /// there: process_group).
  virtual void send_receive(const std::vector<rank_transfer>& sends, const std::vector<rank_transfer>& receives,
                            cudaStream_t stream) = 0;
  /// Waits until `stream`'s work (or `event`) has finished without ever hanging on a failed or
  /// dead peer. Throws (after aborting the transport) on a peer's failure or a timeout, and
  /// strata::cuda_error if the work failed.
  virtual void wait(cudaStream_t stream) = 0;
  virtual void wait_event(cudaEvent_t event) = 0;
  /// Aborts the transport and throws the error that says rank `missing` did not contribute to a
  /// collective of `who`.
  [[noreturn]] virtual void fail_missing(int missing, const char* who) = 0;

  /// The captured collective halves of repeated folds of every set over this link
  /// (rank_fold.cuh), keyed first by the set's id. They live here rather than in the sets because
  /// a communicator cannot be aborted or destroyed while a graph that captured one of its
  /// collectives exists (NCCL waits for such graphs to go), so an implementation drops them first
  /// (drop_collective_graphs) when it aborts or destroys its communicator.
  graph_cache collective_graphs;
  /// The id of the next set made over this link: the same on every rank, since sets spanning
  /// ranks are made collectively, in the same order everywhere.
  std::uint64_t next_set_id = 0;
  /// Destroys every captured collective graph (an in-flight one is freed when it ends).
  void drop_collective_graphs() noexcept { collective_graphs.clear(); }
};

}  // namespace strata::detail
