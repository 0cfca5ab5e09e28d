// The NCCL layer's error type and checks: strata::nccl_error, the check macro for NCCL calls, and
// the two NCCL queries a launcher needs before any group exists (the library's version, a fresh
// unique id).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../error.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace strata {

/// Thrown when an NCCL call made by Strata fails, when a peer rank reports an asynchronous NCCL
/// error, or when a wait on NCCL work gives up. Carries NCCL's result code, the failing call, and
/// the rank that saw it; `what()` reads "`<call>` failed on rank R: `<NCCL's message>` (`<detail>`)
/// at file:line".
class nccl_error : public std::runtime_error {
 public:
  /// Builds the error; `rank` is -1 when no rank is known yet (before a communicator exists).
  nccl_error(ncclResult_t code, std::string call, int rank, const std::string& detail, const std::string& file, int line)
      : std::runtime_error(format(code, call, rank, detail, file, line)), code_(code), call_(std::move(call)), rank_(rank) {}
  /// NCCL's result code.
  ncclResult_t code() const noexcept { return code_; }
  /// The source text of the failing call (or the wait that gave up).
  const std::string& call() const noexcept { return call_; }
  /// The rank that saw the failure, or -1.
  int rank() const noexcept { return rank_; }

 private:
  static std::string format(ncclResult_t code, const std::string& call, int rank, const std::string& detail,
                            const std::string& file, int line) {
    std::string msg = call + " failed";
    if (rank >= 0) msg += " on rank " + std::to_string(rank);
    msg += ": ";
    msg += ncclGetErrorString(code);
    if (!detail.empty()) msg += " (" + detail + ")";
    msg += " at " + file + ":" + std::to_string(line);
    return msg;
  }
  ncclResult_t code_;
  std::string call_;
  int rank_;
};

namespace detail {
// Makes the NCCL call `call()` unless the fault injector (tests built with
// STRATA_ENABLE_FAULT_INJECTION, site nccl_call) fails it: then the call is not made, as if NCCL
// had refused it (a group left half-open or a collective half-enqueued by a call that really ran
// would be a state no real failure leaves), and ncclSystemError comes back.
template <class Call>
ncclResult_t nccl_call(Call&& call) {
#ifdef STRATA_ENABLE_FAULT_INJECTION
  if (inject_fault(cudaSuccess, fault_site::nccl_call) != cudaSuccess) return ncclSystemError;
#endif
  return call();
}

inline void check_nccl(ncclResult_t r, const char* call, int rank, const char* file, int line) {
  // NCCL reports its own result; CUDA calls that failed inside it (seen: cudaFuncGetAttributes in
  // ncclCommInitRank) can leave the thread's last CUDA error set, which CUB's launch checks
  // (cudaPeekAtLastError) would later report as theirs. Strata checks its own CUDA calls as it
  // makes them, so what is left here is NCCL's: cleared.
  (void)cudaGetLastError();
  if (r != ncclSuccess && r != ncclInProgress) throw nccl_error(r, call, rank, "", file, line);
}
}  // namespace detail

}  // namespace strata

/// Checks an NCCL call made for rank `rank` (-1 if none yet); throws strata::nccl_error naming the
/// call, the rank and file:line when it fails.
#define STRATA_NCCL_CHECK(rank, expr) \
  ::strata::detail::check_nccl(::strata::detail::nccl_call([&] { return (expr); }), #expr, (rank), __FILE__, __LINE__)

namespace strata {

/// The version of the NCCL library loaded at run time, as NCCL encodes it (e.g. 22809 for
/// 2.28.9). Needs no GPU. Throws strata::nccl_error if NCCL cannot say.
inline int nccl_version() {
  int v = 0;
  STRATA_NCCL_CHECK(-1, ncclGetVersion(&v));
  return v;
}

/// A fresh NCCL unique id: one rank makes it and sends it to every other (through MPI, or the
/// user's own launcher) before all of them make their process_group with it. Throws
/// strata::nccl_error if NCCL fails.
inline ncclUniqueId nccl_unique_id() {
  ncclUniqueId id;
  STRATA_NCCL_CHECK(-1, ncclGetUniqueId(&id));
  return id;
}

}  // namespace strata
