// sweep_support.hpp — a real sweep for the serve tests and the load bench: `dlsweep submit`
// in the background on gated_trial.py trials (they report until their gate file exists),
// and `dlsweep serve --port 0` on the same database.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "child_process.hpp"

namespace dlsweep::serve::testing {

/// The study file: `trials` gated trials (x = 0..trials-1), all running at once, each
/// reporting every `period_s` until released.
inline std::string gated_study(const std::string& name, const std::filesystem::path& gate_dir, int trials,
                               double period_s, const std::string& script) {
  std::string xs;
  for (int i = 0; i < trials; ++i) xs += (i ? ", " : "") + std::to_string(i);
  return "name: " + name + "\n"
         "backend: {kind: local, max_concurrent: " + std::to_string(trials) + "}\n"
         "trial:\n  command: [/usr/bin/python3, \"" + script + "\"]\n"
         "objective: {metric: loss, mode: min, target: 0.01}\n"
         "search: {algorithm: grid}\n"
         "space:\n  x: [" + xs + "]\n"
         "fixed: {batch_size: 64, period: " + std::to_string(period_s) + ", gate_dir: \"" + gate_dir.string() + "\"}\n";
}

inline void release(const std::filesystem::path& gate_dir, int x) {
  std::ofstream(gate_dir / ("gate-" + std::to_string(x))) << "go\n";
}

}  // namespace dlsweep::serve::testing
