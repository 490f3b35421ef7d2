// `best --write-schedule FILE` of a pbt study: the replay study file written in another folder
// than the study's own still runs the same program (orchestrator/cmd_best_pbt.hpp,
// relocate_study_file): {study_dir} in the command and a relative backend.template are read
// from the original study's folder, not the replay file's.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "orchestrator/cmd_best_pbt.hpp"

using dlsweep::orch::relocate_study_file;
using nlohmann::json;

TEST_CASE("relocate_study_file: a replay written elsewhere points at the study's own folder") {
  const json replay = {{"name", "p-replay"},
                       {"trial", {{"command", {"python3", "{study_dir}/train.py", "--out={study_dir}/x", "{trial_dir}"}}}},
                       {"backend", {{"kind", "slurm"}, {"template", "site.sh.mustache"}}}};
  const json moved = relocate_study_file(replay, "/home/u/study", "/home/u/study/out");
  CHECK(moved["trial"]["command"] == json({"python3", "/home/u/study/train.py", "--out=/home/u/study/x", "{trial_dir}"}));
  CHECK(moved["backend"]["template"] == "/home/u/study/site.sh.mustache");
  // Beside the study file: unchanged (the replay stays as portable as the study).
  CHECK(relocate_study_file(replay, "/home/u/study", "/home/u/study/.") == replay);
  // An absolute template and a study without a command (dlsweep-train) are left alone.
  json trainer = {{"trial", {{"trainer", {{"model", "mlp"}}}}}, {"backend", {{"template", "/etc/t.mustache"}}}};
  CHECK(relocate_study_file(trainer, "/a", "/b") == trainer);
}
