// shared_runs_dir_test.cpp — which runs directories a Slurm study may use (pure parts of
// schedulers/slurm/shared_runs_dir). The whole check runs in the e2e Slurm tests: their runs dirs
// are under /tmp and accepted because every node of the local cluster is this machine.
#include <catch2/catch.hpp>

#include "schedulers/slurm/shared_runs_dir.hpp"

using namespace dlsweep::sched::slurm;

TEST_CASE("shared runs dir: /tmp, /var/tmp, /dev/shm, /run and tmpfs are node-local", "[slurm][runs_dir]") {
  CHECK(node_local_reason("/tmp/runs", 0));
  CHECK(node_local_reason("/tmp", 0));
  CHECK(node_local_reason("/var/tmp/x/y", 0));
  CHECK(node_local_reason("/dev/shm/r", 0));
  CHECK(node_local_reason("/run/user/1000/r", 0));
  auto tmpfs = node_local_reason("/scratch/me", 0x01021994);
  REQUIRE(tmpfs);
  CHECK(tmpfs->find("tmpfs") != std::string::npos);
  CHECK_FALSE(node_local_reason("/home/me/runs", 0xEF53));  // ext4
  CHECK_FALSE(node_local_reason("/scratch/me/runs", 0x0BD00BD0));  // Lustre
  CHECK_FALSE(node_local_reason("/tmpdata/runs", 0));  // only the directory /tmp itself
}

TEST_CASE("shared runs dir: a cluster whose every node is this machine may use /tmp", "[slurm][runs_dir]") {
  const std::set<std::string> me = {"localhost", "login1", "login1.cluster"};
  CHECK(nodes_all_local("127.0.0.1 localhost\n127.0.0.1 localhost\n", me));  // scripts/slurm-local.sh
  CHECK(nodes_all_local("login1 login1\n", me));
  CHECK(nodes_all_local("::1 n1\n", me));
  CHECK_FALSE(nodes_all_local("10.1.0.5 node005\n127.0.0.1 localhost\n", me));  // one real node
  CHECK_FALSE(nodes_all_local("node001 node001\n", me));
  CHECK_FALSE(nodes_all_local("", me));  // no node known: not confirmed
  CHECK(this_host_names().count("localhost"));
}
