// The MPI bootstrap of Strata's NCCL layer (strata/nccl/mpi.cuh: process_group_from_mpi,
// mpi_local_gpu, mpi_error), with the whole layer (strata/nccl.cuh). Needs MPI.
#pragma once

#include <strata/nccl.cuh>
#include <strata/nccl/mpi.cuh>
