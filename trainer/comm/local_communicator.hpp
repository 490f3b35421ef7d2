// local_communicator.hpp — the 1-rank Communicator: what dlsweep-train uses without MPI, and
// the baseline every other implementation's conformance test is compared with.
#pragma once

#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm {

/// A single-process "world" of one rank: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  std::string_view name() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allreduce_sum(std::span<float>) override { return {}; }
  Status allreduce_sum(std::span<double>) override { return {}; }
  Status broadcast(std::span<float>, int root) override { return check_root(root); }
  Status broadcast(std::span<double>, int root) override { return check_root(root); }
  Status barrier() override { return {}; }
  Status start_allreduce_sum(std::span<float>) override { return {}; }
  Status wait_all() override { return {}; }

 private:
  static Status check_root(int root);
};

}  // namespace dlsweep::trainer::comm
