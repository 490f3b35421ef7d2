// hierarchical_plan.hpp — what one rank does for one sum of `comm: nccl-hierarchical` (the
// seeds' Summit recipe, DL@1EF: NCCL inside a node, MPI between the node leaders), and in which
// order a leader may hand reduced buckets to MPI. Pure: the CUDA side
// (nccl_hierarchical_communicator.cpp) runs the phases, tests/trainer/comm/hierarchical_plan_test.cpp
// runs them over plain arrays.
//
// Phases, from the node layout (nccl_bootstrap.hpp's NodeLayout):
//  - one node: node_allreduce (ncclAllReduce inside the node; no MPI, nothing on the host);
//  - one rank per node: cross_allreduce (every rank is its node's leader: the device array is
//    copied to page-locked host memory, MPI_Iallreduce among the leaders, copied back);
//  - otherwise node_reduce (ncclReduce to local rank 0), then on the leaders only
//    cross_allreduce, then node_broadcast (ncclBroadcast from local rank 0).
// Every rank of a node runs its node phases in the same order, every leader its cross phases in
// the same bucket order: the collectives' order contract holds on both communicators.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "trainer/comm/nccl_bootstrap.hpp"

namespace dlsweep::trainer::comm {

enum class HierPhase { node_allreduce, node_reduce, cross_allreduce, node_broadcast };

struct HierarchicalPlan {
  std::vector<HierPhase> phases;  ///< this rank's, in order
  int node_root = 0;              ///< the local rank that holds the node's sum (the leader)
  /// True when this rank copies each bucket to the host and back (a leader of several nodes).
  bool stages_host() const;
  /// True when the plan has `p`.
  bool has(HierPhase p) const;
};

HierarchicalPlan hierarchical_plan(const NodeLayout& layout);

/// "node_allreduce", ...
const char* to_string(HierPhase p);
/// "node_reduce -> cross_allreduce -> node_broadcast".
std::string describe(const HierarchicalPlan& plan);

/// A leader hands buckets to MPI in launch order: given which buckets' device→host copies
/// are done (`copied`, in launch order) and how many were handed over already, the new count
/// (advances over consecutive done buckets, stops at the first not done).
std::size_t cross_startable(std::span<const char> copied, std::size_t started);

}  // namespace dlsweep::trainer::comm
