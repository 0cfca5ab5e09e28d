// Exception types and the one CUDA check macro used by all Strata code.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace strata {

/// Thrown when a CUDA runtime call made by Strata fails.
///
/// Carries the CUDA error code, the text of the failing call, the device that was current
/// (or the device the call was made for), and the source location. `what()` combines them:
/// `"cudaMalloc(&p, bytes) failed on device 2: out of memory (cudaErrorMemoryAllocation) at
/// distributed_vector.cuh:120"`.
class cuda_error : public std::runtime_error {
 public:
  /// Builds the error; `device` is -1 when no device could be determined.
  cuda_error(cudaError_t code, std::string call, int device, std::string file, int line)
      : std::runtime_error(format(code, call, device, file, line)),
        code_(code),
        call_(std::move(call)),
        device_(device),
        file_(std::move(file)),
        line_(line) {}

  /// The CUDA error code the call returned.
  cudaError_t code() const noexcept { return code_; }
  /// The source text of the failing call.
  const std::string& call() const noexcept { return call_; }
  /// The device ordinal the call was made on, or -1 if unknown.
  int device() const noexcept { return device_; }
  /// The source file of the call.
  const std::string& file() const noexcept { return file_; }
  /// The source line of the call.
  int line() const noexcept { return line_; }

 private:
  static std::string format(cudaError_t code, const std::string& call, int device, const std::string& file,
                            int line) {
    std::string msg = call + " failed";
    if (device >= 0) msg += " on device " + std::to_string(device);
    msg += ": ";
    msg += cudaGetErrorString(code);
    msg += " (";
    msg += cudaGetErrorName(code);
    msg += ") at " + file + ":" + std::to_string(line);
    return msg;
  }

  cudaError_t code_;
  std::string call_;
  int device_;
  std::string file_;
  int line_;
};

namespace detail {

/// The device that is current, or -1 when none can be determined (no driver, no device).
inline int current_device_or_unknown() noexcept {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) return -1;
  return d;
}

/// Throws strata::cuda_error for a failed call. Clears the non-sticky error state first so a
/// later, unrelated call does not report it again.
[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, int device, const char* file,
                                          int line) {
  (void)cudaGetLastError();
  throw cuda_error(code, call, device < 0 ? current_device_or_unknown() : device, file, line);
}

inline void check_cuda(cudaError_t code, const char* call, int device, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(code, call, device, file, line);
}

/// The place whose work this thread is enqueueing (-1: none); set by the fan-out, read by the
/// test-only fault injector.
inline int& active_place() noexcept {
  thread_local int place = -1;
  return place;
}

/// Marks this thread as working for place `p` for its lifetime.
class active_place_scope {
 public:
  explicit active_place_scope(int p) noexcept : previous_(active_place()) { active_place() = p; }
  active_place_scope(const active_place_scope&) = delete;
  active_place_scope& operator=(const active_place_scope&) = delete;
  ~active_place_scope() { active_place() = previous_; }

 private:
  int previous_;
};

#ifdef STRATA_ENABLE_FAULT_INJECTION
/// Test-only (compiled with STRATA_ENABLE_FAULT_INJECTION): makes the Nth checked CUDA call made
/// for a chosen place report `error`, as if that call had failed.
struct fault_injector {
  int place = -1;
  long countdown = -1;
  cudaError_t error = cudaErrorLaunchFailure;
  int fired = 0;
  void arm(int p, long nth, cudaError_t e = cudaErrorLaunchFailure) {
    place = p;
    countdown = nth;
    error = e;
    fired = 0;
  }
  void disarm() { countdown = -1; }
};
inline fault_injector& faults() {
  static fault_injector f;
  return f;
}
inline cudaError_t inject_fault(cudaError_t e) {
  fault_injector& f = faults();
  if (e == cudaSuccess && f.countdown >= 0 && f.place == active_place() && f.countdown-- == 0) {
    ++f.fired;
    return f.error;
  }
  return e;
}
#define STRATA_DETAIL_INJECT(e) ::strata::detail::inject_fault(e)
#else
#define STRATA_DETAIL_INJECT(e) (e)
#endif

}  // namespace detail
}  // namespace strata

/// Checks a CUDA runtime call; throws strata::cuda_error naming the call, the current device and
/// file:line when it does not return cudaSuccess. The one error check of all Strata code.
#define STRATA_CUDA_CHECK(expr) ::strata::detail::check_cuda(STRATA_DETAIL_INJECT(expr), #expr, -1, __FILE__, __LINE__)

/// Like STRATA_CUDA_CHECK, for a call made on behalf of device `dev` (used where the current
/// device may not be the one the call concerns, e.g. peer access setup).
#define STRATA_CUDA_CHECK_ON(dev, expr) \
  ::strata::detail::check_cuda(STRATA_DETAIL_INJECT(expr), #expr, (dev), __FILE__, __LINE__)
