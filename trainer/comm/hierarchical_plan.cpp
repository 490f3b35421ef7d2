#include "trainer/comm/hierarchical_plan.hpp"

#include <algorithm>

namespace dlsweep::trainer::comm {

bool HierarchicalPlan::stages_host() const { return has(HierPhase::cross_allreduce); }

bool HierarchicalPlan::has(HierPhase p) const { return std::find(phases.begin(), phases.end(), p) != phases.end(); }

HierarchicalPlan hierarchical_plan(const NodeLayout& layout) {
  HierarchicalPlan plan;
  plan.node_root = 0;
  if (layout.nodes <= 1) {
    plan.phases = {HierPhase::node_allreduce};
  } else if (layout.ranks_per_node <= 1) {
    plan.phases = {HierPhase::cross_allreduce};
  } else if (layout.leader) {
    plan.phases = {HierPhase::node_reduce, HierPhase::cross_allreduce, HierPhase::node_broadcast};
  } else {
    plan.phases = {HierPhase::node_reduce, HierPhase::node_broadcast};
  }
  return plan;
}

const char* to_string(HierPhase p) {
  switch (p) {
    case HierPhase::node_allreduce: return "node_allreduce";
    case HierPhase::node_reduce: return "node_reduce";
    case HierPhase::cross_allreduce: return "cross_allreduce";
    case HierPhase::node_broadcast: return "node_broadcast";
  }
  return "?";
}

std::string describe(const HierarchicalPlan& plan) {
  std::string s;
  for (HierPhase p : plan.phases) s += (s.empty() ? "" : " -> ") + std::string(to_string(p));
  return s;
}

std::size_t cross_startable(std::span<const char> copied, std::size_t started) {
  while (started < copied.size() && copied[started]) ++started;
  return started;
}

}  // namespace dlsweep::trainer::comm
