// explain_refusal: sbatch's refusals name the study key to fix.
#include <catch2/catch.hpp>

#include "schedulers/slurm/refusal.hpp"

using dlsweep::sched::SlurmOptions;
using dlsweep::sched::slurm::explain_refusal;
using dlsweep::sched::slurm::is_missing_config;

TEST_CASE("slurm refusal: an unknown partition names backend.partition and the value") {
  SlurmOptions o;
  o.partition = "gpu";
  auto e = explain_refusal("sbatch: error: invalid partition specified: gpu\n"
                           "sbatch: error: Batch job submission failed: Invalid partition name specified\n", o);
  CHECK(e.where == "backend.partition");
  CHECK(e.what.find("partition \"gpu\" does not exist on this cluster") == 0);
  CHECK(e.fix.find("sinfo") != std::string::npos);
}

TEST_CASE("slurm refusal: no slurm.conf reachable is said plainly, with the fix") {
  SlurmOptions o;
  const char* text = "sbatch: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
                     "sbatch: error: fetch_config: DNS SRV lookup failed\n"
                     "sbatch: fatal: Could not establish a configuration source\n";
  CHECK(is_missing_config(text));
  auto e = explain_refusal(text, o);
  CHECK(e.where == "backend.slurm_conf");
  CHECK(e.what.find("no Slurm configuration found") == 0);
  CHECK(e.fix.find("SLURM_CONF") != std::string::npos);
}

TEST_CASE("slurm refusal: account, qos and unknown refusals") {
  SlurmOptions o;
  o.account = "nope";
  CHECK(explain_refusal("sbatch: error: Batch job submission failed: Invalid account or account/partition "
                        "combination specified", o).where == "backend.account");
  CHECK(explain_refusal("sbatch: error: Batch job submission failed: Invalid qos specification", o).where ==
        "backend.qos");
  auto other = explain_refusal("sbatch: error: something new\n", o);
  CHECK(other.where == "backend");
  CHECK(other.what.find("something new") != std::string::npos);
  CHECK_FALSE(is_missing_config("sbatch: error: invalid partition specified: gpu"));
}

TEST_CASE("slurm refusal: a GPU refusal names the request the study made (issue 38: was gpus_per_node (not set))") {
  const char* text = "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification\n";
  SlurmOptions per_task;
  per_task.gpus_per_task = "1";
  auto e = explain_refusal(text, per_task);
  CHECK(e.where == "backend.gpus_per_task");
  CHECK(e.what.find("gpus_per_task \"1\" cannot be granted here") == 0);
  CHECK(e.what.find("not set") == std::string::npos);
  SlurmOptions per_node;
  per_node.gpus_per_node = "a100:4";
  e = explain_refusal(text, per_node);
  CHECK(e.where == "backend.gpus_per_node");
  CHECK(e.what.find("gpus_per_node \"a100:4\" cannot be granted here") == 0);
  SlurmOptions both = per_task;
  both.gpus_per_node = "a100:4";
  CHECK(explain_refusal(text, both).what.find("gpus_per_task \"1\" with gpus_per_node \"a100:4\"") == 0);
  CHECK(explain_refusal(text, SlurmOptions{}).what.find("the GPU request cannot be granted") == 0);
}
