// nccl_bootstrap.hpp — the pure part of starting NCCL over an existing communicator (MPI):
// rank 0 creates the ncclUniqueId and broadcasts it, every rank then calls ncclCommInitRank
// with it (nccl_communicator, CUDA builds only). Also the node layout of
// `comm: nccl-hierarchical` (DL@1EF): NCCL inside a node, MPI across nodes.
//
// Contract of bootstrap_unique_id:
//  - collective: every rank of `comm` calls it once, in the same order as its other collectives;
//  - rank 0 runs `generate` (ncclGetUniqueId in production, a fake in tests); if that fails,
//    every rank gets an error (rank 0 broadcasts a failure flag with the id, so no rank waits
//    for an id that never comes);
//  - every rank returns the same 128 bytes (NCCL_UNIQUE_ID_BYTES).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <span>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm {

/// NCCL_UNIQUE_ID_BYTES of nccl.h (checked against it where nccl.h is compiled).
inline constexpr std::size_t kNcclIdBytes = 128;
using NcclId = std::array<std::byte, kNcclIdBytes>;

/// Copies `bytes` from `root` to every rank, bit-exact, over the communicator's broadcast.
Status broadcast_bytes(Communicator& comm, std::span<std::byte> bytes, int root);

/// See the contract above.
Result<NcclId> bootstrap_unique_id(Communicator& comm, const std::function<Result<NcclId>()>& generate);

/// Where a rank sits for nccl-hierarchical. Ranks of a node must be consecutive (block
/// distribution: srun's and mpirun --map-by node:PE=... default is by slot, i.e. block).
struct NodeLayout {
  int node = 0;         ///< node index = rank / ranks_per_node
  int nodes = 1;
  int local_rank = 0;   ///< rank inside the node (the NCCL rank of the intra-node communicator)
  int ranks_per_node = 1;
  bool leader = true;   ///< local_rank 0: takes part in the inter-node MPI allreduce
  int leader_rank = 0;  ///< global rank of this node's leader (creates the node's NCCL id)
};

/// Checks and derives the layout from the global rank/size and the launcher's local
/// rank/size (device_select.hpp reads those). Errors name the inconsistency and the fix.
Result<NodeLayout> node_layout(int rank, int size, int local_rank, int local_size);

}  // namespace dlsweep::trainer::comm
