// strata::process_group: this process's NCCL rank (or several, one per GPU it drives), made from
// an ncclUniqueId (through MPI: nccl/mpi.cuh, or the user's own launcher) or over the user's own
// communicator. A device set spanning the group's ranks (nccl/spanning_set.cuh) is how Strata's
// algorithms use it; the group itself offers a host all-gather, the user's own NCCL calls with a
// wait that never hangs, and abort.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/memory.cuh>
#include <strata/device_set.cuh>
#include <strata/error.hpp>
#include <strata/nccl/error.cuh>
#include <strata/nccl/link.cuh>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace strata {

class process_group;
device_set spanning_set(const process_group& g, std::size_t places, device_set_options options);

/// One NCCL rank: this process's place in a communicator of `size()` ranks, each driving one
/// GPU. Cheap to copy (copies share the communicator). A group made by `create` owns its
/// communicator and destroys it with the last copy; one made by `borrow` leaves the user's
/// communicator alone.
///
/// Strata's algorithms reach the ranks through a device set spanning them (strata::spanning_set),
/// whose collectives run on the set's root stream. The group's own all_gather() and run() use the
/// group's own stream and buffers (a few bytes per rank, made on first use on `device()`). Like
/// NCCL's own collectives, every collective on the group or its sets must be called in the same
/// order on every rank, and from one thread at a time per group.
class process_group {
 public:
  /// A group over the user's own communicator (made with ncclCommInitRank or a framework), which
  /// the user keeps and destroys after the last copy of this group (with ncclCommAbort if a failed
  /// collective made Strata revoke it: aborted() is then true). Throws std::invalid_argument
  /// for a null communicator, strata::nccl_error if NCCL cannot describe it.
  static process_group borrow(ncclComm_t comm) {
    if (comm == nullptr) throw std::invalid_argument("strata::process_group::borrow: the communicator is null");
    auto s = std::make_shared<detail::nccl_link>();
    s->comm = comm;
    s->owned = false;
    STRATA_NCCL_CHECK(-1, ncclCommUserRank(comm, &s->rank_));
    STRATA_NCCL_CHECK(s->rank_, ncclCommCount(comm, &s->size));
    STRATA_NCCL_CHECK(s->rank_, ncclCommCuDevice(comm, &s->device_));
    return process_group(std::move(s));
  }

  /// Makes this process rank `rank` of `size` on GPU `device`: every rank calls it with the same
  /// `id` (from nccl_unique_id on one of them), and it returns once all have joined. Throws
  /// std::invalid_argument if `size` < 1 or `rank` is not in [0, size), std::out_of_range if
  /// `device` is not a visible GPU (all before any NCCL call), strata::nccl_error if NCCL fails.
  static process_group create(const ncclUniqueId& id, int rank, int size, int device) {
    check_arguments(rank, size, device);
    auto s = std::make_shared<detail::nccl_link>();
    s->rank_ = rank;
    s->size = size;
    s->device_ = device;
    detail::device_guard g(device);
    STRATA_NCCL_CHECK(rank, ncclCommInitRank(&s->comm, size, id, rank));
    s->owned = true;
    return process_group(std::move(s));
  }

  /// Makes this process ranks `first_rank`, `first_rank + 1`, ... of `size`, rank `first_rank + i`
  /// on GPU `devices[i]`: a process that drives several GPUs holds one rank per GPU. The ranks join
  /// inside one ncclGroupStart/ncclGroupEnd, as NCCL requires when one thread initialises several
  /// of its ranks; every process of the group calls create (or create_local) with the same `id`,
  /// and this returns once all ranks have joined. Strata's collectives wait on the host for the
  /// other ranks, so each returned group must then be used from its own host thread (one thread
  /// per rank: its spanning_set, its containers, its calls, in the same order on every rank).
  /// Two of a process's ranks may share a GPU only where NCCL allows it (2.30+ with
  /// NCCL_MULTI_RANK_GPU_ENABLE=1); such ranks launch each collective together (the last thread to
  /// arrive launches all of theirs in one NCCL group), so every one of them must enter every
  /// collective, and one that does not within its timeout makes the others abort their
  /// communicators and throw strata::nccl_error. NCCL calls of the user's own (run()) on such ranks
  /// must be grouped by the user the same way. Throws std::invalid_argument if `devices` is empty or the ranks
  /// do not lie in [0, size), std::out_of_range if a device is not a visible GPU (all before any
  /// NCCL call), strata::nccl_error if NCCL fails (no communicator is left behind then).
  static std::vector<process_group> create_local(const ncclUniqueId& id, int first_rank, int size,
                                                 const std::vector<int>& devices) {
    check_local_arguments(first_rank, size, devices);
    std::vector<std::shared_ptr<detail::nccl_link>> made;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      auto s = std::make_shared<detail::nccl_link>();
      s->rank_ = first_rank + static_cast<int>(i);
      s->size = size;
      s->device_ = devices[i];
      made.push_back(std::move(s));
    }
    // On failure: abort every communicator NCCL handed out (ncclCommAbort also frees one whose
    // initialisation did not finish), so that nothing is left behind, then throw.
    const auto abandon = [&made] {
      for (auto& s : made)
        if (s->comm != nullptr) {
          detail::device_guard g(s->device_);
          (void)ncclCommAbort(s->comm);
          s->comm = nullptr;
        }
    };
    STRATA_NCCL_CHECK(first_rank, ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    int failed = first_rank;
    for (auto& s : made) {
      detail::device_guard g(s->device_);
      r = ncclCommInitRank(&s->comm, size, id, s->rank_);
      if (r != ncclSuccess) {
        failed = s->rank_;
        break;
      }
    }
    const ncclResult_t end = ncclGroupEnd();  // NCCL's group must close, also on the way out
    if (r == ncclSuccess && end != ncclSuccess) r = end;
    if (r != ncclSuccess) {
      abandon();
      STRATA_NCCL_CHECK(failed, r);
    }
    // The ranks that share a GPU launch their NCCL calls together (shared_gpu_ranks).
    for (std::size_t i = 0; i < made.size(); ++i) {
      if (made[i]->hub != nullptr) continue;
      std::vector<detail::nccl_link*> mates;
      for (std::size_t j = i; j < made.size(); ++j)
        if (made[j]->device_ == made[i]->device_) mates.push_back(made[j].get());
      if (mates.size() < 2) continue;
      auto hub = std::make_shared<detail::shared_gpu_ranks>(mates);
      for (std::size_t k = 0; k < mates.size(); ++k) {
        mates[k]->hub = hub;
        mates[k]->hub_index = k;
      }
    }
    std::vector<process_group> groups;
    for (auto& s : made) {
      s->owned = true;
      groups.push_back(process_group(std::move(s)));
    }
    return groups;
  }

  /// A group of `devices.size()` ranks, all in this process (no launcher, no MPI): rank i on GPU
  /// `devices[i]`. The same as create_local(nccl_unique_id(), 0, devices.size(), devices); use each
  /// group from its own host thread. Throws as create_local.
  static std::vector<process_group> create_all(const std::vector<int>& devices) {
    check_local_arguments(0, static_cast<int>(devices.size()), devices);
    return create_local(nccl_unique_id(), 0, static_cast<int>(devices.size()), devices);
  }

  /// The checks create_local() makes before any NCCL call (exposed for the host tests).
  static void check_local_arguments(int first_rank, int size, const std::vector<int>& devices) {
    if (devices.empty()) throw std::invalid_argument("strata::process_group: a process needs at least one rank (no devices given)");
    if (first_rank < 0 || static_cast<std::int64_t>(first_rank) + static_cast<std::int64_t>(devices.size()) > size)
      throw std::invalid_argument("strata::process_group: ranks " + std::to_string(first_rank) + " to " +
                                  std::to_string(static_cast<std::int64_t>(first_rank) +
                                                 static_cast<std::int64_t>(devices.size()) - 1) +
                                  " are not in [0, " + std::to_string(size) + ")");
    for (std::size_t i = 0; i < devices.size(); ++i) check_arguments(first_rank + static_cast<int>(i), size, devices[i]);
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
  int rank() const noexcept { return s_->rank_; }
  /// Number of ranks.
  int size() const noexcept { return s_->size; }
  /// The GPU this rank drives.
  int device() const noexcept { return s_->device_; }
  /// The communicator (for the user's own NCCL calls alongside Strata's).
  ncclComm_t comm() const noexcept { return s_->comm; }
  /// True once the group can run no collective any more: abort() ran, a collective failed (a peer
  /// failed or died, or the timeout passed: Strata stopped the communicator), or shrink() retired
  /// it. Every later Strata call on the group or its spanning sets throws strata::nccl_error.
  bool aborted() const noexcept { return s_->aborted || s_->give_up_pending; }

  /// How long Strata's collectives on this group wait for the other ranks before they abort the
  /// communicator and throw (default 60 s; see wait()).
  std::chrono::milliseconds timeout() const noexcept { return s_->timeout; }
  /// Sets timeout() for every copy of this group. Throws std::invalid_argument for a timeout that
  /// is not positive (every collective would give up at once).
  void set_timeout(std::chrono::milliseconds t) const {
    check_timeout(t);
    s_->timeout = t;
  }
  /// The check set_timeout() makes (exposed for the host tests).
  static void check_timeout(std::chrono::milliseconds t) {
    if (t.count() <= 0)
      throw std::invalid_argument("strata::process_group::set_timeout: " + std::to_string(t.count()) +
                                  " ms; a positive timeout is needed");
  }

  /// Gathers `bytes` bytes from every rank, in rank order, into `out` (size() * bytes bytes, host
  /// memory): the ranks' byte counts first (one all-gather of 8 bytes each), then one
  /// ncclAllGather of the payloads on the group's own stream through its device buffers, each
  /// followed by a wait that never hangs (wait()). Every rank must call it with the same `bytes`:
  /// otherwise every rank throws std::invalid_argument naming each rank's count, before the
  /// payloads move. Throws strata::nccl_error (NCCL failure, failed peer, timeout: the
  /// communicator is then aborted), strata::cuda_error for CUDA failures.
  void all_gather(const void* in, std::size_t bytes, void* out) const {
    detail::device_guard g(s_->device_);
    s_->all_gather_host(in, bytes, out);
  }


  /// Runs `f(comm(), stream)` with the group's GPU current, `stream` being the group's own stream,
  /// then waits for what `f` enqueued on it with wait() (never hangs; aborts and throws on a
  /// failed peer or after timeout()). For your own NCCL calls beside Strata's. Throws what `f`
  /// throws, strata::nccl_error, strata::cuda_error.
  template <class F>
  void run(F&& f) const {
    detail::device_guard g(s_->device_);
    s_->live("strata::process_group::run");
    if (s_->stream == nullptr) STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking));
    f(s_->comm, s_->stream);
    wait(s_->stream, s_->timeout);
  }

  /// Aborts the communicator: NCCL work pending on it ends (with errors) instead of waiting for
  /// peers that will never come. What the aborted calls were writing is unspecified afterwards.
  /// Never throws; idempotent.
  void abort() const noexcept { s_->abort(); }

  /// Survivors carry on: a new group of this group's ranks except those in `lost`, made from this
  /// group's communicator by NCCL's ncclCommShrink. The ranks keep their order and are numbered
  /// again from 0 (rank r becomes r minus the number of lost ranks below it); each keeps its GPU and
  /// timeout(). Collective over the survivors: every rank not in `lost` calls it, with the same
  /// list; the ranks in it do not (a dead one cannot).
  ///
  /// Strata does not tell which ranks died (NCCL's error names none): take the list from whatever
  /// saw the processes end (the launcher, the job scheduler, a health check). It works on a group
  /// that failed (a collective threw strata::nccl_error: Strata revoked the communicator, which
  /// NCCL 2.28+ keeps usable for this) and on a healthy one (a planned shrink: NCCL first aborts
  /// the work in flight on it). Afterwards this group is retired: later calls on it or its spanning
  /// sets throw strata::nccl_error; the containers over its sets stay readable on this rank (the
  /// survivors' elements move onto the new group with strata::salvage), and its communicator is
  /// freed, without waiting for any peer, with the last copy of the group and its sets. Returns
  /// once every survivor has called it and NCCL has made the new communicator, or throws after
  /// waiting `limit` for that (never hangs; making a communicator takes seconds, so the default is
  /// a minute rather than timeout()).
  ///
  /// Throws std::invalid_argument (before any NCCL call) if `lost` is empty, names a rank outside
  /// [0, size()) or twice, or names this rank; strata::nccl_error if the NCCL
  /// loaded is older than 2.27 (no ncclCommShrink) or built without it, if the communicator was
  /// aborted (abort(), or a failure where NCCL could not revoke: before 2.28), if this group's
  /// ranks share a GPU in this process (create_local: NCCL's shrink is not driven from one
  /// process's threads here), if NCCL fails, or if the survivors did not all join within `limit`.
  /// A `limit` that is not positive is a std::invalid_argument.
  process_group shrink(const std::vector<int>& lost,
                       std::chrono::milliseconds limit = std::chrono::milliseconds(60000)) const {
    const char* who = "strata::process_group::shrink";
    check_shrink_arguments(s_->rank_, s_->size, lost);
    if (limit.count() <= 0)
      throw std::invalid_argument("strata::process_group::shrink: a limit of " + std::to_string(limit.count()) +
                                  " ms; a positive one is needed");
    if (!detail::nccl_has_shrink())
      throw nccl_error(ncclInvalidUsage, who, s_->rank_,
                       "needs NCCL 2.27+ (ncclCommShrink), built and loaded; loaded: " + std::to_string(nccl_version()),
                       __FILE__, __LINE__);
    if (s_->hub != nullptr)
      throw nccl_error(ncclInvalidUsage, who, s_->rank_,
                       "the group's ranks share a GPU in this process (create_local); shrink takes ranks of their own",
                       __FILE__, __LINE__);
    if (s_->comm == nullptr || (s_->aborted && !s_->revoked))
      throw nccl_error(ncclInvalidUsage, who, s_->rank_,
                       "the communicator was aborted (abort(), or a failure where NCCL could not revoke it: NCCL before "
                       "2.28); nothing is left to shrink",
                       __FILE__, __LINE__);
    std::vector<int> excluded(lost);
    std::sort(excluded.begin(), excluded.end());
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    // A revoked communicator has no work left; a healthy one may have some in flight: abort it.
    const int flags = s_->revoked ? NCCL_SHRINK_DEFAULT : NCCL_SHRINK_ABORT;
#else
    const int flags = 0;
#endif
    s_->drop_collective_graphs();  // (graphs holding its collectives would keep the old one busy)
    ncclComm_t made = nullptr;
    bool late = false;
    const ncclResult_t r = detail::shrink_communicator(s_->comm, excluded, flags, s_->device_, limit, made, late);
    // The old group is retired whatever happened: its communicator is freed by NCCL's abort, unless
    // the helper thread may still be inside ncclCommShrink with it (late): then it is left unfreed.
    s_->aborted = s_->revoked = true;
    if (late) s_->comm = nullptr;
    if (r != ncclSuccess || made == nullptr)
      throw nccl_error(r == ncclSuccess ? ncclInternalError : r, who, s_->rank_,
                       late ? "the survivors did not all join within " + std::to_string(limit.count()) + " ms"
                            : std::string("ncclCommShrink failed"),
                       __FILE__, __LINE__);
    auto n = std::make_shared<detail::nccl_link>();
    n->comm = made;
    n->owned = true;
    n->device_ = s_->device_;
    n->timeout = s_->timeout;
    n->rank_ = s_->rank_ - static_cast<int>(std::lower_bound(excluded.begin(), excluded.end(), s_->rank_) - excluded.begin());
    n->size = s_->size - static_cast<int>(excluded.size());
    int rank = -1, size = 0;
    if (ncclCommUserRank(made, &rank) == ncclSuccess && ncclCommCount(made, &size) == ncclSuccess &&
        (rank != n->rank_ || size != n->size))
      throw nccl_error(ncclInternalError, who, s_->rank_,
                       "NCCL numbered the survivors otherwise than in order (rank " + std::to_string(rank) + " of " +
                           std::to_string(size) + ", expected " + std::to_string(n->rank_) + " of " +
                           std::to_string(n->size) + ")",
                       __FILE__, __LINE__);
    return process_group(std::move(n));
  }

  /// The checks shrink() makes before any NCCL call (exposed for the host tests): `lost` must be
  /// non-empty and name ranks of [0, size) once each, not `rank` (so the caller is left).
  static void check_shrink_arguments(int rank, int size, const std::vector<int>& lost) {
    const std::string who = "strata::process_group::shrink: ";
    if (lost.empty()) throw std::invalid_argument(who + "no rank is named lost");
    std::vector<int> sorted(lost);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] < 0 || sorted[i] >= size)
        throw std::invalid_argument(who + "rank " + std::to_string(sorted[i]) + " is not in [0, " + std::to_string(size) + ")");
      if (i > 0 && sorted[i] == sorted[i - 1])
        throw std::invalid_argument(who + "rank " + std::to_string(sorted[i]) + " is named twice");
      if (sorted[i] == rank)
        throw std::invalid_argument(who + "rank " + std::to_string(rank) +
                                    " calls it but is named lost (only the survivors call shrink)");
    }
  }

  /// Waits until `stream`, on which NCCL work of this group was enqueued, has finished, without
  /// ever hanging on a failed or dead peer: it polls the stream and ncclCommGetAsyncError, and on
  /// an asynchronous error, or when `timeout` passes first, stops the communicator and throws
  /// strata::nccl_error naming this rank. Throws strata::cuda_error if the stream's work failed.
  /// Stopping revokes the communicator (NCCL 2.28+; it stays for shrink(), and Strata waits at most
  /// timeout() for the revoke to settle) or, where that is not possible, aborts it: the abort frees
  /// NCCL's device memory, which waits for kernels already running on the device. NCCL's own
  /// kernels (a collective waiting for a dead peer) stop either way, but a kernel of the user's
  /// that never ends can hold the throw back until it ends.
  void wait(cudaStream_t stream, std::chrono::milliseconds timeout) const {
    s_->poll([stream] { return cudaStreamQuery(stream); }, "cudaStreamQuery (NCCL work)", timeout);
  }

 private:
  friend device_set spanning_set(const process_group&, std::size_t, device_set_options);
  explicit process_group(std::shared_ptr<detail::nccl_link> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::nccl_link> s_;
};

}  // namespace strata
