#include "trainer/comm/comm_registry.hpp"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "trainer/comm/local_communicator.hpp"
#if DLSWEEP_HAVE_MPI
#include "trainer/comm/mpi_communicator.hpp"
#endif
#if DLSWEEP_HAVE_CUDA
#include "trainer/comm/nccl_communicator.hpp"
#include "trainer/comm/nccl_hierarchical_communicator.hpp"
#endif

namespace dlsweep::trainer::comm {

bool mpi_built() {
#if DLSWEEP_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool nccl_built() {
#if DLSWEEP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Result<CommKind> parse_comm_kind(std::string_view kind) {
  if (kind == "auto") return CommKind::automatic;
  if (kind == "local") return CommKind::local;
  if (kind == "mpi") return CommKind::mpi;
  if (kind == "nccl") return CommKind::nccl;
  if (kind == "nccl-hierarchical") return CommKind::nccl_hierarchical;
  return fail_as(ErrorKind::bad_input, fmt::format("unknown comm '{}'", kind), "comm",
                 "use auto, local, mpi, nccl or nccl-hierarchical");
}

bool launched_with_ranks() {
  // Open MPI's mpirun, MPICH/Hydra and Slurm's PMI, and an srun job step.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
  return false;
}

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::string_view(var) == "SLURM_PROCID" && !std::getenv("SLURM_STEP_NUM_TASKS")) continue;
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  }
  return 0;
}

namespace {

#if DLSWEEP_HAVE_CUDA
// The host side of the NCCL communicators: MPI_COMM_WORLD, or without MPI in this build one
// local rank (a GPU host without MPI still runs comm: nccl on one rank).
Result<std::unique_ptr<Communicator>> make_world(std::string_view kind) {
#if DLSWEEP_HAVE_MPI
  (void)kind;
  auto c = MpiCommunicator::create();
  if (!c) return std::unexpected(c.error());
  return std::unique_ptr<Communicator>(std::move(*c));
#else
  if (launched_with_ranks())
    return fail_as(ErrorKind::resources,
                   fmt::format("comm: {} with several ranks needs MPI to start (ncclUniqueId over MPI), and this build "
                               "has none",
                               kind),
                   "comm", "install Open MPI (libopenmpi-dev) and rebuild");
  return std::unique_ptr<Communicator>(std::make_unique<LocalCommunicator>());
#endif
}

Result<NodeSplits> split_nodes(Communicator& world, const NodeLayout& layout) {
  NodeSplits out;
#if DLSWEEP_HAVE_MPI
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&world)) {
    auto node = mpi->split(layout.node, layout.local_rank);
    if (!node) return std::unexpected(node.error());
    auto cross = mpi->split(layout.local_rank, layout.node);
    if (!cross) return std::unexpected(cross.error());
    out.node = std::move(*node);
    out.cross = std::move(*cross);
    return out;
  }
#endif
  (void)layout;
  if (world.size() != 1) return fail("nccl-hierarchical needs MPI to split the ranks into nodes", "comm");
  out.node = std::make_unique<LocalCommunicator>();
  out.cross = std::make_unique<LocalCommunicator>();
  return out;
}
#endif

}  // namespace

Result<std::unique_ptr<Communicator>> make_communicator(std::string_view kind) {
  auto parsed = parse_comm_kind(kind);
  if (!parsed) return std::unexpected(parsed.error());
  if (*parsed == CommKind::nccl || *parsed == CommKind::nccl_hierarchical) {
    if (!nccl_built())
      return fail_as(ErrorKind::resources, fmt::format("this dlsweep-train was built without CUDA and NCCL (comm: {})", kind),
                     "comm", "rebuild with -DDLSWEEP_CUDA=ON on a host with CUDA, cuDNN and NCCL, or use comm: mpi");
#if DLSWEEP_HAVE_CUDA
    const std::string k(kind);
    auto world = [k] { return make_world(k); };
    if (*parsed == CommKind::nccl_hierarchical) return make_nccl_hierarchical_communicator(world, split_nodes);
    return make_nccl_communicator(world);
#endif
  }
  const bool want_mpi = *parsed == CommKind::mpi || (*parsed == CommKind::automatic && launched_with_ranks());
  if (!want_mpi) return std::unique_ptr<Communicator>(std::make_unique<LocalCommunicator>());
#if DLSWEEP_HAVE_MPI
  auto c = MpiCommunicator::create();
  if (!c) return std::unexpected(c.error());
  return std::unique_ptr<Communicator>(std::move(*c));
#else
  return fail("this dlsweep-train was built without MPI", "comm",
              "install Open MPI (libopenmpi-dev) and rebuild, or run one rank with comm: local");
#endif
}

}  // namespace dlsweep::trainer::comm
