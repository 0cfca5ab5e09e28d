// What the public entry points' static_asserts ask of a user's functor: std::is_invocable, except
// for an extended __device__ lambda (nvcc --extended-lambda), whose closure host code cannot call
// or inspect (std::is_invocable is false for it and its result type cannot be deduced on the
// host), so that the check accepts it and the device compilation checks the call.
#pragma once

#include <type_traits>

namespace strata::detail {

/// True if F is the closure type of an extended __device__ lambda.
template <class F>
inline constexpr bool is_device_lambda_v =
#if defined(__CUDACC__) && defined(__CUDACC_EXTENDED_LAMBDA__)
    __nv_is_extended_device_lambda_closure_type(std::remove_cv_t<std::remove_reference_t<F>>);
#else
    false;
#endif

/// std::is_invocable_v<const F&, const Args&...>, or F an extended __device__ lambda.
template <class F, class... Args>
inline constexpr bool callable_v = is_device_lambda_v<F> || std::is_invocable_v<const F&, const Args&...>;

/// std::is_invocable_r_v<R, const F&, const Args&...>, or F an extended __device__ lambda.
template <class R, class F, class... Args>
inline constexpr bool callable_r_v = is_device_lambda_v<F> || std::is_invocable_r_v<R, const F&, const Args&...>;

/// An extended __device__ lambda with its result converted to R and its result type stated, for
/// the CUB and Thrust calls that ask for it on the host (CCCL 3.3+ reductions and scans, Thrust's
/// transform iterator, CUB's keyed scans and reductions).
template <class R, class F>
struct stated_as {
  F f;
  template <class... A>
  __device__ R operator()(A&&... a) const {
    return static_cast<R>(f(static_cast<A&&>(a)...));
  }
};

/// `f` as CUB's and Thrust's host code may inspect it: an extended __device__ lambda wrapped in
/// stated_as<R> (its result becomes an R, which is what the caller accumulates in anyway),
/// anything else as it is.
template <class R, class F>
auto stated_result(const F& f) {
  if constexpr (is_device_lambda_v<F>)
    return stated_as<R, F>{f};
  else
    return f;
}

}  // namespace strata::detail
