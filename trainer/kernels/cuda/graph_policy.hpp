// graph_policy.hpp — when a GPU net replays a CUDA graph instead of launching its kernels one
// by one (pure code: CudaGraphRunner uses it; tests/trainer/kernels/cuda/graph_policy_test.cpp
// checks it on the CPU).
//
// A net is built for one batch size and mode, and its pointers never change, so each of its
// passes (forward; backward without a per-layer callback) is captured once and replayed:
//   - the first call runs eagerly (errors surface with their own message, and cuDNN/cuBLASLt
//     finish any lazy set-up outside a capture);
//   - the second call captures and launches the graph; every later call replays it;
//   - a pass with a per-layer callback (gradient buckets handed to communication as they are
//     ready) runs eagerly: the callback is host code that must run between the layers;
//   - DLSWEEP_CUDA_GRAPHS=0 turns graphs off (benchmarks compare both in one run); a capture
//     that fails turns them off for that pass for good (the pass then runs eagerly).
// Batch ramps and the adaptive batch build one net per batch size: one graph each, built once.
#pragma once

#include <cstdint>
#include <string_view>

namespace dlsweep::trainer::kernels::cuda {

enum class GraphAction { eager, capture, replay };

struct GraphState {
  std::int64_t calls = 0;   ///< passes run so far
  bool captured = false;    ///< an executable graph exists
  bool failed = false;      ///< a capture failed: eager from now on
};

/// What the next pass does. `enabled`: graphs allowed (env and build); `has_callback`: the
/// pass must call host code between layers.
inline GraphAction next_graph_action(const GraphState& s, bool enabled, bool has_callback) {
  if (!enabled || has_callback || s.failed) return GraphAction::eager;
  if (s.captured) return GraphAction::replay;
  return s.calls >= 1 ? GraphAction::capture : GraphAction::eager;
}

/// DLSWEEP_CUDA_GRAPHS: unset, "1", "on" -> on; "0", "off" -> off.
inline bool graphs_enabled(const char* env) {
  if (!env) return true;
  const std::string_view v(env);
  return !(v == "0" || v == "off" || v == "false");
}

}  // namespace dlsweep::trainer::kernels::cuda
