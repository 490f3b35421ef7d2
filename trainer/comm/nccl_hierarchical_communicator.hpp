// nccl_hierarchical_communicator.hpp — `comm: nccl-hierarchical` (CUDA builds): NCCL inside a
// node, MPI between the node leaders (the seeds' Summit recipe; phases in hierarchical_plan.hpp).
//
// Start-up: the world host communicator (MPI_COMM_WORLD; one local rank without MPI), the node
// layout from the launcher's local rank and size (nccl_bootstrap.hpp's node_layout: ranks of a
// node consecutive), then two splits of the world: the node's ranks (NCCL is started over it:
// its rank 0 makes the node's ncclUniqueId) and the cross-node ranks of the same local rank
// (the leaders' MPI communicator is local rank 0's).
//
// A device sum (communicator.hpp's device form), per bucket as backward finishes it: the
// communicator's stream waits for the caller's work; ncclReduce to the leader; on a leader the
// node's sum is copied into page-locked host memory and, once the copy is done (polled in
// progress(), in launch order: cross_startable), handed to MPI_Iallreduce among the leaders.
// device_wait_all completes the leaders' MPI sums, copies them back and enqueues every bucket's
// ncclBroadcast from the leader, then makes the caller's stream wait: the optimizer is the only
// thing that waits on the device. One node: a single ncclAllReduce, nothing on the host. Host
// staging (the leaders' copies) is counted in host_staged_bytes(). Host collectives (the loop's
// scalars, broadcasts, barriers, a CPU model's host gradients) go over the world communicator.
#pragma once

#include <functional>
#include <memory>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/comm/nccl_bootstrap.hpp"
#include "trainer/comm/nccl_communicator.hpp"

namespace dlsweep::trainer::comm {

/// The node's and the cross-node host communicators, split from the world by the layout.
struct NodeSplits {
  std::unique_ptr<Communicator> node, cross;
};
using NodeSplitFactory = std::function<Result<NodeSplits>(Communicator& world, const NodeLayout& layout)>;

Result<std::unique_ptr<Communicator>> make_nccl_hierarchical_communicator(const HostCommFactory& make_world,
                                                                         const NodeSplitFactory& split);

}  // namespace dlsweep::trainer::comm
