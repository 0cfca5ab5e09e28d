// Strata beyond one process: the NCCL layer (opt in: include this header and link Strata::nccl,
// from find_package(Strata CONFIG REQUIRED COMPONENTS nccl)). This header holds the process group
// (one NCCL rank per GPU), NCCL's error type, the one wait that never hangs on a failed or dead
// peer, the layout of a range over the places of several ranks (rank_layout), and the reduce and
// scan algorithms over such a range (a range's share on every rank, combined in rank order).
#pragma once

#include <strata/algorithm/reduce.cuh>
#include <strata/algorithm/scan.cuh>
#include <strata/algorithm/transform.cuh>
#include <strata/detail/device_guard.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/device_set.cuh>
#include <strata/distributed_span.cuh>
#include <strata/distributed_vector.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

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

class process_group;
class rank_layout;
template <class S, class T>
void copy(const process_group& g, const distributed_span<S>& src, const rank_layout& from, const distributed_span<T>& dst,
          const rank_layout& to);
device_set spanning_set(const process_group& g, std::size_t places, device_set_options options);
namespace detail {
template <class V, class Op>
V gather_fold_from(const process_group& g, const V* mine, cudaEvent_t ready, int upto, const V& seed, Op op);
/// Writes one rank's slot (`slot_bytes` bytes at `slot`, 16-byte aligned) on the device: the
/// payload of `bytes` bytes read from `in` (device-readable), zero padding, then `stamp`.
__global__ inline void stamp_slot_kernel(char* slot, const char* in, std::size_t bytes, std::size_t slot_bytes,
                                         std::uint64_t stamp) {
  const std::size_t stamp_at = gather_stamp_at(bytes);
  for (std::size_t k = 0; k < slot_bytes; ++k) slot[k] = k < bytes ? in[k] : 0;
  ::memcpy(slot + stamp_at, &stamp, sizeof stamp);
}


}  // namespace detail

/// One NCCL rank: this process's place in a communicator of `size()` ranks, each driving one
/// GPU. Cheap to copy (copies share the communicator). A group made by `create` owns its
/// communicator and destroys it with the last copy; one made by `borrow` leaves the user's
/// communicator alone.
///
/// Strata's collectives on a group (all_gather and the algorithms that take a group) run on the
/// group's own stream with buffers the group keeps (a few bytes per rank), made on first use on
/// `device()`. Like NCCL's own collectives, they must be called in the same order on every rank,
/// and from one thread at a time per group.
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
    auto s = std::make_shared<state>();
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
    std::vector<std::shared_ptr<state>> made;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      auto s = std::make_shared<state>();
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
      std::vector<state*> mates;
      for (std::size_t j = i; j < made.size(); ++j)
        if (made[j]->device_ == made[i]->device_) mates.push_back(made[j].get());
      if (mates.size() < 2) continue;
      auto hub = std::make_shared<shared_gpu_ranks>(mates);
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
  /// True once abort() ran: every later NCCL call on the group fails.
  bool aborted() const noexcept { return s_->aborted; }

  /// How long Strata's collectives on this group wait for the other ranks before they abort the
  /// communicator and throw (default 60 s; see wait()).
  std::chrono::milliseconds timeout() const noexcept { return s_->timeout; }
  /// Sets timeout() for every copy of this group.
  void set_timeout(std::chrono::milliseconds t) const noexcept { s_->timeout = t; }

  /// Gathers `bytes` bytes from every rank, in rank order, into `out` (size() * bytes bytes, host
  /// memory): one ncclAllGather on the group's own stream through its device buffers, then a
  /// wait that never hangs (wait()). Every rank must call it with the same `bytes`. Throws
  /// strata::nccl_error (NCCL failure, failed peer, timeout: the communicator is then aborted),
  /// strata::cuda_error for CUDA failures.
  void all_gather(const void* in, std::size_t bytes, void* out) const {
    const std::size_t slot = detail::gather_slot_bytes(bytes);
    detail::device_guard g(s_->device_);
    char* dev = enqueue_all_gather(in, bytes);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(s_->host_buffer, dev, slot * static_cast<std::size_t>(s_->size),
                                      cudaMemcpyDeviceToHost, s_->stream));
    wait(s_->stream, s_->timeout);
    const char* host = static_cast<const char*>(s_->host_buffer);
    require_every_rank(detail::first_unstamped(host, s_->size, slot, detail::gather_stamp_at(bytes),
                                               detail::gather_stamp(s_->calls)),
                       "strata::process_group::all_gather");
    for (int r = 0; r < s_->size; ++r)
      std::memcpy(static_cast<char*>(out) + static_cast<std::size_t>(r) * bytes, host + static_cast<std::size_t>(r) * slot, bytes);
  }

  /// Runs `f(comm(), stream)` with the group's GPU current, `stream` being the group's own stream,
  /// then waits for what `f` enqueued on it with wait() (never hangs; aborts and throws on a
  /// failed peer or after timeout()). For Strata's collectives and your own NCCL calls beside
  /// them. Throws what `f` throws, strata::nccl_error, strata::cuda_error.
  template <class F>
  void run(F&& f) const {
    detail::device_guard g(s_->device_);
    f(s_->comm, ready_stream("strata::process_group::run"));
    wait(s_->stream, s_->timeout);
  }

  /// Aborts the communicator: NCCL work pending on it ends (with errors) instead of waiting for
  /// peers that will never come. What the aborted calls were writing is unspecified afterwards.
  /// Never throws; idempotent.
  void abort() const noexcept { s_->abort(); }

  /// Waits until `stream`, on which NCCL work of this group was enqueued, has finished, without
  /// ever hanging on a failed or dead peer: it polls the stream and ncclCommGetAsyncError, and on
  /// an asynchronous error, or when `timeout` passes first, aborts the communicator and throws
  /// strata::nccl_error naming this rank. Throws strata::cuda_error if the stream's work failed.
  /// The abort frees NCCL's device memory, which waits for kernels already running on the device:
  /// NCCL's own kernels (a collective waiting for a dead peer) stop at the abort, but a kernel of
  /// the user's that never ends holds the throw back until it ends.
  void wait(cudaStream_t stream, std::chrono::milliseconds timeout) const {
    s_->poll([stream] { return cudaStreamQuery(stream); }, "cudaStreamQuery (NCCL work)", timeout);
  }

 private:
  friend device_set spanning_set(const process_group&, std::size_t, device_set_options);
  template <class S, class T>
  friend void copy(const process_group&, const distributed_span<S>&, const rank_layout&, const distributed_span<T>&,
                   const rank_layout&);
  template <class V, class Op>
  friend V detail::gather_fold_from(const process_group&, const V*, cudaEvent_t, int, const V&, Op);

  // After a gathered call completed: `missing` is the first rank whose slot this call did not
  // write (-1: none). A rank is missing: abort the communicator, throw strata::nccl_error.
  void require_every_rank(int missing, const char* who) const {
    if (missing >= 0) s_->fail_missing(missing, who);
  }

  // With the group's device current: the group's stream (made on first use), or strata::nccl_error
  // naming `who` once the communicator was aborted.
  cudaStream_t ready_stream(const char* who) const {
    if (s_->aborted) throw nccl_error(ncclInvalidUsage, who, s_->rank_, "the communicator was aborted", __FILE__, __LINE__);
    if (s_->stream == nullptr) STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking));
    return s_->stream;
  }

  // With the group's device current: enqueues on the group's stream the copy of `in`, stamped with
  // this call's stamp, into this rank's slot of the device buffer and the in-place ncclAllGather;
  // returns the device buffer (size() slots of gather_slot_bytes(bytes), payload first; the
  // pinned host buffer has as many bytes). `in` is host memory when `ready` is null; otherwise it is
  // device-readable memory written by work that `ready` was recorded after (the group's stream
  // waits for that event, so the payload never passes through the host). Grows the buffers
  // (device and pinned host) first if needed. Counts the call (s_->calls: its stamp is
  // gather_stamp(s_->calls)).
  char* enqueue_all_gather(const void* in, std::size_t bytes, cudaEvent_t ready = nullptr) const {
    (void)ready_stream("strata::process_group::all_gather");
    const std::size_t slot = detail::gather_slot_bytes(bytes);
    const std::size_t total = slot * static_cast<std::size_t>(s_->size);
    if (s_->buffer_bytes < total) {
      STRATA_CUDA_CHECK(cudaStreamSynchronize(s_->stream));  // nothing may still use the old ones
      s_->free_buffers();
      s_->device_buffer = detail::device_allocate(s_->device_, total);
      s_->host_buffer = detail::pinned_allocate(total);
      s_->buffer_bytes = total;
    }
    char* dev = static_cast<char*>(s_->device_buffer);
    char* host = static_cast<char*>(s_->host_buffer);
    const std::size_t at = slot * static_cast<std::size_t>(s_->rank_);
    const std::uint64_t stamp = s_->next_stamp();
    if (ready != nullptr) {
      STRATA_CUDA_CHECK(cudaStreamWaitEvent(s_->stream, ready, 0));
      detail::stamp_slot_kernel<<<1, 1, 0, s_->stream>>>(dev + at, static_cast<const char*>(in), bytes, slot, stamp);
      STRATA_CUDA_CHECK(cudaGetLastError());
    } else {
      std::memset(host + at, 0, slot);
      std::memcpy(host + at, in, bytes);
      std::memcpy(host + at + detail::gather_stamp_at(bytes), &stamp, sizeof stamp);
      STRATA_CUDA_CHECK(cudaMemcpyAsync(dev + at, host + at, slot, cudaMemcpyHostToDevice, s_->stream));
    }
    // In place: the send buffer is this rank's slot of the receive buffer, as NCCL allows.
    s_->all_gather(dev, slot, s_->stream);
    return dev;
  }

  class shared_gpu_ranks;
  // The group's state, and the transport of the sets that span its ranks (detail::rank_link).
  struct state final : detail::rank_link {
    ncclComm_t comm = nullptr;
    int rank_ = -1, size = 0, device_ = -1;
    bool owned = false;
    bool aborted = false;
    std::chrono::milliseconds timeout{60000};
    // The group's own stream and buffers for its collectives (made on first use, on `device`).
    cudaStream_t stream = nullptr;
    void* device_buffer = nullptr;
    void* host_buffer = nullptr;  // pinned
    std::size_t buffer_bytes = 0;
    std::uint64_t calls = 0;  // collectives of the group and its spanning sets (their stamps)
    // The ranks of this process that share its GPU (made together by create_local), or null.
    std::shared_ptr<shared_gpu_ranks> hub;
    std::size_t hub_index = 0;

    int rank() const noexcept override { return rank_; }
    int ranks() const noexcept override { return size; }
    int device() const noexcept override { return device_; }
    std::uint64_t next_stamp() override { return detail::gather_stamp(++calls); }
    void all_gather(char* buffer, std::size_t slot, cudaStream_t on) override {
      const char* who = "strata: all-gather across ranks";
      live(who);
      char* mine = buffer + slot * static_cast<std::size_t>(rank_);
      launch(who, [&] { STRATA_NCCL_CHECK(rank_, ncclAllGather(mine, buffer, slot, ncclUint8, comm, on)); });
    }
    void broadcast(const void* send, void* recv, std::size_t bytes, int root, cudaStream_t on) override {
      const char* who = "strata: broadcast across ranks";
      live(who);
      launch(who, [&] { STRATA_NCCL_CHECK(rank_, ncclBroadcast(send, recv, bytes, ncclUint8, root, comm, on)); });
    }
    void send_receive(const std::vector<detail::rank_transfer>& sends, const std::vector<detail::rank_transfer>& receives,
                      cudaStream_t on) override {
      // (A rank with no transfers still meets the ranks that share its GPU: see launch.)
      if (sends.empty() && receives.empty() && hub == nullptr) return;
      const char* who = "strata: exchange across ranks";
      live(who);
      launch(who, [&] {
        if (sends.empty() && receives.empty()) return;
        STRATA_NCCL_CHECK(rank_, ncclGroupStart());
        try {
          for (const auto& t : sends) STRATA_NCCL_CHECK(rank_, ncclSend(t.data, t.bytes, ncclUint8, t.peer, comm, on));
          for (const auto& t : receives) STRATA_NCCL_CHECK(rank_, ncclRecv(t.data, t.bytes, ncclUint8, t.peer, comm, on));
        } catch (...) {
          (void)ncclGroupEnd();  // NCCL's group must close, also on the way out
          throw;
        }
        STRATA_NCCL_CHECK(rank_, ncclGroupEnd());
      });
    }
    // Runs `enqueue` (this rank's NCCL calls of one collective, which only enqueue) with the
    // rank's GPU current: at once for a rank alone on its GPU in this process, else through the
    // hub, which launches the calls of every rank sharing the GPU together.
    template <class F>
    void launch(const char* who, F&& enqueue) {
      if (hub == nullptr) {
        detail::device_guard g(device_);
        enqueue();
        return;
      }
      hub->launch(hub_index, [this, &enqueue] {
        detail::device_guard g(device_);
        enqueue();
      }, timeout, who);
    }
    void wait(cudaStream_t on) override {
      poll([on] { return cudaStreamQuery(on); }, "cudaStreamQuery (NCCL work)", timeout);
    }
    void wait_event(cudaEvent_t e) override {
      poll([e] { return cudaEventQuery(e); }, "cudaEventQuery (NCCL work)", timeout);
    }
    [[noreturn]] void fail_missing(int missing, const char* who) override {
      abort();
      throw nccl_error(ncclRemoteError, who, rank_,
                       "rank " + std::to_string(missing) +
                           " did not contribute to the collective (it failed or left); the communicator was aborted",
                       __FILE__, __LINE__);
    }
    void abort() noexcept {
      if (aborted || comm == nullptr) return;
      aborted = true;
      (void)ncclCommAbort(comm);
      (void)cudaGetLastError();  // (what NCCL left: see check_nccl)
    }
    // Throws strata::nccl_error naming `who` once the communicator was aborted.
    void live(const char* who) const {
      if (aborted) throw nccl_error(ncclInvalidUsage, who, rank_, "the communicator was aborted", __FILE__, __LINE__);
    }
    // Waits until `query()` (cudaStreamQuery or cudaEventQuery of NCCL work) says done, without
    // ever hanging on a failed or dead peer (see process_group::wait).
    template <class Query>
    void poll(Query query, const char* what, std::chrono::milliseconds limit) {
      const auto start = std::chrono::steady_clock::now();
      detail::device_guard g(device_);
      // It spins (yielding the core) for the first millisecond and only then sleeps, backing off to
      // 1 ms: a sleep lasts at least the kernel's timer slack (50 us by default on Linux), which is
      // longer than a small collective takes (measured: a one-rank all-gather took 62 us with
      // sleeps from the start, most of it the first sleep).
      constexpr std::chrono::milliseconds spin(1);
      auto pause = std::chrono::microseconds(50);
      for (;;) {
        const cudaError_t e = query();
        if (e == cudaSuccess) {
          // Work ordered after an aborted collective may have used what it never delivered.
          if (aborted)
            throw nccl_error(ncclInvalidUsage, "strata::process_group::wait", rank_,
                             "the communicator was aborted (a rank failed or left)", __FILE__, __LINE__);
          return;
        }
        if (e != cudaErrorNotReady) detail::throw_cuda_error(e, what, device_, __FILE__, __LINE__);
        (void)cudaGetLastError();
        ncclResult_t async = ncclSuccess;
        // (Never on an aborted communicator: ncclCommAbort freed it.)
        const ncclResult_t q = aborted ? ncclSuccess : ncclCommGetAsyncError(comm, &async);
        (void)cudaGetLastError();  // (what NCCL's internals left: see check_nccl)
        if (q != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
          abort();
          throw nccl_error(q != ncclSuccess ? q : async, "strata::process_group::wait", rank_,
                           "a peer failed; the communicator was aborted", __FILE__, __LINE__);
        }
        const auto waited = std::chrono::steady_clock::now() - start;
        if (waited > limit) {
          abort();
          throw nccl_error(ncclSystemError, "strata::process_group::wait", rank_,
                           "no progress within " + std::to_string(limit.count()) +
                               " ms (a peer may have died); the communicator was aborted",
                           __FILE__, __LINE__);
        }
        if (waited < spin) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(pause);
          pause = std::min(pause * 2, std::chrono::microseconds(1000));
        }
      }
    }
    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    // Frees the buffers (Strata's allocation functions: counted, errors naming the device).
    void free_buffers() noexcept {
      detail::device_free(device_, device_buffer);
      detail::pinned_free(host_buffer);
      device_buffer = host_buffer = nullptr;
      buffer_bytes = 0;
    }
    ~state() {
      if (stream != nullptr) {
        detail::quiet_device_switch g(device_);
        (void)cudaStreamSynchronize(stream);
        (void)cudaStreamDestroy(stream);
      }
      free_buffers();
      if (hub != nullptr) hub->leave(hub_index);
      if (owned && comm != nullptr && !aborted) (void)ncclCommDestroy(comm);
    }
  };

  // The ranks of one process that share a GPU (made together by create_local). Each is driven by
  // its own host thread, but their NCCL calls must not be launched one thread at a time: a rank's
  // collective kernel waits on the GPU for the others' kernels, and until these are launched,
  // anything that synchronizes the GPU in the other threads (cudaFree, CUDA's lazy loading of a
  // kernel, NCCL's own connection set-up) waits for that kernel in turn, a deadlock (measured with
  // NCCL 2.32: two ranks on threads of one process hung in their first collectives). So every
  // rank posts its calls and waits; the last to arrive launches them all, in rank order, inside
  // one ncclGroupStart/ncclGroupEnd, as NCCL documents for one thread driving several ranks. A
  // rank that does not arrive within its timeout breaks the hub: the waiting ranks abort their
  // communicators and throw, and so does every later call on these ranks.
  class shared_gpu_ranks {
   public:
    explicit shared_gpu_ranks(std::vector<state*> members)
        : members_(std::move(members)), posted_(members_.size()), errors_(members_.size()) {}

    // Member `index` posts `enqueue` and returns once it ran (on this thread or another), or
    // throws: what `enqueue` threw, or strata::nccl_error (its communicator aborted) when a member
    // did not arrive within `timeout` or failed.
    void launch(std::size_t index, const std::function<void()>& enqueue, std::chrono::milliseconds timeout,
                const char* who) {
      std::unique_lock<std::mutex> lock(m_);
      state& me = *members_[index];
      if (broken_.empty()) {
        posted_[index] = &enqueue;
        const std::uint64_t round = round_;
        if (++arrived_ == members_.size()) {
          run_all();
        } else if (!done_.wait_for(lock, timeout, [&] { return round_ != round || !broken_.empty(); })) {
          broken_ = "a rank sharing its GPU in this process did not reach the same collective within " +
                    std::to_string(timeout.count()) + " ms";
          done_.notify_all();
        }
        if (round_ != round) {  // ran
          if (std::exception_ptr e = std::exchange(errors_[index], nullptr)) std::rethrow_exception(e);
          return;
        }
      }
      posted_.assign(posted_.size(), nullptr);
      const std::string why = broken_;
      lock.unlock();
      me.abort();
      throw nccl_error(ncclSystemError, who, me.rank_, why + "; the communicator was aborted", __FILE__, __LINE__);
    }

    // Member `index` is gone (destroyed): later collectives of the others cannot complete.
    void leave(std::size_t index) noexcept {
      std::lock_guard<std::mutex> lock(m_);
      members_[index] = nullptr;
      if (broken_.empty()) broken_ = "a rank sharing its GPU in this process was destroyed";
      done_.notify_all();
    }

   private:
    // With m_ held, every member posted: launches the calls in one NCCL group. A member whose
    // calls failed gets its error; if any failed, every member is aborted (the others' kernels
    // would wait for it), and each gets an error.
    void run_all() {
      bool failed = false;
      ncclResult_t r = ncclGroupStart();
      if (r == ncclSuccess) {
        for (std::size_t i = 0; i < posted_.size(); ++i) {
          try {
            (*posted_[i])();
          } catch (...) {
            errors_[i] = std::current_exception();
            failed = true;
          }
        }
        r = ncclGroupEnd();
      }
      if (r != ncclSuccess || failed) {
        for (std::size_t i = 0; i < members_.size(); ++i) {
          if (members_[i] == nullptr) continue;
          members_[i]->abort();
          if (errors_[i] == nullptr)
            errors_[i] = std::make_exception_ptr(
                nccl_error(r != ncclSuccess ? r : ncclInvalidUsage, "strata: collective across ranks", members_[i]->rank_,
                           "a rank sharing its GPU in this process failed to launch it; the communicator was aborted",
                           __FILE__, __LINE__));
        }
        broken_ = "a rank sharing its GPU in this process failed";
      }
      posted_.assign(posted_.size(), nullptr);
      arrived_ = 0;
      ++round_;
      done_.notify_all();
    }

    std::mutex m_;
    std::condition_variable done_;
    std::vector<state*> members_;                      // null once destroyed
    std::vector<const std::function<void()>*> posted_;  // this round's calls, by member
    std::vector<std::exception_ptr> errors_;
    std::size_t arrived_ = 0;
    std::uint64_t round_ = 0;
    std::string broken_;  // why no collective can run any more (empty: none)
  };
  explicit process_group(std::shared_ptr<state> s) : s_(std::move(s)) {}
  std::shared_ptr<state> s_;
};


/// A device_set whose places span every rank of `g`: `places` places on this rank, all on
/// g.device(), each with its own stream; globally the places of rank 0 come first, then those of
/// rank 1, and so on. Containers and spans over it hold the global range (size() is global; each
/// rank allocates and computes only its own places' segments), and the algorithms work unchanged
/// for user code: element-wise ones (transform, fill, for_each, copy within a layout) run on each
/// rank's places alone; the reduce family and the scans cross ranks through NCCL and give the same
/// result on every rank; copy_to_host (and to_std_vector) gives every rank every element. See
/// docs/api.md, "Beyond one process", for the rules: every rank makes the same calls in the same
/// order (as with NCCL's collectives); copies between layouts and redistribute move the pieces
/// between ranks by NCCL sends and receives (between two sets spanning the ranks of this group);
/// sorts and compaction (copy_if, remove_if, unique, partition_copy) cross ranks too
/// (docs/api.md); measure_topology measures each rank's own places and shares the figures (pairs
/// across ranks are not measured); get/set only reach this rank's elements.
///
/// Collective (one all-gather of the place counts): every rank calls it. `options` applies to this
/// rank's places (force_host_staging: the places' merge goes through pinned memory; graph replay
/// is always off). Throws std::invalid_argument on every rank if a rank asks for no places or the
/// ranks' places add up to more than 64; strata::nccl_error if the all-gather fails.
inline device_set spanning_set(const process_group& g, std::size_t places = 1, device_set_options options = {}) {
  const std::uint64_t mine = places;
  std::vector<std::uint64_t> all(static_cast<std::size_t>(g.size()));
  g.all_gather(&mine, sizeof mine, all.data());
  detail::rank_map map(std::vector<std::size_t>(all.begin(), all.end()), g.rank(), detail::max_places);
  return detail::make_spanning_set(g.s_, std::move(map), options);
}

// ---- a range over the places of several ranks ------------------------------------------------

/// How a global range of `size()` elements lies over the places of the ranks of a group: the
/// places of rank 0 first, then those of rank 1, and so on, in each rank's place order; the
/// partition policy divides the elements over all of them at once (even: block partition over
/// every place of every rank). Each rank allocates only its own share: a distributed_vector of
/// `local_size()` elements with `local_policy()` over its own device_set, whose element i is
/// global element `offset() + i`. Plain host data: the same on every rank.
class rank_layout {
 public:
  /// The layout of `n` elements over ranks with `places_per_rank[r]` places each (at least one),
  /// seen from rank `rank`. Throws std::invalid_argument for no ranks, a rank without places, a
  /// rank outside [0, ranks), or a policy that does not fit the total number of places.
  rank_layout(std::uint64_t n, std::vector<std::size_t> places_per_rank, const partition_policy& policy, int rank)
      : places_(std::move(places_per_rank)), rank_(rank) {
    if (places_.empty()) throw std::invalid_argument("strata::rank_layout: no ranks");
    if (rank < 0 || static_cast<std::size_t>(rank) >= places_.size())
      throw std::invalid_argument("strata::rank_layout: rank " + std::to_string(rank) + " is not in [0, " +
                                  std::to_string(places_.size()) + ")");
    std::size_t total = 0;
    for (std::size_t r = 0; r < places_.size(); ++r) {
      if (places_[r] == 0)
        throw std::invalid_argument("strata::rank_layout: rank " + std::to_string(r) + " has no places");
      first_.push_back(total);
      total += places_[r];
    }
    first_.push_back(total);
    global_ = policy.apply(n, total);
  }

  /// Global number of elements.
  std::uint64_t size() const noexcept { return global_.size(); }
  /// Number of ranks.
  int ranks() const noexcept { return static_cast<int>(places_.size()); }
  /// The rank this layout is seen from.
  int rank() const noexcept { return rank_; }
  /// The partition over every place of every rank, in rank order.
  const partition& global() const noexcept { return global_; }
  /// Global index of rank `r`'s first element (std::out_of_range for a bad rank).
  std::uint64_t rank_offset(int r) const { return place_offset(first_[check(r)]); }
  /// Number of elements on rank `r`.
  std::uint64_t rank_size(int r) const { return place_offset(first_[check(r) + 1]) - rank_offset(r); }
  /// Global index of this rank's first element.
  std::uint64_t offset() const { return rank_offset(rank_); }
  /// Number of elements on this rank.
  std::uint64_t local_size() const { return rank_size(rank_); }
  /// This rank's per-place counts.
  std::vector<std::uint64_t> local_sizes() const {
    std::vector<std::uint64_t> c;
    for (std::size_t i = first_[static_cast<std::size_t>(rank_)]; i < first_[static_cast<std::size_t>(rank_) + 1]; ++i)
      c.push_back(global_.count(i));
    return c;
  }
  /// Number of places rank `r` drives.
  std::size_t rank_places(int r) const { return places_.at(check(r)); }
  /// Index in global() of rank `r`'s first place.
  std::size_t rank_first_place(int r) const { return first_.at(check(r)); }
  /// The policy that gives this rank's device_set its share: explicit sizes, local_sizes().
  partition_policy local_policy() const { return partition_policy::explicit_sizes(local_sizes()); }

 private:
  std::size_t check(int r) const {
    if (r < 0 || r >= ranks()) throw std::out_of_range("strata::rank_layout: rank " + std::to_string(r) + " out of range");
    return static_cast<std::size_t>(r);
  }
  // Global index of global place k's first element; the size for k = the number of places.
  std::uint64_t place_offset(std::size_t k) const { return k == global_.places() ? global_.size() : global_.offset(k); }
  std::vector<std::size_t> places_;
  std::vector<std::size_t> first_;  // first global place of each rank, then the total
  int rank_;
  partition global_;
};

/// The layout of `n` elements over the places of every rank of `g`, this rank driving `local`
/// (every rank calls it, with its own set; one all-gather of the place counts). Throws as
/// rank_layout's constructor and process_group::all_gather.
inline rank_layout make_rank_layout(const process_group& g, std::uint64_t n, const device_set& local,
                                    const partition_policy& policy = partition_policy::even()) {
  const std::uint64_t mine = local.size();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(g.size()));
  g.all_gather(&mine, sizeof mine, all.data());
  return rank_layout(n, std::vector<std::size_t>(all.begin(), all.end()), policy, g.rank());
}

namespace detail {

/// A value that may be absent: what a rank contributes when its share may be empty.
template <class V>
struct ranked {
  V value;
  int has;
};

/// `op` lifted to ranked values: an absent operand is the identity. Associative when op is, and
/// commutative when op is.
template <class V, class Op>
struct ranked_op {
  Op op;
  __host__ __device__ ranked<V> operator()(const ranked<V>& a, const ranked<V>& b) const {
    if (!a.has) return b;
    if (!b.has) return a;
    return ranked<V>{static_cast<V>(op(a.value, b.value)), 1};
  }
};

/// The present value f(x).
template <class V, class F>
struct ranked_of {
  F f;
  template <class X>
  __host__ __device__ ranked<V> operator()(const X& x) const {
    return ranked<V>{static_cast<V>(f(x)), 1};
  }
};

/// *out = seed op v[0] op ... op v[upto - 1], v[r] being the payload of rank r's slot of
/// `gathered` (slots of `slot` bytes), in rank order (one thread); *missing = the first of the
/// `ranks` ranks whose slot does not hold `stamp` (first_unstamped), -1 if none.
template <class V, class Op>
__global__ void rank_fold_kernel(const char* gathered, std::size_t slot, std::size_t stamp_at, std::uint64_t stamp,
                                 int ranks, int upto, V seed, Op op, V* out, int* missing) {
  *missing = first_unstamped(gathered, ranks, slot, stamp_at, stamp);
  V acc = seed;
  for (int r = 0; r < upto; ++r) {
    V v;
    ::memcpy(static_cast<void*>(&v), gathered + static_cast<std::size_t>(r) * slot, sizeof(V));
    acc = op(acc, v);
  }
  *out = acc;
}

/// Every rank's value gathered (ncclAllGather), folded on the group's device in rank order over
/// ranks [0, upto) after `seed` with `op` into the group's pinned buffer: device-resident and
/// ordered on the group's stream, one wait (which never hangs: process_group::wait). This rank's value is at
/// `mine`: host memory when `ready` is null, else device-readable memory written by work `ready`
/// was recorded after.
template <class V, class Op>
V gather_fold_from(const process_group& g, const V* mine, cudaEvent_t ready, int upto, const V& seed, Op op) {
  static_assert(std::is_trivially_copyable_v<V>, "values crossing ranks must be trivially copyable");
  detail::device_guard guard(g.device());
  const std::size_t slot = gather_slot_bytes(sizeof(V));
  char* dev = g.enqueue_all_gather(mine, sizeof(V), ready);
  // The fold writes the value, then the missing rank (an int), straight into the group's mapped
  // pinned buffer: no copy back. (It fits in the first slot's bytes, whose staging copy, if any,
  // ran earlier on the same stream.)
  const std::size_t flag_at = (sizeof(V) + alignof(int) - 1) / alignof(int) * alignof(int);
  char* host = static_cast<char*>(g.s_->host_buffer);
  rank_fold_kernel<<<1, 1, 0, g.s_->stream>>>(dev, slot, gather_stamp_at(sizeof(V)), gather_stamp(g.s_->calls),
                                               g.size(), upto, seed, op, reinterpret_cast<V*>(host),
                                               reinterpret_cast<int*>(host + flag_at));
  STRATA_CUDA_CHECK(cudaGetLastError());
  g.wait(g.s_->stream, g.timeout());
  int who = -1;
  std::memcpy(&who, host + flag_at, sizeof who);
  g.require_every_rank(who, "strata::process_group::all_gather");
  V r;
  std::memcpy(&r, host, sizeof(V));
  return r;
}

/// gather_fold_from with this rank's value on the host.
template <class V, class Op>
V gather_fold(const process_group& g, const V& mine, int upto, const V& seed, Op op) {
  return gather_fold_from(g, &mine, nullptr, upto, seed, op);
}

/// gather_fold_from with this rank's value still being computed: the group's stream waits for
/// the future's work and reads the value where the root place writes it, so the local result
/// never makes a round trip through the host between the local reduce and the all-gather.
/// `mine` must stay alive until this returns (a temporary in the caller's expression does).
template <class V, class Op>
V gather_fold(const process_group& g, future<V>&& mine, int upto, const V& seed, Op op) {
  if (!future_access::pending(mine)) {
    const V v = mine.get();
    return gather_fold_from(g, &v, nullptr, upto, seed, op);
  }
  return gather_fold_from(g, future_access::value_address(mine), future_access::done_event(mine), upto, seed, op);
}

/// The last element of a range (which must not be empty), read after its place's work.
template <class S>
typename S::value_type last_element(const S& s) {
  using T = typename S::value_type;
  for (std::size_t i = s.partition().places(); i-- > 0;) {
    const auto seg = s.segment_at(i);
    if (seg.count == 0) continue;
    T v;
    // On the place's own stream (a plain cudaMemcpy would go through the legacy stream, which
    // does not wait for Strata's non-blocking ones), as every enqueue on a place does.
    at_place(s.places().state(), i, [&](place_state& p) {
      STRATA_CUDA_CHECK(cudaMemcpyAsync(&v, seg.data + (seg.count - 1), sizeof(T), cudaMemcpyDeviceToHost, p.stream()));
      STRATA_CUDA_CHECK(cudaStreamSynchronize(p.stream()));
    });
    return v;
  }
  throw std::logic_error("strata: last_element of an empty range");
}

/// Applies `op(offset, x)` to every x: the shift of a scan by what comes before it.
template <class T, class Op>
struct shift_by {
  T offset;
  Op op;
  __host__ __device__ T operator()(const T& x) const { return static_cast<T>(op(offset, x)); }
};

}  // namespace detail

// ---- reduce and scan over the ranks of a group ---------------------------------------------
// `r` is this rank's share of a global range laid out as rank_layout says (rank order, then place
// order). Every rank of `g` must make the same call; each returns the same value.

/// `init op f(x0) op f(x1) op ...` over the global range whose share on this rank is `r`: each
/// rank reduces its share (as strata::transform_reduce), the ranks' partials cross through one
/// ncclAllGather and are folded on every rank's GPU in rank order, so every rank returns the same
/// value and the order of operands across ranks is the global order. `op` must be associative
/// and commutative (within a rank CUB reorders operands). Throws as strata::transform_reduce and
/// process_group::all_gather (strata::nccl_error on a failed or silent peer, after aborting the
/// communicator).
template <class R, class Acc, class Op, class F, class = std::enable_if_t<is_distributed_range_v<R>>>
Acc transform_reduce(const process_group& g, const R& r, Acc init, Op op, F f) {
  using V = detail::ranked<Acc>;
  const detail::ranked_op<Acc, Op> rop{op};
  return detail::gather_fold(g, transform_reduce_async(r, V{Acc{}, 0}, rop, detail::ranked_of<Acc, F>{f}), g.size(),
                             V{init, 1}, rop)
      .value;
}
/// `init op x0 op x1 op ...` over the global range (see the transform_reduce form).
template <class R, class Acc, class Op, class = std::enable_if_t<is_distributed_range_v<R>>>
Acc reduce(const process_group& g, const R& r, Acc init, Op op) {
  return transform_reduce(g, r, init, op, detail::identity_fn{});
}
/// The sum `init + x0 + x1 + ...` over the global range.
template <class R, class Acc, class = std::enable_if_t<is_distributed_range_v<R>>>
Acc reduce(const process_group& g, const R& r, Acc init) {
  return reduce(g, r, init, ::cuda::std::plus<Acc>{});
}
/// The sum of the global range's elements, in their type.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
range_value_t<R> reduce(const process_group& g, const R& r) {
  return reduce(g, r, range_value_t<R>{});
}
/// How many elements of the global range satisfy `pred`.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
std::uint64_t count_if(const process_group& g, const R& r, Pred pred) {
  return detail::gather_fold(g, count_if_async(r, pred), g.size(), std::uint64_t{0}, ::cuda::std::plus<std::uint64_t>{});
}

/// How many elements of the global range equal `value`.
template <class R, class = std::enable_if_t<is_distributed_range_v<R>>>
std::uint64_t count(const process_group& g, const R& r, const range_value_t<R>& value) {
  return count_if(g, r, detail::equal_to_value<range_value_t<R>>{value});
}

namespace detail {
// A rank's extremum crossing ranks: the element (its index in the rank's share) and the share's
// size; folded left in rank order into the best so far with its global index (none_index if none
// yet) and the number of elements before.
inline constexpr std::uint64_t none_index = ~std::uint64_t{0};
template <class T>
struct rank_extremum {
  T value;
  std::uint64_t index;
  std::uint64_t count;
};
// `replaces(x, best)`: x, later in global order, takes the place of the best so far.
template <class T, class Replaces>
struct fold_extremum {
  Replaces replaces;
  __host__ __device__ rank_extremum<T> operator()(const rank_extremum<T>& acc, const rank_extremum<T>& x) const {
    rank_extremum<T> r = acc;
    if (x.count > 0 && (acc.index == none_index || replaces(x.value, acc.value))) {
      r.value = x.value;
      r.index = acc.count + x.index;
    }
    r.count = acc.count + x.count;
    return r;
  }
};
// The first smallest (Largest = false: only a smaller element replaces) or the first largest
// (only a larger one replaces) under `comp`.
template <class Comp, bool Largest>
struct replaces_first {
  Comp comp;
  template <class T>
  __host__ __device__ bool operator()(const T& x, const T& best) const {
    return Largest ? comp(best, x) : comp(x, best);
  }
};
template <class T, class Replaces>
element_result<T> global_extremum(const process_group& g, const element_result<T>& local, std::uint64_t count,
                                  Replaces replaces) {
  const rank_extremum<T> mine{local.value, local.index, count};
  const auto r = gather_fold(g, mine, g.size(), rank_extremum<T>{T{}, none_index, 0}, fold_extremum<T, Replaces>{replaces});
  return r.index == none_index ? element_result<T>{r.count, T{}} : element_result<T>{r.index, r.value};
}
// The ranks' flags combined with `op` (logical_and for "all", logical_or for "any"), this
// rank's still on the device (its local call's future).
template <class Op>
bool all_ranks(const process_group& g, future<bool>&& mine, bool seed, Op op) {
  return gather_fold(g, std::move(mine), g.size(), seed, op);
}
}  // namespace detail

/// The first smallest element of the global range under `comp` and its global index (for an
/// empty range: the size and a value-initialised value), the same on every rank.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
element_result<range_value_t<R>> min_element(const process_group& g, const R& r, Comp comp = {}) {
  return detail::global_extremum(g, min_element(r, comp), detail::as_span(r).size(), detail::replaces_first<Comp, false>{comp});
}
/// The first largest element of the global range under `comp` and its global index.
template <class R, class Comp = ::cuda::std::less<>, class = std::enable_if_t<is_distributed_range_v<R>>>
element_result<range_value_t<R>> max_element(const process_group& g, const R& r, Comp comp = {}) {
  return detail::global_extremum(g, max_element(r, comp), detail::as_span(r).size(), detail::replaces_first<Comp, true>{comp});
}
/// True if every element of the global range satisfies `pred` (true for an empty range).
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
bool all_of(const process_group& g, const R& r, Pred pred) {
  return detail::all_ranks(g, all_of_async(r, pred), true, ::cuda::std::logical_and<bool>{});
}
/// True if some element of the global range satisfies `pred`.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
bool any_of(const process_group& g, const R& r, Pred pred) {
  return detail::all_ranks(g, any_of_async(r, pred), false, ::cuda::std::logical_or<bool>{});
}
/// True if no element of the global range satisfies `pred`.
template <class R, class Pred, class = std::enable_if_t<is_distributed_range_v<R>>>
bool none_of(const process_group& g, const R& r, Pred pred) {
  return !any_of(g, r, pred);
}
/// True if the two global ranges (same layout on every rank) hold equal elements everywhere.
template <class RA, class RB, class = std::enable_if_t<is_distributed_range_v<RA> && is_distributed_range_v<RB>>>
bool equal(const process_group& g, const RA& a, const RB& b) {
  return detail::all_ranks(g, equal_async(a, b), true, ::cuda::std::logical_and<bool>{});
}

namespace detail {
// This rank's offset: init op (totals of the ranks before it), or absent if there is none and no
// init. `out` may serve as scratch for an order-preserving local total when `out_is_scratch` (an
// exclusive scan in place may not: its input would be gone); otherwise a temporary share does.
template <class In, class Out, class Op>
ranked<range_value_t<Out>> rank_prefix(const process_group& g, const In& in, Out& out, Op op,
                                       const ranked<range_value_t<Out>>& seed, bool out_is_scratch,
                                       bool& out_holds_local_scan) {
  using T = range_value_t<Out>;
  using V = ranked<T>;
  const ranked_op<T, Op> rop{op};
  out_holds_local_scan = false;
  if constexpr (is_commutative<Op>::value) {  // the local total stays on the device (an empty share: absent)
    (void)out;
    (void)out_is_scratch;
    return gather_fold(g, transform_reduce_async(in, V{T{}, 0}, rop, ranked_of<T, identity_fn>{}), g.rank(), seed, rop);
  } else {  // CUB's reduction would reorder operands: the local total is a local scan's last element
    V total{T{}, 0};
    const auto si = as_span(in);
    if (si.size() > 0) {
      if (out_is_scratch) {
        inclusive_scan(in, out, op);
        total = V{last_element(as_span(out)), 1};
        out_holds_local_scan = true;
      } else {
        distributed_vector<T> scratch(si.size(), si.places(), partition_policy::explicit_sizes(si.partition().counts()),
                                      no_init);
        inclusive_scan(in, scratch, op);
        total = V{last_element(as_span(scratch)), 1};
      }
    }
    return gather_fold(g, total, g.rank(), seed, rop);
  }
}

}  // namespace detail

/// Inclusive scan of the global range whose share on this rank is `in`, into `out` (this rank's
/// share of a range of the same layout): `out[i] = x0 op ... op x_i` in global order. The ranks'
/// totals cross through one ncclAllGather; each rank folds those of the ranks before it on its GPU
/// and scans its share seeded with that. Correct for associative operators that are not
/// commutative (their local totals come from an order-preserving scan, so such scans read and
/// write `out` twice). Throws as strata::inclusive_scan and process_group::all_gather.
template <class In, class Out, class Op, class = std::enable_if_t<is_distributed_range_v<In>>>
void inclusive_scan(const process_group& g, const In& in, Out&& out, Op op) {
  using T = range_value_t<Out>;
  bool scanned = false;
  const auto prefix = detail::rank_prefix(g, in, out, op, detail::ranked<T>{T{}, 0}, true, scanned);
  if (!prefix.has) {
    if (!scanned) inclusive_scan(in, out, op);
  } else if (scanned) {
    transform(out, out, detail::shift_by<T, Op>{prefix.value, op});
  } else {
    inclusive_scan(in, out, op, prefix.value);
  }
}
/// Inclusive scan with an initial value: `out[i] = init op x0 op ... op x_i` in global order.
template <class In, class Out, class Op, class T, class = std::enable_if_t<is_distributed_range_v<In>>>
void inclusive_scan(const process_group& g, const In& in, Out&& out, Op op, T init) {
  using U = range_value_t<Out>;
  bool scanned = false;
  const auto prefix = detail::rank_prefix(g, in, out, op, detail::ranked<U>{static_cast<U>(init), 1}, true, scanned);
  if (scanned)
    transform(out, out, detail::shift_by<U, Op>{prefix.value, op});
  else
    inclusive_scan(in, out, op, prefix.value);
}
/// Exclusive scan: `out[i] = init op x0 op ... op x_(i-1)` in global order. In place with a
/// non-commutative operator, the local total needs a temporary share of `in`'s size.
template <class In, class Out, class T, class Op, class = std::enable_if_t<is_distributed_range_v<In>>>
void exclusive_scan(const process_group& g, const In& in, Out&& out, T init, Op op) {
  using U = range_value_t<Out>;
  bool scanned = false;
  const auto prefix = detail::rank_prefix(g, in, out, op, detail::ranked<U>{static_cast<U>(init), 1},
                                          !detail::same_range(detail::as_span(in), detail::as_span(out)), scanned);
  exclusive_scan(in, out, prefix.value, op);
}


// ---- moving a range between layouts over ranks ----------------------------------------------

namespace detail {

/// One elementary piece of a move between two rank layouts, as one rank sees it: `count`
/// elements exchanged with rank `peer`, at `offset` in this rank's place `place` (of the source
/// share for a send, of the destination share for a receive). A piece that stays on this rank
/// also has where it lands (`dst_place`, `dst_offset`).
struct rank_piece {
  int peer;
  std::size_t place;
  std::uint64_t offset;
  std::size_t dst_place;
  std::uint64_t dst_offset;
  std::uint64_t count;
};

/// What this rank sends, receives and keeps when a global range moves from one rank layout to
/// another.
struct rank_moves {
  std::vector<rank_piece> sends, receives, stays;
};

/// The moves of rank `from.rank()` from layout `from` to `to`. The range is cut at every place
/// boundary of both layouts, so each piece lies in one source place and one destination place;
/// the pieces come out in global order, so this rank's sends to a peer and that peer's receives
/// from this rank are the same pieces in the same order (how NCCL matches point-to-point calls).
/// Throws std::invalid_argument if the layouts differ in size or ranks, or are seen from
/// different ranks.
inline rank_moves plan_rank_moves(const rank_layout& from, const rank_layout& to) {
  if (from.size() != to.size() || from.ranks() != to.ranks() || from.rank() != to.rank())
    throw std::invalid_argument("strata::copy (across ranks): the layouts differ in size (" + std::to_string(from.size()) +
                                " and " + std::to_string(to.size()) + " elements), in ranks (" +
                                std::to_string(from.ranks()) + " and " + std::to_string(to.ranks()) +
                                ") or in the rank they are seen from");
  // The owner rank and local index of every global place of a layout.
  const auto owners = [](const rank_layout& l) {
    std::vector<std::pair<int, std::size_t>> o;
    for (int r = 0; r < l.ranks(); ++r)
      for (std::size_t k = 0; k < l.rank_places(r); ++k) o.emplace_back(r, k);
    return o;
  };
  const auto oa = owners(from), ob = owners(to);
  const partition& a = from.global();
  const partition& b = to.global();
  const int me = from.rank();
  rank_moves m;
  std::size_t i = 0, j = 0;
  for (std::uint64_t at = 0; at < a.size();) {
    while (a.offset(i) + a.count(i) <= at) ++i;  // the places holding `at` (empty ones skipped)
    while (b.offset(j) + b.count(j) <= at) ++j;
    const std::uint64_t end = std::min(a.offset(i) + a.count(i), b.offset(j) + b.count(j));
    const auto [ra, pa] = oa[i];
    const auto [rb, pb] = ob[j];
    const rank_piece src{rb, pa, at - a.offset(i), pb, at - b.offset(j), end - at};
    if (ra == me && rb == me)
      m.stays.push_back(src);
    else if (ra == me)
      m.sends.push_back(src);
    else if (rb == me)
      m.receives.push_back(rank_piece{ra, pb, at - b.offset(j), pb, at - b.offset(j), end - at});
    at = end;
  }
  return m;
}

/// Throws std::invalid_argument unless every non-empty segment of `s` lies on `device`.
template <class T>
void require_on_device(const char* what, const distributed_span<T>& s, int device) {
  for (std::size_t i = 0; i < s.partition().places(); ++i)
    if (s.partition().count(i) > 0 && s.places().device(i) != device)
      throw std::invalid_argument(std::string("strata::copy (across ranks): ") + what + "'s place " + std::to_string(i) +
                                  " is on GPU " + std::to_string(s.places().device(i)) +
                                  ", not on the process group's GPU " + std::to_string(device));
}

}  // namespace detail

/// Moves a global range between two layouts over the ranks of `g` (e.g. onto a weighted layout,
/// or off a rank that must be drained): this rank's share of the source is `src` (laid out as
/// `from` says), its share of the destination `dst` (allocated as `to` says: `to.local_size()`
/// elements with `to.local_policy()`). Every rank calls it; element k of the global range lands
/// at global index k. Pieces between ranks go by grouped ncclSend/ncclRecv on the group's stream,
/// pieces that stay by device copies on it; it returns once this rank's part is done (a wait that
/// never hangs). Requires every place of `src` and `dst` on the group's GPU, and `src` and `dst`
/// not to overlap. Throws std::invalid_argument (layouts that differ in size or ranks, shares of
/// the wrong size, places on another GPU), strata::nccl_error, strata::cuda_error.
template <class S, class T>
void copy(const process_group& g, const distributed_span<S>& src, const rank_layout& from, const distributed_span<T>& dst,
          const rank_layout& to) {
  static_assert(std::is_same_v<std::remove_const_t<S>, T>, "the source and destination hold the same type");
  static_assert(std::is_trivially_copyable_v<T>, "elements crossing ranks must be trivially copyable");
  if (from.ranks() != g.size() || from.rank() != g.rank())
    throw std::invalid_argument("strata::copy (across ranks): the layout is for rank " + std::to_string(from.rank()) +
                                " of " + std::to_string(from.ranks()) + ", the group is rank " + std::to_string(g.rank()) +
                                " of " + std::to_string(g.size()));
  const detail::rank_moves m = detail::plan_rank_moves(from, to);
  if (src.size() != from.local_size() || dst.size() != to.local_size())
    throw std::invalid_argument("strata::copy (across ranks): this rank's shares hold " + std::to_string(src.size()) +
                                " and " + std::to_string(dst.size()) + " elements, the layouts give it " +
                                std::to_string(from.local_size()) + " and " + std::to_string(to.local_size()));
  if (src.size() > 0) detail::require_on_device("the source", src, g.device());
  if (dst.size() > 0) detail::require_on_device("the destination", dst, g.device());
  // What the places were doing with the shares comes first.
  if (src.size() > 0) src.places().synchronize();
  if (dst.size() > 0) dst.places().synchronize();
  g.run([&](ncclComm_t, cudaStream_t stream) {
    const auto bytes = [](const detail::rank_piece& p) { return p.count * sizeof(T); };
    for (const auto& p : m.stays)
      STRATA_CUDA_CHECK(cudaMemcpyAsync(dst.segment_at(p.dst_place).data + p.dst_offset,
                                        src.segment_at(p.place).data + p.offset, bytes(p), cudaMemcpyDeviceToDevice,
                                        stream));
    std::vector<detail::rank_transfer> sends, receives;
    for (const auto& p : m.sends)
      sends.push_back({const_cast<T*>(src.segment_at(p.place).data + p.offset), bytes(p), p.peer});
    for (const auto& p : m.receives) receives.push_back({dst.segment_at(p.place).data + p.offset, bytes(p), p.peer});
    g.s_->send_receive(sends, receives, stream);
  });
}

}  // namespace strata
