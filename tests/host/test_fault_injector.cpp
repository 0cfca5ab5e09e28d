// The test-only fault injector's bookkeeping (strata/error.hpp under STRATA_ENABLE_FAULT_INJECTION),
// on the host: which calls it counts, that every count starts from zero, and which call an armed
// injector fails. No CUDA call is made; the injector only filters the results it is handed. Its
// own binary, since the macro changes what error.hpp defines.
#include <strata/error.hpp>

#include <gtest/gtest.h>

namespace {

using strata::detail::fault_injector;
using strata::detail::fault_site;
using strata::detail::inject_fault;

TEST(FaultInjector, EveryCountStartsFromZeroForPlacedAndUnplacedCalls) {
  auto& inj = strata::detail::faults();
  inj.count(fault_site::allocation);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);  // no place
  {
    const strata::detail::active_place_scope at(2);
    EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);
    EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);  // not an allocation: not counted
  }
  EXPECT_EQ(inject_fault(cudaErrorInvalidValue, fault_site::allocation), cudaErrorInvalidValue);  // a real failure
  EXPECT_EQ(inj.calls(fault_injector::any_place), 4);
  EXPECT_EQ(inj.calls(2), 1);
  EXPECT_EQ(inj.calls(0), 0);
  // A second count (the next operation's): nothing carried over, the calls made for no place
  // included (they once were, and tests' last allocation points were never reached).
  inj.count(fault_site::allocation);
  EXPECT_EQ(inj.calls(fault_injector::any_place), 0);
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);
  EXPECT_EQ(inj.calls(fault_injector::any_place), 1);
  inj.disarm();
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);
  EXPECT_EQ(inj.calls(fault_injector::any_place), 1) << "a disarmed injector counts nothing";
}

TEST(FaultInjector, AnArmedInjectorFailsExactlyTheNthCallOfItsSiteAndPlace) {
  auto& inj = strata::detail::faults();
  inj.arm(fault_injector::any_place, 2, cudaErrorMemoryAllocation, fault_site::allocation);
  EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);  // other calls do not count down
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);
  EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess);
  EXPECT_EQ(inj.fired(), 0);
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaErrorMemoryAllocation);
  EXPECT_EQ(inj.fired(), 1);
  EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaSuccess) << "only one failure per arm";

  int fired_here = 0;
  inj.arm(1, 0, cudaErrorLaunchFailure, fault_site::any_call, [&] { ++fired_here; });
  {
    const strata::detail::active_place_scope at(0);
    EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);  // another place's call
  }
  EXPECT_EQ(inject_fault(cudaSuccess), cudaSuccess);  // a call for no place
  {
    const strata::detail::active_place_scope at(1);
    EXPECT_EQ(inject_fault(cudaSuccess, fault_site::allocation), cudaErrorLaunchFailure);  // any call: allocations too
  }
  EXPECT_EQ(fired_here, 1);
  inj.disarm();
}

}  // namespace
