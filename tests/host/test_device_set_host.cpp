// device_set creation where the machine may have no GPU (CI): errors must be clear and typed.
// On a GPU machine the same tests check the positive side.
#include <strata/device_set.cuh>

#include <gtest/gtest.h>

#include <string>

TEST(DeviceSetHost, EmptyListIsRejected) {
  try {
    strata::device_set s(std::vector<int>{});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("list of devices is empty"), std::string::npos) << e.what();
  }
  EXPECT_THROW(strata::device_set::repeat(0, 0), std::invalid_argument);
  EXPECT_THROW(strata::device_set::repeat(0, 65), std::invalid_argument);
}

TEST(DeviceSetHost, OrdinalOutOfRangeNamesOrdinalAndCount) {
  const int n = strata::visible_device_count();
  try {
    strata::device_set s{n};
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("device ordinal " + std::to_string(n) + " is out of range"), std::string::npos) << w;
    EXPECT_NE(w.find(std::to_string(n) + " CUDA device"), std::string::npos) << w;
  }
  EXPECT_THROW((strata::device_set{-1}), std::out_of_range);
}

TEST(DeviceSetHost, AllOnThisMachine) {
  const int n = strata::visible_device_count();
  if (n == 0) {
    try {
      (void)strata::device_set::all();
      FAIL() << "no exception on a machine without GPUs";
    } catch (const strata::cuda_error& e) {
      EXPECT_EQ(e.code(), cudaErrorNoDevice);
      EXPECT_NE(std::string(e.what()).find("strata::device_set::all() failed: no CUDA-capable device"), std::string::npos) << e.what();
    }
  } else {
    const auto s = strata::device_set::all();
    EXPECT_EQ(s.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(s.device(static_cast<std::size_t>(i)), i);
  }
}

// What cudaGetDeviceCount's answer means: only "no device" and "no driver at all" count as zero
// devices; a driver older than the runtime is an error naming both versions (it used to read as
// "no GPU", so a GPU machine with a stale driver reported its whole GPU suite as skipped).
TEST(DeviceSetHost, DeviceCountSkipsOnlyWhenThereIsTrulyNoDevice) {
  using strata::detail::device_count_from;
  EXPECT_EQ(device_count_from(cudaSuccess, 3, 13000, 13000), 3);
  EXPECT_EQ(device_count_from(cudaErrorNoDevice, 0, 13000, 13000), 0);
  EXPECT_EQ(device_count_from(cudaErrorInsufficientDriver, 0, 0, 13000), 0);  // no driver installed
  EXPECT_EQ(device_count_from(cudaErrorStubLibrary, 0, 0, 13000), 0);  // the link stub, no driver
  try {
    (void)device_count_from(cudaErrorInsufficientDriver, 0, 12020, 13000);
    FAIL() << "a driver too old for the runtime passed as no device";
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorInsufficientDriver);
    const std::string w = e.what();
    EXPECT_NE(w.find("the driver is too old: it supports CUDA 12.2, this program needs CUDA 13.0"), std::string::npos) << w;
  }
  EXPECT_THROW((void)device_count_from(cudaErrorInitializationError, 0, 13000, 13000), strata::cuda_error);
  EXPECT_THROW((void)device_count_from(cudaErrorDevicesUnavailable, 0, 13000, 13000), strata::cuda_error);
}
