// strata::future<T>: the value of an asynchronous Strata algorithm, delivered by the root place.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace strata {

template <class T>
class future;

namespace detail {
/// Internal: what other parts of Strata may read of a pending future without waiting for it
/// (the NCCL layer orders its own work after the value and reads it on a device).
struct future_access {
  /// True if the value is still to be written by device work (false: ready by construction).
  template <class T>
  static bool pending(const future<T>& f) noexcept { return f.state_ != nullptr; }
  /// Where the value will be (mapped, portable pinned memory: readable by kernels on any device)
  /// and the event recorded after it is written. Only for a pending future.
  template <class T>
  static const T* value_address(const future<T>& f) noexcept { return static_cast<const T*>(f.slot_.host); }
  template <class T>
  static cudaEvent_t done_event(const future<T>& f) noexcept { return f.slot_.done; }
};
}  // namespace detail

/// The result of a `*_async` algorithm: the work is enqueued on every place, and the root place
/// writes the value into pinned host memory when it finishes. Move-only. Destroying a future
/// whose work is still running waits for it (never throws), as std::async's future does.
template <class T>
class future {
  static_assert(std::is_trivially_copyable_v<T>, "strata::future<T>: T must be trivially copyable");

 public:
  /// A future with no state (`valid()` is false).
  future() = default;

  /// A future that is ready with `value` (what algorithms return when there is no device work,
  /// e.g. a reduce over an empty range).
  explicit future(T value) : value_(value) {}

  /// Internal: a future for a value the root writes into `slot` (see detail::set_state).
  future(std::shared_ptr<detail::set_state> state, detail::result_slot slot)
      : state_(std::move(state)), slot_(slot) {}

  /// Takes other's state; other is left without state.
  future(future&& other) noexcept { swap(other); }
  /// Waits for this future's pending work (if any), then takes other's state.
  future& operator=(future&& other) noexcept {
    if (this != &other) {
      reset();
      swap(other);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { reset(); }

  /// True if the future holds a value or pending work (it was not default-made, moved from, or
  /// consumed by get()).
  bool valid() const noexcept { return value_.has_value() || state_ != nullptr; }

  /// True if the value is available without waiting. Throws strata::cuda_error if the work
  /// failed, std::logic_error if the future is not valid.
  bool ready() const {
    require_valid("ready");
    if (value_) return true;
    const cudaError_t e = cudaEventQuery(slot_.done);
    if (e == cudaSuccess) {
      state_->check_ranks("strata::future::ready");
      return true;
    }
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    detail::throw_cuda_error(e, "cudaEventQuery(result)", state_->root_device(), __FILE__, __LINE__);
  }

  /// Blocks until the value is available. Throws strata::cuda_error (naming the failing call and
  /// device) if the work failed, std::logic_error if the future is not valid. On a set spanning
  /// processes the wait never hangs on a failed or silent peer: it throws the process group's
  /// strata::nccl_error (after aborting the communicator) instead.
  void wait() const {
    require_valid("wait");
    if (value_) return;
    if (state_->link != nullptr) {
      state_->link->wait_event(slot_.done);
      state_->check_ranks("strata::future::wait");
      return;
    }
    STRATA_CUDA_CHECK_ON(state_->root_device(), cudaEventSynchronize(slot_.done));
  }

  /// Waits and returns the value; the future is no longer valid afterwards. Throws as wait().
  T get() {
    wait();
    T v;
    if (value_) {
      v = *value_;
      value_.reset();
    } else {
      std::memcpy(&v, slot_.host, sizeof(T));
      reset();
    }
    return v;
  }

 private:
  friend struct detail::future_access;
  void require_valid(const char* what) const {
    if (!valid()) throw std::logic_error(std::string("strata::future::") + what + ": the future has no state");
  }
  void reset() noexcept {
    if (state_) {
      if (state_->link != nullptr) {
        try {
          state_->link->wait_event(slot_.done);  // never hangs on a dead peer (it aborts instead)
        } catch (...) {
        }
      }
      (void)cudaEventSynchronize(slot_.done);
      state_->release_slot(slot_);
      state_.reset();
    }
    value_.reset();
  }
  void swap(future& o) noexcept {
    std::swap(state_, o.state_);
    std::swap(slot_, o.slot_);
    std::swap(value_, o.value_);
  }

  std::shared_ptr<detail::set_state> state_;
  detail::result_slot slot_{};
  std::optional<T> value_;
};

}  // namespace strata
