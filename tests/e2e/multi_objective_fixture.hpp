// multi_objective_fixture.hpp — a protocol-speaking Python trial whose accuracy and time to
// target trade against each other, and a study of it with two objectives: shared by the
// multi-objective end-to-end test (tests/e2e) and the report's Chromium test (tests/report).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.hpp"

namespace mo_fixture {

// acc = 0.5 + 0.45 x (target 0.6), the eval at 10 + 100 x seconds, the final 1 s later.
inline const char* kTrial = R"(import json, os
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
x = float(p["x"])
acc, t = 0.5 + 0.45 * x, 10 + 100 * x
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "eval", "step": 10, "epoch": 1, "samples": 640, "wall_s": t,
                          "metrics": {"val_acc": acc, "val_loss": 1 - acc}}) + "\n")
    out.write(json.dumps({"seq": 1, "kind": "final", "step": 20, "epoch": 2, "samples": 1280, "wall_s": t + 1,
                          "metrics": {"val_acc": acc, "val_loss": 1 - acc}}) + "\n")
)";

inline std::filesystem::path setup(const std::string& name, const std::string& yaml) {
  auto dir = fresh_dir(name);
  std::ofstream(dir / "trial.py") << kTrial;
  std::ofstream(dir / "study.yaml") << yaml;
  return dir;
}

inline std::string study(const std::string& name, const std::string& search, const std::string& extra) {
  return "name: " + name + R"(
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective:
  - {metric: val_acc, mode: max, target: 0.6}
  - {metric: time_to_target_s, mode: min}
)" + search + "\n" + extra;
}

}  // namespace mo_fixture
