// Engine::restore on a backend whose jobs outlive the orchestrator (what Slurm is): jobs
// still on the scheduler are followed, not resubmitted; a recorded job id is followed when
// the scheduler no longer lists the job; a followed job the scheduler cannot account for
// is requeued; jobs no live trial owns are cancelled. New submissions go to a fake backend.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>

#include "engine_fixture.hpp"
#include "engine/trial_files.hpp"
#include "tests/support/fake_backend.hpp"

namespace {

/// A scheduler whose jobs survive: `surviving` is what it lists; `ended` maps native ids it
/// can account for to their exit codes; any other adopted id is `lost`. Jobs submitted
/// anew run on the inner fake backend.
class SurvivorBackend final : public sched::Backend {
 public:
  SurvivorBackend(boost::asio::io_context& io, sched::FakeScript script) : io_(io), inner_(io, 2, std::move(script)) {}

  std::vector<sched::SurvivingJob> surviving;
  std::map<std::string, int> ended;
  std::map<std::string, int> running_exit;  ///< exit code of a RUNNING survivor when it ends (default 0)
  std::set<std::string> cancelled;  ///< native ids of adopted jobs we were asked to cancel
  std::vector<std::string> adopted;

  const std::vector<sched::JobSpec>& submitted() const { return inner_.submitted(); }

  std::string_view name() const override { return "survivor"; }
  void set_event_handler(sched::EventHandler h) override {
    handler_ = h;
    inner_.set_event_handler(std::move(h));
  }
  Result<std::string> submit(const sched::JobSpec& job) override { return inner_.submit(job); }
  Result<std::vector<std::string>> dry_run(const std::vector<sched::JobSpec>& jobs,
                                           const std::filesystem::path& out) override {
    return inner_.dry_run(jobs, out);
  }
  void cancel(const std::string& id) override {
    auto it = mine_.find(id);
    if (it == mine_.end()) return inner_.cancel(id);
    cancelled.insert(it->second.native);
    post(it->second, sched::JobEventKind::cancelled, 0);
    mine_.erase(it);
  }
  std::size_t active() const override { return inner_.active() + mine_.size(); }
  std::size_t max_concurrent() const override { return 2; }
  bool jobs_outlive_orchestrator() const override { return true; }
  Result<std::vector<sched::SurvivingJob>> surviving_jobs(const std::string&) override { return surviving; }
  Result<std::string> adopt(const sched::JobSpec& spec, const std::string& native) override {
    std::string id = "adopted-" + native;
    Job job{spec, native};
    mine_.emplace(id, job);
    adopted.push_back(native);
    post(job, sched::JobEventKind::queued, 0);
    bool running = false;
    for (const auto& s : surviving) running = running || (s.native_id == native && s.state == "RUNNING");
    if (running) {
      // Still running: ends a little later (after a cancel, if one comes).
      const int code = running_exit.count(native) ? running_exit.at(native) : 0;
      boost::asio::post(io_, [this, id, code] {
        if (auto it = mine_.find(id); it != mine_.end()) {
          post(it->second, sched::JobEventKind::started, 0);
          post(it->second, sched::JobEventKind::exited, code);
          mine_.erase(it);
        }
      });
    } else if (auto e = ended.find(native); e != ended.end()) {
      post(job, sched::JobEventKind::exited, e->second);
      mine_.erase(id);
    } else if (!std::any_of(surviving.begin(), surviving.end(), [&](const auto& s) { return s.native_id == native; })) {
      post(job, sched::JobEventKind::lost, 0);
      mine_.erase(id);
    }
    return id;
  }

 private:
  struct Job {
    sched::JobSpec spec;
    std::string native;
  };
  void post(const Job& job, sched::JobEventKind kind, int code) {
    sched::JobEvent ev;
    ev.job_id = "adopted-" + job.native;
    ev.trial_id = job.spec.trial_id;
    ev.attempt = job.spec.attempt;
    ev.kind = kind;
    ev.exit_code = code;
    ev.native_id = job.native;
    ev.message = kind == sched::JobEventKind::lost ? "vanished from the controller" : "";
    boost::asio::post(io_, [this, ev] { handler_(ev); });
  }
  boost::asio::io_context& io_;
  sched::FakeBackend inner_;
  sched::EventHandler handler_;
  std::map<std::string, Job> mine_;
};

}  // namespace

TEST_CASE("engine: restore follows surviving jobs, requeues lost ones, cancels strays") {
  Fixture f("survive", "");
  boost::asio::io_context io;
  SurvivorBackend backend(io, [](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.02;
    o.metrics_lines = {eval_line(0, 10, 0.7, true)};
    return o;
  });
  // Trials 0..4 as a killed orchestrator left them.
  using TS = TrialState;
  const TS states[] = {TS::running, TS::queued, TS::running, TS::complete, TS::running};
  std::vector<std::int64_t> ids;
  for (int n = 0; n < 5; ++n) {
    auto dir = orch::trial_dir_for(f.dir / "runs", "survive", n);
    nlohmann::json params = {{"x", n + 1}};
    REQUIRE(orch::prepare_trial_dir(dir, params));
    auto id = f.storage->create_trial(f.study_id, n, params, dir.string());
    REQUIRE(id);
    ids.push_back(*id);
    TS at = TS::waiting;
    for (TS to : {TS::queued, TS::running, TS::complete}) {
      if (at == states[n]) break;
      REQUIRE(f.storage->transition({*id, at, to, 0, "test", "set up"}));
      at = to;
    }
    if (n != 4) REQUIRE(f.storage->record_job({*id, 0, "survivor", fmt::format("100_{}", n), "RUNNING"}));
    // Trial 1's job ran to its end unwatched: it reported its objective before exiting 0.
    if (n == 1) std::ofstream(dir / "metrics.jsonl") << eval_line(0, 10, 0.7, true) << "\n";
  }
  auto token = [&](int n) { return fmt::format("survive/{}/0", ids[n]); };
  // 100_9: an older job of trial 3 the scheduler still lists after it COMPLETED: nothing to cancel
  // (before: "cancelled", and counted as a stray cancelled).
  backend.surviving = {{token(0), "100_0", "RUNNING"},
                       {token(3), "100_3", "RUNNING"},
                       {fmt::format("survive/{}/1", ids[3]), "100_9", "COMPLETED", true}};
  backend.ended = {{"100_1", 0}};  // trial 1's job ended while nobody watched; accounting knows
  // The dead orchestrator had just pruned trial 0: its job stops with the protocol's exit 75.
  REQUIRE(orch::request_stop(orch::trial_dir_for(f.dir / "runs", "survive", 0), "pruned"));
  backend.running_exit = {{"100_0", 75}};

  auto trials = f.storage->list_trials(f.study_id);
  auto sums = f.storage->summaries(f.study_id);
  auto jobs = f.storage->list_jobs(f.study_id);
  REQUIRE(trials);
  REQUIRE(sums);
  REQUIRE(jobs);
  orch::Engine::RestoreCounts counts;
  std::FILE* printed = std::tmpfile();
  auto out = f.run(
      backend, io,
      [&](orch::Engine& e) {
        REQUIRE(e.restore(*trials, *sums, *jobs));
        counts = e.restore_counts();
      },
      printed);
  std::fflush(printed);
  std::rewind(printed);
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, printed)) > 0;) text.append(buf, n);
  std::fclose(printed);
  REQUIRE(out.has_value());
  // The stray is named by its trial's number (the token holds the database id); the job that
  // already COMPLETED is not "cancelled".
  INFO(text);
  CHECK(text.find("cancelling job 100_3 (trial 3 attempt 0, RUNNING)") != std::string::npos);
  CHECK(text.find("100_9") == std::string::npos);
  CHECK(counts.adopted == 3);  // 0 (on the scheduler), 1 and 2 (by recorded id)
  CHECK(counts.requeued == 1);  // 4: no job known
  CHECK(counts.strays_cancelled == 1);
  CHECK(backend.adopted == std::vector<std::string>{"100_0", "100_1", "100_2", "100_3"});
  CHECK(backend.cancelled == std::set<std::string>{"100_3"});  // trial 3 is COMPLETE: its job is a stray
  // 100_2 could not be accounted for: trial 2 ran again, as did trial 4, same attempt.
  std::set<std::int64_t> resubmitted;
  for (const auto& j : backend.submitted()) {
    resubmitted.insert(j.trial_id);
    CHECK(j.attempt == 0);
  }
  CHECK(resubmitted == std::set<std::int64_t>{ids[2], ids[4]});
  auto all = f.storage->list_trials(f.study_id);
  REQUIRE(all);
  for (const auto& t : *all) {
    CHECK(t.state == (t.number == 0 ? TS::pruned : TS::complete));
    CHECK(t.attempt == 0);
  }
  CHECK((*all)[0].message == "pruned (asked by the previous orchestrator)");
  auto events = f.storage->events(f.study_id);
  REQUIRE(events);
  int requeued_lost = 0;
  for (const auto& e : *events)
    requeued_lost += e.reason.rfind("requeued: the job left by the previous orchestrator", 0) == 0;
  CHECK(requeued_lost == 1);
  CHECK(out->snapshot.complete == 4);
  CHECK(out->snapshot.pruned == 1);
}
