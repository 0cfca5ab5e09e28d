// The NCCL layer where no GPU is needed (CI): the error type, the argument checks a process group
// makes before any NCCL call, and the version of the NCCL library that was found.
#include <strata/nccl.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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
