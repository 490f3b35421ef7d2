// The engine on the Slurm backend while trials wait in the controller's queue (an in-memory
// controller, tests/schedulers/slurm/fake_slurm_driver.hpp): a job Slurm holds after a failed launch is
// a failed attempt, retried as a new job; a notable reason is said once, kept in the jobs
// table for `dlsweep status`, and backend.pending_warn warns once per trial — not for trials
// held back by the study's own max_concurrent.
#include <stdio.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "../schedulers/slurm/fake_slurm_driver.hpp"
#include "engine_fixture.hpp"
#include "engine/pending_notice.hpp"
#include "tests/support/manual_clock.hpp"
#include "tests/support/wait_until.hpp"

namespace {

const std::string kDrained =
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions";

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

std::string read_path(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (auto p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

/// Plays the controller's side from another thread: what it saw is checked afterwards.
struct ControllerScript {
  std::shared_ptr<slurm_test::FakeController> ctl;
  std::vector<sched::slurm::JobRecord> table() {
    std::lock_guard l(ctl->m);
    return ctl->table;
  }
  bool wait_for(const std::function<bool()>& ok) {
    return test_support::wait_until(ok, std::chrono::seconds(10), std::chrono::milliseconds(10));
  }
};

}  // namespace

TEST_CASE("engine on slurm: a job held after a failed launch is retried; reasons are said, stored and warned about",
          "[pending]") {
  Fixture f("pending", "  max_retries: 1\n  fail_fast: 0");  // its trials exit without the objective
  f.spec.backend.pending_warn_s = 0.3;
  boost::asio::io_context io;
  // The engine's clock moves only when the controller steps it (below): how long a trial has
  // waited is the time stepped, not the real time the fake controller took.
  auto clock = std::make_shared<test_support::ManualClock>(io);
  f.clock = clock;
  auto ctl = std::make_shared<slurm_test::FakeController>();
  sched::SlurmOptions o;
  o.script_dir = f.dir / "slurm";
  o.max_concurrent = 2;
  o.poll_min_s = 0.02;
  o.poll_max_s = 0.08;
  auto backend = sched::SlurmBackend::create(io, o, std::make_unique<slurm_test::FakeDriver>(ctl));
  REQUIRE(backend.has_value());
  (*backend)->set_log_handler([](const std::string&) {});

  // The five trials go out as array 100. Task 0: launch failed, held (a Prolog error drains
  // the node); tasks 1-2 then wait for the drained node; 3-4 for the study's own throttle.
  // The engine's output; the controller's thread reads it through its own descriptor.
  std::FILE* out = std::tmpfile();
  const std::string out_path = "/proc/self/fd/" + std::to_string(::fileno(out));
  ControllerScript script{ctl};
  bool cancelled_held = false, retried = false, warned_window = false;
  std::vector<db::JobRow> jobs_while_waiting;
  std::thread controller([&] {
    if (!script.wait_for([&] { return script.table().size() == 5; })) return;
    ctl->set_reason(100, 0, "JobHeldUser", "launch failed requeued held", 1);
    for (int t : {1, 2}) ctl->set_reason(100, t, "Resources", kDrained);
    for (int t : {3, 4}) ctl->set_reason(100, t, "JobArrayTaskLimit");
    cancelled_held = script.wait_for([&] {
      std::lock_guard l(ctl->m);
      return !ctl->cancels.empty();
    });
    ctl->set(100, 0, sched::slurm::JobState::cancelled, 15);
    // Until both blocked trials were warned about (backend.pending_warn) and the cancelled
    // held job is recorded lost: then the jobs table is read as `dlsweep status` would.
    warned_window = script.wait_for([&] {
      // A tenth of pending_warn per look, on the engine's thread; each step runs a tick.
      boost::asio::post(io, [clock] { clock->advance(std::chrono::milliseconds(30)); });
      const std::string text = read_path(out_path);
      if (text.find("warning: trial 1 has been pending for") == std::string::npos ||
          text.find("warning: trial 2 has been pending for") == std::string::npos)
        return false;
      auto reader = db::Storage::open_readonly(f.dir / "t.db");
      if (!reader) return false;
      auto jobs = (*reader)->list_jobs(f.study_id);
      if (!jobs) return false;
      for (const auto& j : *jobs)
        if (j.job_id == "100_0" && j.state == "lost") {
          jobs_while_waiting = *jobs;
          return true;
        }
      return false;
    });
    ctl->set_all(sched::slurm::JobState::completed);  // they exit 0 (without the objective)
    // The retry waits in the backend until the array's tasks leave room (max_concurrent 2).
    retried = script.wait_for([&] {
      std::lock_guard l(ctl->m);
      return ctl->submits.size() == 2;
    });
    ctl->set_all(sched::slurm::JobState::completed);
  });
  auto r = f.run(**backend, io, {}, out, /*tty=*/true);
  controller.join();
  const std::string text = read_all(out);
  std::fclose(out);
  INFO(text);
  REQUIRE(r.has_value());
  CHECK(cancelled_held);
  CHECK(retried);
  CHECK(warned_window);
  CHECK(ctl->cancels.front() == std::vector<std::string>{"100_0"});
  CHECK(ctl->submits.back().array.empty());  // the retry alone: one plain job
  auto trials = f.storage->list_trials(f.study_id);
  REQUIRE(trials.has_value());
  for (const auto& t : *trials) CHECK(t.attempt == (t.number == 0 ? 1 : 0));

  // Said at once, once each: the held job, the drained node.
  CHECK(count(text, "trial 0 pending on slurm (job 100_0): launch failed requeued held") == 1);
  CHECK(count(text, "trial 1 pending on slurm (job 100_1): " + kDrained) == 1);
  CHECK(count(text, "JobArrayTaskLimit") == 0);  // the study's own throttle is no news
  // The held job is a failed attempt with the reason, retried as attempt 1.
  CHECK_THAT(text, Catch::Contains("trial 0 failed (attempt 0): lost: Slurm could not start it and held it (launch "
                                   "failed requeued held)"));
  auto events = f.storage->events(f.study_id);
  REQUIRE(events.has_value());
  bool failed_with_reason = false, retry = false;
  for (const auto& e : *events) {
    if (e.to_state == "FAILED" && e.attempt == 0 && e.reason.find("launch failed requeued held") != std::string::npos)
      failed_with_reason = true;
    if (e.to_state == "WAITING" && e.attempt == 1 && e.reason.find("retry 1 of 1") != std::string::npos) retry = true;
  }
  CHECK(failed_with_reason);
  CHECK(retry);
  // backend.pending_warn: one warning per trial that waited on the cluster, naming the
  // reason; none for the throttled ones.
  CHECK(count(text, "warning: trial 1 has been pending for") == 1);
  CHECK_THAT(text, Catch::Contains("warning: trial 1 has been pending for") &&
                       Catch::Contains("on slurm (job 100_1): " + kDrained + " (backend.pending_warn: 0.3 s)"));
  CHECK(count(text, "warning: trial 3 has been pending") == 0);
  CHECK(count(text, "warning: trial 4 has been pending") == 0);
  // The status line counts the blocked ones (trials 1 and 2, and 0 until its cancel lands).
  CHECK_THAT(text, Catch::Contains("queued (2 blocked)"));
  // The reason was in the jobs table while the trials waited (what `dlsweep status` shows).
  std::map<std::string, std::string> state_of;
  for (const auto& j : jobs_while_waiting) state_of[j.job_id] = j.state;
  CHECK(state_of["100_1"] == orch::pending_job_state(kDrained));
  CHECK(state_of["100_3"] == "PENDING (JobArrayTaskLimit)");
  CHECK(state_of["100_0"] == "lost");
}
