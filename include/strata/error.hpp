// Exception types and the one CUDA check macro used by all Strata code.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#ifdef STRATA_ENABLE_FAULT_INJECTION
#include <functional>
#include <mutex>
#endif

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
/// Where an injected failure may land: any checked CUDA call (STRATA_CUDA_CHECK, and Strata's
/// own device and pinned allocations), only those allocations, or only the NCCL layer's calls
/// (STRATA_NCCL_CHECK: communicator set-up and queries, collectives, sends and receives, group
/// bounds; not the polls of a wait, made as often as timing wants, nor the teardown calls). An injected NCCL failure is not
/// made at all and reads ncclSystemError; any_call does not count NCCL calls.
enum class fault_site { any_call, allocation, nccl_call };

/// Test-only (compiled with STRATA_ENABLE_FAULT_INJECTION): makes the Nth checked CUDA call (or
/// the Nth allocation) made for a chosen place report `error`, as if that call had failed. It can
/// also count the calls an operation makes per place, so a test can reach every phase of it.
/// Thread-safe: the calls of several threads (ranks on threads, the user's threads) count in the
/// order they are made.
class fault_injector {
 public:
  /// arm()'s place for "whichever place (or none) the call is made for": allocations made outside
  /// a fan-out (a container's constructor) count too.
  static constexpr int any_place = -2;
  /// The most places count() keeps apart; calls for places beyond it are not counted.
  static constexpr int max_counted_places = 64;

  /// Fails the `nth` (0-based) call at `site` made for place `p` with `e`; later calls succeed.
  /// `on_fire`, if given, runs when the failure is injected (a test kills its process there: a
  /// rank that dies at that point of an operation).
  void arm(int p, long nth, cudaError_t e = cudaErrorLaunchFailure, fault_site site = fault_site::any_call,
           std::function<void()> on_fire = {}) {
    std::lock_guard<std::mutex> l(m_);
    on_fire_ = std::move(on_fire);
    place_ = p;
    countdown_ = nth;
    error_ = e;
    site_ = site;
    fired_ = 0;
    counting_ = false;
  }
  /// Fails nothing and counts the calls at `site` per place (see calls()).
  void count(fault_site site = fault_site::any_call) {
    std::lock_guard<std::mutex> l(m_);
    countdown_ = -1;
    site_ = site;
    counting_ = true;
    for (auto& c : counts_) c = 0;
    unplaced_ = 0;  // (once left out: calls(any_place) then grew across count() sessions, and a
                    // test's last allocation points never fired, passing as "not reached")
  }
  /// The calls counted for place `p` since count() (any_place: all of them).
  long calls(int p) const {
    std::lock_guard<std::mutex> l(m_);
    if (p == any_place) {
      long sum = unplaced_;
      for (long c : counts_) sum += c;
      return sum;
    }
    return p >= 0 && p < max_counted_places ? counts_[p] : 0;
  }
  /// Stops failing and counting.
  void disarm() {
    std::lock_guard<std::mutex> l(m_);
    countdown_ = -1;
    counting_ = false;
  }
  /// How many failures were injected since arm().
  int fired() const {
    std::lock_guard<std::mutex> l(m_);
    return fired_;
  }
  /// What a call at `site` that returned `e` reports instead.
  cudaError_t filter(cudaError_t e, fault_site site) {
    if (e != cudaSuccess) return e;
    std::lock_guard<std::mutex> l(m_);
    if (site_ == fault_site::allocation && site != fault_site::allocation) return e;
    if ((site_ == fault_site::nccl_call) != (site == fault_site::nccl_call)) return e;
    const int here = active_place();
    if (counting_) {
      if (here >= 0 && here < max_counted_places)
        ++counts_[here];
      else
        ++unplaced_;
      return e;
    }
    if (countdown_ >= 0 && (place_ == any_place || place_ == here) && countdown_-- == 0) {
      ++fired_;
      if (on_fire_) on_fire_();
      return error_;
    }
    return e;
  }

 private:
  mutable std::mutex m_;
  int place_ = -1;
  long countdown_ = -1;
  cudaError_t error_ = cudaErrorLaunchFailure;
  fault_site site_ = fault_site::any_call;
  int fired_ = 0;
  bool counting_ = false;
  long counts_[max_counted_places] = {};
  long unplaced_ = 0;
  std::function<void()> on_fire_;
};
inline fault_injector& faults() {
  static fault_injector f;
  return f;
}
inline cudaError_t inject_fault(cudaError_t e, fault_site site = fault_site::any_call) {
  return faults().filter(e, site);
}
#define STRATA_DETAIL_INJECT(e) ::strata::detail::inject_fault(e)
#define STRATA_DETAIL_INJECT_ALLOCATION(e) ::strata::detail::inject_fault((e), ::strata::detail::fault_site::allocation)
#else
#define STRATA_DETAIL_INJECT(e) (e)
#define STRATA_DETAIL_INJECT_ALLOCATION(e) (e)
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
