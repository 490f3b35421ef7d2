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
  Status broadcast(std::span<float>, int root) override;
  Status barrier() override { return {}; }
};

}  // namespace dlsweep::trainer::comm
