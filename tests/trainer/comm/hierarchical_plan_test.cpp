// comm: nccl-hierarchical's plan (hierarchical_plan.hpp), and the plan carried out over plain
// arrays for every layout: each rank's phases, run as the CUDA communicator runs them (node
// phases in the node's rank order, cross phases among the leaders), leave every rank with the
// sum over all ranks, bit-identical on all of them.
#include <catch2/catch.hpp>

#include <vector>

#include "trainer/comm/hierarchical_plan.hpp"

using namespace dlsweep::trainer::comm;

namespace {

NodeLayout layout_of(int rank, int size, int local_size) {
  auto l = node_layout(rank, size, rank % local_size, local_size);
  REQUIRE(l);
  return *l;
}

// Runs phase `p` for every rank that has it (a collective: all of a node's ranks, or all leaders).
void run_phase(HierPhase p, int size, int local_size, std::vector<std::vector<float>>& data) {
  const int nodes = size / local_size;
  const std::size_t n = data[0].size();
  std::vector<HierarchicalPlan> plans;
  for (int r = 0; r < size; ++r) plans.push_back(hierarchical_plan(layout_of(r, size, local_size)));
  auto in_node = [&](int node, int local) { return node * local_size + local; };
  if (p == HierPhase::node_allreduce || p == HierPhase::node_reduce) {
    for (int node = 0; node < nodes; ++node) {
      if (!plans[static_cast<std::size_t>(in_node(node, 0))].has(p)) continue;
      std::vector<float> sum(n, 0.0f);
      for (int l = 0; l < local_size; ++l)
        for (std::size_t i = 0; i < n; ++i) sum[i] += data[static_cast<std::size_t>(in_node(node, l))][i];
      for (int l = 0; l < local_size; ++l) {
        const auto r = static_cast<std::size_t>(in_node(node, l));
        if (p == HierPhase::node_allreduce || l == plans[r].node_root) data[r] = sum;
      }
    }
  } else if (p == HierPhase::cross_allreduce) {
    std::vector<float> sum(n, 0.0f);
    std::vector<std::size_t> leaders;
    for (int r = 0; r < size; ++r)
      if (plans[static_cast<std::size_t>(r)].has(p)) leaders.push_back(static_cast<std::size_t>(r));
    for (std::size_t r : leaders)
      for (std::size_t i = 0; i < n; ++i) sum[i] += data[r][i];
    for (std::size_t r : leaders) data[r] = sum;
  } else {
    for (int node = 0; node < nodes; ++node)
      for (int l = 0; l < local_size; ++l) {
        const auto r = static_cast<std::size_t>(in_node(node, l));
        if (plans[r].has(p)) data[r] = data[static_cast<std::size_t>(in_node(node, plans[r].node_root))];
      }
  }
}

}  // namespace

TEST_CASE("nccl-hierarchical plan: phases by layout", "[comm][nccl][hierarchical]") {
  // One node: one NCCL allreduce, no MPI, nothing on the host.
  auto one_node = hierarchical_plan(layout_of(2, 4, 4));
  CHECK(describe(one_node) == "node_allreduce");
  CHECK_FALSE(one_node.stages_host());
  // One rank per node: every rank a leader, MPI among all.
  auto spread = hierarchical_plan(layout_of(3, 4, 1));
  CHECK(describe(spread) == "cross_allreduce");
  CHECK(spread.stages_host());
  // Two nodes of four: the leader reduces, crosses, broadcasts; the others only the node phases.
  auto leader = hierarchical_plan(layout_of(4, 8, 4));
  CHECK(describe(leader) == "node_reduce -> cross_allreduce -> node_broadcast");
  CHECK(leader.stages_host());
  CHECK(leader.node_root == 0);
  auto member = hierarchical_plan(layout_of(5, 8, 4));
  CHECK(describe(member) == "node_reduce -> node_broadcast");
  CHECK_FALSE(member.stages_host());
  // A single rank.
  CHECK(describe(hierarchical_plan(layout_of(0, 1, 1))) == "node_allreduce");
}

TEST_CASE("nccl-hierarchical plan: carried out, every rank ends with the global sum", "[comm][nccl][hierarchical]") {
  for (auto [size, local] : std::vector<std::pair<int, int>>{{1, 1}, {4, 4}, {4, 1}, {4, 2}, {12, 4}, {6, 3}}) {
    INFO("ranks " << size << ", " << local << " per node");
    const std::size_t n = 5;
    std::vector<std::vector<float>> data(static_cast<std::size_t>(size), std::vector<float>(n));
    std::vector<float> total(n, 0.0f);
    for (int r = 0; r < size; ++r)
      for (std::size_t i = 0; i < n; ++i) {
        data[static_cast<std::size_t>(r)][i] = static_cast<float>((r + 1) * 3 + static_cast<int>(i));  // exact sums
        total[i] += data[static_cast<std::size_t>(r)][i];
      }
    // Phases in the order the longest plan has them (node, cross, node): ranks without a phase skip it.
    for (HierPhase p : {HierPhase::node_allreduce, HierPhase::node_reduce, HierPhase::cross_allreduce,
                        HierPhase::node_broadcast})
      run_phase(p, size, local, data);
    for (int r = 0; r < size; ++r) CHECK(data[static_cast<std::size_t>(r)] == total);
  }
}

TEST_CASE("nccl-hierarchical: a leader hands buckets to MPI in launch order only", "[comm][nccl][hierarchical]") {
  const std::vector<char> copied = {1, 1, 0, 1};
  CHECK(cross_startable(copied, 0) == 2);  // bucket 3 is done, but 2 is not: wait
  CHECK(cross_startable(copied, 2) == 2);
  const std::vector<char> all = {1, 1, 1, 1};
  CHECK(cross_startable(all, 2) == 4);
  CHECK(cross_startable(std::vector<char>{}, 0) == 0);
}
