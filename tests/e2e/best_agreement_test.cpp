// End-to-end: `dlsweep best`, `best --explain` and the report name the same winner — they take
// it from one ranking (analysis/ranking.hpp). The real dlsweep on small sweeps of a
// protocol-speaking Python trial whose readings are fixed by its params (it reports its own
// wall_s), so each ranking rule is exercised exactly. Two cases are ones where the copies the
// ranking replaced disagreed: by steps with equal means (`best` named the quickest seed's
// configuration, `--explain` the first one), and `--by time` when no COMPLETE trial reached
// the target (`best` named nothing, `--explain` fell back to the best value).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// (lr, seed) -> (val_acc from step 100 on, wall_s at step 100). lr 0.3 reaches 0.99 at step 10
// and diverges (exit 3: FAILED, not retried).
//   lr 0.1: 0.90 at 11 s, 0.91 at 12 s   (mean 11.5 s, mean value 0.905)
//   lr 0.2: 0.93 at 10 s, 0.89 at 14 s   (mean 12 s: the quickest seed; mean value 0.91)
// Every COMPLETE trial reaches 0.88 at step 100: by steps all tie.
const char* kTrial = R"(import json, os, sys
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
table = {(0.1, 1): (0.90, 11.0), (0.1, 2): (0.91, 12.0), (0.2, 1): (0.93, 10.0), (0.2, 2): (0.89, 14.0)}
out = open(os.path.join(d, "metrics.jsonl"), "a")
def record(seq, kind, step, wall, acc):
    out.write(json.dumps({"seq": seq, "kind": kind, "step": step, "epoch": step / 50, "samples": step * 32,
                          "wall_s": wall, "metrics": {"val_acc": acc}}) + "\n")
    out.flush()
if p["lr"] == 0.3:
    record(0, "eval", 10, 1.0, 0.99)
    sys.exit(3)
acc, wall = table[(p["lr"], p["seed"])]
record(0, "eval", 50, wall / 2, 0.5)
record(1, "eval", 100, wall, acc)
record(2, "final", 120, wall + 1, acc)
)";

std::string study_yaml(const std::string& name, double target) {
  return "name: " + name + R"(
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
  max_retries: 0
objective: {metric: val_acc, mode: max, target: )" +
         json(target).dump() + R"(}
search: {algorithm: grid}
space:
  lr: [0.1, 0.2, 0.3]
  seed: [1, 2]
)";
}

// Runs the sweep; the trials are numbered in grid order: 0,1 = lr 0.1; 2,3 = lr 0.2; 4,5 = lr 0.3.
fs::path sweep(const std::string& name, double target) {
  const auto dir = fresh_dir(name);
  std::ofstream(dir / "trial.py") << kTrial;
  std::ofstream(dir / "study.yaml") << study_yaml(name, target);
  const auto r = run_dlsweep(dir / "sweep.db", {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto q = run_dlsweep(dir / "sweep.db", {"query", "SELECT number, state FROM trials ORDER BY number", "--format", "csv"}, dir);
  REQUIRE(q.out == "number,state\n0,COMPLETE\n1,COMPLETE\n2,COMPLETE\n3,COMPLETE\n4,FAILED\n5,FAILED\n");
  return dir;
}

struct Named {
  int exit_code = 0;
  json trial;   ///< plain best's trial (null: none)
  json group;   ///< --explain's winner: its seed group (null: none)
  json best_seed;  ///< --explain's winner: the trial it names as the group's best seed
  std::string criterion, explain_criterion;
};

Named best_and_explain(const fs::path& dir, const std::string& name, const std::string& by) {
  Named n;
  const auto best = run_dlsweep(dir / "sweep.db", {"best", name, "--by", by, "--format", "json"}, dir);
  INFO(best.out << best.err);
  n.exit_code = best.exit_code;
  if (best.exit_code == 0) {
    const auto j = json::parse(best.out);
    n.trial = j["trial"];
    n.criterion = j["criterion"];
  }
  const auto ex = run_dlsweep(dir / "sweep.db", {"best", name, "--explain", "--by", by, "--format", "json"}, dir);
  INFO(ex.out << ex.err);
  CHECK(ex.exit_code == best.exit_code);
  const auto e = json::parse(ex.out);
  n.explain_criterion = e["criterion"];
  n.group = e["winner"].is_null() ? json(nullptr) : e["winner"]["trials"];
  n.best_seed = e["winner"].is_null() ? json(nullptr) : e["winner"]["best_trial"];
  return n;
}

// The report's model: the JSON the page embeds (`dlsweep report NAME -o -`).
json report_model(const fs::path& dir, const std::string& name) {
  const auto r = run_dlsweep(dir / "sweep.db", {"report", name, "-o", "-"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string open = "<script type=\"application/json\" id=\"dlsweep-model\">";
  const auto from = r.out.find(open);
  REQUIRE(from != std::string::npos);
  const auto to = r.out.find("</script>", from);
  REQUIRE(to != std::string::npos);
  return json::parse(r.out.substr(from + open.size(), to - from - open.size()));
}

}  // namespace

TEST_CASE("e2e best: best, best --explain and the report name the same winner by time, steps and value") {
  const auto dir = sweep("agree", 0.88);
  const auto model = report_model(dir, "agree");
  REQUIRE(model["best"].is_object());

  struct Case {
    std::string by, key, criterion;
    int trial;
    json group;
  };
  // time: lr 0.1's mean 11.5 s beats lr 0.2's 12 s, whose seed at 10 s is the quickest trial.
  // steps: all at 100; the tie goes to the mean own time, so lr 0.1 again (the old `best`
  //   named trial 2, the quickest seed's; the old --explain, trials 0,1).
  // value: lr 0.2's mean 0.91 beats 0.905; the FAILED trials' 0.99 never wins.
  for (const Case& c : {Case{"time", "time", "time-to-target", 0, {0, 1}}, Case{"steps", "steps", "steps-to-target", 0, {0, 1}},
                        Case{"value", "value", "best value", 2, {2, 3}}, Case{"auto", "", "time-to-target", 0, {0, 1}}}) {
    INFO("--by " << c.by);
    const auto n = best_and_explain(dir, "agree", c.by);
    REQUIRE(n.exit_code == 0);
    CHECK(n.criterion == c.criterion);
    CHECK(n.explain_criterion == c.criterion);
    CHECK(n.trial == c.trial);
    CHECK(n.group == c.group);
    CHECK(n.best_seed == n.trial);
    const json& r = c.key.empty() ? model["best"] : model["best"]["by"][c.key];
    CHECK(r["criterion"] == c.criterion);
    CHECK(r["trial"] == n.trial);
    CHECK(r["trials"] == n.group);
  }
  // The report's LR chart takes its trials from the same ranking by value: the ranked COMPLETE
  // trials first, then the FAILED ones.
  CHECK(model["lr_trials"] == json{2, 3, 1, 0, 4});
  // The text names the same trial.
  const auto text = run_dlsweep(dir / "sweep.db", {"best", "agree", "--by", "steps"}, dir);
  CHECK_THAT(text.out, Catch::StartsWith("best trial of agree by steps-to-target: trial 0\n"));
  CHECK_THAT(text.out, Catch::Contains("the lower mean time to target decides (11.5 s against 12 s)"));
  const auto explained = run_dlsweep(dir / "sweep.db", {"best", "agree", "--explain", "--by", "steps"}, dir);
  CHECK_THAT(explained.out, Catch::Contains("winner: trials 0,1 (lr=0.1)") && Catch::Contains("its best seed: trial 0"));
}

TEST_CASE("e2e best: --by time with a target no COMPLETE trial reached names no winner anywhere") {
  // Only the FAILED lr 0.3 trials reached 0.95.
  const auto dir = sweep("unreached", 0.95);
  const auto model = report_model(dir, "unreached");
  for (const std::string by : {"time", "steps"}) {
    INFO("--by " << by);
    const auto n = best_and_explain(dir, "unreached", by);
    CHECK(n.exit_code == 3);  // the old --explain named trials 2,3 by value here
    CHECK(n.group.is_null());
    CHECK(model["best"]["by"][by]["trial"].is_null());
    CHECK(model["best"]["by"][by]["trials"] == json::array());
  }
  const auto best = run_dlsweep(dir / "sweep.db", {"best", "unreached", "--by", "time"}, dir);
  CHECK_THAT(best.err, Catch::Contains("nothing to recommend: no complete trial reached the target 0.95 (`--by value` "
                                       "ranks them by val_acc); left out: 2 FAILED"));
  const auto ex = run_dlsweep(dir / "sweep.db", {"best", "unreached", "--explain", "--by", "time"}, dir);
  CHECK_THAT(ex.out, Catch::Contains("no COMPLETE trial reached the target 0.95: nothing to recommend by time-to-target"));
  // auto and value rank by the best value, in all three.
  for (const std::string by : {"auto", "value"}) {
    INFO("--by " << by);
    const auto n = best_and_explain(dir, "unreached", by);
    REQUIRE(n.exit_code == 0);
    CHECK(n.criterion == "best value");
    CHECK(n.trial == 2);
    CHECK(n.group == json{2, 3});
    CHECK(n.best_seed == 2);
    const json& r = by == "auto" ? model["best"] : model["best"]["by"]["value"];
    CHECK(r["trial"] == 2);
    CHECK(r["trials"] == json{2, 3});
    CHECK(r["criterion"] == "best value");
  }
}
