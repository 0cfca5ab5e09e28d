// Entry point of every GPU test binary: runs the suite where a CUDA device is visible, and
// reports a skip (ctest shows the binary as skipped via SKIP_REGULAR_EXPRESSION) only where there
// truly is no device or no driver. Devices that cannot be used (a driver older than the runtime)
// fail the binary with the real error instead of passing as "no GPU".
#include <strata/device_set.cuh>

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int devices = 0;
  try {
    devices = strata::visible_device_count();
  } catch (const strata::cuda_error& e) {
    std::printf("STRATA_GPU_ERROR: %s\n", e.what());
    return 1;
  }
  if (devices == 0) {
    std::printf("STRATA_GPU_SKIP: no CUDA device is visible; GPU tests skipped\n");
    return 0;
  }
  return RUN_ALL_TESTS();
}
