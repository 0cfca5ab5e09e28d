// Bootstrapping Strata's NCCL layer from MPI: an MPI program (one rank per GPU, started by
// mpirun or srun) makes its process_group with one collective call. Needs MPI: link MPI::MPI_CXX
// (CMake's FindMPI) beside Strata::nccl.
//
//   MPI_Init(&argc, &argv);
//   const int gpu = strata::mpi_local_gpu(MPI_COMM_WORLD);      // -1 if no GPU is visible
//   const auto group = strata::process_group_from_mpi(MPI_COMM_WORLD, gpu);
//   const strata::device_set set = strata::spanning_set(group);  // one place per rank
//   strata::distributed_vector<float> x(n, 1.0f, set);          // each rank holds its share
//   ... strata::reduce(x) is the same on every rank ...
#pragma once

#include <strata/nccl/error.cuh>
#include <strata/nccl/process_group.cuh>

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata {

/// Thrown when an MPI call made by Strata fails; `what()` names the call and MPI's message.
class mpi_error : public std::runtime_error {
 public:
  /// An error for `call`, which returned `code`.
  mpi_error(int code, const std::string& call) : std::runtime_error(format(code, call)), code_(code) {}
  /// MPI's error code.
  int code() const noexcept { return code_; }

 private:
  static std::string format(int code, const std::string& call) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
    return call + " failed: " + (len > 0 ? std::string(text, static_cast<std::size_t>(len)) : "MPI error " + std::to_string(code));
  }
  int code_;
};

namespace detail {
inline void check_mpi(int r, const char* call) {
  if (r != MPI_SUCCESS) throw mpi_error(r, call);
}
inline int mpi_rank(MPI_Comm comm) {
  int r = 0;
  check_mpi(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  return r;
}
inline int mpi_size(MPI_Comm comm) {
  int n = 0;
  check_mpi(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  return n;
}
}  // namespace detail

/// This process's rank among the ranks of `comm` on its node (MPI_Comm_split_type with
/// MPI_COMM_TYPE_SHARED): the usual choice of GPU is this modulo the visible GPUs. Collective
/// over `comm`. Throws strata::mpi_error.
inline int mpi_local_rank(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int r = 0;
  const int e = MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  detail::check_mpi(e, "MPI_Comm_rank");
  return r;
}

/// The GPU this rank should drive when every rank drives one: its node-local rank
/// (mpi_local_rank) modulo the visible GPUs, or -1 when no GPU is visible. Collective over `comm`.
/// Throws strata::mpi_error, and strata::cuda_error when the GPUs cannot be counted.
inline int mpi_local_gpu(MPI_Comm comm) {
  const int local = mpi_local_rank(comm);
  const int gpus = visible_device_count();
  return gpus == 0 ? -1 : local % gpus;
}

/// NCCL's unique id, made on rank 0 of `comm` and broadcast to every rank (MPI_Bcast).
/// Collective over `comm`. Throws strata::nccl_error (on rank 0) or strata::mpi_error; a failure
/// on rank 0 reaches the other ranks as strata::nccl_error too (rank 0 broadcasts it), so no rank
/// is left waiting.
inline ncclUniqueId mpi_unique_id(MPI_Comm comm) {
  struct message {
    ncclUniqueId id;
    int result;
  } m{};
  if (detail::mpi_rank(comm) == 0) m.result = static_cast<int>(ncclGetUniqueId(&m.id));
  detail::check_mpi(MPI_Bcast(&m, sizeof m, MPI_BYTE, 0, comm), "MPI_Bcast");
  if (m.result != ncclSuccess)
    throw nccl_error(static_cast<ncclResult_t>(m.result), "ncclGetUniqueId", 0, "on rank 0 of the MPI communicator",
                     __FILE__, __LINE__);
  return m.id;
}

/// This process as NCCL rank `MPI rank` of a group of `MPI size` ranks driving GPU `device`: the
/// MPI bootstrap NCCL documents (rank 0 makes the unique id, MPI broadcasts it, every rank calls
/// ncclCommInitRank). Collective over `comm`. Every rank's arguments are checked first and the
/// verdict shared (MPI_Allgather), so a bad device on one rank makes every rank throw
/// std::invalid_argument naming the ranks at fault, instead of leaving the others waiting in
/// NCCL's initialisation. Throws strata::nccl_error and strata::mpi_error for failed calls.
inline process_group process_group_from_mpi(MPI_Comm comm, int device) {
  const int rank = detail::mpi_rank(comm), size = detail::mpi_size(comm);
  std::string problem;
  try {
    process_group::check_arguments(rank, size, device);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  const int bad = problem.empty() ? 0 : 1;
  std::vector<int> all(static_cast<std::size_t>(size));
  detail::check_mpi(MPI_Allgather(&bad, 1, MPI_INT, all.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::string at_fault;
  for (int r = 0; r < size; ++r)
    if (all[static_cast<std::size_t>(r)] != 0) at_fault += (at_fault.empty() ? "" : ", ") + std::to_string(r);
  if (!at_fault.empty())
    throw std::invalid_argument("strata::process_group_from_mpi: bad arguments on rank(s) " + at_fault +
                                (problem.empty() ? std::string() : " (here: " + problem + ")"));
  return process_group::create(mpi_unique_id(comm), rank, size, device);
}

}  // namespace strata
