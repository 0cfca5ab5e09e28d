// strata::spanning_set: one device_set over the places of every rank of a process group, which
// every Strata algorithm takes as it takes a set of one process.
#pragma once

#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/device_set.cuh>
#include <strata/nccl/process_group.cuh>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace strata {

/// A device_set whose places span every rank of `g`: `places` places on this rank, all on
/// g.device(), each with its own stream; globally the places of rank 0 come first, then those of
/// rank 1, and so on. Containers and spans over it hold the global range (size() is global; each
/// rank allocates and computes only its own places' segments), and the algorithms work unchanged
/// for user code: element-wise ones (transform, fill, for_each, copy within a layout) run on each
/// rank's places alone; the reduce family and the scans cross ranks through NCCL and give the same
/// result on every rank; copy_to_host (and to_std_vector) gives every rank every element. See
/// docs/api.md, "Beyond one process", for the rules: every rank makes the same calls in the same
/// order (as with NCCL's collectives); copies between layouts and redistribute move the pieces
/// between ranks by NCCL sends and receives (between two sets spanning the ranks of this group);
/// sorts and compaction (copy_if, remove_if, unique, partition_copy) cross ranks too
/// (docs/api.md); measure_topology measures each rank's own places and shares the figures (pairs
/// across ranks are not measured); get/set only reach this rank's elements.
///
/// Collective (one all-gather of the place counts): every rank calls it. `options` applies to this
/// rank's places (force_host_staging: the places' fold goes through pinned memory). Graph replay
/// of repeated value folds (use_graphs, STRATA_DISABLE_GRAPHS) is on only where every rank asks
/// for it and can capture its collectives (not for ranks of one process that share a GPU): the
/// ranks must replay the same collectives. `options.streams` is refused (std::invalid_argument, before the
/// collective): streams of your own are for sets of one process. Throws std::invalid_argument on every rank if a rank asks for no places or the
/// ranks' places add up to more than 64; strata::nccl_error if the all-gather fails.
inline device_set spanning_set(const process_group& g, std::size_t places = 1, device_set_options options = {}) {
  // Every rank's place count, and whether it can replay its collectives from graphs: the set does
  // so only if every rank can (NCCL requires every rank to capture the same collectives).
  struct mine_t {
    std::uint64_t places;
    std::uint64_t graphs;
  };
  // (Checked before the collective below, which every rank joins; every rank passes the same
  // options, so every rank throws alike.)
  if (!options.streams.empty())
    throw std::invalid_argument("strata::spanning_set: device_set_options::streams is for sets of one process");
  if (detail::env_switch_on("STRATA_DISABLE_GRAPHS")) options.use_graphs = false;
  const mine_t mine{places, options.use_graphs && g.s_->capturable() ? 1u : 0u};
  std::vector<mine_t> all(static_cast<std::size_t>(g.size()));
  g.all_gather(&mine, sizeof mine, all.data());
  std::vector<std::size_t> counts;
  bool graphs = true;
  for (const mine_t& m : all) {
    counts.push_back(static_cast<std::size_t>(m.places));
    graphs = graphs && m.graphs != 0;
  }
  detail::rank_map map(counts, g.rank(), detail::max_places);
  options.use_graphs = graphs;
  return detail::make_spanning_set(g.s_, std::move(map), options);
}

}  // namespace strata
