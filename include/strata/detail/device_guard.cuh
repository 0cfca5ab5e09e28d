// RAII switch of the current device; the only place Strata calls cudaSetDevice.
#pragma once

#include <strata/error.hpp>

#include <cuda_runtime_api.h>

namespace strata::detail {

/// Makes `device` current for its lifetime and restores the caller's device afterwards.
/// Skips the switch when the device is already current (cudaSetDevice is not free).
class device_guard {
 public:
  explicit device_guard(int device) {
    STRATA_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) STRATA_CUDA_CHECK_ON(device, cudaSetDevice(device));
    current_ = device;
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() {
    if (previous_ != current_) (void)cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  int current_ = 0;
};

}  // namespace strata::detail
