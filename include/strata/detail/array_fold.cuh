// The array fold: a fold whose partials are arrays of any length `n` (a histogram's bins, one value
// per segment of a segmented reduction) instead of one value. Every non-empty segment's partial is
// computed in memory of its own place's device, then copied into its slot of the root's array
// workspace (a device copy on the root's device, a peer copy where the devices reach each other,
// a copy into pinned host memory otherwise), so no kernel ever writes another device's memory
// (CUB's histogram adds with atomics, which peer and host memory do not all support). The root
// combines the arrays element-wise in segment order, one thread per element:
// out[e] = init op p_0[e] op p_1[e] op ... On a set spanning processes each rank first folds its
// own places into its slot, the slots are all-gathered with the call's stamp, and every rank folds
// the ranks' arrays in rank order, so every rank gets the same array and order-sensitive operators
// stay exact. Not replayed from a CUDA graph (its partials are not one value per place).
#pragma once

#include <strata/detail/device_guard.cuh>
#include <strata/detail/exchange.cuh>
#include <strata/detail/fan_out.cuh>
#include <strata/detail/fold_slots.cuh>
#include <strata/detail/rank_collectives.cuh>
#include <strata/detail/rank_link.cuh>
#include <strata/detail/set_state.cuh>
#include <strata/error.hpp>
#include <strata/partition.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace strata::detail {

/// Threads per block and the most blocks of the array folds' kernels (grid-stride loops).
inline constexpr unsigned array_fold_block = 256;
inline constexpr std::uint64_t array_fold_max_blocks = 4096;

inline unsigned array_fold_blocks(std::uint64_t n) {
  const std::uint64_t b = (n + array_fold_block - 1) / array_fold_block;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(b, array_fold_max_blocks)));
}

/// out[e] = (init op) t.ptr[0][e] op t.ptr[1][e] op ... for e < n, in table order; without `init`
/// (with_init false) the first array starts the fold (the table must then not be empty).
template <class P, class Op>
__global__ void array_fold_kernel(slot_table<P> t, std::uint64_t n, P init, bool with_init, Op op, P* out) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t e = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; e < n; e += stride) {
    P acc = with_init ? init : t.ptr[0][e];
    for (int j = with_init ? 0 : 1; j < t.size; ++j) acc = op(acc, t.ptr[j][e]);
    out[e] = acc;
  }
}

/// The slots of one array all-gather across ranks: every rank's array (n values of P), padded,
/// then the stamp field (rank_link.cuh), whose second word says whether the rank had any element
/// (a rank without elements contributes nothing, not an identity).
template <class P>
struct array_slots {
  std::size_t payload, slot, stamp_at;
  explicit array_slots(std::uint64_t n)
      : payload(static_cast<std::size_t>(n) * sizeof(P)), slot(gather_slot_bytes(payload)), stamp_at(gather_stamp_at(payload)) {}
};

/// Root task before the all-gather: this rank's stamp and whether it folded anything.
struct stamp_array_task {
  char* slot;
  std::size_t stamp_at;
  std::uint64_t stamp, has;
  __device__ void operator()() const {
    ::memcpy(slot + stamp_at, &stamp, sizeof stamp);
    ::memcpy(slot + stamp_at + sizeof stamp, &has, sizeof has);
  }
};

/// out[e] = init op (the arrays of the ranks that had elements, in rank order)[e]; block 0's
/// thread 0 records the first rank whose slot this call did not write (sticky, in `missing`).
template <class P, class Op>
__global__ void rank_array_fold_kernel(const char* gathered, int ranks, std::size_t slot, std::size_t stamp_at,
                                       std::uint64_t stamp, std::uint64_t n, P init, Op op, P* out, int* missing) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const int m = first_unstamped(gathered, ranks, slot, stamp_at, stamp);
    if (m >= 0 && *missing < 0) *missing = m;
  }
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t e = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; e < n; e += stride) {
    P acc = init;
    for (int r = 0; r < ranks; ++r) {
      const char* at = gathered + static_cast<std::size_t>(r) * slot;
      std::uint64_t has;
      ::memcpy(&has, at + stamp_at + sizeof(std::uint64_t), sizeof has);
      if (has != 0) acc = op(acc, reinterpret_cast<const P*>(at)[e]);
    }
    out[e] = acc;
  }
}

/// The array slots of a call over `part`: for the j-th non-empty segment of this process, n
/// values of P in the array workspace, in root memory when the place reaches it, otherwise in
/// mapped pinned host memory.
template <class P>
slot_table<P> array_table_of(set_state& s, const partition& part, std::uint64_t n) {
  const std::size_t stride = (static_cast<std::size_t>(n) * sizeof(P) + 255) / 256 * 256;
  s.ensure_array_workspace(s.size() * stride);
  slot_table<P> t{};
  for (std::size_t i = 0; i < part.places(); ++i) {
    if (part.count(i) == 0 || !s.local(i)) continue;
    const int j = t.size++;
    char* base = static_cast<char*>(s.reaches_root(i) ? s.array_device_buffer() : s.array_host_buffer());
    t.ptr[j] = reinterpret_cast<P*>(base + i * stride);
    t.offset[j] = part.offset(i);
    t.place[j] = static_cast<int>(i);
  }
  return t;
}

/// Phase one of an array fold: `partial(i, place, out, own)` writes segment i's n values to `out`,
/// in memory of the place's own device (its slot where that is root memory of the same device,
/// otherwise the place's scratch, copied into the slot afterwards on the place's stream); `own`
/// is `extra_scratch` bytes of the place's scratch for the partial's own use (e.g. a histogram's
/// levels; null if none asked). Returns the table of the slots, in segment order, with the root
/// stream ordered after every place.
template <class P, class Partial>
slot_table<P> gather_arrays(set_state& s, const partition& part, std::uint64_t n, std::size_t extra_scratch,
                            Partial&& partial) {
  const slot_table<P> t = array_table_of<P>(s, part, n);
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(P);
  const std::size_t own = (extra_scratch + 255) / 256 * 256;
  return gather_into(s, part, t, [&](std::size_t i, place_state& p, P* slot) {
    const bool on_root_device = s.reaches_root(i) && p.device() == s.root_device();
    char* scratch = static_cast<char*>(p.scratch(own + (on_root_device ? 0 : bytes)));
    void* mine = own > 0 ? scratch : nullptr;
    if (on_root_device) {
      partial(i, p, slot, mine);
      return;
    }
    P* local = reinterpret_cast<P*>(scratch + own);
    partial(i, p, local, mine);
    if (s.reaches_root(i))
      copy_direct(slot, s.root_device(), local, p.device(), bytes, p.stream());
    else
      STRATA_CUDA_CHECK(cudaMemcpyAsync(slot, local, bytes, cudaMemcpyDeviceToHost, p.stream()));
  });
}

/// An array fold over `part` (see the top of this file): every non-empty segment's n values by
/// `partial` (gather_arrays), combined with `op` (associative) after `init`, in global segment
/// order, into `result` (n values of host memory) on every rank; waits. An empty partition does
/// no device work: every value is `init`. Throws strata::cuda_error for CUDA failures and, on a
/// set spanning processes, the link's error if a rank did not take part (after aborting).
template <class P, class Partial, class Op>
void fold_arrays(const char* name, set_state& s, const partition& part, std::uint64_t n, std::size_t extra_scratch,
                 Partial&& partial, const P& init, Op op, P* result) {
  static_assert(std::is_trivially_copyable_v<P>, "array partials are copied bytewise");
  if (part.size() == 0 || n == 0) {
    std::fill(result, result + n, init);
    return;
  }
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(P);
  P* out = reinterpret_cast<P*>(s.host_words((bytes + 7) / 8));  // mapped: the root's kernel writes it
  const slot_table<P> local = gather_arrays<P>(s, part, n, extra_scratch, partial);
  place_state& root = s.root();
  if (s.link == nullptr) {
    at_place(s, s.root_index, [&](place_state& r) {
      array_fold_kernel<<<array_fold_blocks(n), array_fold_block, 0, r.stream()>>>(local, n, init, true, op, out);
      STRATA_CUDA_CHECK(cudaGetLastError());
    });
  } else {
    // Across ranks: this rank's places folded into its slot, stamped, all-gathered, folded again.
    const array_slots<P> as(n);
    const int ranks = s.ranks.ranks(), me = s.ranks.rank();
    char* buffer = s.rank_buffer(as.slot * static_cast<std::size_t>(ranks));
    char* mine = buffer + static_cast<std::size_t>(me) * as.slot;
    int* missing = s.missing_rank_word();
    if (local.size > 0)
      at_place(s, s.root_index, [&](place_state& r) {
        array_fold_kernel<<<array_fold_blocks(n), array_fold_block, 0, r.stream()>>>(local, n, init, false, op,
                                                                                      reinterpret_cast<P*>(mine));
        STRATA_CUDA_CHECK(cudaGetLastError());
      });
    const std::uint64_t stamp = s.link->next_stamp();
    pack_and_all_gather(s, buffer, as.slot,
                        stamp_array_task{mine, as.stamp_at, stamp, static_cast<std::uint64_t>(local.size > 0 ? 1 : 0)});
    at_place(s, s.root_index, [&](place_state& r) {
      rank_array_fold_kernel<<<array_fold_blocks(n), array_fold_block, 0, r.stream()>>>(
          buffer, ranks, as.slot, as.stamp_at, stamp, n, init, op, out, missing);
      STRATA_CUDA_CHECK(cudaGetLastError());
    });
  }
  s.mark_fold_consumed();
  wait_root(s, name);
  std::memcpy(result, out, bytes);
}

}  // namespace strata::detail
