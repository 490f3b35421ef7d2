// outcome.json, the trial program's own word on how its attempt ended (issue 43): its
// parsing (common/program_outcome), what the engine takes from it (take_program_outcome: only
// the current attempt's, a damaged file warned about and ignored), what it changes in the
// terminal decision (a self-pruned trial ends PRUNED; one that returned after an advised prune
// ends COMPLETE when it reported its objective), and the engine's side (fake backend, real
// SQLite): the file read on exit 0, removed before each launch.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "common/program_outcome.hpp"
#include "engine/state_machine.hpp"
#include "engine/trial_files.hpp"
#include "engine/trial_outcome.hpp"
#include "engine_fixture.hpp"
#include "tests/support/fake_backend.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;
using protocol::ProgramState;

namespace {

sched::JobEvent exited(int code, int signal = 0) {
  sched::JobEvent ev;
  ev.kind = sched::JobEventKind::exited;
  ev.exit_code = code;
  ev.signal = signal;
  return ev;
}

TerminalFacts facts(int attempt = 0) {
  TerminalFacts f;
  f.state = TrialState::running;
  f.attempt = attempt;
  f.max_retries = 2;
  f.metric = "acc";
  f.reported = {"acc"};
  return f;
}

protocol::ProgramOutcome word(ProgramState s, int attempt = 0, std::string reason = "why") {
  return {attempt, s, std::move(reason)};
}

}  // namespace

TEST_CASE("outcome.json: PRUNED and COMPLETE parse; the reason is optional; it round-trips") {
  auto p = protocol::parse_program_outcome(R"({"attempt": 1, "state": "PRUNED", "reason": "raised TrialPruned"})");
  REQUIRE(p.has_value());
  CHECK(p->attempt == 1);
  CHECK(p->state == ProgramState::pruned);
  CHECK(p->reason == "raised TrialPruned");
  auto c = protocol::parse_program_outcome("{\"attempt\": 0, \"state\": \"COMPLETE\"}\n");
  REQUIRE(c.has_value());
  CHECK(c->state == ProgramState::complete);
  CHECK(c->reason.empty());
  auto back = protocol::parse_program_outcome(protocol::to_json(*p));
  REQUIRE(back.has_value());
  CHECK(back->attempt == 1);
  CHECK(back->state == ProgramState::pruned);
  CHECK(back->reason == "raised TrialPruned");
}

TEST_CASE("outcome.json: a damaged file is an error that says what is wrong and the form expected") {
  const std::map<std::string, std::string> damaged = {
      {"{\"attempt\": 0, \"state\": \"PRU", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {R"({"state": "PRUNED"})", "field 'attempt' is missing"},
      {R"({"attempt": "0", "state": "PRUNED"})", "field 'attempt' is \"0\", not an attempt number"},
      {R"({"attempt": -1, "state": "PRUNED"})", "field 'attempt' is -1"},
      {R"({"attempt": 0.5, "state": "PRUNED"})", "field 'attempt' is 0.5"},
      {R"({"attempt": 0})", "field 'state' is missing"},
      {R"({"attempt": 0, "state": 3})", "field 'state' is 3, not a string"},
      {R"({"attempt": 0, "state": "FAILED"})", "field 'state' is \"FAILED\": only \"PRUNED\" and \"COMPLETE\""},
      {R"({"attempt": 0, "state": "pruned"})", "field 'state' is \"pruned\""},
      {R"({"attempt": 0, "state": "PRUNED", "reason": 7})", "field 'reason' is 7, not a string"},
  };
  for (const auto& [text, what] : damaged) {
    INFO(text);
    auto r = protocol::parse_program_outcome(text);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what.find(what) != std::string::npos);
    CHECK(r.error().where == "outcome.json");
    CHECK(r.error().fix.find(R"("state": "PRUNED" or "COMPLETE")") != std::string::npos);
  }
}

TEST_CASE("outcome.json taken: the current attempt's word; none without a file; a stale one ignored; a damaged one warned") {
  const std::string file = "/runs/s/trial-0003/outcome.json";
  auto none = take_program_outcome(std::nullopt, 0, file);
  CHECK_FALSE(none.outcome);
  CHECK(none.warning.empty());

  auto current = take_program_outcome(R"({"attempt": 1, "state": "PRUNED", "reason": "r"})", 1, file);
  REQUIRE(current.outcome);
  CHECK(current.outcome->state == ProgramState::pruned);
  CHECK(current.warning.empty());

  // Another attempt's word (a retry must never end with its predecessor's): ignored, quietly.
  auto stale = take_program_outcome(R"({"attempt": 0, "state": "PRUNED", "reason": "r"})", 1, file);
  CHECK_FALSE(stale.outcome);
  CHECK(stale.warning.empty());

  auto damaged = take_program_outcome(R"({"attempt": 1, "state": "STOPPED"})", 1, file);
  CHECK_FALSE(damaged.outcome);
  INFO(damaged.warning);
  CHECK(damaged.warning.starts_with(file + ": field 'state' is \"STOPPED\""));
  CHECK(damaged.warning.find("ignored: the trial ends as its exit status and records say") != std::string::npos);
  CHECK(damaged.warning.find("(fix: write {\"attempt\": <DLSWEEP_ATTEMPT>") != std::string::npos);
}

TEST_CASE("terminal decision: a trial that pruned itself (PRUNED, nothing asked, exit 0) ends PRUNED, never retried") {
  TerminalFacts f = facts();
  f.program = word(ProgramState::pruned, 0, "the objective raised TrialPruned after step 2");
  auto d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::pruned);
  CHECK(d.event == TrialEvent::pruned);
  CHECK(d.why == "pruned by the program itself (outcome.json: the objective raised TrialPruned after step 2)");
  auto next = next_state(TrialState::running, 0, d.event, f.max_retries);
  REQUIRE(next.has_value());
  CHECK(next->to == TrialState::pruned);  // terminal: no retry follows

  // Pruned before it reported anything: still PRUNED (without the word: "never reported").
  f.reported.clear();
  d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::pruned);
  f.program.reset();
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::no_objective);

  // An empty reason still says where the state came from.
  f.program = word(ProgramState::pruned, 0, "");
  CHECK(decide_terminal(exited(0), f).why == "pruned by the program itself (outcome.json: PRUNED)");
}

TEST_CASE("terminal decision: the word counts only on exit 0, for its own attempt, and never against another ask") {
  TerminalFacts f = facts(1);
  f.program = word(ProgramState::pruned, 1);
  // Exit 1, a signal, exit 75: the exit decides, as without the file.
  CHECK(decide_terminal(exited(1), f).outcome == Outcome::failed);
  CHECK(decide_terminal(exited(0, 9), f).outcome == Outcome::failed);
  CHECK(decide_terminal(exited(protocol::kExitStopped), f).outcome == Outcome::failed);
  // A stale word (attempt 0's at the end of attempt 1): as without the file.
  f.program = word(ProgramState::pruned, 0);
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::complete);
  // A cancel asked: CANCELLED whatever the program says.
  f.stop_reason = "cancelled";
  f.program = word(ProgramState::pruned, 1);
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::cancelled);
  f.program = word(ProgramState::complete, 1);
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::cancelled);
  // Stopped at the target: COMPLETE as asked, even if the program says PRUNED.
  f.stop_reason = kStopAtTarget;
  f.program = word(ProgramState::pruned, 1);
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::complete);
  // dlsweep's own prune and the program's PRUNED agree: dlsweep's note.
  f.stop_reason = "pruned";
  f.prune_note = "pruned at step 3 (median)";
  auto d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::pruned);
  CHECK(d.why == "pruned at step 3 (median)");
}

TEST_CASE("terminal decision: a prune advised, the objective returned and COMPLETE said: COMPLETE (Optuna's advisory pruning)") {
  TerminalFacts f = facts();
  f.stop_reason = "pruned";
  f.prune_note = "pruned at step 2 (threshold)";
  f.program = word(ProgramState::complete, 0, "the objective returned its value after dlsweep's pruner advised a stop");
  auto d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::complete);
  CHECK(d.event == TrialEvent::completed);
  CHECK(d.why == "finished although a prune was advised (outcome.json: the objective returned its value after "
                 "dlsweep's pruner advised a stop)");

  // Without the word the prune stands (dlsweep_trial's should_stop(): dlsweep's decision).
  f.program.reset();
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::pruned);
  // A word of another attempt: the prune stands.
  f.program = word(ProgramState::complete, 1);
  CHECK(decide_terminal(exited(0), f).outcome == Outcome::pruned);
  // Exit 75 (it stopped after all): PRUNED, whatever the file says.
  f.program = word(ProgramState::complete, 0);
  CHECK(decide_terminal(exited(protocol::kExitStopped), f).outcome == Outcome::pruned);
}

TEST_CASE("terminal decision: COMPLETE said after an advised prune without the objective is FAILED, as any clean exit without it") {
  TerminalFacts f = facts();
  f.stop_reason = "pruned";
  f.reported = {"loss"};
  f.program = word(ProgramState::complete, 0);
  auto d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::no_objective);
  CHECK(d.event == TrialEvent::failed);
  CHECK(d.deterministic);
  CHECK(d.failure == "objective acc was never reported (it reported: loss)");
  // NaN/inf at its end: diverged, as an unasked clean exit.
  f.reported = {"acc"};
  f.objective_nonfinite = true;
  d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::no_objective);
  CHECK(d.failure == diverged_phrase("acc"));
  // COMPLETE with nothing asked: an ordinary clean exit.
  f.stop_reason.clear();
  f.objective_nonfinite = false;
  d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::complete);
  CHECK(d.why == "finished");
}

// ---- the engine's side: fake backend, real files and SQLite

namespace {

struct Printed {
  Result<orch::SweepOutcome> r;
  std::string text;
};

Printed run_printing(engine_test::Fixture& f, sched::Backend& backend, boost::asio::io_context& io) {
  std::FILE* out = std::tmpfile();
  auto r = f.run(backend, io, {}, out);
  std::fflush(out);
  std::rewind(out);
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
  std::fclose(out);
  return {std::move(r), std::move(text)};
}

void write_text(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file) << text;
}

}  // namespace

TEST_CASE("engine: outcome.json read on exit 0 — a self-pruned trial PRUNED once; damaged and stale files ignored; removed at launch") {
  using engine_test::eval_line;
  engine_test::Fixture f("outcome", "  max_retries: 2");
  boost::asio::io_context io;
  std::set<std::string> seen_at_launch;  // "number/attempt" whose launch found an outcome.json
  sched::FakeBackend backend(io, 1, [&](const sched::JobSpec& job) {
    const int number = std::stoi(job.env.at("DLSWEEP_TRIAL_ID"));
    const int attempt = std::stoi(job.env.at("DLSWEEP_ATTEMPT"));
    const auto file = job.workdir / protocol::kOutcomeFile;
    if (std::filesystem::exists(file)) seen_at_launch.insert(fmt::format("{}/{}", number, attempt));
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(0, 10, 0.2), eval_line(1, 20, 0.3, true)};
    switch (number) {
      case 0:  // pruned itself after its first report: exit 0, no final record
        write_text(file, protocol::to_json({attempt, ProgramState::pruned, "the objective raised TrialPruned"}));
        o.metrics_lines = {eval_line(0, 10, 0.2)};
        break;
      case 1:  // a damaged file: warned about, the trial ends as its exit and records say
        write_text(file, R"({"attempt": 0, "state": "STOPPED"})");
        break;
      case 2:  // another attempt's word: ignored
        write_text(file, protocol::to_json({attempt + 1, ProgramState::pruned, ""}));
        break;
      case 3:  // attempt 0 says PRUNED and crashes (exit 1): retried; attempt 1 must not see the file
        if (attempt == 0) {
          write_text(file, protocol::to_json({0, ProgramState::pruned, ""}));
          o.exit_code = 1;
        }
        break;
      default:
        break;
    }
    return o;
  });
  auto out = run_printing(f, backend, io);
  REQUIRE(out.r.has_value());
  INFO(out.text);
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  std::map<std::int64_t, std::pair<TrialState, int>> got;
  for (const auto& t : *rows) got[t.number] = {t.state, t.attempt};
  CHECK(got == std::map<std::int64_t, std::pair<TrialState, int>>{{0, {TrialState::pruned, 0}},
                                                                  {1, {TrialState::complete, 0}},
                                                                  {2, {TrialState::complete, 0}},
                                                                  {3, {TrialState::complete, 1}},
                                                                  {4, {TrialState::complete, 0}}});
  CHECK(backend.submitted().size() == 6);  // trial 3 twice; the self-pruned trial once
  CHECK(seen_at_launch.empty());           // trial 3's retry found no outcome.json
  CHECK(out.text.find("trial 0 pruned by the program itself (outcome.json: the objective raised TrialPruned)") !=
        std::string::npos);
  const auto damaged = f.dir / "runs" / "outcome" / "trial-0001" / "outcome.json";
  CHECK(out.text.find(fmt::format("warning: trial 1: {}: field 'state' is \"STOPPED\"", damaged.string())) !=
        std::string::npos);
  auto t0 = f.storage->get_trial((*rows)[0].id);
  REQUIRE(t0.has_value());
  CHECK(t0->message.find("pruned by the program itself") != std::string::npos);
}

TEST_CASE("engine: resume records an attempt that pruned itself while no orchestrator watched; a stale word is rerun") {
  using engine_test::eval_line;
  engine_test::Fixture f("outcomeresume", "");
  // Both were RUNNING when the orchestrator died, neither has a final record. Trial 0's
  // outcome.json says this attempt pruned itself: recorded PRUNED, never run again. Trial 1's
  // names another attempt: it was cut short, so it runs again (and its launch removes the file).
  std::vector<std::int64_t> ids;
  for (int n = 0; n < 2; ++n) {
    auto dir = orch::trial_dir_for(f.dir / "runs", "outcomeresume", n);
    nlohmann::json params = {{"x", n + 1}};
    REQUIRE(orch::prepare_trial_dir(dir, params));
    auto id = f.storage->create_trial(f.study_id, n, params, dir.string());
    REQUIRE(id);
    ids.push_back(*id);
    REQUIRE(f.storage->transition({*id, TrialState::waiting, TrialState::queued, 0, "test", "set up", std::nullopt}));
    REQUIRE(f.storage->transition({*id, TrialState::queued, TrialState::running, 0, "test", "set up", std::nullopt}));
    std::ofstream(dir / "metrics.jsonl") << eval_line(0, 10, 0.6) << "\n";
    write_text(dir / protocol::kOutcomeFile, protocol::to_json({n, ProgramState::pruned, "raised TrialPruned"}));
  }
  boost::asio::io_context io;
  bool file_at_relaunch = false;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    file_at_relaunch = file_at_relaunch || std::filesystem::exists(job.workdir / protocol::kOutcomeFile);
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(1, 20, 0.8, true)};
    return o;
  });
  orch::Engine::RestoreCounts counts;
  auto out = f.resume(backend, io, counts);
  REQUIRE(out.has_value());
  CHECK(counts.finished == 1);
  CHECK(counts.requeued == 1);
  for (const auto& j : backend.submitted()) CHECK(j.trial_id != ids[0]);
  CHECK_FALSE(file_at_relaunch);
  auto t0 = f.storage->get_trial(ids[0]);
  REQUIRE(t0);
  CHECK(t0->state == TrialState::pruned);
  CHECK(t0->message == "pruned by the program itself (outcome.json: raised TrialPruned)");
  auto t1 = f.storage->get_trial(ids[1]);
  REQUIRE(t1);
  CHECK(t1->state == TrialState::complete);
  CHECK(t1->attempt == 0);
}
