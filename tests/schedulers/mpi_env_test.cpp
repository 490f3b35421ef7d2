// The local backend's choice of Open MPI's point-to-point layer (schedulers/local/mpi_env.hpp):
// ob1 unless the environment, an MCA parameter file or a multi-node Slurm allocation says
// otherwise; the MCA file's syntax (comments, spaces, other keys).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "schedulers/local/mpi_env.hpp"

using namespace dlsweep::sched;

namespace {

struct World {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  bool decide() const {
    return local_sets_ompi_pml(
        [this](const char* name) -> const char* {
          auto it = env.find(name);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        [this](const std::string& path) -> std::optional<std::string> {
          auto it = files.find(path);
          if (it == files.end()) return std::nullopt;
          return it->second;
        });
  }
};

}  // namespace

TEST_CASE("mpi env: an MCA parameter file sets pml only on a `pml =` line", "[sched][mpi_env]") {
  CHECK(mca_text_sets_pml("pml = ucx\n"));
  CHECK(mca_text_sets_pml("  pml=ob1"));
  CHECK(mca_text_sets_pml("btl = self,vader\n\tpml =ucx # for CUDA\n"));
  CHECK_FALSE(mca_text_sets_pml("# pml = ucx\n"));
  CHECK_FALSE(mca_text_sets_pml("btl = ^openib\npml_ucx_verbose = 1\nosc = ucx\n"));
  CHECK_FALSE(mca_text_sets_pml(""));
  // Debian's /etc/openmpi/openmpi-mca-params.conf excludes UCX: Open MPI still picks.
  CHECK_FALSE(mca_text_sets_pml("btl_base_warn_component_unused=0\nmtl = ^ofi\npml = ^ucx\nosc = ^ucx,pt2pt\n"));
}

TEST_CASE("mpi env: ob1 unless the environment, an MCA file or a multi-node allocation chose", "[sched][mpi_env]") {
  World w;
  w.env["HOME"] = "/home/u";
  CHECK(w.decide());  // nothing chose: ob1
  w.files["/etc/openmpi/openmpi-mca-params.conf"] = "# defaults\nbtl_tcp_if_include = lo\n";
  CHECK(w.decide());
  w.files["/home/u/.openmpi/mca-params.conf"] = "pml = ucx\n";
  CHECK_FALSE(w.decide());  // the user's file
  w.files.erase("/home/u/.openmpi/mca-params.conf");
  w.files["/etc/openmpi/openmpi-mca-params.conf"] = "pml = ucx\n";
  CHECK_FALSE(w.decide());  // the site's file
  // OMPI_MCA_mca_base_param_files replaces the default files.
  w.env["OMPI_MCA_mca_base_param_files"] = "/a.conf:/b.conf";
  CHECK(w.decide());
  w.files["/b.conf"] = "pml=cm";
  CHECK_FALSE(w.decide());
  w.files.erase("/b.conf");
  w.env["OMPI_MCA_pml"] = "ucx";
  CHECK_FALSE(w.decide());  // the environment
  w.env.erase("OMPI_MCA_pml");
  CHECK(w.decide());
  w.env["SLURM_JOB_NUM_NODES"] = "1";
  CHECK(w.decide());  // one node of an allocation is one machine
  w.env["SLURM_JOB_NUM_NODES"] = "4";
  CHECK_FALSE(w.decide());  // mpirun would spread the ranks over 4 nodes
  w.env.erase("SLURM_JOB_NUM_NODES");
  w.env["SLURM_NNODES"] = "2";
  CHECK_FALSE(w.decide());
}
