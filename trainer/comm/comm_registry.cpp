#include "trainer/comm/comm_registry.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "trainer/comm/local_communicator.hpp"
#if DLSWEEP_HAVE_MPI
#include "trainer/comm/mpi_communicator.hpp"
#endif

namespace dlsweep::trainer::comm {

bool mpi_built() {
#if DLSWEEP_HAVE_MPI
  return true;
#else
  return false;
#endif
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

Result<std::unique_ptr<Communicator>> make_communicator(std::string_view kind) {
  const bool want_mpi = kind == "mpi" || (kind == "auto" && launched_with_ranks());
  if (kind != "mpi" && kind != "local" && kind != "auto")
    return fail(fmt::format("unknown comm '{}'", kind), "comm", "use auto, local or mpi");
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
