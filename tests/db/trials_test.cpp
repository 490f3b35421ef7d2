// trials_test.cpp — studies, trials, the compare-and-swap transition with its event log,
// and jobs. Every refused mutation must leave the database exactly as it was.
#include <catch2/catch.hpp>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;

namespace {

std::int64_t count(const Storage& s, const std::string& table) {
  return scalar(s, "SELECT count(*) FROM " + table).get<std::int64_t>();
}

TransitionRequest move(std::int64_t trial, TrialState from, TrialState to, int attempt, std::string reason,
                       std::optional<int> exit_code = {}) {
  TransitionRequest t;
  t.trial_id = trial;
  t.from = from;
  t.to = to;
  t.attempt = attempt;
  t.who = "orchestrator";
  t.reason = std::move(reason);
  t.exit_code = exit_code;
  return t;
}

}  // namespace

TEST_CASE("create_study stores the study and refuses a duplicate name without writing") {
  TempDir dir;
  auto file = dir / "sweep.db";
  auto s = must(Storage::open_readwrite(file));
  auto id = must(s->create_study(study_named("bs-sweep", "max", 0.9)));
  auto found = must(s->find_study("bs-sweep"));
  REQUIRE(found.has_value());
  CHECK(found->id == id);
  CHECK(found->objective_metric == "val_acc");
  CHECK(found->objective_target == Approx(0.9));
  CHECK(found->state == "RUNNING");
  CHECK(found->root_dir == "runs/bs-sweep");
  CHECK(found->created_at > 1.6e9);
  CHECK_FALSE(must(s->find_study("nope")).has_value());

  const auto studies_before = count(*s, "studies");
  const auto events_before = count(*s, "events");
  auto dup = s->create_study(study_named("bs-sweep", "min", std::nullopt));
  REQUIRE_FALSE(dup.has_value());
  CHECK_THAT(dup.error().message(), Catch::Contains("study 'bs-sweep' already exists in " + file.string()) &&
                                        Catch::Contains("use `dlsweep resume bs-sweep` or pick another name"));
  CHECK(count(*s, "studies") == studies_before);
  CHECK(count(*s, "events") == events_before);

  auto bad_mode = s->create_study(study_named("other", "maximize"));
  REQUIRE_FALSE(bad_mode.has_value());
  CHECK_THAT(bad_mode.error().message(), Catch::Contains("'min' or 'max'"));
  CHECK(count(*s, "studies") == studies_before);

  auto none_target = must(s->create_study(study_named("no-target", "min", std::nullopt)));
  auto list = must(s->list_studies());
  REQUIRE(list.size() == 2);
  CHECK(list[1].id == none_target);
  CHECK_FALSE(list[1].objective_target.has_value());
}

TEST_CASE("set_study_state changes the state and appends a study event") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto id = must(s->create_study(study_named("x")));
  must(s->set_study_state(id, "FINISHED", "budget reached"));
  CHECK(must(s->find_study("x"))->state == "FINISHED");
  auto ev = must(s->events(id));
  REQUIRE(ev.size() == 2);
  CHECK(ev[1].kind == "study");
  CHECK(ev[1].from_state == "RUNNING");
  CHECK(ev[1].to_state == "FINISHED");
  CHECK(ev[1].reason == "budget reached");
  CHECK_FALSE(ev[1].trial_id.has_value());
  CHECK_FALSE(s->set_study_state(id, "DONE", "").has_value());
  CHECK_FALSE(s->set_study_state(id + 100, "STOPPED", "").has_value());
  CHECK(must(s->events(id)).size() == 2);
}

TEST_CASE("create_trial stores a WAITING trial, its params and a created event") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("x")));
  nlohmann::json params = {{"batch_size", 1024}, {"lr", 0.4}, {"optimizer", "lars"}, {"nesterov", true}};
  auto id = must(s->create_trial(study, 0, params, "runs/x/trial-0000"));
  auto t = must(s->get_trial(id));
  CHECK(t.study_id == study);
  CHECK(t.number == 0);
  CHECK(t.state == TrialState::waiting);
  CHECK(t.attempt == 0);
  CHECK(t.trial_dir == "runs/x/trial-0000");
  CHECK(t.params == params);
  CHECK_FALSE(t.exit_code.has_value());

  // value_num: numbers only; the JSON view gives the object back.
  auto nums = must(s->query("SELECT name, value_num FROM params WHERE trial_id = " + std::to_string(id) + " ORDER BY name"));
  REQUIRE(nums.rows.size() == 4);
  CHECK(nums.rows[0][0] == "batch_size");
  CHECK(nums.rows[0][1] == 1024.0);
  CHECK(nums.rows[1][1] == 0.4);
  CHECK(nums.rows[2][1].is_null());  // nesterov: a boolean is not a number
  CHECK(nums.rows[3][1].is_null());  // optimizer
  CHECK(nlohmann::json::parse(scalar(*s, "SELECT params FROM trial_params").get<std::string>()) == params);

  auto ev = must(s->events(study));
  REQUIRE(ev.size() == 2);
  CHECK(ev[1].kind == "created");
  CHECK(ev[1].trial_id == id);
  CHECK(ev[1].to_state == "WAITING");
  CHECK(ev[1].from_state.empty());

  SECTION("a duplicate number is refused and writes nothing") {
    auto dup = s->create_trial(study, 0, {{"lr", 1.0}}, "elsewhere");
    REQUIRE_FALSE(dup.has_value());
    CHECK_THAT(dup.error().message(), Catch::Contains("already exists"));
    CHECK(count(*s, "trials") == 1);
    CHECK(count(*s, "params") == 4);
    CHECK(count(*s, "events") == 2);
  }
  SECTION("an unknown study or non-object params are refused") {
    CHECK_FALSE(s->create_trial(study + 7, 1, nlohmann::json::object(), "d").has_value());
    CHECK_FALSE(s->create_trial(study, 1, nlohmann::json::array({1, 2}), "d").has_value());
    CHECK(count(*s, "trials") == 1);
  }
  SECTION("list_trials returns the study's trials by number, with params") {
    must(s->create_trial(study, 2, {{"lr", 0.1}}, "d2"));
    must(s->create_trial(study, 1, nlohmann::json::object(), "d1"));
    auto list = must(s->list_trials(study));
    REQUIRE(list.size() == 3);
    CHECK(list[0].number == 0);
    CHECK(list[1].number == 1);
    CHECK(list[1].params == nlohmann::json::object());
    CHECK(list[2].params == nlohmann::json{{"lr", 0.1}});
    CHECK(list[0].params == params);
  }
  CHECK_FALSE(s->get_trial(id + 1000).has_value());
}

TEST_CASE("transition is a compare-and-swap that appends events in order") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("x")));
  auto id = must(s->create_trial(study, 0, {{"lr", 0.1}}, "d"));
  using enum TrialState;

  must(s->transition(move(id, waiting, queued, 0, "launched")));
  // A second actor that still believes the trial is WAITING loses the race.
  auto lost = s->transition(move(id, waiting, queued, 0, "launched again"));
  REQUIRE_FALSE(lost.has_value());
  CHECK_THAT(lost.error().message(), Catch::Contains("trial " + std::to_string(id)) &&
                                         Catch::Contains("is QUEUED, expected WAITING"));
  CHECK(must(s->get_trial(id)).state == queued);
  CHECK(must(s->events(study)).size() == 3);  // study, created, queued: the refused one left no trace

  must(s->transition(move(id, queued, running, 0, "started")));
  must(s->transition(move(id, running, failed, 0, "exit status 1", 1)));
  auto failed_row = must(s->get_trial(id));
  CHECK(failed_row.exit_code == 1);
  CHECK(failed_row.message == "exit status 1");
  must(s->transition(move(id, failed, waiting, 1, "retry 1 of 2")));
  auto retried = must(s->get_trial(id));
  CHECK(retried.state == waiting);
  CHECK(retried.attempt == 1);
  CHECK(retried.exit_code == 1);  // kept: no new exit code was given
  must(s->transition(move(id, waiting, queued, 1, "launched")));
  must(s->transition(move(id, queued, running, 1, "started")));
  must(s->transition(move(id, running, complete, 1, "final record", 0)));
  CHECK(must(s->get_trial(id)).exit_code == 0);

  auto ev = must(s->events(study));
  REQUIRE(ev.size() == 9);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"WAITING", "QUEUED"}, {"QUEUED", "RUNNING"}, {"RUNNING", "FAILED"}, {"FAILED", "WAITING"},
      {"WAITING", "QUEUED"}, {"QUEUED", "RUNNING"}, {"RUNNING", "COMPLETE"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto& e = ev[i + 2];
    INFO("event " << i);
    CHECK(e.kind == "transition");
    CHECK(e.trial_id == id);
    CHECK(e.from_state == want[i].first);
    CHECK(e.to_state == want[i].second);
    CHECK(e.who == "orchestrator");
    CHECK(e.at >= ev[i + 1].at);
    CHECK(e.id > ev[i + 1].id);
  }
  CHECK(ev[5].attempt == 1);
  CHECK(ev[5].reason == "retry 1 of 2");

  // Finished states are final, even if the caller's expectation matches.
  auto after_final = s->transition(move(id, complete, waiting, 2, "again"));
  REQUIRE_FALSE(after_final.has_value());
  CHECK_THAT(after_final.error().message(), Catch::Contains("finished state"));
  CHECK(must(s->events(study)).size() == 9);

  auto missing = s->transition(move(id + 50, waiting, queued, 0, "x"));
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message(), Catch::Contains("no trial with id"));
}

TEST_CASE("state_counts reports each present state in state-machine order") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("x")));
  for (int n = 0; n < 4; ++n) must(s->create_trial(study, n, nlohmann::json::object(), "d"));
  must(s->transition(move(1, TrialState::waiting, TrialState::queued, 0, "")));
  must(s->transition(move(2, TrialState::waiting, TrialState::cancelled, 0, "user")));
  auto counts = must(s->state_counts(study));
  REQUIRE(counts.size() == 3);
  CHECK(counts[0] == std::pair<std::string, std::int64_t>{"WAITING", 2});
  CHECK(counts[1] == std::pair<std::string, std::int64_t>{"QUEUED", 1});
  CHECK(counts[2] == std::pair<std::string, std::int64_t>{"CANCELLED", 1});
  CHECK(must(s->state_counts(study + 1)).empty());
}

TEST_CASE("a CANCELLED trial may go back to WAITING (the user's rerun), and nowhere else") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("x")));
  auto id = must(s->create_trial(study, 0, nlohmann::json::object(), "d"));
  must(s->transition(move(id, TrialState::waiting, TrialState::cancelled, 0, "user")));
  auto elsewhere = s->transition(move(id, TrialState::cancelled, TrialState::running, 0, "x"));
  REQUIRE_FALSE(elsewhere.has_value());
  CHECK_THAT(elsewhere.error().message(), Catch::Contains("finished state"));
  must(s->transition(move(id, TrialState::cancelled, TrialState::waiting, 1, "re-run on request")));
  CHECK(must(s->get_trial(id)).state == TrialState::waiting);
  CHECK(must(s->get_trial(id)).attempt == 1);
}

TEST_CASE("record_job upserts the job state and note_event appends free events") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("x")));
  auto id = must(s->create_trial(study, 0, nlohmann::json::object(), "d"));
  must(s->record_job(JobRow{id, 0, "slurm", "1234_0", "PENDING"}));
  must(s->record_job(JobRow{id, 0, "slurm", "1234_0", "RUNNING"}));
  must(s->record_job(JobRow{id, 1, "slurm", "1240", "PENDING"}));
  auto jobs = must(s->list_jobs(study));
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].job_id == "1234_0");
  CHECK(jobs[0].state == "RUNNING");
  CHECK(jobs[1].attempt == 1);
  CHECK(scalar(*s, "SELECT count(*) FROM jobs WHERE updated_at >= submitted_at") == 2);
  auto bad = s->record_job(JobRow{id + 9, 0, "local", "77", "RUNNING"});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message(), Catch::Contains("does not exist"));

  EventRow e;
  e.study_id = study;
  e.who = "user";
  e.kind = "resume";
  e.reason = "orchestrator restarted";
  auto eid = must(s->note_event(e));
  auto ev = must(s->events(study));
  CHECK(ev.back().id == eid);
  CHECK(ev.back().kind == "resume");
  CHECK(ev.back().at > 0);
  e.study_id = study + 5;
  CHECK_FALSE(s->note_event(e).has_value());  // foreign key: no such study
}
