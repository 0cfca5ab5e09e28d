// The NCCL calls that may wait for peers that never come, each bounded by a helper thread
// (bounded_call: destroying a communicator, shrinking one), and the weak references to NCCL's
// newest entry points (ncclCommRevoke, ncclCommShrink) with the checks of whether they are bound.
// Used by the transport (link.cuh) and the process group (process_group.cuh).
#pragma once

#include <strata/nccl/error.cuh>

#include <cuda_runtime_api.h>
#include <nccl.h>

// Weak references to NCCL's newer entry points. A program built with a newer nccl.h may link and
// load an older libnccl (the GPU machine lent to this project pairs the CUDA toolkit's NCCL 2.28
// header with an older system libnccl, which has no ncclCommRevoke): the link must not fail, and
// at run time a missing entry point (null) is treated as an NCCL too old for it. The dynamic
// linker still binds them to a newer NCCL loaded first (LD_LIBRARY_PATH).
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
extern "C" ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) __attribute__((weak));
#endif
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
extern "C" ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                       ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) __attribute__((weak));
#endif

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace strata::detail {

/// Whether this program was built with an NCCL that has ncclCommRevoke (2.28+) / ncclCommShrink
/// (2.27+) and the NCCL it loaded has it too (the weak reference above is bound).
inline bool nccl_has_revoke() noexcept {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  return ncclCommRevoke != nullptr;
#else
  return false;
#endif
}
inline bool nccl_has_shrink() noexcept {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  return ncclCommShrink != nullptr;
#else
  return false;
#endif
}

/// How a bounded_call ended.
enum class bounded_outcome { finished, late, no_thread };

/// Runs `work()` (with `device` current) on a helper thread and waits at most `timeout` for it:
/// the one way the NCCL layer calls something that may wait for peers that never come. finished:
/// `result` holds what it returned. late: the timeout passed first; the thread goes on, and when
/// `work` returns its result is handed to `too_late` there (to free what it made), never to the
/// caller. no_thread: no thread could be made; `work` was not called.
template <class R, class Work, class TooLate>
bounded_outcome bounded_call(int device, std::chrono::milliseconds timeout, Work work, TooLate too_late,
                             R& result) noexcept {
  struct shared {
    std::mutex m;
    std::condition_variable cv;
    bool done = false, abandoned = false;
    R value{};
  };
  std::shared_ptr<shared> o;
  try {
    o = std::make_shared<shared>();
    std::thread([o, device, work = std::move(work), too_late = std::move(too_late)]() mutable {
      (void)cudaSetDevice(device);
      R r = work();
      std::lock_guard<std::mutex> lock(o->m);
      if (o->abandoned) {
        too_late(r);
        return;
      }
      o->value = r;
      o->done = true;
      o->cv.notify_all();
    }).detach();
  } catch (...) {
    return bounded_outcome::no_thread;
  }
  std::unique_lock<std::mutex> lock(o->m);
  if (!o->cv.wait_for(lock, timeout, [&] { return o->done; })) {
    o->abandoned = true;
    return bounded_outcome::late;
  }
  result = o->value;
  return bounded_outcome::finished;
}

/// Destroys `comm` (bounded_call, at most `timeout`). ncclCommDestroy finalizes the communicator
/// with the other ranks (NCCL does so inside it when ncclCommFinalize was not called), so a
/// survivor whose peer died after the last collective can wait there forever, as vLLM met
/// (vllm-project/vllm#39846) and as the rank-death test's survivors seem to (H100, 2026-12-07: they
/// hung after a peer died at its last call of a sort; the teardown is the suspect, unconfirmed).
/// Returns whether it finished; if not, the communicator is left to that thread (never freed) and
/// the caller goes on. Where no thread can be made it destroys here.
inline bool destroy_communicator(ncclComm_t comm, int device, std::chrono::milliseconds timeout) noexcept {
  ncclResult_t r = ncclSuccess;
  const bounded_outcome how = bounded_call(
      device, timeout, [comm] { return ncclCommDestroy(comm); }, [](ncclResult_t) {}, r);
  if (how == bounded_outcome::no_thread) (void)ncclCommDestroy(comm);
  return how != bounded_outcome::late;
}

/// ncclCommShrink (bounded_call, at most `timeout`): it returns once every surviving rank has
/// called it, so a survivor that never does (it died too, or took another path) must not hang the
/// others. Returns NCCL's result and the new communicator in `made`; when the timeout passed first
/// (or no thread could be made), ncclSystemError, `made` null, and `late` true when a thread is
/// still inside NCCL with `comm` (a communicator NCCL makes after that is aborted there).
inline ncclResult_t shrink_communicator(ncclComm_t comm, std::vector<int> excluded, int flags, int device,
                                        std::chrono::milliseconds timeout, ncclComm_t& made, bool& late) {
  made = nullptr;
  late = false;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  struct shrunk {
    ncclResult_t result = ncclSystemError;
    ncclComm_t comm = nullptr;
  };
  shrunk out;
  const bounded_outcome how = bounded_call(
      device, timeout,
      [comm, excluded = std::move(excluded), flags]() mutable {
        shrunk s;
        s.result = ncclCommShrink(comm, excluded.data(), static_cast<int>(excluded.size()), &s.comm, nullptr, flags);
        (void)cudaGetLastError();  // (what NCCL left: see check_nccl)
        return s;
      },
      [](shrunk s) {
        if (s.comm != nullptr) (void)ncclCommAbort(s.comm);
      },
      out);
  if (how != bounded_outcome::finished) {
    late = how == bounded_outcome::late;
    return ncclSystemError;
  }
  made = out.comm;
  return out.result;
#else
  (void)comm, (void)excluded, (void)flags, (void)device, (void)timeout;
  return ncclInvalidUsage;
#endif
}

}  // namespace strata::detail
