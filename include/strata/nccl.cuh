// Strata beyond one process: the NCCL layer (opt in: include this header and link Strata::nccl,
// from find_package(Strata CONFIG REQUIRED COMPONENTS nccl)). The layer lives in strata/nccl/:
//   error.cuh          strata::nccl_error, the check of NCCL calls, nccl_version, nccl_unique_id
//   link.cuh           the NCCL implementation of the core's rank_link (and the shared-GPU hub)
//   bounded.cuh        the NCCL calls that may wait for dead peers, bounded by a helper thread
//                      (destroy, shrink), and the weak references to NCCL's newest entry points
//   process_group.cuh  strata::process_group: this process's NCCL rank(s)
//   spanning_set.cuh   strata::spanning_set: one device_set over every rank's places, which every
//                      Strata algorithm takes (docs/api.md, "Beyond one process")
//   survivors.cuh      strata::lost_ranges and strata::salvage: after process_group::shrink, what
//                      was lost and the survivors' elements moved onto the new group
// The MPI bootstrap is strata/nccl_mpi.cuh. No header of this layer includes an algorithm.
#pragma once

#include <strata/nccl/error.cuh>
#include <strata/nccl/link.cuh>
#include <strata/nccl/process_group.cuh>
#include <strata/nccl/spanning_set.cuh>
#include <strata/nccl/survivors.cuh>
