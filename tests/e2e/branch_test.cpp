// End-to-end: a branching study (search: {algorithm: branch}, the critical batch measured by
// branching from the trunk's checkpoints) with the real dlsweep and dlsweep-train on
// Fashion-MNIST (a subset): the trunk's segments and the branches run from copied checkpoints
// with the params dlsweep derives, `best --format json` returns the critical batch per point,
// the derived schedule runs as a study, and a kill -9 of the orchestrator while branches run
// resumes with every branch counted once.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The default design: the upward scan, the trunk stopping at the last point. Trials 0 and 1
// are the trunk's segments [0, 0.25) and [0.25, 0.5); then each point's waves: batches 16 and
// 32 at 2 seeds, then 64 at 2 seeds where 32 may be within; no extra seeds (max_seeds 2). So
// 2 + 2 x 4 = 10 to 2 + 2 x 6 = 14 trials, as the measured losses decide.
const char* kStudy = R"(name: br
backend: {kind: local, max_concurrent: 2}
trial:
  trainer: {model: mlp, hidden: [32], epochs: 1, eval_every: 0.25, train_subset: 2000, test_subset: 500, threads: 1}
objective: {metric: val_loss, mode: min}
search:
  algorithm: branch
  points: [0.25, 0.5]
  batches: [16, 32, 64]
  delta: 0.25
  seeds: 2
  max_seeds: 2
  tolerance: 0.02
fixed: {base_lr: 0.02, base_batch: 16, lr_rule: linear, momentum: 0.9, noise_scale_every: 5}
runs_dir: runs
)";

std::string fmt_trial(int n) {
  std::string s = std::to_string(n);
  return "trial-" + std::string(4 - std::min<std::size_t>(4, s.size()), '0') + s;
}

json query(const fs::path& db, const fs::path& dir, const std::string& sql) {
  auto r = run_dlsweep(db, {"query", sql, "--format", "json"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

/// Per trial: its `pbt` link's branch role; checks one link per trial, numbers 0..N-1, every
/// (point, batch, seed) once, and each point's batches a prefix of 16, 32, 64 (the upward
/// scan), each at 2 seeds. Returns the trial count.
std::size_t check_plan(const fs::path& db, const fs::path& dir) {
  const json states = query(db, dir, "SELECT number, state FROM trials ORDER BY number");
  const json links = query(db, dir, "SELECT reason FROM events WHERE kind = 'pbt'");
  REQUIRE(links.size() == states.size());  // one link per trial: none created twice
  for (std::size_t i = 0; i < states.size(); ++i) {
    CHECK(states[i].at("number") == static_cast<int>(i));
    CHECK(states[i].at("state") == "COMPLETE");
  }
  std::map<std::string, int> seen;
  std::map<double, std::map<int, int>> seeds;  // point -> batch -> seeds
  int trunk = 0;
  for (const auto& l : links) {
    const json link = json::parse(l.at("reason").get<std::string>());
    const json& role = link.at("branch");
    if (role.at("role") == "trunk") {
      ++trunk;
      continue;
    }
    ++seen[role.at("at").dump() + "/" + role.at("batch").dump() + "/" + role.at("seed").dump()];
    ++seeds[role.at("at").get<double>()][role.at("batch").get<int>()];
  }
  CHECK(trunk == 2);  // [0, 0.25) and [0.25, 0.5): nothing branches past the last point
  for (const auto& [k, n] : seen) {
    INFO(k);
    CHECK(n == 1);
  }
  REQUIRE(seeds.size() == 2);
  for (const auto& [at, per] : seeds) {
    INFO(at);
    std::vector<int> batches;
    for (const auto& [b, n] : per) {
      batches.push_back(b);
      CHECK(n == 2);
    }
    const std::vector<int> all{16, 32, 64};
    REQUIRE(batches.size() >= 2);
    CHECK(std::equal(batches.begin(), batches.end(), all.begin()));
  }
  CHECK(states.size() >= 10);
  CHECK(states.size() <= 14);
  return states.size();
}

/// `dlsweep submit` of kStudy in dir, killed -9 once the first wave's last branch (trial 5) has
/// reported: branches are running.
void submit_and_kill(const fs::path& dir, const fs::path& db) {
  std::ofstream(dir / "study.yaml") << kStudy;
  const int pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"});
  REQUIRE(pid > 0);
  const bool started = wait_for(dir / "runs" / "br" / fmt_trial(5) / "metrics.jsonl", std::chrono::seconds(300));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(started);
}

json params_of(const fs::path& dir, int n) {
  std::ifstream in(dir / "runs" / "br" / fmt_trial(n) / "params.json");
  return json::parse(in);
}

}  // namespace

TEST_CASE("branch: trunk segments and branches from checkpoints; best returns the critical batch per point") {
  auto dir = fresh_dir("branch-train");
  std::ofstream(dir / "study.yaml") << kStudy;
  const auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // A trial forked from a copied checkpoint numbers its own records from 0: no warning of
  // records lost (dlsweep-train once continued at the trunk's seq).
  CHECK(r.err.find("seq jumps") == std::string::npos);
  CHECK(r.out.find("seq jumps") == std::string::npos);
  check_plan(db, dir);
  // The trunk: segment 1 (trial 1) continues segment 0 at batch 16 and stops at the last
  // point, 0.5. The first wave at 0.25 (trials 2..5) starts from trial 0's checkpoint.
  const json seg1 = params_of(dir, 1);
  CHECK(seg1.at("batch_size") == 16);
  CHECK(seg1.at("stop_epoch") == 0.5);
  const json b = params_of(dir, 3);  // seed 0, batch 32 at 0.25
  CHECK(b.at("batch_size") == 16);   // where its ramp starts: the trunk's batch
  CHECK(b.at("batch_ramp") == "0:16,0.25:32");
  CHECK(b.at("stop_epoch") == 0.5);
  CHECK(b.at("branch_seed") == 1);
  // It resumed from the trunk's checkpoint (trial 0's, copied): its first record is past 0.25.
  auto first_eval = query(db, dir,
                          "SELECT MIN(m.epoch) AS e FROM metrics m JOIN trials t ON t.id = m.trial_id "
                          "WHERE t.number = 3 AND m.name = 'val_loss'");
  CHECK(first_eval[0].at("e").get<double>() > 0.25);

  auto best = run_dlsweep(db, {"best", "br", "--explain", "--format", "json"}, dir);
  INFO(best.err << best.out);
  REQUIRE(best.exit_code == 0);
  const json a = json::parse(best.out);
  REQUIRE(a.at("critical_batch").size() == 2);
  for (const auto& p : a.at("critical_batch")) {
    CHECK(p.contains("samples"));
    CHECK(p.contains("determined"));
    CHECK(p.at("lo").get<int>() >= 16);
    CHECK(p.at("hi").get<int>() >= p.at("lo").get<int>());
    CHECK(p.at("hi").get<int>() <= 64);
    for (const auto& s : p.at("batches")) CHECK(s.at("n") == 2);  // every branch counted once
  }
  CHECK(a.at("schedule").at("batch_ramp").get<std::string>().starts_with("0:16"));
  auto text = run_dlsweep(db, {"best", "br", "--explain"}, dir);
  CHECK(text.exit_code == 0);
  const auto before = check_plan(db, dir);
  // --rerun would undo decisions the later branches rest on: refused, nothing written.
  auto rerun = run_dlsweep(db, {"resume", "br", "--rerun", "failed"}, dir);
  CHECK(rerun.exit_code == 2);
  CHECK(rerun.err.find("branching study") != std::string::npos);
  CHECK(query(db, dir, "SELECT COUNT(*) AS n FROM trials")[0].at("n") == static_cast<int>(before));
  // The derived schedule runs as a study of its own.
  auto w = run_dlsweep(db, {"best", "br", "--write-schedule", "schedule.yaml"}, dir);
  INFO(w.err);
  REQUIRE(w.exit_code == 0);
  auto run = run_dlsweep(db, {"submit", "schedule.yaml"}, dir);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const json sched = query(db, dir,
                           "SELECT t.state FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = 'br-schedule'");
  REQUIRE(sched.size() == 1);
  CHECK(sched[0].at("state") == "COMPLETE");
}

TEST_CASE("branch: kill -9 of the orchestrator while branches run; resume counts every branch once") {
  auto dir = fresh_dir("branch-kill");
  const auto db = dir / "sweep.db";
  submit_and_kill(dir, db);
  auto r = run_dlsweep(db, {"resume", "br"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_plan(db, dir);  // no trial created twice, every branch once
  auto best = run_dlsweep(db, {"best", "br", "--explain", "--format", "json"}, dir);
  REQUIRE(best.exit_code == 0);
  for (const auto& p : json::parse(best.out).at("critical_batch"))
    for (const auto& s : p.at("batches")) CHECK(s.at("n") == 2);
}

TEST_CASE("branch: a study whose stored plan is not the one this dlsweep derives is not continued") {
  // As if made by a dlsweep that planned otherwise: trial 3's stored role edited while the
  // orchestrator is down. Resumed, no new trial starts (it would duplicate or skip a cell).
  auto dir = fresh_dir("branch-plan-changed");
  const auto db = dir / "sweep.db";
  submit_and_kill(dir, db);
  const auto count = query(db, dir, "SELECT COUNT(*) AS n FROM trials")[0].at("n").get<int>();
  REQUIRE(count < 14);  // trials left to start (each takes a process start; the poll is far quicker)
  auto edit = run_command({"sqlite3", db.string(),
                           "UPDATE events SET reason = replace(reason, '\"batch\":32', '\"batch\":64') WHERE kind = "
                           "'pbt' AND trial_id = (SELECT t.id FROM trials t WHERE t.number = 3)"},
                          dir, {});
  INFO(edit.err);
  REQUIRE(edit.exit_code == 0);
  auto r = run_dlsweep(db, {"resume", "br"}, dir);
  INFO(r.out << r.err);
  CHECK((r.out + r.err).find("planned otherwise") != std::string::npos);
  CHECK((r.out + r.err).find("trial 3 ran as") != std::string::npos);
  CHECK(query(db, dir, "SELECT COUNT(*) AS n FROM trials")[0].at("n") == count);
}
