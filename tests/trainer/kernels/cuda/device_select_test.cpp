// Device selection from the local rank (kernels/cuda/device_select.hpp), with a faked environment.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "trainer/kernels/cuda/device_select.hpp"

using namespace dlsweep::trainer::kernels::cuda;
using namespace dlsweep::trainer::kernels;

namespace {
struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};
}  // namespace

TEST_CASE("local rank: none set is rank 0 of 1", "[gpu][device]") {
  FakeEnv e;
  auto r = local_rank(e.lookup());
  REQUIRE(r);
  CHECK(r->rank == 0);
  CHECK(r->size == 1);
  CHECK(r->source.empty());
}

TEST_CASE("local rank: Open MPI, MPICH, srun", "[gpu][device]") {
  FakeEnv ompi{{{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}};
  auto a = local_rank(ompi.lookup());
  REQUIRE(a);
  CHECK(a->rank == 3);
  CHECK(a->size == 4);
  CHECK(a->source == "OMPI_COMM_WORLD_LOCAL_RANK");

  FakeEnv hydra{{{"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}}};
  auto b = local_rank(hydra.lookup());
  REQUIRE(b);
  CHECK(b->rank == 1);
  CHECK(b->size == 2);

  FakeEnv srun{{{"SLURM_LOCALID", "2"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}}};
  auto c = local_rank(srun.lookup());
  REQUIRE(c);
  CHECK(c->rank == 2);
  CHECK(c->size == 4);
  CHECK(c->source == "SLURM_LOCALID");

  // Uneven nodes: the size is unknown (rank + 1).
  FakeEnv uneven{{{"SLURM_LOCALID", "1"}, {"SLURM_STEP_NUM_TASKS", "5"}, {"SLURM_STEP_TASKS_PER_NODE", "3,2"}}};
  auto d = local_rank(uneven.lookup());
  REQUIRE(d);
  CHECK(d->rank == 1);
  CHECK(d->size == 2);
}

TEST_CASE("local rank: mpirun inside a batch script beats the script's SLURM_LOCALID", "[gpu][device]") {
  // sbatch sets SLURM_LOCALID=0 for the script; mpirun's ranks inherit it.
  FakeEnv e{{{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}};
  auto r = local_rank(e.lookup());
  REQUIRE(r);
  CHECK(r->rank == 1);
  // Without an srun step, SLURM_LOCALID alone is the batch step's: ignored.
  FakeEnv batch{{{"SLURM_LOCALID", "0"}}};
  auto b = local_rank(batch.lookup());
  REQUIRE(b);
  CHECK(b->source.empty());
}

TEST_CASE("local rank: garbage is an error naming the variable", "[gpu][device]") {
  for (const char* bad : {"x", "-1", "1.5", "", " 2", "99999999999"}) {
    FakeEnv e{{{"OMPI_COMM_WORLD_LOCAL_RANK", bad}}};
    auto r = local_rank(e.lookup());
    INFO(bad);
    if (std::string(bad).empty()) {  // empty = unset
      CHECK(r);
      continue;
    }
    REQUIRE_FALSE(r);
    CHECK(r.error().where == "OMPI_COMM_WORLD_LOCAL_RANK");
    CHECK_FALSE(r.error().fix.empty());
  }
  FakeEnv size{{{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "0"}}};
  CHECK_FALSE(local_rank(size.lookup()));
  FakeEnv over{{{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}};
  CHECK_FALSE(local_rank(over.lookup()));
}

TEST_CASE("select device: local rank among visible devices", "[gpu][device]") {
  CHECK(select_device(0, 4).value() == 0);
  CHECK(select_device(3, 4).value() == 3);
  // One visible device per rank (--gpus-per-task=1, CUDA_VISIBLE_DEVICES): always 0.
  CHECK(select_device(3, 1).value() == 0);
  auto none = select_device(0, 0);
  REQUIRE_FALSE(none);
  CHECK(none.error().is(dlsweep::ErrorKind::resources));
  CHECK(none.error().fix.find("gpus-per-task") != std::string::npos);
  auto over = select_device(4, 4);
  REQUIRE_FALSE(over);
  CHECK(over.error().fix.find("--ntasks-per-node=4") != std::string::npos);
  CHECK_FALSE(select_device(-1, 4));
}
