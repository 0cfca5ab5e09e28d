// Entry point of every GPU test binary: runs the suite where a CUDA device is visible, and
// otherwise reports a skip (ctest shows the binary as skipped via SKIP_REGULAR_EXPRESSION).
#include <strata/device_set.cuh>

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (strata::visible_device_count() == 0) {
    std::printf("STRATA_GPU_SKIP: no CUDA device is visible; GPU tests skipped\n");
    return 0;
  }
  return RUN_ALL_TESTS();
}
