// communicator.hpp — collectives between the ranks of a data-parallel run. Implementations:
// local (one rank, this file's LocalCommunicator), MPI and NCCL later (one file each, chosen
// in one registry).
//
// Contract:
//  - every rank calls the same collectives in the same order with the same sizes;
//  - allreduce_sum leaves the element-wise sum over ranks in every rank's buffer (in place),
//    and gives bit-identical results on every rank;
//  - broadcast copies root's buffer to every rank;
//  - errors (a dead peer, a failed transport) come back as Status, never as an abort.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "common/result.hpp"

namespace dlsweep::trainer::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Status allreduce_sum(std::span<float> data) = 0;
  virtual Status allreduce_sum(std::span<double> data) = 0;
  virtual Status broadcast(std::span<float> data, int root) = 0;
  virtual Status barrier() = 0;
};

}  // namespace dlsweep::trainer::comm
