// The phase profile of a sort, for the benchmarks' breakdown. Off the library path: recorded only
// where STRATA_SORT_PROFILE is defined before Strata's headers (benchmarks/ does), in every
// translation unit of the program alike; otherwise the sort reads no clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace strata::detail {

/// Phase timings and memory of the last sort on this thread, for the benchmarks' breakdown: the
/// local sorts, the splitter search, and the exchange plus merges (host wall time; each phase
/// ends with a wait), and the most extra device bytes one place needed (scratch + CUB temp; the
/// place's caches may hold more, left from larger calls).
struct sort_profile {
  double local_s = 0, splitters_s = 0, exchange_merge_s = 0;
  int rounds = 0;
  std::uint64_t peak_extra_bytes = 0;
};
inline sort_profile& last_sort_profile() {
  thread_local sort_profile p;
  return p;
}

/// Marks the phases of one sort into last_sort_profile() (STRATA_SORT_PROFILE), or does nothing.
class sort_phases {
 public:
#ifdef STRATA_SORT_PROFILE
  sort_phases() : t_(std::chrono::steady_clock::now()) { last_sort_profile() = sort_profile{}; }
  /// The local sorts ended.
  void local_done() { last_sort_profile().local_s = lap(); }
  /// The splitter search ended after `rounds` rounds.
  void splitters_done(int rounds) {
    last_sort_profile().splitters_s = lap();
    last_sort_profile().rounds = rounds;
  }
  /// The exchange and the merges ended.
  void exchange_done() { last_sort_profile().exchange_merge_s = lap(); }
  /// One place needed `bytes` of extra device memory.
  void needs(std::uint64_t bytes) {
    if (bytes > last_sort_profile().peak_extra_bytes) last_sort_profile().peak_extra_bytes = bytes;
  }

 private:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - t_).count();
    t_ = now;
    return s;
  }
  std::chrono::steady_clock::time_point t_;
#else
  void local_done() {}
  void splitters_done(int) {}
  void exchange_done() {}
  void needs(std::uint64_t) {}
#endif
};

}  // namespace strata::detail
