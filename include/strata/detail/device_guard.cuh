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

/// The switch destructors make: `device` current for its lifetime, the caller's device restored
/// afterwards, every error ignored (a destructor must not throw, and an error there means the
/// context is already broken). Never throws.
class quiet_device_switch {
 public:
  explicit quiet_device_switch(int device) noexcept : device_(device) {
    (void)cudaGetDevice(&previous_);
    if (previous_ != device_) (void)cudaSetDevice(device_);
  }
  quiet_device_switch(const quiet_device_switch&) = delete;
  quiet_device_switch& operator=(const quiet_device_switch&) = delete;
  ~quiet_device_switch() {
    if (previous_ >= 0 && previous_ != device_) (void)cudaSetDevice(previous_);
  }

 private:
  int device_;
  int previous_ = -1;
};

}  // namespace strata::detail
