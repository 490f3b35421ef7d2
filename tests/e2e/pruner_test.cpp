// `pruner: {kind: median}` end to end: trials whose objective falls behind the median of
// the completed ones at the same epoch are asked to stop (control.json), stop with the
// protocol's exit 75, and are recorded PRUNED with the reason; the good ones complete.
#include <catch2/catch.hpp>

#include <fstream>

#include "run_command.hpp"

namespace fs = std::filesystem;

namespace {

/// Submits `study` (written to DIR/study.yaml) and returns the csv of (number, state).
std::string run_study(const fs::path& dir, const std::string& study) {
  std::ofstream(dir / "study.yaml") << study;
  auto r = run_dlsweep(dir / "sweep.db", {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return run_dlsweep(dir / "sweep.db", {"query", "SELECT number, state FROM trials ORDER BY number", "--format", "csv"},
                     dir)
      .out;
}

/// A study named `name` whose trials compute `loss` from params.json (shell, the g and x
/// parameters) and report it at epochs 0.5, 1.0, ..., 5.0, 0.2 s apart, stopping with exit
/// 75 once dlsweep writes control.json, as the protocol asks; one trial at a time.
std::string reporting_study(const std::string& name, const std::string& pruner, const std::string& space) {
  return R"(
name: )" + name + R"(
backend: {kind: local, max_concurrent: 1}
trial:
  command:
    - /bin/sh
    - -c
    - |
      p=$(tr -d ' \n' < params.json)
      loss=$(echo "$p" | awk -F'[{:,}]' '{g = 1; for (i = 1; i < NF; i++) { if ($i == "\"g\"") g = $(i+1); if ($i == "\"x\"") x = $(i+1) } print x + 10 * (g - 1)}')
      for i in 1 2 3 4 5 6 7 8 9 10; do
        [ -f control.json ] && exit 75
        sleep 0.2
        echo "{\"seq\":$((i-1)),\"kind\":\"eval\",\"step\":$i,\"epoch\":$((i / 2)).$((i % 2 * 5)),\"metrics\":{\"loss\":$loss}}" >> metrics.jsonl
      done
objective: {metric: loss, mode: min}
search: {algorithm: grid}
pruner: )" + pruner + R"(
space: )" + space + "\n";
}

}  // namespace

TEST_CASE("the median pruner stops trials that fall behind and records them PRUNED") {
  auto dir = fresh_dir("pruner");
  // loss = x (no g: g = 1).
  const std::string states = run_study(
      dir, reporting_study("e2e-pruner", "{kind: median, startup_trials: 2, warmup: 1}", "{x: [1, 2, 3, 10, 1.2]}"));
  auto db = dir / "sweep.db";
  // The median of the completed trials (x = 1, 2) is 1.5: x = 3 and x = 10 are pruned once
  // past the warmup epoch; x = 1.2, better than the median, completes.
  CHECK(states == "number,state\n0,COMPLETE\n1,COMPLETE\n2,PRUNED\n3,PRUNED\n4,COMPLETE\n");
  auto why = run_dlsweep(db, {"query", "SELECT message, exit_code FROM trials WHERE number = 2", "--format", "csv"}, dir);
  // Pruned at the first evaluation the orchestrator reads past warmup (epoch 1 on an idle
  // machine, a little later under load).
  // The message has commas, so the CSV cell is quoted.
  CHECK(why.out.find("\n\"pruned at epoch ") != std::string::npos);
  // Optuna's rule: the completed trials' values reported at the same epoch (1 and 2 at every epoch).
  CHECK(why.out.find("(loss, median pruner): best 3 is worse than the median 1.5 of 2 completed trial(s) reported at "
                     "epoch ") != std::string::npos);
  CHECK(why.out.find(",75\n") != std::string::npos);
  // Stopped early: a full trial reports up to epoch 5.
  auto n = run_dlsweep(db, {"query",
                            "SELECT MAX(r.epoch) < 4 AS early FROM records r JOIN trials t ON t.id = r.trial_id "
                            "WHERE t.state = 'PRUNED'",
                            "--format", "csv"},
                       dir);
  CHECK(n.out == "early\n1\n");
}

TEST_CASE("pruner group_by: a trial is judged only against completed trials of its own group") {
  auto dir = fresh_dir("pruner-group");
  // loss = x + 10 (g - 1): group g = 2 is far worse than g = 1 as a whole (think: a larger
  // batch at the same epoch), yet within it x = 1 and 2 are its best schedules.
  const std::string states =
      run_study(dir, reporting_study("e2e-pruner-group", "{kind: median, group_by: [g], startup_trials: 2, warmup: 1}",
                                     "{g: [1, 2], x: [1, 2, 3]}"));
  auto db = dir / "sweep.db";
  // Ungrouped, trials 3-5 (loss 11-13) would all be pruned against the median 1.5 of group 1.
  CHECK(states == "number,state\n0,COMPLETE\n1,COMPLETE\n2,PRUNED\n3,COMPLETE\n4,COMPLETE\n5,PRUNED\n");
  auto why = run_dlsweep(db, {"query", "SELECT message FROM trials WHERE number = 5", "--format", "csv"}, dir);
  CHECK(why.out.find("worse than the median 11.5 of 2 completed trial(s) reported at epoch ") != std::string::npos);
  CHECK(why.out.find("(among trials with g=2)") != std::string::npos);
}

// objective.stop_at_target: a trial is asked to stop once its objective reaches the target
// and ends COMPLETE (not PRUNED, not cancelled), with its curve up to that point. The trial
// program waits for control.json after each report (up to 60 s, a hang bound only), so
// where it stops does not depend on how fast the orchestrator is.
TEST_CASE("stop_at_target: a trial that reaches the target is stopped there and is COMPLETE") {
  auto dir = fresh_dir("stop-at-target");
  std::ofstream(dir / "study.yaml") << R"(
name: e2e-stop-at-target
backend: {kind: local, max_concurrent: 2}
trial:
  command:
    - /bin/sh
    - -c
    - |
      x=$(tr -d ' \n' < params.json | sed -E 's/.*"x":([0-9.]+).*/\1/')
      for i in 1 2 3 4 5 6 7 8 9 10; do
        acc=$(awk -v i=$i -v x=$x 'BEGIN { print i * x / 10 }')
        echo "{\"seq\":$((i-1)),\"kind\":\"eval\",\"step\":$((i*100)),\"epoch\":$i,\"metrics\":{\"acc\":$acc}}" >> metrics.jsonl
        if awk -v a=$acc 'BEGIN { exit !(a >= 0.5) }'; then
          n=0
          while [ ! -f control.json ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
        fi
        if [ -f control.json ]; then exit 75; fi
      done
      exit 0
objective: {metric: acc, mode: max, target: 0.5, stop_at_target: true}
search: {algorithm: grid}
space: {x: [1.0, 0.25]}
)";
  auto r = run_dlsweep(dir / "sweep.db", {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("trial 0 reached the target acc = 0.5 at epoch 5"));
  // x = 1 reaches 0.5 at epoch 5 and stops there; x = 0.25 never does (0.25 at epoch 10).
  auto q = run_dlsweep(dir / "sweep.db",
                       {"query",
                        "SELECT t.number, t.state, (SELECT CAST(MAX(epoch) AS INTEGER) FROM records r "
                        "WHERE r.trial_id = t.id), t.message FROM trials t ORDER BY t.number",
                        "--format", "csv"},
                       dir);
  INFO(q.err);
  CHECK_THAT(q.out, Catch::Contains("0,COMPLETE,5,stopped at the target"));
  CHECK_THAT(q.out, Catch::Contains("1,COMPLETE,10,finished"));
  auto best = run_dlsweep(dir / "sweep.db", {"best", "e2e-stop-at-target"}, dir);
  CHECK_THAT(best.out, Catch::Contains("trial 0"));
}
