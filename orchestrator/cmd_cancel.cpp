// cmd_cancel.cpp — `dlsweep cancel STUDY [--trial N ...]`.
//
// Two cases, told apart by the study's lock (db/orchestrator_lock):
//  - an orchestrator is driving the study: it is the study's only writer, so cancel hands it a
//    request file (<runs_dir>/<study>/cancel-request) and waits until the trials are
//    recorded CANCELLED;
//  - none is: cancel takes the study's lock itself, stops the trials' jobs (local processes by
//    their DLSWEEP_TRIAL_DIR, Slurm jobs with one scancel of their recorded ids) and
//    records CANCELLED.

#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "engine/cancel_request.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/cancel_targets.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "engine/engine.hpp"
#include "engine/progress.hpp"
#include "engine/state_machine.hpp"
#include "db/orchestrator_lock.hpp"
#include "orchestrator/relocation.hpp"
#include "engine/trial_files.hpp"
#include "engine/backend_factory.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

bool targeted(const db::TrialRow& t, const std::vector<std::int64_t>& numbers) {
  for (auto n : numbers)
    if (n == t.number) return true;
  return false;
}

bool unfinished(TrialState s) { return s == TrialState::waiting || is_active(s); }

// Cancels through the running orchestrator; waits until the database shows it.
int cancel_via_orchestrator(const CancelArgs& a, const db::StudyRow& study, const CancelPlan& plan) {
  const std::string words = format_cancel_request({a.trials.empty(), plan.numbers});
  if (auto st = write_file_atomic(fs::path(study.root_dir) / kCancelRequestFile, words); !st)
    return print_error(st.error(), exit_code::runtime);
  fmt::print(stderr, "asked the running orchestrator to cancel {}\n",
             a.trials.empty() ? "the study" : trials_word(static_cast<std::int64_t>(plan.numbers.size())));
  for (int i = 0; i < 1200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto storage = db::Storage::open_readonly(a.db);
    if (!storage) continue;
    auto trials = (*storage)->list_trials(study.id);
    if (!trials) continue;
    bool pending = false;
    for (const auto& t : *trials) pending = pending || (targeted(t, plan.numbers) && unfinished(t.state));
    if (!pending) {
      fmt::print(stderr, "cancelled {} of {}\n", trials_word(static_cast<std::int64_t>(plan.numbers.size())), a.study);
      return exit_code::ok;
    }
  }
  return print_error(Error{"the orchestrator has not recorded the cancellation after 120 s", "", ""}, exit_code::runtime);
}

}  // namespace

int cmd_cancel(const CancelArgs& a) {
  auto ro = db::Storage::open_readonly(a.db);
  if (!ro) return print_error(ro.error(), exit_code::usage);
  auto study = (*ro)->find_study(a.study);
  if (!study) return print_error(study.error(), exit_code::runtime);
  if (!*study) return print_error(Error{"no study named '" + a.study + "'", a.db, "`dlsweep status` lists them"}, exit_code::usage);
  // Validate the numbers before anything is asked or written: an unknown one is an error.
  auto known = (*ro)->list_trials((*study)->id);
  if (!known) return print_error(known.error(), exit_code::runtime);
  // A copied project never cancels the original's trials (relocation.hpp); after a move the
  // study's files are where the project is now.
  auto place = check_study_place(**study, *known, a.db, /*batch_backend=*/false);
  if (!place) return print_error(place.error(), exit_code::usage, "nothing was cancelled.");
  if (place->reroot)
    if (auto moved = reroot_path((*study)->root_dir, *place->reroot)) (*study)->root_dir = moved->string();
  auto plan = plan_cancel(*known, a.trials, a.study);
  if (!plan) return print_error(plan.error(), exit_code::usage);
  for (const auto& note : plan->notes) fmt::print(stderr, "{}\n", note);
  ro->reset();
  if (plan->numbers.empty() && !a.trials.empty()) {
    fmt::print(stderr, "cancelled 0 trials of {}: none of them is unfinished\n", a.study);
    return exit_code::ok;
  }

  // The study's lock: held, an orchestrator drives this study and is asked; free, cancel
  // writes itself, beside any orchestrator of the database's other studies.
  auto lock = db::lock_study(a.db, a.study);
  if (!lock) {
    if (db::study_lock_state(a.db, a.study) != db::LockState::free) return cancel_via_orchestrator(a, **study, *plan);
    return print_error(lock.error(), exit_code::runtime, "nothing was cancelled.");
  }

  auto storage = db::Storage::open_readwrite(a.db);
  if (!storage) return print_error(storage.error(), exit_code::runtime);
  auto trials = (*storage)->list_trials((*study)->id);
  if (!trials) return print_error(trials.error(), exit_code::runtime);
  auto jobs = (*storage)->list_jobs((*study)->id);
  if (!jobs) return print_error(jobs.error(), exit_code::runtime);

  // The study's own backend cancels its jobs (Slurm: through its driver and slurm_conf);
  // built before anything changes, so a study this dlsweep cannot read changes nothing.
  auto spec = parse_study((*study)->spec_json, StudyFormat::json, (*study)->source_path);
  if (!spec) {
    return print_stored_study_errors(spec.error());
  }
  boost::asio::io_context io;
  auto backend = make_backend(io, *spec, fs::path((*study)->root_dir), /*create_dirs=*/false);
  if (!backend) return print_error(backend.error(), exit_code::runtime);
  std::vector<std::string> native_ids;
  std::size_t cancelled = 0;
  for (auto t : *trials) {
    if (!targeted(t, plan->numbers) || !unfinished(t.state)) continue;
    if (is_active(t.state)) {
      (*backend)->stop_orphans({fs::path(t.trial_dir)}, 10.0);  // local: its processes; batch: none
      for (const auto& j : *jobs)
        if (j.trial_id == t.id && j.attempt == t.attempt && j.backend == (*backend)->name()) native_ids.push_back(j.job_id);
    }
    auto next = next_state(t.state, t.attempt, TrialEvent::cancel, 0);
    if (!next) continue;
    if (auto st = (*storage)->transition({t.id, t.state, next->to, next->attempt, "user", "cancelled by `dlsweep cancel`", {}});
        !st)
      return print_error(st.error(), exit_code::runtime);
    ++cancelled;
  }
  // The trials are CANCELLED in the database whatever the scheduler says; a refusal names
  // the jobs that may still be on the cluster, and the exit status says so.
  auto jobs_cancelled = (*backend)->cancel_detached(native_ids);
  if (a.trials.empty())
    if (auto st = (*storage)->set_study_state((*study)->id, "STOPPED", "cancelled by `dlsweep cancel`"); !st)
      return print_error(st.error(), exit_code::runtime);
  fmt::print(stderr, "cancelled {} of {}\n", trials_word(static_cast<std::int64_t>(cancelled)), a.study);
  if (!jobs_cancelled) return print_error(jobs_cancelled.error(), exit_code::runtime);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
