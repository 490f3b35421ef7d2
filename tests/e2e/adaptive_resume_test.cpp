// End-to-end: a `batch_ramp: adaptive` trial of dlsweep-train on real Fashion-MNIST (a
// subset), run through `dlsweep submit`, killed with SIGKILL in the middle — after a
// checkpoint and an adaptive decision, before its end — finishes with the records of an
// uninterrupted run of the same study: every batch decision (step, chosen batch, LR,
// B_simple, efficiency, gain, goodput, text), every evaluation and the final record, as the
// database holds them across attempts. `adaptive_step_time` is fixed, so the decisions depend
// on the training numbers only. Two ways to die: the trial alone (dlsweep retries it, and the
// retry resumes from the checkpoint), and the orchestrator with its trial (a node crash, then
// `dlsweep resume`).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "run_command.hpp"
#include "tests/support/wait_until.hpp"
#include "schedulers/local/orphans.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kName = "adaptive-resume";

// Batch 50 -> decisions every 7 updates up to 800, the noise scale every 3 updates, cosine
// decay after a warmup: about a second of training on 2 cores, a checkpoint every 0.1 s.
void write_study(const fs::path& dir) {
  std::ofstream(dir / "study.yaml") << "name: " << kName << R"(
backend: {kind: local, max_concurrent: 1}
trial:
  trainer: {model: mlp, hidden: [256, 128], dataset: fashion-mnist, epochs: 4, eval_every: 0.5,
            train_subset: 12000, test_subset: 1000, threads: 1, checkpoint_every_s: 0.1}
  max_retries: 2
objective: {metric: val_acc, mode: max}
search: {algorithm: grid}
space:
  batch_ramp: [adaptive]
fixed:
  batch_size: 50
  base_batch: 50
  base_lr: 0.05
  decay: cosine
  warmup_epochs: 0.5
  nesterov: true
  noise_scale_every: 3
  adaptive_every: 7
  adaptive_max_batch: 800
  adaptive_step_time: [0.004, 0.00001]
  seed: 3
runs_dir: runs
)";
}

bool is_timing(const std::string& name) {
  static const std::set<std::string> timing = {"samples_per_s",         "time_compute_s", "time_data_s",
                                               "time_eval_s",           "time_allreduce_exposed_s",
                                               "measured_samples_per_s"};
  return timing.contains(name);
}

struct Rec {
  std::string text;
  std::map<std::string, json> metrics;  // without the timing metrics
  bool operator==(const Rec&) const = default;
};
using Key = std::pair<std::string, std::int64_t>;  // ("eval" | "final" | "decision", step)

struct Records {
  std::map<Key, Rec> by_step;
  std::set<int> attempts;
  int resumed = 0;           // "resumed from" log records
  std::int64_t first_step_after_resume = -1;  // of the first eval/decision after "resumed from"
  int mismatched_repeats = 0;  // a record repeated after a resume that differs from the first
  int decisions_changing_batch = 0;  // decisions for a batch other than the first, 50
};

// Every record of the study's trial 0, from the database (records joined with their metrics).
Records read_records(const fs::path& db, const fs::path& dir) {
  auto q = run_dlsweep(db, {"query",
                            "SELECT r.attempt, r.seq, r.kind, r.step, COALESCE(r.text, '') AS text, m.name, m.value "
                            "FROM records r JOIN trials t ON t.id = r.trial_id JOIN studies s ON s.id = t.study_id "
                            "LEFT JOIN metrics m ON m.trial_id = r.trial_id AND m.attempt = r.attempt AND m.seq = r.seq "
                            "WHERE s.name = 'adaptive-resume' AND t.number = 0 ORDER BY r.attempt, r.seq, m.name",
                            "--format", "json"},
                       dir);
  INFO(q.err);
  REQUIRE(q.exit_code == 0);
  // Group the rows into records by (attempt, seq).
  std::map<std::pair<int, int>, std::tuple<std::string, std::int64_t, Rec>> recs;
  for (const auto& row : json::parse(q.out)) {
    auto& [kind, step, rec] = recs[{row.at("attempt").get<int>(), row.at("seq").get<int>()}];
    kind = row.at("kind").get<std::string>();
    step = row.at("step").get<std::int64_t>();
    rec.text = row.at("text").get<std::string>();
    if (!row.at("name").is_null() && !is_timing(row.at("name").get<std::string>()))
      rec.metrics[row.at("name").get<std::string>()] = row.at("value");
  }
  Records out;
  for (const auto& [at, r] : recs) {
    const auto& [kind, step, rec] = r;
    out.attempts.insert(at.first);
    if (rec.text.find("resumed from") != std::string::npos) ++out.resumed;
    std::string cat = kind == "eval" || kind == "final" ? kind : rec.text.starts_with("adaptive: ") ? "decision" : "";
    if (cat.empty()) continue;
    if (out.resumed > 0 && out.first_step_after_resume < 0) out.first_step_after_resume = step;
    if (cat == "decision" && rec.metrics.contains("batch_size") && rec.metrics.at("batch_size").get<double>() != 50)
      ++out.decisions_changing_batch;
    auto [it, fresh] = out.by_step.emplace(Key{cat, step}, rec);
    if (!fresh && !(it->second == rec)) ++out.mismatched_repeats;
  }
  return out;
}

// Waits until the trial's metrics.jsonl shows a checkpoint followed by an adaptive decision
// (the kill then lands after the checkpoint, mid-run); false when the run ended first.
bool wait_past_checkpoint_and_decision(const fs::path& metrics) {
  bool past = false, ended = false;
  // Polled every 2 ms: the window between the checkpoint and the run's end is short.
  test_support::wait_until(
      [&] {
        std::ifstream in(metrics);
        std::string line;
        bool checkpointed = false;
        while (std::getline(in, line)) {
          const json r = json::parse(line, nullptr, false);
          if (r.is_discarded() || !r.is_object()) continue;  // a line being written
          const std::string kind = r.value("kind", "");
          if (kind == "final") return ended = true;
          checkpointed = checkpointed || kind == "checkpoint";
          if (checkpointed && kind == "log" && r.value("text", "").starts_with("adaptive: ")) return past = true;
        }
        return false;
      },
      std::chrono::seconds(120), std::chrono::milliseconds(2));
  return past && !ended;
}

int kill_trial(const fs::path& trial_dir) {
  int n = 0;
  for (pid_t pid : dlsweep::sched::find_trial_processes(trial_dir)) n += ::kill(pid, SIGKILL) == 0;
  return n;
}

json trial_result(const fs::path& db, const fs::path& dir) {
  auto r = run_dlsweep(db, {"results", kName, "--format", "json"}, dir);
  REQUIRE(r.exit_code == 0);
  auto j = json::parse(r.out);
  REQUIRE(j.size() == 1);
  return j[0];
}

// The uninterrupted run of the same study, in its own database.
Records reference() {
  auto dir = fresh_dir("adaptive-resume-ref");
  write_study(dir);
  auto sub = run_dlsweep(dir / "sweep.db", {"submit", "study.yaml"}, dir);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  auto res = trial_result(dir / "sweep.db", dir);
  CHECK(res["state"] == "COMPLETE");
  CHECK(res["attempt"] == 0);
  auto recs = read_records(dir / "sweep.db", dir);
  fs::remove_all(dir);
  return recs;
}

void check_same_records(const Records& want, const Records& got) {
  CHECK(want.resumed == 0);
  CHECK(want.attempts == std::set<int>{0});
  CHECK(want.decisions_changing_batch >= 1);  // the batch did adapt (it starts at 50)
  CHECK(std::count_if(want.by_step.begin(), want.by_step.end(), [](const auto& kv) { return kv.first.first == "final"; }) == 1);
  // The killed trial resumed from its checkpoint (not from scratch), then repeated exactly
  // the records between that checkpoint and the kill.
  CHECK(got.resumed >= 1);
  CHECK(got.first_step_after_resume > 0);
  CHECK(got.mismatched_repeats == 0);
  CHECK(got.by_step.size() == want.by_step.size());
  for (const auto& [key, rec] : want.by_step) {
    INFO(key.first << " record at step " << key.second);
    auto it = got.by_step.find(key);
    REQUIRE(it != got.by_step.end());
    CHECK(it->second.text == rec.text);
    CHECK(json(it->second.metrics).dump() == json(rec.metrics).dump());
  }
}

}  // namespace

TEST_CASE("e2e adaptive: the trial killed with SIGKILL mid-run is retried from its checkpoint to the uninterrupted records") {
  ::setenv("DLSWEEP_TRAIN", DLSWEEP_TRAIN_BIN, 1);
  const Records want = reference();

  auto dir = fresh_dir("adaptive-resume-trial-kill");
  write_study(dir);
  const auto db = dir / "sweep.db";
  const auto trial_dir = dir / "runs" / kName / "trial-0000";
  int pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"}, dir / "submit.err");
  REQUIRE(pid > 0);
  REQUIRE(wait_past_checkpoint_and_decision(trial_dir / "metrics.jsonl"));
  CHECK(kill_trial(trial_dir) >= 1);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  auto res = trial_result(db, dir);
  CHECK(res["state"] == "COMPLETE");
  CHECK(res["attempt"] == 1);  // one retry, after the kill
  check_same_records(want, read_records(db, dir));
}

TEST_CASE("e2e adaptive: orchestrator and trial killed with SIGKILL mid-run; resume ends with the uninterrupted records") {
  ::setenv("DLSWEEP_TRAIN", DLSWEEP_TRAIN_BIN, 1);
  const Records want = reference();

  auto dir = fresh_dir("adaptive-resume-node-crash");
  write_study(dir);
  const auto db = dir / "sweep.db";
  const auto trial_dir = dir / "runs" / kName / "trial-0000";
  int pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"}, dir / "submit.err");
  REQUIRE(pid > 0);
  REQUIRE(wait_past_checkpoint_and_decision(trial_dir / "metrics.jsonl"));
  // The whole node goes: the orchestrator first, then its trial, both without a word.
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(kill_trial(trial_dir) >= 1);
  REQUIRE(test_support::wait_until([&] { return dlsweep::sched::find_trial_processes(trial_dir).empty(); }));
  CHECK(trial_result(db, dir)["state"] == "RUNNING");  // what the dead orchestrator left

  auto resumed = run_dlsweep(db, {"resume", kName}, dir);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(trial_result(db, dir)["state"] == "COMPLETE");
  check_same_records(want, read_records(db, dir));
}
