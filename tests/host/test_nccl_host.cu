// The NCCL layer where no GPU is needed (CI): the error type, the argument checks a process group
// makes before any NCCL call, and the version of the NCCL library that was found.
#include <strata/nccl.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

TEST(NcclHost, ErrorNamesTheCallTheRankAndNcclsMessage) {
  const strata::nccl_error e(ncclRemoteError, "ncclAllGather(...)", 3, "a peer failed", "file.cuh", 42);
  EXPECT_EQ(e.code(), ncclRemoteError);
  EXPECT_EQ(e.rank(), 3);
  EXPECT_EQ(e.call(), "ncclAllGather(...)");
  const std::string w = e.what();
  EXPECT_NE(w.find("ncclAllGather(...) failed on rank 3: "), std::string::npos) << w;
  EXPECT_NE(w.find(ncclGetErrorString(ncclRemoteError)), std::string::npos) << w;
  EXPECT_NE(w.find("(a peer failed) at file.cuh:42"), std::string::npos) << w;
  EXPECT_THROW(STRATA_NCCL_CHECK(0, ncclInvalidArgument), strata::nccl_error);
  EXPECT_NO_THROW(STRATA_NCCL_CHECK(0, ncclSuccess));
}

TEST(NcclHost, ProcessGroupChecksItsArgumentsBeforeAnyNcclCall) {
  using strata::process_group;
  EXPECT_THROW(process_group::check_arguments(0, 0, 0), std::invalid_argument);
  EXPECT_THROW(process_group::check_arguments(-1, 4, 0), std::invalid_argument);
  try {
    process_group::check_arguments(4, 4, 0);
    FAIL() << "rank 4 of 4 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 4 is not in [0, 4)"), std::string::npos) << e.what();
  }
  const int n = strata::visible_device_count();
  EXPECT_THROW(process_group::check_arguments(0, 2, n), std::out_of_range);
  EXPECT_THROW(process_group::check_arguments(0, 2, -1), std::out_of_range);
  EXPECT_THROW(process_group::borrow(nullptr), std::invalid_argument);
  // Several ranks of one process (create_local / create_all): the same checks for each, first.
  EXPECT_THROW(process_group::check_local_arguments(0, 2, {}), std::invalid_argument);
  EXPECT_THROW(process_group::check_local_arguments(-1, 2, {0}), std::invalid_argument);
  try {
    process_group::check_local_arguments(3, 4, {0, 0});
    FAIL() << "ranks 3 and 4 of 4 were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ranks 3 to 4 are not in [0, 4)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(process_group::check_local_arguments(0, 2, {0, n}), std::out_of_range);
  EXPECT_THROW(process_group::create_all({}), std::invalid_argument);
  EXPECT_THROW(process_group::create_all({n}), std::out_of_range);  // before any NCCL call
  if (n > 0) EXPECT_NO_THROW(process_group::check_local_arguments(1, 3, {0, 0}));
  // A timeout that is not positive would make every collective give up at once.
  EXPECT_THROW(process_group::check_timeout(std::chrono::milliseconds(0)), std::invalid_argument);
  EXPECT_THROW(process_group::check_timeout(std::chrono::milliseconds(-5)), std::invalid_argument);
  EXPECT_NO_THROW(process_group::check_timeout(std::chrono::milliseconds(1)));
}

TEST(NcclHost, TheNcclLibraryReportsItsVersion) {
  const int v = strata::nccl_version();
  EXPECT_GE(v, 20000) << "NCCL 2.x encodes its version as major * 10000 + minor * 100 + patch";
  std::printf("NCCL %d.%d.%d loaded\n", v / 10000, (v / 100) % 100, v % 100);
}

// The stamps of a group all-gather: every rank's slot holds its payload (16-byte aligned) and the
// call's stamp; a slot this call did not write (a rank that left: stale bytes of an earlier call,
// or never written) is found, the first such rank named.
TEST(NcclHost, GatherStampsFindARankThatDidNotContribute) {
  using namespace strata::detail;
  EXPECT_EQ(gather_slot_bytes(1), 32u);
  EXPECT_EQ(gather_slot_bytes(16), 32u);
  EXPECT_EQ(gather_slot_bytes(17), 48u);
  EXPECT_EQ(gather_stamp_at(8), 16u);
  EXPECT_EQ(gather_stamp_at(24), 32u);
  EXPECT_NE(gather_stamp(1), gather_stamp(2));
  EXPECT_NE(gather_stamp(1), 0u);
  const int ranks = 5;
  const std::size_t bytes = 12, slot = gather_slot_bytes(bytes), at = gather_stamp_at(bytes);
  std::vector<char> buf(slot * ranks, 0);
  const auto stamp = [&](int r, std::uint64_t s) { std::memcpy(buf.data() + r * slot + at, &s, sizeof s); };
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(7)), 0) << "a zeroed buffer";
  for (int r = 0; r < ranks; ++r) stamp(r, gather_stamp(7));
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(7)), -1);
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(8)), 0) << "every slot is of the call before";
  for (int r = 0; r < ranks; ++r) stamp(r, gather_stamp(8));
  stamp(3, gather_stamp(7));  // rank 3 left after call 7
  EXPECT_EQ(first_unstamped(buf.data(), ranks, slot, at, gather_stamp(8)), 3);
  EXPECT_EQ(first_unstamped(buf.data(), 3, slot, at, gather_stamp(8)), -1) << "only ranks [0, 3) asked";
}

// process_group::shrink's checks of the lost ranks, made before any NCCL call.
TEST(NcclHost, ShrinkChecksTheLostRanksBeforeAnyNcclCall) {
  using strata::process_group;
  const auto message = [](int rank, int size, const std::vector<int>& lost) {
    try {
      process_group::check_shrink_arguments(rank, size, lost);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(0, 3, {}).find("no rank is named lost"), std::string::npos);
  EXPECT_NE(message(0, 3, {3}).find("rank 3 is not in [0, 3)"), std::string::npos);
  EXPECT_NE(message(0, 3, {-1}).find("rank -1 is not in [0, 3)"), std::string::npos);
  EXPECT_NE(message(0, 4, {2, 1, 2}).find("rank 2 is named twice"), std::string::npos);
  EXPECT_NE(message(1, 3, {1}).find("rank 1 calls it but is named lost"), std::string::npos);
  EXPECT_EQ(message(0, 3, {2}), "accepted");
  EXPECT_EQ(message(3, 4, {2, 0, 1}), "accepted");
}

// What a lost rank took from a range, and the layout that lets each survivor keep its elements
// on its own GPU (strata::lost_ranges and strata::salvage), against element-by-element references
// on random layouts.
TEST(NcclHost, LostRangesAndTheSurvivorsLayoutMatchAnElementByElementReference) {
  using namespace strata::detail;
  EXPECT_THROW(surviving_ranks(3, {3}, "t"), std::invalid_argument);
  EXPECT_THROW(surviving_ranks(3, {1, 1}, "t"), std::invalid_argument);
  EXPECT_EQ(surviving_ranks(4, {2, 0}, "t"), (std::vector<int>{1, 3}));
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 300; ++trial) {
    const int ranks = 1 + static_cast<int>(rng() % 6);
    std::vector<int> owner;
    for (int r = 0; r < ranks; ++r)
      for (std::size_t k = 1 + rng() % 3; k > 0; --k) owner.push_back(r);
    std::vector<std::uint64_t> sizes;
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < owner.size(); ++i) {
      sizes.push_back(rng() % 4 == 0 ? 0 : rng() % 50);
      n += sizes.back();
    }
    const auto part = strata::partition::explicit_sizes(n, sizes);
    std::vector<int> lost;
    for (int r = 0; r < ranks; ++r)
      if (rng() % 3 == 0) lost.push_back(r);
    // Reference: each element's rank, by walking the sizes.
    std::vector<int> rank_of;
    for (std::size_t i = 0; i < sizes.size(); ++i) rank_of.insert(rank_of.end(), sizes[i], owner[i]);
    const auto is_lost = [&](int r) { return std::find(lost.begin(), lost.end(), r) != lost.end(); };
    std::vector<char> covered(n, 0);
    const auto got = ranges_of_ranks(part, owner, lost);
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_GT(got[k].count, 0u);
      if (k > 0) ASSERT_GT(got[k].offset, got[k - 1].offset + got[k - 1].count) << "adjacent ranges not merged";
      for (std::uint64_t g = got[k].offset; g < got[k].offset + got[k].count; ++g) covered.at(g) = 1;
    }
    for (std::uint64_t g = 0; g < n; ++g) ASSERT_EQ(covered[g] != 0, is_lost(rank_of[g])) << "element " << g;
    const auto held = elements_per_rank(part, owner, ranks);
    for (int r = 0; r < ranks; ++r)
      EXPECT_EQ(held[static_cast<std::size_t>(r)],
                static_cast<std::uint64_t>(std::count(rank_of.begin(), rank_of.end(), r)));
    // The survivors' holding layout: survivor q's places hold exactly what it held.
    const auto left = surviving_ranks(ranks, lost, "t");
    std::vector<std::uint64_t> kept;
    std::vector<std::size_t> places;
    for (const int r : left) {
      kept.push_back(held[static_cast<std::size_t>(r)]);
      places.push_back(1 + rng() % 4);
    }
    const auto layout = holding_layout(kept, places);
    std::size_t at = 0;
    for (std::size_t q = 0; q < kept.size(); ++q) {
      std::uint64_t sum = 0, most = 0, least = UINT64_MAX;
      for (std::size_t k = 0; k < places[q]; ++k, ++at) {
        sum += layout.at(at);
        most = std::max(most, layout[at]);
        least = std::min(least, layout[at]);
      }
      EXPECT_EQ(sum, kept[q]) << "survivor " << q;
      if (places[q] > 0) EXPECT_LE(most - least, 1u) << "survivor " << q << "'s share is not spread evenly";
    }
    EXPECT_EQ(at, layout.size());
  }
}

// The one bounded wait of the NCCL layer (destroy and shrink go through it): a call that finishes
// in time hands back its result; one that does not leaves the caller after the timeout, and what
// it returns later goes to the too-late handler on its own thread, never to the caller.
TEST(NcclHost, BoundedCallReturnsInTimeOrHandsALateResultToItsHandler) {
  using namespace std::chrono_literals;
  int got = -1;
  EXPECT_EQ(strata::detail::bounded_call(0, 5000ms, [] { return 7; }, [](int) { ADD_FAILURE(); }, got),
            strata::detail::bounded_outcome::finished);
  EXPECT_EQ(got, 7);

  auto late_value = std::make_shared<std::atomic<int>>(-1);
  auto release = std::make_shared<std::atomic<bool>>(false);
  got = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const auto how = strata::detail::bounded_call(
      0, 100ms,
      [release] {
        while (!release->load()) std::this_thread::sleep_for(1ms);
        return 11;
      },
      [late_value](int v) { late_value->store(v); }, got);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(how, strata::detail::bounded_outcome::late);
  EXPECT_EQ(got, -1);  // (nothing handed to the caller)
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 3000ms);
  release->store(true);
  for (int i = 0; i < 5000 && late_value->load() < 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(late_value->load(), 11);
}
