// When a GPU net's pass runs as a CUDA graph (trainer/kernels/cuda/graph_policy.hpp), on the CPU.
#include <catch2/catch.hpp>

#include "trainer/kernels/cuda/graph_policy.hpp"

using namespace dlsweep::trainer::kernels::cuda;

TEST_CASE("cuda graphs: eager first, captured on the second pass, replayed after", "[gpu][graph]") {
  GraphState s;
  CHECK(next_graph_action(s, true, false) == GraphAction::eager);
  s.calls = 1;
  CHECK(next_graph_action(s, true, false) == GraphAction::capture);
  s.calls = 2;
  s.captured = true;
  CHECK(next_graph_action(s, true, false) == GraphAction::replay);
  s.calls = 1000;
  CHECK(next_graph_action(s, true, false) == GraphAction::replay);
}

TEST_CASE("cuda graphs: a per-layer callback, graphs off or a failed capture run eagerly", "[gpu][graph]") {
  GraphState s;
  s.calls = 5;
  CHECK(next_graph_action(s, true, true) == GraphAction::eager);   // gradient buckets handed over per layer
  CHECK(next_graph_action(s, false, false) == GraphAction::eager); // DLSWEEP_CUDA_GRAPHS=0
  s.failed = true;
  CHECK(next_graph_action(s, true, false) == GraphAction::eager);
  s.failed = false;
  s.captured = true;
  CHECK(next_graph_action(s, true, true) == GraphAction::eager);   // a captured pass is not used with a callback
}

TEST_CASE("cuda graphs: DLSWEEP_CUDA_GRAPHS values", "[gpu][graph]") {
  CHECK(graphs_enabled(nullptr));
  CHECK(graphs_enabled("1"));
  CHECK(graphs_enabled("on"));
  CHECK_FALSE(graphs_enabled("0"));
  CHECK_FALSE(graphs_enabled("off"));
  CHECK_FALSE(graphs_enabled("false"));
}
