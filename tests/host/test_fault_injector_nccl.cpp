// The fault injector's NCCL site (strata/nccl/error.cuh under STRATA_ENABLE_FAULT_INJECTION), on
// the host: STRATA_NCCL_CHECK's calls are counted apart from CUDA calls, and an armed injector
// fails exactly the Nth of them without making it. Needs NCCL (ncclGetVersion), no GPU.
#include <strata/nccl/error.cuh>

#include <gtest/gtest.h>

#include <string>

namespace {

using strata::detail::fault_injector;
using strata::detail::fault_site;
using strata::detail::inject_fault;

TEST(FaultInjector, NcclCallsCountApartFromCudaCalls) {
  auto& inj = strata::detail::faults();
  inj.count(fault_site::nccl_call);
  (void)strata::nccl_version();
  (void)strata::nccl_version();
  EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);  // a CUDA call: not an NCCL one
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);
  EXPECT_EQ(inj.calls(fault_injector::any_place), 2);
  inj.count();  // any_call: CUDA calls and allocations, no NCCL call
  (void)strata::nccl_version();
  EXPECT_EQ(inj.calls(fault_injector::any_place), 0) << "any_call counted an NCCL call";
  EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);
  EXPECT_EQ(inj.calls(fault_injector::any_place), 1);
  inj.disarm();
}

TEST(FaultInjector, AnInjectedNcclFailureIsNotMadeAndThrowsNcclError) {
  auto& inj = strata::detail::faults();
  inj.arm(fault_injector::any_place, 1, cudaErrorLaunchFailure, fault_site::nccl_call);
  EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);  // CUDA calls do not count down
  EXPECT_NO_THROW((void)strata::nccl_version());      // the 0th NCCL call
  EXPECT_EQ(inj.fired(), 0);
  int made = 0;
  try {
    STRATA_NCCL_CHECK(3, (++made, ncclSuccess));  // the 1st: fails
    ADD_FAILURE() << "the armed NCCL call did not throw";
  } catch (const strata::nccl_error& e) {
    EXPECT_EQ(e.code(), ncclSystemError);
    EXPECT_EQ(e.rank(), 3);
    EXPECT_NE(std::string(e.what()).find("++made"), std::string::npos) << e.what();
  }
  EXPECT_EQ(made, 0) << "an injected NCCL failure must not make the call";
  EXPECT_EQ(inj.fired(), 1);
  EXPECT_NO_THROW(STRATA_NCCL_CHECK(3, (++made, ncclSuccess))) << "one failure per arm";
  EXPECT_EQ(made, 1);
  inj.disarm();
  // A real failure passes through untouched.
  try {
    STRATA_NCCL_CHECK(-1, ncclInvalidArgument);
    ADD_FAILURE() << "a failing NCCL call did not throw";
  } catch (const strata::nccl_error& e) {
    EXPECT_EQ(e.code(), ncclInvalidArgument);
  }
}

}  // namespace
