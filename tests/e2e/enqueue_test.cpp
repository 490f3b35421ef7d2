// Growing and steering a study with the real binaries: `dlsweep enqueue` (runs before the
// sampled trials, at the next resume or at the running orchestrator's next turn), `dlsweep
// resume --add-trials N` (exactly N more trials on a finished study, numbered after the
// last, durable across kill -9), and bad input refused with nothing written.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/storage.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

// A random study whose trial sleeps `sleep_s`, then reports loss 1.
std::string random_study(const std::string& name, int trials, int concurrent, double sleep_s) {
  return fmt::format(R"(
name: {}
backend: {{kind: local, max_concurrent: {}}}
trial:
  command: [/bin/sh, -c, "sleep {}; echo '{{\"seq\":0,\"kind\":\"final\",\"step\":1,\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: random, trials: {}, seed: 2}}
space:
  batch_size: {{int: [64, 4096], step: 64}}
  lr_rule: [linear, sqrt, none]
  tag: ["x; touch pwned", plain]
)", name, concurrent, sleep_s, trials);
}

struct Trial {
  std::int64_t number;
  std::string state;
  json params;
};

std::vector<Trial> trials_of(const fs::path& db, const std::string& study) {
  auto storage = dlsweep::db::Storage::open_readonly(db);
  REQUIRE(storage.has_value());
  auto row = (*storage)->find_study(study);
  REQUIRE(row.has_value());
  REQUIRE(row->has_value());
  auto trials = (*storage)->list_trials((*row)->id);
  REQUIRE(trials.has_value());
  std::vector<Trial> out;
  for (const auto& t : *trials) out.push_back({t.number, std::string(dlsweep::to_string(t.state)), t.params});
  return out;
}

std::string query(const fs::path& db, const fs::path& dir, const std::string& sql) {
  auto r = run_dlsweep(db, {"query", sql, "--format", "csv"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}

std::int64_t stored_budget(const fs::path& db, const fs::path& dir, const std::string& study) {
  auto out = query(db, dir, "SELECT json_extract(spec_json, '$.search.trials') FROM studies WHERE name = '" + study + "'");
  return std::stoll(out.substr(out.find('\n') + 1));
}

bool any_file_named(const fs::path& dir, const std::string& name) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == name) return true;
  return false;
}

}  // namespace

TEST_CASE("enqueue, then resume --add-trials on a finished study: enqueued params first, N more, numbered on") {
  auto dir = fresh_dir("enqueue-grow");
  write(dir / "study.yaml", random_study("e2e-grow", 3, 2, 0));
  auto db = dir / "sweep.db";
  auto sub = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  REQUIRE(trials_of(db, "e2e-grow").size() == 3);

  auto e1 = run_dlsweep(db, {"enqueue", "e2e-grow", "--set", "batch_size=4096", "--set", "lr_rule=sqrt"}, dir);
  INFO(e1.err);
  REQUIRE(e1.exit_code == 0);
  // The finished study's budget is used up: the command says how to make room.
  CHECK(e1.err.find("--add-trials 1") != std::string::npos);
  // A value with shell syntax is data: it reaches params.json as it is and runs nothing.
  auto e2 = run_dlsweep(db, {"enqueue", "e2e-grow", "--set", "tag=x; touch pwned"}, dir);
  INFO(e2.err);
  REQUIRE(e2.exit_code == 0);
  CHECK(query(db, dir, "SELECT COUNT(*) FROM enqueued_trials WHERE trial_id IS NULL") == "COUNT(*)\n2\n");

  auto r = run_dlsweep(db, {"resume", "e2e-grow", "--add-trials", "4"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("trial budget 3 -> 7") != std::string::npos);
  auto trials = trials_of(db, "e2e-grow");
  REQUIRE(trials.size() == 7);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    CHECK(trials[i].number == std::int64_t(i));
    CHECK(trials[i].state == "COMPLETE");
  }
  // The enqueued trials come first, in the order asked, with exactly the values asked for.
  CHECK(trials[3].params["batch_size"] == 4096);
  CHECK(trials[3].params["lr_rule"] == "sqrt");
  CHECK(trials[3].params.contains("tag"));
  CHECK(trials[4].params["tag"] == "x; touch pwned");
  std::ifstream params_json(dir / "dlsweep-runs" / "e2e-grow" / "trial-0004" / "params.json");
  CHECK(json::parse(params_json)["tag"] == "x; touch pwned");
  CHECK_FALSE(any_file_named(dir, "pwned"));
  CHECK(query(db, dir, "SELECT COUNT(*) FROM enqueued_trials WHERE trial_id IS NULL") == "COUNT(*)\n0\n");
  CHECK(stored_budget(db, dir, "e2e-grow") == 7);
  CHECK(query(db, dir, "SELECT COUNT(*) FROM events WHERE kind = 'add_trials'") == "COUNT(*)\n1\n");
  CHECK(query(db, dir, "SELECT state FROM studies") == "state\nFINISHED\n");

  // A plain resume adds nothing; another --add-trials goes on from the last number.
  REQUIRE(run_dlsweep(db, {"resume", "e2e-grow"}, dir).exit_code == 0);
  CHECK(trials_of(db, "e2e-grow").size() == 7);
  REQUIRE(run_dlsweep(db, {"resume", "e2e-grow", "--add-trials", "2"}, dir).exit_code == 0);
  trials = trials_of(db, "e2e-grow");
  REQUIRE(trials.size() == 9);
  CHECK(trials[7].number == 7);
  CHECK(trials[8].number == 8);
  CHECK(stored_budget(db, dir, "e2e-grow") == 9);
}

TEST_CASE("resume --add-trials killed with -9: a plain resume neither loses nor doubles the added trials") {
  auto dir = fresh_dir("enqueue-kill");
  write(dir / "study.yaml", random_study("e2e-grow-kill", 2, 1, 0.5));
  auto db = dir / "sweep.db";
  REQUIRE(run_dlsweep(db, {"submit", "study.yaml"}, dir).exit_code == 0);
  pid_t pid = spawn_dlsweep(dir, db, {"resume", "e2e-grow-kill", "--add-trials", "3"});
  REQUIRE(pid >= 0);
  REQUIRE(wait_for(dir / "dlsweep-runs" / "e2e-grow-kill" / "trial-0002"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  CHECK(stored_budget(db, dir, "e2e-grow-kill") == 5);  // recorded before the first new trial

  auto r = run_dlsweep(db, {"resume", "e2e-grow-kill"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto trials = trials_of(db, "e2e-grow-kill");
  REQUIRE(trials.size() == 5);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    CHECK(trials[i].number == std::int64_t(i));
    CHECK(trials[i].state == "COMPLETE");
  }
  CHECK(stored_budget(db, dir, "e2e-grow-kill") == 5);
}

TEST_CASE("enqueue while an orchestrator runs: it takes the request and runs it before the next sampled trial") {
  auto dir = fresh_dir("enqueue-live");
  write(dir / "study.yaml", random_study("e2e-live", 3, 1, 2));
  auto db = dir / "sweep.db";
  pid_t pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"});
  REQUIRE(pid >= 0);
  REQUIRE(wait_for(dir / "dlsweep-runs" / "e2e-live" / "trial-0000"));
  auto e = run_dlsweep(db, {"enqueue", "e2e-live", "--set", "batch_size=64", "--set", "lr_rule=none"}, dir);
  INFO(e.err);
  CHECK(e.exit_code == 0);
  CHECK(e.err.find("the running orchestrator recorded it") != std::string::npos);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  auto trials = trials_of(db, "e2e-live");
  REQUIRE(trials.size() == 3);  // the enqueued trial counts against the budget
  CHECK(trials[1].params["batch_size"] == 64);
  CHECK(trials[1].params["lr_rule"] == "none");
  CHECK(query(db, dir, "SELECT t.number FROM enqueued_trials e JOIN trials t ON t.id = e.trial_id") == "number\n1\n");
}

TEST_CASE("enqueue to a study while another study's orchestrator runs: recorded at once, its next resume runs it") {
  auto dir = fresh_dir("enqueue-other");
  write(dir / "done.yaml", random_study("e2e-done", 1, 1, 0));
  write(dir / "busy.yaml", random_study("e2e-busy", 2, 1, 1.5));
  auto db = dir / "sweep.db";
  REQUIRE(run_dlsweep(db, {"submit", "done.yaml"}, dir).exit_code == 0);
  pid_t pid = spawn_dlsweep(dir, db, {"submit", "busy.yaml"});
  REQUIRE(pid >= 0);
  REQUIRE(wait_for(dir / "dlsweep-runs" / "e2e-busy" / "trial-0000"));
  const auto start = std::chrono::steady_clock::now();
  auto e = run_dlsweep(db, {"enqueue", "e2e-done", "--set", "batch_size=128"}, dir);
  INFO(e.err);
  CHECK(e.exit_code == 0);
  // Each study has its own lock: e2e-done's is free, so enqueue records the trial itself.
  CHECK(e.err.find("enqueued a trial of study e2e-done") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));  // it did not wait for it
  CHECK(query(db, dir, "SELECT COUNT(*) AS n FROM enqueued_trials e JOIN studies s ON s.id = e.study_id "
                       "WHERE s.name = 'e2e-done'") == "n\n1\n");
  ::waitpid(pid, nullptr, 0);
  auto r = run_dlsweep(db, {"resume", "e2e-done", "--add-trials", "1"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto trials = trials_of(db, "e2e-done");
  REQUIRE(trials.size() == 2);
  CHECK(trials[1].params["batch_size"] == 128);
  CHECK(trials_of(db, "e2e-busy").size() == 2);
}

TEST_CASE("enqueue and --add-trials refuse bad input with the fix, and write nothing") {
  auto dir = fresh_dir("enqueue-bad");
  write(dir / "study.yaml", random_study("e2e-bad", 1, 1, 0));
  write(dir / "grid.yaml", R"(
name: e2e-grid
trial: {command: [/bin/true]}
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1, 2]}
)");
  auto db = dir / "sweep.db";
  REQUIRE(run_dlsweep(db, {"submit", "study.yaml"}, dir).exit_code == 0);
  run_dlsweep(db, {"submit", "grid.yaml"}, dir);  // its trials fail (no metric); the study exists
  const std::string events = query(db, dir, "SELECT COUNT(*) FROM events");
  const std::string specs = query(db, dir, "SELECT spec_json FROM studies ORDER BY id");

  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {{"enqueue", "nope", "--set", "batch_size=64"}, {"no study named 'nope'", "status"}},
      {{"enqueue", "e2e-bad", "--set", "batch_size"}, {"expected NAME=VALUE"}},
      {{"enqueue", "e2e-bad", "--set", "=64"}, {"name before '=' is empty"}},
      {{"enqueue", "e2e-bad"}, {"nothing to enqueue"}},
      {{"enqueue", "e2e-bad", "--set", "batchsize=64"}, {"unknown parameter 'batchsize'", "did you mean 'batch_size'?"}},
      {{"enqueue", "e2e-bad", "--set", "batch_size=5000"}, {"outside batch_size's range [64, 4096]"}},
      {{"enqueue", "e2e-bad", "--set", "batch_size=65"}, {"steps of 64"}},
      {{"enqueue", "e2e-bad", "--set", "batch_size=big"}, {"'big' is not an integer"}},
      {{"enqueue", "e2e-bad", "--set", "lr_rule=cubic"}, {"'cubic' is not one of lr_rule's choices", "\"sqrt\""}},
      {{"enqueue", "e2e-grid", "--set", "x=1"}, {"searches a grid", "--rerun"}},
      {{"resume", "e2e-grid", "--add-trials", "1"}, {"cannot grow"}},
      {{"resume", "e2e-bad", "--add-trials", "0"}, {"positive"}},
      {{"resume", "nope", "--add-trials", "1"}, {"no study named 'nope'"}},
  };
  for (const auto& c : cases) {
    auto r = run_dlsweep(db, c.args, dir);
    INFO(c.args[0] + " " + c.args[1] + ": " + r.err);
    CHECK(r.exit_code == 2);
    for (const auto& s : c.says) CHECK(r.err.find(s) != std::string::npos);
  }
  auto missing = run_dlsweep(dir / "no.db", {"enqueue", "e2e-bad", "--set", "batch_size=64"}, dir);
  CHECK(missing.exit_code == 2);
  CHECK_FALSE(fs::exists(dir / "no.db"));

  CHECK(query(db, dir, "SELECT COUNT(*) FROM enqueued_trials") == "COUNT(*)\n0\n");
  CHECK(query(db, dir, "SELECT COUNT(*) FROM events") == events);
  CHECK(query(db, dir, "SELECT spec_json FROM studies ORDER BY id") == specs);
  CHECK(trials_of(db, "e2e-bad").size() == 1);
}
