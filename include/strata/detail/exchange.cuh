// The exchange: every algorithm that moves elements between places (copy across layouts,
// redistribute, sort) says which contiguous pieces go where; this says how. A piece between
// places with direct access (one device, or peer access enabled) is one copy on the destination's
// stream; any other piece goes through a ring of pinned host buffers, chunk by chunk, the source
// copying out and the destination copying in. Events order everything; the host never waits.
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

/// Copies `bytes` between two buffers that reach each other directly, on `stream` (of the
/// destination's device): a device copy within one device, a peer copy across two.
inline void copy_direct(void* to, int to_device, const void* from, int from_device, std::size_t bytes,
                        cudaStream_t stream) {
  if (to_device == from_device)
    STRATA_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream));
  else
    STRATA_CUDA_CHECK(cudaMemcpyPeerAsync(to, to_device, from, from_device, bytes, stream));
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
inline void exchange(set_state& ss, const std::vector<const void*>& src, set_state& ds, const std::vector<void*>& dst,
                     std::size_t elem_bytes, const std::vector<piece>& pieces) {
  if (pieces.empty()) return;
  nvtx_range range("strata::exchange");
  std::vector<char> is_source(ss.size(), 0), is_dest(ds.size(), 0);
  for (const piece& p : pieces)
    if (p.count > 0) is_source[p.src] = is_dest[p.dst] = 1;
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
      if (pc.dst != j || pc.count == 0) continue;
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
