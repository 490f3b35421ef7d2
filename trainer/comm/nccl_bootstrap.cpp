#include "trainer/comm/nccl_bootstrap.hpp"

#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace dlsweep::trainer::comm {

Status broadcast_bytes(Communicator& comm, std::span<std::byte> bytes, int root) {
  // Doubles carry the bytes: a broadcast copies them without conversion on every transport
  // here (MPI_DOUBLE between ranks of one architecture, memcpy locally).
  std::vector<double> words((bytes.size() + sizeof(double) - 1) / sizeof(double), 0.0);
  if (comm.rank() == root && !bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  if (auto s = comm.broadcast(std::span<double>(words), root); !s) return s;
  if (comm.rank() != root && !bytes.empty()) std::memcpy(bytes.data(), words.data(), bytes.size());
  return {};
}

Result<NcclId> bootstrap_unique_id(Communicator& comm, const std::function<Result<NcclId>()>& generate) {
  // [ok flag][id]: rank 0's failure reaches every rank through the same broadcast.
  std::array<std::byte, 1 + kNcclIdBytes> msg{};
  std::optional<Error> local_error;
  if (comm.rank() == 0) {
    auto id = generate();
    if (id) {
      msg[0] = std::byte{1};
      std::memcpy(msg.data() + 1, id->data(), kNcclIdBytes);
    } else {
      local_error = id.error();
    }
  }
  if (auto s = broadcast_bytes(comm, msg, 0); !s) return std::unexpected(s.error());
  if (local_error) return std::unexpected(*local_error);
  if (msg[0] != std::byte{1})
    return fail_as(ErrorKind::resources, "rank 0 could not create the NCCL unique id", "comm",
                   "see rank 0's error (NCCL_DEBUG=INFO shows why ncclGetUniqueId failed)");
  NcclId id;
  std::memcpy(id.data(), msg.data() + 1, kNcclIdBytes);
  return id;
}

Result<NodeLayout> node_layout(int rank, int size, int local_rank, int local_size) {
  if (size < 1 || rank < 0 || rank >= size)
    return fail(fmt::format("rank {} of {} is not a valid rank", rank, size), "comm", "start the ranks with mpirun or srun");
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    return fail(fmt::format("local rank {} of {} ranks on the node is not valid", local_rank, local_size), "comm",
                "start the ranks with mpirun or srun, which set the local rank and size");
  if (size % local_size != 0)
    return fail(fmt::format("{} ranks do not split into nodes of {} ranks each", size, local_size),
                "comm: nccl-hierarchical", "start the same number of ranks on every node (--ntasks-per-node)");
  if (rank % local_size != local_rank)
    return fail(fmt::format("rank {} has local rank {}, but nccl-hierarchical needs the ranks of a node to be "
                            "consecutive (expected local rank {})",
                            rank, local_rank, rank % local_size),
                "comm: nccl-hierarchical", "use block distribution (srun --distribution=block, mpirun --map-by slot)");
  NodeLayout l;
  l.ranks_per_node = local_size;
  l.nodes = size / local_size;
  l.node = rank / local_size;
  l.local_rank = local_rank;
  l.leader = local_rank == 0;
  l.leader_rank = l.node * local_size;
  return l;
}

}  // namespace dlsweep::trainer::comm
