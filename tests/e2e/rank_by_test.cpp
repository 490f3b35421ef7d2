// End-to-end: `objective.rank_by` with the real dlsweep on a small local sweep of a
// protocol-speaking Python trial. Two trials disagree: "peak" reports 0.80, 0.95, 0.70 (one
// checkpoint file, overwritten each epoch), "steady" 0.60, 0.75, 0.85 (a file per epoch).
// By best report (the default, and written out) `best` names the peak and says its last
// checkpoint is not the best report's model; by final report it names the steady trial and
// its last checkpoint; best --explain, --format json and the report agree each time.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kTrial = R"(import json, os
d = os.environ["DLSWEEP_TRIAL_DIR"]
shape = json.load(open(os.path.join(d, "params.json")))["shape"]
curve = {"peak": [0.80, 0.95, 0.70], "steady": [0.60, 0.75, 0.85]}[shape]
out = open(os.path.join(d, "metrics.jsonl"), "a")
seq = 0
def record(kind, epoch, acc=None, text=None):
    global seq
    r = {"seq": seq, "kind": kind, "step": epoch * 10, "epoch": epoch, "samples": epoch * 640, "wall_s": epoch * 1.0}
    if acc is not None: r["metrics"] = {"val_acc": acc}
    if text is not None: r["text"] = text
    out.write(json.dumps(r) + "\n")
    out.flush()
    seq += 1
for epoch, acc in enumerate(curve, 1):
    record("eval", epoch, acc)
    record("checkpoint", epoch, text="ckpt/last.pt" if shape == "peak" else "ckpt/epoch-%d.pt" % epoch)
record("final", 3, curve[-1])
)";

fs::path sweep(const std::string& name, const std::string& rank_by) {
  const auto dir = fresh_dir(name);
  std::ofstream(dir / "trial.py") << kTrial;
  std::ofstream(dir / "study.yaml") << "name: " << name << R"(
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: val_acc, mode: max)" << rank_by << R"(}
search: {algorithm: grid}
space:
  shape: [peak, steady]
)";
  const auto r = run_dlsweep(dir / "sweep.db", {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return dir;
}

json report_best(const fs::path& dir, const std::string& name) {
  const auto r = run_dlsweep(dir / "sweep.db", {"report", name, "-o", "-"}, dir);
  REQUIRE(r.exit_code == 0);
  const std::string open = "<script type=\"application/json\" id=\"dlsweep-model\">";
  const auto from = r.out.find(open);
  REQUIRE(from != std::string::npos);
  const auto to = r.out.find("</script>", from);
  return json::parse(r.out.substr(from + open.size(), to - from - open.size()))["best"];
}

}  // namespace

TEST_CASE("e2e rank_by: best and final reports name different winners, and say which checkpoint holds it") {
  struct Case {
    std::string name, rank_by, word, criterion;
    int trial;
    std::string model;
  };
  for (const Case& c : {Case{"rb-default", "", "best", "best value", 0, "not the best report's model"},
                        Case{"rb-best", ", rank_by: best", "best", "best value", 0, "not the best report's model"},
                        Case{"rb-final", ", rank_by: final", "final", "final value", 1, "ckpt/epoch-3.pt"}}) {
    INFO(c.name);
    const auto dir = sweep(c.name, c.rank_by);
    const auto db = dir / "sweep.db";
    const auto j = run_dlsweep(db, {"best", c.name, "--format", "json"}, dir);
    INFO(j.out << j.err);
    REQUIRE(j.exit_code == 0);
    const auto best = json::parse(j.out);
    CHECK(best["trial"] == c.trial);
    CHECK(best["rank_by"] == c.word);
    CHECK(best["criterion"] == c.criterion);
    CHECK(best["ranking_value"].get<double>() == Approx(c.trial == 0 ? 0.95 : 0.85));
    CHECK_THAT(best["model"].get<std::string>(), Catch::Contains(c.model));
    const auto text = run_dlsweep(db, {"best", c.name}, dir);
    CHECK_THAT(text.out, Catch::Contains("ranked by " + c.word + " report (objective.rank_by: " + c.word));
    CHECK_THAT(text.out, Catch::Contains("best trial of " + c.name + " by " + c.criterion + ": trial " +
                                         std::to_string(c.trial)));
    const auto ex = run_dlsweep(db, {"best", c.name, "--explain", "--format", "json"}, dir);
    REQUIRE(ex.exit_code == 0);
    const auto e = json::parse(ex.out);
    CHECK(e["winner"]["best_trial"] == c.trial);
    CHECK(e["rank_by"] == c.word);
    const auto model = report_best(dir, c.name);
    CHECK(model["rank_by"] == c.word);
    CHECK(model["by"]["value"]["trial"] == c.trial);
  }
}
