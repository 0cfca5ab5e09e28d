// The exchange: every algorithm that moves elements between places (copy across layouts,
// redistribute, sort) says which contiguous pieces go where; this says how. A piece between
// places with direct access (one device, or peer access enabled) is one copy on the destination's
// stream; any other piece goes through a ring of pinned host buffers, chunk by chunk, the source
// copying out and the destination copying in. On sets spanning processes, a piece between places
// of two ranks goes by NCCL point-to-point transfers (the set's rank_link). Events order
// everything; the host never waits.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/nvtx.cuh>
#include <strata/detail/place_state.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

/// One contiguous piece of an exchange: `count` elements from source place `src`, starting
/// `src_offset` elements into its buffer, to destination place `dst`, starting `dst_offset`
/// elements into its buffer.
struct piece {
  std::size_t src;
  std::uint64_t src_offset;
  std::size_t dst;
  std::uint64_t dst_offset;
  std::uint64_t count;
};

/// The pieces that move a range laid out by `from` onto the layout `to` (the same number of
/// elements): global index g moves from its owner under `from` to its owner under `to`. Sorted by
/// destination, then source.
inline std::vector<piece> relayout_pieces(const partition& from, const partition& to) {
  std::vector<piece> pieces;
  for (std::size_t j = 0; j < to.places(); ++j) {
    const std::uint64_t d0 = to.offset(j), d1 = d0 + to.count(j);
    for (std::size_t i = 0; i < from.places(); ++i) {
      const std::uint64_t s0 = from.offset(i), s1 = s0 + from.count(i);
      const std::uint64_t lo = std::max(s0, d0), hi = std::min(s1, d1);
      if (lo < hi) pieces.push_back({i, lo - s0, j, lo - d0, hi - lo});
    }
  }
  return pieces;
}

/// Whether place `i` of `ss` and place `j` of `ds` reach each other's memory directly: the same
/// set's direct-access matrix, or across two sets the same device or peer access enabled between
/// the devices, and host staging forced by neither set.
inline bool places_reach(const set_state& ss, std::size_t i, const set_state& ds, std::size_t j) {
  if (&ss == &ds) return ss.direct[i * ss.size() + j] != 0;
  if (ss.force_host_staging || ds.force_host_staging) return false;
  const int a = ss.places[i]->device(), b = ds.places[j]->device();
  return ss.devices_reach(a, b) || ds.devices_reach(a, b);
}

/// Allocates now what an exchange within `s` would otherwise allocate on first use: every local
/// place's exchange events (and staging events), and the pinned staging ring where some pair of
/// this process's places does not reach directly. An algorithm that promises to leave its input
/// unchanged when memory runs out (sort) calls it while reserving, before any element moves.
/// Call with call_mutex held.
inline void reserve_exchange(set_state& s) {
  if (s.exchange_reserved) return;  // what it makes stays with the set: once is enough
  bool staged = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!s.local(i)) continue;
    for (std::size_t j = 0; j < s.size(); ++j)
      if (s.local(j) && !places_reach(s, i, s, j)) staged = true;
    at_place(s, i, [&](place_state& p) {
      (void)p.exchange_ready();
      (void)p.exchange_done();
      if (s.link != nullptr && i == s.root_index) (void)p.ranks_exchanged();
      for (std::size_t k = 0; k < 2 * staging_ring::slots; ++k) (void)p.staging_event(k);
    });
  }
  if (staged) (void)s.staging();
  s.exchange_reserved = true;
}

/// Copies `bytes` between two buffers that reach each other directly, on `stream` (of the
/// destination's device): a device copy within one device, a peer copy across two.
inline void copy_direct(void* to, int to_device, const void* from, int from_device, std::size_t bytes,
                        cudaStream_t stream) {
  if (to_device == from_device)
    STRATA_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream));
  else
    STRATA_CUDA_CHECK(cudaMemcpyPeerAsync(to, to_device, from, from_device, bytes, stream));
}

/// The pieces of an exchange between sets spanning ranks that rank `from.rank()` sends and
/// receives (indices into `pieces`, in piece order): those whose source place (under `from`) is
/// its own and whose destination place (under `to`) is another rank's, and the reverse. Pieces
/// with both places its own, or neither, are not listed. Because every rank walks the same pieces
/// in the same order, rank a's sends to rank b are b's receives from a, in order and size, as NCCL
/// matches point-to-point calls (host-tested).
struct rank_exchange_plan {
  std::vector<std::size_t> sends, receives;
};
inline rank_exchange_plan plan_rank_exchange(const std::vector<piece>& pieces, const rank_map& from, const rank_map& to) {
  rank_exchange_plan plan;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const piece& pc = pieces[k];
    if (pc.count == 0) continue;
    const bool src_here = from.local(pc.src), dst_here = to.local(pc.dst);
    if (src_here && !dst_here) plan.sends.push_back(k);
    if (dst_here && !src_here) plan.receives.push_back(k);
  }
  return plan;
}

/// The part of exchange() between ranks, after its steps (1) and (2) (see there): this rank's
/// sends and receives (plan_rank_exchange), one NCCL group on the root stream of `ss`.
inline void exchange_across_ranks(set_state& ss, const std::vector<const void*>& src, set_state& ds,
                                  const std::vector<void*>& dst, std::size_t elem_bytes, const std::vector<piece>& pieces) {
  const rank_exchange_plan plan = plan_rank_exchange(pieces, ss.ranks, ds.ranks);
  std::vector<rank_transfer> sends, receives;
  std::vector<char> sent(ss.size(), 0), received(ds.size(), 0);
  for (std::size_t k : plan.sends) {
    const piece& pc = pieces[k];
    const auto* from = static_cast<const char*>(src[pc.src]) + pc.src_offset * elem_bytes;
    sends.push_back({const_cast<char*>(from), pc.count * elem_bytes, ds.ranks.owner(pc.dst)});
    sent[pc.src] = 1;
  }
  for (std::size_t k : plan.receives) {
    const piece& pc = pieces[k];
    receives.push_back({static_cast<char*>(dst[pc.dst]) + pc.dst_offset * elem_bytes, pc.count * elem_bytes,
                        ss.ranks.owner(pc.src)});
    received[pc.dst] = 1;
  }
  if (sends.empty() && receives.empty()) {  // nothing to move (the link may still meet its ranks)
    at_place(ss, ss.root_index, [&](place_state& r) { ss.link->send_receive(sends, receives, r.stream()); });
    return;
  }
  place_state& root = ss.root();
  at_place(ss, ss.root_index, [&](place_state& r) {
    for (std::size_t i = 0; i < ss.size(); ++i)
      if (sent[i] && ss.places[i].get() != &r)
        STRATA_CUDA_CHECK(cudaStreamWaitEvent(r.stream(), ss.places[i]->exchange_ready(), 0));
    for (std::size_t j = 0; j < ds.size(); ++j)
      if (received[j] && ds.places[j].get() != &r)
        STRATA_CUDA_CHECK(cudaStreamWaitEvent(r.stream(), ds.places[j]->exchange_done(), 0));
    ss.link->send_receive(sends, receives, r.stream());
    STRATA_CUDA_CHECK(cudaEventRecord(r.ranks_exchanged(), r.stream()));
  });
  const auto after = [&](set_state& s, std::size_t i) {
    at_place(s, i, [&](place_state& p) {
      if (&p != &root) STRATA_CUDA_CHECK(cudaStreamWaitEvent(p.stream(), root.ranks_exchanged(), 0));
    });
  };
  const bool one_set = &ss == &ds;  // (then a place may have sent and received: one wait)
  for (std::size_t i = 0; i < ss.size(); ++i)
    if (sent[i] || (one_set && received[i])) after(ss, i);
  if (!one_set)
    for (std::size_t j = 0; j < ds.size(); ++j)
      if (received[j]) after(ds, j);
}

/// Moves every piece from `src[piece.src]` (a buffer on place piece.src of `ss`) to
/// `dst[piece.dst]` (a buffer on place piece.dst of `ds`), `elem_bytes` bytes per element.
/// `ss` and `ds` may be the same set. Call with both sets' call locks held.
///
/// Ordering, with no host wait: (1) every source place records an event after the work already
/// on its stream (what produced its buffer); (2) every destination place waits for the events of
/// the sources it reads, pulls its pieces on its own stream, and records an event; (3) every
/// source place waits for the destinations it fed, so later writes to a source buffer stay
/// behind the reads. A staged piece's chunk is copied out on the source's stream into a ring
/// slot once the slot's previous reader is done, then copied in on the destination's stream once
/// the copy-out is done. Every wait refers to an event recorded earlier in host order, and no
/// stream waits on work that itself waits on that stream's later work, so the exchange cannot
/// deadlock. Source and destination buffers must not overlap.
///
/// On sets spanning processes (require_exchangeable), the pieces whose places both belong to this
/// rank go as above; every other piece that starts or ends here is one NCCL send or receive, all
/// of them in one group on the source set's root stream, after the events of this rank's sources
/// (1) and of its destinations (2, so earlier work on a destination is done before a receive
/// writes it); every place that sent or received waits for the group's event. Each rank lists its
/// sends and receives in the global piece order, which every rank computes alike from the
/// partitions, so the k-th send from rank a to b meets b's k-th receive from a (NCCL matches
/// point-to-point calls in order), and a group's transfers are all in flight at once. Every rank
/// makes the same exchanges in the same order, so the groups of two ranks never wait on each other
/// crosswise.
inline void exchange(set_state& ss, const std::vector<const void*>& src, set_state& ds, const std::vector<void*>& dst,
                     std::size_t elem_bytes, const std::vector<piece>& pieces) {
  if (pieces.empty()) return;
  nvtx_range range("strata::exchange");
  // (A piece with both places here: local. On a set in one process, every piece is.)
  const auto local_piece = [&](const piece& p) { return ss.local(p.src) && ds.local(p.dst); };
  std::vector<char> is_source(ss.size(), 0), is_dest(ds.size(), 0);
  for (const piece& p : pieces) {
    if (p.count == 0) continue;
    if (ss.local(p.src)) is_source[p.src] = 1;
    if (ds.local(p.dst)) is_dest[p.dst] = 1;
  }
  // (1) Sources are ready.
  for (std::size_t i = 0; i < ss.size(); ++i)
    if (is_source[i])
      at_place(ss, i, [](place_state& p) { STRATA_CUDA_CHECK(cudaEventRecord(p.exchange_ready(), p.stream())); });
  // (2) Destinations pull.
  std::vector<std::vector<std::size_t>> fed(ss.size());
  for (std::size_t j = 0; j < ds.size(); ++j) {
    if (!is_dest[j]) continue;
    std::vector<char> waited(ss.size(), 0);
    for (const piece& pc : pieces) {
      if (pc.dst != j || pc.count == 0 || !local_piece(pc)) continue;
      place_state& s = *ss.places[pc.src];
      const auto* from = static_cast<const char*>(src[pc.src]) + pc.src_offset * elem_bytes;
      auto* to = static_cast<char*>(dst[j]) + pc.dst_offset * elem_bytes;
      const std::size_t bytes = pc.count * elem_bytes;
      const bool first_from_source = !waited[pc.src];
      waited[pc.src] = 1;
      if (first_from_source) fed[pc.src].push_back(j);
      if (places_reach(ss, pc.src, ds, j)) {
        at_place(ds, j, [&](place_state& d) {
          if (first_from_source && &s != &d) STRATA_CUDA_CHECK(cudaStreamWaitEvent(d.stream(), s.exchange_ready(), 0));
          copy_direct(to, d.device(), from, s.device(), bytes, d.stream());
        });
        continue;
      }
      if (first_from_source)
        at_place(ds, j, [&](place_state& d) { STRATA_CUDA_CHECK(cudaStreamWaitEvent(d.stream(), s.exchange_ready(), 0)); });
      // Staged through the source set's pinned ring, chunk by chunk.
      staging_ring& ring = ss.staging();
      for (std::size_t done = 0; done < bytes; done += ring.chunk_bytes) {
        const std::size_t n = std::min(ring.chunk_bytes, bytes - done);
        const std::size_t slot = ring.next++ % staging_ring::slots;
        char* buffer = ring.slot(slot);
        at_place(ss, pc.src, [&](place_state& sp) {
          if (ring.free[slot] != nullptr) STRATA_CUDA_CHECK(cudaStreamWaitEvent(sp.stream(), ring.free[slot], 0));
          STRATA_CUDA_CHECK(cudaMemcpyAsync(buffer, from + done, n, cudaMemcpyDeviceToHost, sp.stream()));
          STRATA_CUDA_CHECK(cudaEventRecord(sp.staging_event(slot), sp.stream()));
        });
        at_place(ds, j, [&](place_state& d) {
          STRATA_CUDA_CHECK(cudaStreamWaitEvent(d.stream(), s.staging_event(slot), 0));
          STRATA_CUDA_CHECK(cudaMemcpyAsync(to + done, buffer, n, cudaMemcpyHostToDevice, d.stream()));
          STRATA_CUDA_CHECK(cudaEventRecord(d.staging_event(staging_ring::slots + slot), d.stream()));
          ring.free[slot] = d.staging_event(staging_ring::slots + slot);
        });
      }
    }
    at_place(ds, j, [](place_state& d) { STRATA_CUDA_CHECK(cudaEventRecord(d.exchange_done(), d.stream())); });
  }
  if (ss.link != nullptr) exchange_across_ranks(ss, src, ds, dst, elem_bytes, pieces);
  // (3) Sources wait for their readers.
  for (std::size_t i = 0; i < ss.size(); ++i)
    for (std::size_t j : fed[i]) {
      place_state& d = *ds.places[j];
      at_place(ss, i, [&](place_state& s) {
        if (&s != &d) STRATA_CUDA_CHECK(cudaStreamWaitEvent(s.stream(), d.exchange_done(), 0));
      });
    }
}

}  // namespace strata::detail
