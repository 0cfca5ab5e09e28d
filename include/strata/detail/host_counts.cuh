// The one host read of an algorithm that must learn sizes before it can go on (compaction's kept
// counts, gather's and scatter's per-owner counts): every place writes a few 64-bit words into
// pinned host memory, the host waits once, and on a set spanning processes the ranks all-gather
// their words so that every rank holds every place's.
#pragma once

#include <strata/detail/fan_out.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/partition.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace strata::detail {

/// `enqueue(words)` enqueues, on the places of `part`, the work that writes `per_place` words per
/// place into `words` (pinned host memory, word b * places + i for place i, zeroed first so that
/// empty segments read 0); then this waits once and returns them. On a set spanning processes
/// every rank then all-gathers its words (one collective) and takes each place's from the rank
/// that owns it, so that every rank returns the words of every place. Throws strata::cuda_error
/// for CUDA failures, the process group's error if a rank does not take part.
template <class Enqueue>
std::vector<std::uint64_t> kept_counts(set_state& s, const partition& part, std::size_t per_place, Enqueue&& enqueue) {
  const std::size_t k = part.places(), n = per_place * k;
  std::uint64_t* words = s.host_words(n);
  for (std::size_t i = 0; i < n; ++i) words[i] = 0;
  enqueue(words);
  wait_segments(s, part);
  std::vector<std::uint64_t> counts(words, words + n);
  if (s.link == nullptr) return counts;
  const auto ranks = static_cast<std::size_t>(s.ranks.ranks()), me = static_cast<std::size_t>(s.ranks.rank());
  char* buffer = s.rank_buffer(rank_gather::bytes(s.ranks.ranks(), n * sizeof(std::uint64_t)));
  std::uint64_t* all = s.host_words(n * ranks);  // (may move the words: they are copied out above)
  std::memcpy(all + me * n, counts.data(), n * sizeof(std::uint64_t));
  std::vector<std::size_t> at(ranks + 1);
  for (std::size_t r = 0; r <= ranks; ++r) at[r] = r * n * sizeof(std::uint64_t);
  all_gather_regions(s, reinterpret_cast<char*>(all), at, buffer, {});
  wait_root(s, "strata: the per-place counts across ranks");
  for (std::size_t b = 0; b < per_place; ++b)
    for (std::size_t i = 0; i < k; ++i)
      counts[b * k + i] = all[static_cast<std::size_t>(s.ranks.owner(i)) * n + b * k + i];
  return counts;
}

/// kept_counts of one word per non-empty segment: `select(i, place, word)` writes segment i's
/// count to `*word`.
template <class Select>
std::vector<std::uint64_t> kept_counts(set_state& s, const partition& part, Select&& select) {
  return kept_counts(s, part, 1, [&](std::uint64_t* words) {
    for_each_segment(s, part, [&](std::size_t i, place_state& p) { select(i, p, words + i); });
  });
}

}  // namespace strata::detail
