// Strata beyond one process: the NCCL layer (opt in: include this header and link Strata::nccl,
// from find_package(Strata CONFIG REQUIRED COMPONENTS nccl)). This header holds the process group
// (one NCCL rank per GPU), NCCL's error type and the one wait that never hangs on a failed or dead
// peer. The algorithms over several processes build on it.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/device_set.cuh>
#include <strata/error.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

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
inline void check_nccl(ncclResult_t r, const char* call, int rank, const char* file, int line) {
  if (r != ncclSuccess && r != ncclInProgress) throw nccl_error(r, call, rank, "", file, line);
}
}  // namespace detail

}  // namespace strata

/// Checks an NCCL call made for rank `rank` (-1 if none yet); throws strata::nccl_error naming the
/// call, the rank and file:line when it fails.
#define STRATA_NCCL_CHECK(rank, expr) ::strata::detail::check_nccl((expr), #expr, (rank), __FILE__, __LINE__)

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

/// One NCCL rank: this process's place in a communicator of `size()` ranks, each driving one
/// GPU. Cheap to copy (copies share the communicator). A group made by `create` owns its
/// communicator and destroys it with the last copy; one made by `borrow` leaves the user's
/// communicator alone.
class process_group {
 public:
  /// A group over the user's own communicator (made with ncclCommInitRank or a framework), which
  /// the user keeps and destroys after the last copy of this group. Throws std::invalid_argument
  /// for a null communicator, strata::nccl_error if NCCL cannot describe it.
  static process_group borrow(ncclComm_t comm) {
    if (comm == nullptr) throw std::invalid_argument("strata::process_group::borrow: the communicator is null");
    auto s = std::make_shared<state>();
    s->comm = comm;
    s->owned = false;
    STRATA_NCCL_CHECK(-1, ncclCommUserRank(comm, &s->rank));
    STRATA_NCCL_CHECK(s->rank, ncclCommCount(comm, &s->size));
    STRATA_NCCL_CHECK(s->rank, ncclCommCuDevice(comm, &s->device));
    return process_group(std::move(s));
  }

  /// Makes this process rank `rank` of `size` on GPU `device`: every rank calls it with the same
  /// `id` (from nccl_unique_id on one of them), and it returns once all have joined. Throws
  /// std::invalid_argument if `size` < 1 or `rank` is not in [0, size), std::out_of_range if
  /// `device` is not a visible GPU (all before any NCCL call), strata::nccl_error if NCCL fails.
  static process_group create(const ncclUniqueId& id, int rank, int size, int device) {
    check_arguments(rank, size, device);
    auto s = std::make_shared<state>();
    s->rank = rank;
    s->size = size;
    s->device = device;
    detail::device_guard g(device);
    STRATA_NCCL_CHECK(rank, ncclCommInitRank(&s->comm, size, id, rank));
    s->owned = true;
    return process_group(std::move(s));
  }

  /// The checks create() makes before any NCCL call (exposed for the host tests).
  static void check_arguments(int rank, int size, int device) {
    if (size < 1) throw std::invalid_argument("strata::process_group: the group needs at least one rank, not " + std::to_string(size));
    if (rank < 0 || rank >= size)
      throw std::invalid_argument("strata::process_group: rank " + std::to_string(rank) + " is not in [0, " +
                                  std::to_string(size) + ")");
    const int n = visible_device_count();
    if (device < 0 || device >= n)
      throw std::out_of_range("strata::process_group: device " + std::to_string(device) + " is out of range (" +
                              std::to_string(n) + " CUDA device" + (n == 1 ? " is" : "s are") + " visible)");
  }

  /// This process's rank.
  int rank() const noexcept { return s_->rank; }
  /// Number of ranks.
  int size() const noexcept { return s_->size; }
  /// The GPU this rank drives.
  int device() const noexcept { return s_->device; }
  /// The communicator (for the user's own NCCL calls alongside Strata's).
  ncclComm_t comm() const noexcept { return s_->comm; }
  /// True once abort() ran: every later NCCL call on the group fails.
  bool aborted() const noexcept { return s_->aborted; }

  /// Aborts the communicator: NCCL work pending on it ends (with errors) instead of waiting for
  /// peers that will never come. What the aborted calls were writing is unspecified afterwards.
  /// Never throws; idempotent.
  void abort() const noexcept {
    if (s_->aborted || s_->comm == nullptr) return;
    s_->aborted = true;
    (void)ncclCommAbort(s_->comm);
  }

  /// Waits until `stream`, on which NCCL work of this group was enqueued, has finished, without
  /// ever hanging on a failed or dead peer: it polls the stream and ncclCommGetAsyncError, and on
  /// an asynchronous error, or when `timeout` passes first, aborts the communicator and throws
  /// strata::nccl_error naming this rank. Throws strata::cuda_error if the stream's work failed.
  void wait(cudaStream_t stream, std::chrono::milliseconds timeout) const {
    const auto start = std::chrono::steady_clock::now();
    detail::device_guard g(s_->device);
    for (auto pause = std::chrono::microseconds(1);; pause = std::min(pause * 2, std::chrono::microseconds(1000))) {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) detail::throw_cuda_error(e, "cudaStreamQuery (NCCL work)", s_->device, __FILE__, __LINE__);
      (void)cudaGetLastError();
      ncclResult_t async = ncclSuccess;
      const ncclResult_t q = ncclCommGetAsyncError(s_->comm, &async);
      if (q != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        abort();
        throw nccl_error(q != ncclSuccess ? q : async, "strata::process_group::wait", s_->rank,
                         "a peer failed; the communicator was aborted", __FILE__, __LINE__);
      }
      if (std::chrono::steady_clock::now() - start > timeout) {
        abort();
        throw nccl_error(ncclSystemError, "strata::process_group::wait", s_->rank,
                         "no progress within " + std::to_string(timeout.count()) +
                             " ms (a peer may have died); the communicator was aborted",
                         __FILE__, __LINE__);
      }
      std::this_thread::sleep_for(pause);
    }
  }

 private:
  struct state {
    ncclComm_t comm = nullptr;
    int rank = -1, size = 0, device = -1;
    bool owned = false;
    bool aborted = false;
    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (owned && comm != nullptr && !aborted) (void)ncclCommDestroy(comm);
    }
  };
  explicit process_group(std::shared_ptr<state> s) : s_(std::move(s)) {}
  std::shared_ptr<state> s_;
};

}  // namespace strata
