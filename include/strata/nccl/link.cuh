// The NCCL transport of device sets spanning processes: detail::nccl_link implements the core's
// rank_link (detail/rank_link.cuh) over one NCCL communicator (all-gather, broadcast, grouped
// sends and receives, waits that never hang on a failed or dead peer), and the hub through which
// ranks of one process that share a GPU launch their collectives together. A process_group holds
// one; so does every set spanning its ranks. Includes no algorithm.
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/memory.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/error.hpp>
#include <strata/nccl/bounded.cuh>
#include <strata/nccl/error.cuh>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata::detail {

class shared_gpu_ranks;

/// One NCCL rank's transport: the communicator, this rank's place in it, its timeout, and the
/// stream and buffers of its host-level all-gather (process_group::all_gather). Every collective
/// is counted, so each carries the same stamp on every rank (rank_link.cuh).
class nccl_link final : public rank_link {
 public:
  ncclComm_t comm = nullptr;
  int rank_ = -1, size = 0, device_ = -1;
  bool owned = false;
  // No collective may run any more: the group failed (a peer failed or died, or the timeout
  // passed), was aborted, or was retired by process_group::shrink.
  bool aborted = false;
  // ... but the communicator still exists (ncclCommRevoke stopped its work; or shrink retired it):
  // process_group::shrink can still use it, and it is freed by ncclCommAbort, which waits for no peer.
  bool revoked = false;
  // A collective of this rank could not be enqueued while its stream was being captured into a
  // graph (where NCCL's revoke or abort could not run): the group gives up at its next collective.
  bool give_up_pending = false;
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
  // Ranks sharing a GPU in this process launch through the hub, from whichever thread arrives
  // last: their collectives cannot be captured by their own threads.
  bool capturable() const noexcept override { return hub == nullptr; }
  std::uint64_t next_stamp() override { return gather_stamp(++calls); }
  void all_gather(char* buffer, std::size_t slot, cudaStream_t on) override {
    const char* who = "strata: all-gather across ranks";
    live(who);
    char* mine = buffer + slot * static_cast<std::size_t>(rank_);
    launch(who, on, [&] { STRATA_NCCL_CHECK(rank_, ncclAllGather(mine, buffer, slot, ncclUint8, comm, on)); });
  }
  void broadcast(const void* send, void* recv, std::size_t bytes, int root, cudaStream_t on) override {
    const char* who = "strata: broadcast across ranks";
    live(who);
    launch(who, on, [&] { STRATA_NCCL_CHECK(rank_, ncclBroadcast(send, recv, bytes, ncclUint8, root, comm, on)); });
  }
  void send_receive(const std::vector<rank_transfer>& sends, const std::vector<rank_transfer>& receives,
                    cudaStream_t on) override {
    // (A rank with no transfers still meets the ranks that share its GPU: see launch.)
    if (sends.empty() && receives.empty() && hub == nullptr) return;
    const char* who = "strata: exchange across ranks";
    live(who);
    launch(who, on, [&] {
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
  // Runs `enqueue` (this rank's NCCL calls of one collective on stream `on`, which only enqueue)
  // with the rank's GPU current: at once for a rank alone on its GPU in this process, else through
  // the hub, which launches the calls of every rank sharing the GPU together.
  template <class F>
  void launch(const char* who, cudaStream_t on, F&& enqueue);
  void wait(cudaStream_t on) override {
    poll([on] { return cudaStreamQuery(on); }, "cudaStreamQuery (NCCL work)", timeout);
  }
  void wait_event(cudaEvent_t e) override {
    poll([e] { return cudaEventQuery(e); }, "cudaEventQuery (NCCL work)", timeout);
  }
  [[noreturn]] void fail_missing(int missing, const char* who) override {
    give_up();
    throw nccl_error(ncclRemoteError, who, rank_,
                     "rank " + std::to_string(missing) +
                         " did not contribute to the collective (it failed or left); the group's communicator was stopped",
                     __FILE__, __LINE__);
  }
  // process_group::abort, and where a failure cannot revoke: frees the communicator at once
  // (ncclCommAbort stops its work and waits for no peer). Never throws; idempotent.
  void abort() noexcept {
    if (comm == nullptr || (aborted && !revoked)) return;
    aborted = true;
    revoked = false;
    // NCCL's abort waits until no graph holding one of the communicator's collectives exists
    // (its persistent references): drop the captured ones first (one in flight is freed when the
    // abort has stopped its kernels).
    drop_collective_graphs();
    (void)ncclCommAbort(comm);
    (void)cudaGetLastError();  // (what NCCL left: see check_nccl)
  }
  // A collective failed (a peer failed or died, or the timeout passed): every later call on the
  // group throws, and the communicator's work stops so that nothing on the GPU waits for the dead
  // peer any more (a cudaFree would wait for such a kernel). Where NCCL can (2.28+) it is revoked
  // rather than aborted: ncclCommRevoke stops the work and keeps the communicator, so that the
  // survivors can still make a new group of themselves from it (process_group::shrink). Waits at
  // most the group's timeout for the revoke to settle; where it fails or does not settle, aborts.
  // (Ranks sharing a GPU in one process abort: shrink does not take them.)
  void give_up() noexcept {
    if (aborted || comm == nullptr) return;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    if (hub == nullptr && nccl_has_revoke()) {  // (bound only where the loaded NCCL has it)
      drop_collective_graphs();  // (as for abort)
      if (ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclSuccess) {
        const auto start = std::chrono::steady_clock::now();
        ncclResult_t state = ncclInProgress;
        while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
               std::chrono::steady_clock::now() - start < timeout)
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        (void)cudaGetLastError();  // (what NCCL left: see check_nccl)
        if (state != ncclInProgress) {
          aborted = revoked = true;
          return;
        }
      }
      (void)cudaGetLastError();
    }
#endif
    abort();
  }
  // Throws strata::nccl_error naming `who` once the group failed, was aborted or was retired.
  void live(const char* who) {
    if (give_up_pending) {
      give_up_pending = false;
      give_up();
    }
    if (aborted)
      throw nccl_error(ncclInvalidUsage, who, rank_,
                       "the group's communicator was stopped (an earlier collective failed, abort(), or shrink() retired it)",
                       __FILE__, __LINE__);
  }
  // Waits until `query()` (cudaStreamQuery or cudaEventQuery of NCCL work) says done, without
  // ever hanging on a failed or dead peer (see process_group::wait).
  template <class Query>
  void poll(Query query, const char* what, std::chrono::milliseconds limit) {
    const auto start = std::chrono::steady_clock::now();
    device_guard g(device_);
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
                           "the group's communicator was stopped (a rank failed or left)", __FILE__, __LINE__);
        return;
      }
      if (e != cudaErrorNotReady) throw_cuda_error(e, what, device_, __FILE__, __LINE__);
      (void)cudaGetLastError();
      ncclResult_t async = ncclSuccess;
      // (Never on an aborted communicator: ncclCommAbort freed it.)
      const ncclResult_t q = aborted ? ncclSuccess : ncclCommGetAsyncError(comm, &async);
      (void)cudaGetLastError();  // (what NCCL's internals left: see check_nccl)
      if (q != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        give_up();
        throw nccl_error(q != ncclSuccess ? q : async, "strata::process_group::wait", rank_,
                         "a peer failed; the group's communicator was stopped (process_group::shrink can make a new group of the survivors)", __FILE__, __LINE__);
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > limit) {
        give_up();
        throw nccl_error(ncclSystemError, "strata::process_group::wait", rank_,
                         "no progress within " + std::to_string(limit.count()) +
                             " ms (a peer may have died); the group's communicator was stopped (process_group::shrink can make a new group of the survivors)",
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
  nccl_link() = default;
  nccl_link(const nccl_link&) = delete;
  nccl_link& operator=(const nccl_link&) = delete;
  // Frees the buffers (Strata's allocation functions: counted, errors naming the device).
  void free_buffers() noexcept {
    device_free(device_, device_buffer);
    pinned_free(host_buffer);
    device_buffer = host_buffer = nullptr;
    buffer_bytes = 0;
  }
  ~nccl_link();

  /// process_group::all_gather: `bytes` from every rank, in rank order, into host memory `out`.
  /// The ranks first all-gather their byte counts (8 bytes each): if they differ, every rank
  /// throws std::invalid_argument naming them (an NCCL all-gather of unequal counts would read
  /// and write past the slots). Call with the link's GPU current.
  void all_gather_host(const void* in, std::size_t bytes, void* out) {
    const std::uint64_t mine = bytes;
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
    gather_fixed(&mine, sizeof mine, all.data());
    for (int r = 0; r < size; ++r)
      if (all[static_cast<std::size_t>(r)] != mine) {
        std::string counts;
        for (int q = 0; q < size; ++q)
          counts += (q ? ", " : "") + std::string("rank ") + std::to_string(q) + ": " + std::to_string(all[static_cast<std::size_t>(q)]);
        throw std::invalid_argument("strata::process_group::all_gather: the ranks pass different byte counts (" + counts +
                                    "); every rank must pass the same");
      }
    gather_fixed(in, bytes, out);
  }

  /// One all-gather of `bytes` from every rank (the same on all): this rank's payload stamped into
  /// its slot, one in-place all-gather on the link's own stream, a wait that never hangs, and every
  /// slot's stamp checked.
  void gather_fixed(const void* in, std::size_t bytes, void* out) {
    const char* who = "strata::process_group::all_gather";
    live(who);
    if (stream == nullptr) STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const std::size_t slot = gather_slot_bytes(bytes);
    const std::size_t total = slot * static_cast<std::size_t>(size);
    if (buffer_bytes < total) {
      STRATA_CUDA_CHECK(cudaStreamSynchronize(stream));  // nothing may still use the old ones
      free_buffers();
      device_buffer = device_allocate(device_, total);
      host_buffer = pinned_allocate(total);
      buffer_bytes = total;
    }
    char* dev = static_cast<char*>(device_buffer);
    char* host = static_cast<char*>(host_buffer);
    const std::size_t at = slot * static_cast<std::size_t>(rank_);
    const std::uint64_t stamp = next_stamp();
    std::memset(host + at, 0, slot);
    std::memcpy(host + at, in, bytes);
    std::memcpy(host + at + gather_stamp_at(bytes), &stamp, sizeof stamp);
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dev + at, host + at, slot, cudaMemcpyHostToDevice, stream));
    all_gather(dev, slot, stream);  // in place: the send buffer is this rank's slot
    STRATA_CUDA_CHECK(cudaMemcpyAsync(host, dev, total, cudaMemcpyDeviceToHost, stream));
    wait(stream);
    const int missing = first_unstamped(host, size, slot, gather_stamp_at(bytes), stamp);
    if (missing >= 0) fail_missing(missing, who);
    for (int r = 0; r < size; ++r)
      std::memcpy(static_cast<char*>(out) + static_cast<std::size_t>(r) * bytes, host + static_cast<std::size_t>(r) * slot, bytes);
  }
};

/// The ranks of one process that share a GPU (made together by process_group::create_local). Each is driven by
/// its own host thread, but their NCCL calls must not be launched one thread at a time: a rank's
/// collective kernel waits on the GPU for the others' kernels, and until these are launched,
/// anything that synchronizes the GPU in the other threads (cudaFree, CUDA's lazy loading of a
/// kernel, NCCL's own connection set-up) waits for that kernel in turn, a deadlock (measured with
/// NCCL 2.32: two ranks on threads of one process hung in their first collectives). So every
/// rank posts its calls and waits; the last to arrive launches them all, in rank order, inside
/// one ncclGroupStart/ncclGroupEnd, as NCCL documents for one thread driving several ranks. A
/// rank that does not arrive within its timeout breaks the hub: the waiting ranks abort their
/// communicators and throw, and so does every later call on these ranks.
class shared_gpu_ranks {
 public:
  explicit shared_gpu_ranks(std::vector<nccl_link*> members)
      : members_(std::move(members)), posted_(members_.size()), errors_(members_.size()) {}

  // Member `index` posts `enqueue` and returns once it ran (on this thread or another), or
  // throws: what `enqueue` threw, or strata::nccl_error (its communicator aborted) when a member
  // did not arrive within `timeout` or failed.
  void launch(std::size_t index, const std::function<void()>& enqueue, std::chrono::milliseconds timeout,
              const char* who) {
    std::unique_lock<std::mutex> lock(m_);
    nccl_link& me = *members_[index];
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
  std::vector<nccl_link*> members_;                      // null once destroyed
  std::vector<const std::function<void()>*> posted_;  // this round's calls, by member
  std::vector<std::exception_ptr> errors_;
  std::size_t arrived_ = 0;
  std::uint64_t round_ = 0;
  std::string broken_;  // why no collective can run any more (empty: none)
};

template <class F>
void nccl_link::launch(const char* who, cudaStream_t on, F&& enqueue) {
  if (hub == nullptr) {
    device_guard g(device_);
    try {
      enqueue();
    } catch (...) {
      // A collective this rank could not enqueue is one the others wait for in vain: the group
      // is stopped as after any failed collective, so this rank's later calls throw at once
      // instead of each waiting out the timeout (the others throw by their timeout). Not inside
      // a graph capture of the stream (NCCL's revoke and abort make calls a capture forbids):
      // then at the next collective, which the failed capture's eager fallback makes at once.
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(on, &capturing) != cudaSuccess) (void)cudaGetLastError();
      if (capturing == cudaStreamCaptureStatusNone)
        give_up();
      else
        give_up_pending = true;
      throw;
    }
    return;
  }
  hub->launch(hub_index, [this, &enqueue] {
    device_guard g(device_);
    enqueue();
  }, timeout, who);
}

inline nccl_link::~nccl_link() {
  drop_collective_graphs();  // (before the communicator goes: see abort)
  if (stream != nullptr) {
    quiet_device_switch g(device_);
    (void)cudaStreamSynchronize(stream);
    (void)cudaStreamDestroy(stream);
  }
  free_buffers();
  if (hub != nullptr) hub->leave(hub_index);
  if (owned && comm != nullptr) {
    if (revoked) {
      quiet_device_switch g(device_);
      (void)ncclCommAbort(comm);  // (revoked or retired: it finalizes with no peer)
      (void)cudaGetLastError();
    } else if (!aborted) {
      (void)destroy_communicator(comm, device_, timeout);
    }
  }
}

}  // namespace strata::detail
