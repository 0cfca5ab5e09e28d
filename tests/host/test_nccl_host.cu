// The NCCL layer where no GPU is needed (CI): the error type, the argument checks a process group
// makes before any NCCL call, and the version of the NCCL library that was found.
#include <strata/nccl.cuh>

#include <gtest/gtest.h>

#include <string>

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
}

TEST(NcclHost, TheNcclLibraryReportsItsVersion) {
  const int v = strata::nccl_version();
  EXPECT_GE(v, 20000) << "NCCL 2.x encodes its version as major * 10000 + minor * 100 + patch";
  std::printf("NCCL %d.%d.%d loaded\n", v / 10000, (v / 100) % 100, v % 100);
}
