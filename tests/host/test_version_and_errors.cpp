// Version macros against the CMake project version; cuda_error's contents.
#include <strata/error.hpp>
#include <strata/version.hpp>

#include <gtest/gtest.h>

#include <string>

TEST(Version, MacrosMatchTheProjectVersion) {
  const std::string from_macros = std::to_string(STRATA_VERSION_MAJOR) + "." + std::to_string(STRATA_VERSION_MINOR) +
                                  "." + std::to_string(STRATA_VERSION_PATCH);
  EXPECT_EQ(from_macros, STRATA_CMAKE_PROJECT_VERSION);
  EXPECT_EQ(std::string(STRATA_VERSION_STRING), STRATA_CMAKE_PROJECT_VERSION);
  EXPECT_EQ(STRATA_VERSION, STRATA_VERSION_MAJOR * 10000 + STRATA_VERSION_MINOR * 100 + STRATA_VERSION_PATCH);
}

TEST(CudaError, CarriesCodeCallDeviceAndLocation) {
  try {
    ::strata::detail::check_cuda(cudaErrorMemoryAllocation, "cudaMalloc(&p, 64)", 3, "file.cuh", 42);
    FAIL() << "no exception";
  } catch (const strata::cuda_error& e) {
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation);
    EXPECT_EQ(e.call(), "cudaMalloc(&p, 64)");
    EXPECT_EQ(e.device(), 3);
    EXPECT_EQ(e.file(), "file.cuh");
    EXPECT_EQ(e.line(), 42);
    const std::string w = e.what();
    EXPECT_NE(w.find("cudaMalloc(&p, 64) failed on device 3"), std::string::npos) << w;
    EXPECT_NE(w.find("cudaErrorMemoryAllocation"), std::string::npos) << w;
    EXPECT_NE(w.find("file.cuh:42"), std::string::npos) << w;
  }
}

TEST(CudaError, SuccessDoesNotThrow) { EXPECT_NO_THROW(STRATA_CUDA_CHECK(cudaSuccess)); }
