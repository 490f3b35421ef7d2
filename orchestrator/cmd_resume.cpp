// cmd_resume.cpp — `dlsweep resume STUDY`: continue a sweep whose orchestrator stopped
// (Ctrl-C) or died (killed, machine rebooted, login node reaped it).
//
// Steps: take the database lock; rebuild the study from the database (the study file may
// have changed or be gone: the stored, validated spec is what the trials were sampled
// from); re-ingest every trial's metrics files; stop any process still running for a
// trial the dead orchestrator had launched; then let the engine requeue those trials,
// retry failed ones with retries left, launch WAITING ones, and keep sampling.
#include <fmt/format.h>

#include "orchestrator/commands.hpp"
#include "orchestrator/recovery.hpp"
#include "orchestrator/study_spec.hpp"
#include "orchestrator/sweep_runner.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

int cmd_resume(const ResumeArgs& a) {
  if (!fs::exists(a.db)) {
    fmt::print(stderr, "error: {}: no such database (fix: pass the --db of the sweep to resume)\n", a.db);
    return exit_code::usage;
  }
  auto lock = lock_database(a.db);
  if (!lock) {
    fmt::print(stderr, "error: {}\n", lock.error().message());
    return exit_code::runtime;
  }
  auto storage = db::Storage::open_readwrite(a.db);
  if (!storage) {
    fmt::print(stderr, "error: {}\n", storage.error().message());
    return exit_code::runtime;
  }
  auto row = (*storage)->find_study(a.study);
  if (!row) {
    fmt::print(stderr, "error: {}\n", row.error().message());
    return exit_code::runtime;
  }
  if (!*row) {
    fmt::print(stderr, "error: {}: no study named '{}' (fix: `dlsweep --db {} status` lists the studies)\n", a.db,
               a.study, a.db);
    return exit_code::usage;
  }
  auto spec = parse_study((*row)->spec_json, StudyFormat::json, (*row)->source_path);
  if (!spec) {
    for (const auto& e : spec.error()) fmt::print(stderr, "error: stored study: {}\n", e.message());
    return exit_code::runtime;
  }
  if (spec->backend.kind != "local") {
    fmt::print(stderr, "error: resume of '{}' backend studies is not available in this build\n", spec->backend.kind);
    return exit_code::usage;
  }
  EngineOptions opts;
  if (spec->trial.embedded) {
    opts.train_binary = locate_train_binary();
    if (opts.train_binary.empty()) {
      fmt::print(stderr, "error: cannot find dlsweep-train (fix: put it on PATH or set DLSWEEP_TRAIN)\n");
      return exit_code::runtime;
    }
  }
  opts.runs_dir = fs::path((*row)->root_dir).parent_path();

  auto trials = (*storage)->list_trials((*row)->id);
  if (!trials) {
    fmt::print(stderr, "error: {}\n", trials.error().message());
    return exit_code::runtime;
  }
  std::size_t records = 0, stopped = 0;
  for (const auto& t : *trials) {
    if (auto n = reingest_trial(**storage, t); n) records += *n;
    else fmt::print(stderr, "warning: trial {}: {}\n", t.number, n.error().message());
    if (is_active(t.state)) stopped += stop_processes(find_trial_processes(t.trial_dir), 10.0);
  }
  auto summaries = (*storage)->summaries((*row)->id);
  if (!summaries) {
    fmt::print(stderr, "error: {}\n", summaries.error().message());
    return exit_code::runtime;
  }
  fmt::print(stderr, "resuming study {}: {} trials known, {} new metric records read, {} orphaned process(es) stopped\n",
             a.study, trials->size(), records, stopped);
  if (auto st = (*storage)->set_study_state((*row)->id, "RUNNING", "resumed"); !st) {
    fmt::print(stderr, "error: {}\n", st.error().message());
    return exit_code::runtime;
  }
  return run_sweep(**storage, *spec, (*row)->id, opts, a.db,
                   [&](Engine& e) { return e.restore(*trials, *summaries); });
}

}  // namespace dlsweep::orch
