// cmd_resume.cpp — `dlsweep resume STUDY`: continue a sweep whose orchestrator stopped
// (Ctrl-C) or died (killed, machine rebooted, login node reaped it).
//
// Steps: take the study's lock (db/orchestrator_lock: other studies of the database may run
// meanwhile, each under its own); rebuild the study from the database (the study file may
// have changed or be gone: the stored, validated spec is what the trials were sampled
// from); re-ingest every trial's metrics files; then hand over to the engine
// (Engine::restore). Local backend: stop any process still running for a trial the dead
// orchestrator had launched, and the engine requeues those trials. Slurm: the jobs ran on
// without it, so the engine follows them again (found on the controller, or by the job id
// recorded in the database; accounting tells how those that ended meanwhile ended) and
// cancels the study's jobs that belong to no live trial. Either way it retries failed
// trials with retries left, launches WAITING ones, and keeps sampling.
//
// Before anything runs, where the study lives is settled (relocation.hpp): a project moved
// with its database is followed (every stored path re-rooted, one line says so), `--relocate
// OLD=NEW` re-roots by hand, and a copy that would write into the original's files is
// refused.
//
// --add-trials N grows the study's trial budget first (study/growth.hpp): the stored spec's
// search.trials and an 'add_trials' event, in one transaction, before anything runs; what
// the engine then runs is the grown study. Enqueued trials (`dlsweep enqueue`) waiting in
// the database are created before any sampled one (engine_enqueue.cpp).
#include <fmt/format.h>

#include "orchestrator/error_printer.hpp"
#include "orchestrator/as_job.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "schedulers/backend_kinds.hpp"
#include "engine/progress.hpp"
#include "engine/backend_factory.hpp"
#include "engine/recovery.hpp"
#include "study/growth.hpp"
#include "study/spec.hpp"
#include "db/orchestrator_lock.hpp"
#include "orchestrator/relocation.hpp"
#include "orchestrator/run_sweep.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

int cmd_resume(const ResumeArgs& a) {
  if (!fs::exists(a.db)) {
    return print_error(Error{"no such database", a.db, "pass the --db of the sweep to resume", ErrorKind::not_found});
  }
  if (a.as_job && !a.rerun.empty()) {
    // The job's resume runs again whenever Slurm requeues it: a --rerun would run the trials again each time.
    return print_error(Error{"--as-job does not take --rerun", "resume", fmt::format(
                                 "run `dlsweep resume {} --rerun {}` on a node where it may run, or resume without --rerun",
                                 a.study, a.rerun), ErrorKind::bad_input}, exit_code::usage);
  }
  EngineOptions opts;
  for (std::size_t start = 0; start < a.rerun.size();) {
    auto end = a.rerun.find(',', start);
    std::string word = a.rerun.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (word == "cancelled") opts.rerun.insert(TrialState::cancelled);
    else if (word == "failed") opts.rerun.insert(TrialState::failed);
    else {
      return print_error(Error{fmt::format("unknown state '{}'", word), "--rerun", "use cancelled, failed or cancelled,failed",
                               ErrorKind::bad_input});
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  // A name the database does not hold is told before any lock is taken (no lock file is made
  // for a typo); a read that fails here (e.g. a schema this resume upgrades) is left to the
  // read-write open below.
  if (auto ro = db::Storage::open_readonly(a.db); ro) {
    if (auto row = (*ro)->find_study(a.study); row && !*row) {
      auto named = find_study(**ro, a.study);
      return print_error(named ? Error{fmt::format("no study named '{}'", a.study), a.db, "", ErrorKind::not_found}
                               : under(a.db, named.error()),
                         exit_code::usage);
    }
  }
  // The study's lock: its orchestrator, if one still runs, keeps it; the database's other
  // studies may be driven by their own orchestrators meanwhile.
  auto storage = db::open_as_orchestrator(a.db, a.study);
  if (!storage) {
    return print_error(storage.error(), exit_code::runtime);
  }
  auto row = (*storage)->find_study(a.study);
  if (!row) {
    return print_error(row.error(), exit_code::runtime);
  }
  if (!*row) {
    // The error names the studies the database holds (a typo is seen at once).
    auto named = find_study(**storage, a.study);
    return print_error(named ? Error{fmt::format("no study named '{}'", a.study), a.db, "", ErrorKind::not_found}
                             : under(a.db, named.error()),
                       exit_code::usage);
  }
  auto spec = parse_study((*row)->spec_json, StudyFormat::json, (*row)->source_path);
  if (!spec) {
    return print_stored_study_errors(spec.error());
  }
  // A branching study decided its later branches from how these ended: running one again would
  // change decisions already taken. Refused before anything is written.
  if (!a.rerun.empty() && spec->search.algorithm == "branch")
    return print_error(Error{"--rerun cannot run the trials of a branching study again",
                             "resume",
                             fmt::format("its later branches were decided from how these ended; resume without --rerun (a "
                                         "failed branch's batch gets another seed where the answer is open), or submit the "
                                         "study again under a new name to measure afresh"),
                             ErrorKind::bad_input},
                       exit_code::usage, "nothing was changed.");
  // --as-job on a backend whose trials are this process's own (local): refused before the
  // study's place is settled or its budget grown, so nothing is written.
  if (a.as_job)
    if (auto st = needs_batch_scheduler(*spec, "the stored study"); !st)
      return print_error(st.error(), exit_code::usage, "nothing was changed.");
  // Where the study lives (relocation.hpp): a moved project is followed (its stored paths
  // re-rooted, said in one line), --relocate re-roots by hand, a copy is refused before
  // anything is written — before --add-trials grows the budget too.
  const sched::BackendKind* kind = sched::find_backend_kind(spec->backend.kind);
  auto settled = settle_study_place(**storage, **row, a.db, a.relocate, kind && kind->jobs_outlive_orchestrator);
  if (!settled) {
    return print_error(settled.error(), settled.error().is(ErrorKind::bad_input) ? exit_code::usage : exit_code::runtime,
                       "nothing was changed.");
  }
  if (settled->row.spec_json != (*row)->spec_json || settled->row.source_path != (*row)->source_path) {
    spec = parse_study(settled->row.spec_json, StudyFormat::json, settled->row.source_path);
    if (!spec) {
      return print_stored_study_errors(spec.error());
    }
  }
  *row = settled->row;
  auto train = train_binary_for(*spec);
  if (!train) {
    return print_error(train.error(), exit_code::runtime);
  }
  opts.train_binary = *train;
  std::optional<BudgetGrowth> grown;
  if (a.add_trials_given) {
    auto g = grow_trial_budget(*spec, (*row)->spec_json, a.add_trials, a.study);
    if (!g) {
      return print_error(g.error(), g.error().is(ErrorKind::bad_input) ? exit_code::usage : exit_code::runtime,
                         "nothing was changed.");
    }
    db::EventRow why;
    why.study_id = (*row)->id;
    why.who = "user";
    why.kind = "add_trials";
    why.reason = fmt::format("trial budget (search.trials) {} -> {} by `dlsweep resume --add-trials {}`",
                             g->old_budget, g->new_budget, a.add_trials);
    if (auto st = (*storage)->update_study_spec((*row)->id, (*row)->spec_json, g->spec_json, why); !st) {
      return print_error(st.error(), exit_code::runtime);
    }
    spec = parse_study(g->spec_json, StudyFormat::json, (*row)->source_path);
    if (!spec) {  // grow_trial_budget read it back already; a bug if it fails now
      return print_stored_study_errors(spec.error());
    }
    grown = *g;
  }
  opts.runs_dir = fs::path((*row)->root_dir).parent_path();
  opts.detach_on_sigterm = a.detach_on_term;
  if (a.as_job) {
    // The budget grown and the place settled above are in the database: the job's plain
    // `resume` runs on from them. The study's lock goes with this process first.
    const std::string source = (*row)->source_path;
    const std::string name = (*row)->name;
    storage->reset();
    const int rc = resume_as_job(*spec, a.db, name, opts.runs_dir, source);
    if (rc != exit_code::ok && grown)
      fmt::print(stderr, "note: the trial budget was grown to {} already (search.trials): once the cause is fixed, "
                         "`dlsweep resume {} --as-job` without --add-trials\n", grown->new_budget, name);
    return rc;
  }

  auto trials = (*storage)->list_trials((*row)->id);
  if (!trials) {
    return print_error(trials.error(), exit_code::runtime);
  }
  // Local trials are this machine's processes, children of the dead orchestrator: the
  // backend stops what is left of them; a batch scheduler's jobs are not ours to kill (they
  // may be on other nodes, or on this one) and its backend stops nothing.
  const bool own_processes = kind && !kind->jobs_outlive_orchestrator;
  std::size_t records = 0, stopped = 0;
  std::vector<fs::path> orphan_dirs;
  for (const auto& t : *trials) {
    if (auto n = reingest_trial(**storage, t); n) records += *n;
    else fmt::print(stderr, "warning: trial {}: {}\n", t.number, n.error().message());
    // WAITING too: a trial launched just before the orchestrator died can still read WAITING
    // (its QUEUED was committed after the submit, or, in snapshot mode, not yet published);
    // a process of it is an orphan like any other, and must not run beside the relaunch.
    if (is_active(t.state) || t.state == TrialState::waiting) orphan_dirs.emplace_back(t.trial_dir);
  }
  // A moved project: a process of the dead orchestrator names its trial's old directory.
  for (const auto& d : settled->old_trial_dirs) orphan_dirs.push_back(d);
  if (own_processes && !orphan_dirs.empty()) {
    boost::asio::io_context orphan_io;
    auto backend = make_backend(orphan_io, *spec, fs::path((*row)->root_dir), /*create_dirs=*/false);
    if (!backend) {
      return print_error(backend.error(), exit_code::runtime);
    }
    stopped = (*backend)->stop_orphans(orphan_dirs, 10.0);
  }
  auto jobs = (*storage)->list_jobs((*row)->id);
  if (!jobs) {
    return print_error(jobs.error(), exit_code::runtime);
  }
  auto summaries = (*storage)->summaries((*row)->id);
  if (!summaries) {
    return print_error(summaries.error(), exit_code::runtime);
  }
  fmt::print(stderr, "resuming study {}: {} known, {} new metric record{} read{}\n", a.study,
             trials_word(static_cast<std::int64_t>(trials->size())), records, plural_s(static_cast<long long>(records)),
             own_processes ? fmt::format(", {} orphaned process{} stopped", stopped, stopped == 1 ? "" : "es")
                           : std::string());
  if (grown) {
    std::int64_t next = 0;
    for (const auto& t : *trials) next = std::max(next, t.number + 1);
    fmt::print(stderr, "trial budget {} -> {} (search.trials); new trials are numbered from {}\n", grown->old_budget,
               grown->new_budget, next);
  }
  if (auto st = (*storage)->set_study_state((*row)->id, "RUNNING", "resumed"); !st) {
    return print_error(st.error(), exit_code::runtime);
  }
  return run_sweep(**storage, *spec, (*row)->id, opts, a.db,
                   [&](Engine& e) {
                     auto st = e.restore(*trials, *summaries, *jobs);
                     if (st) {
                       const auto& c = e.restore_counts();
                       fmt::print(stderr, "live trials: {} followed on {}, {} requeued, {} had finished unwatched (recorded, "
                                  "not run again); {} failed trial{} retried; {} stray job{} cancelled\n",
                                  c.adopted, spec->backend.kind, c.requeued, c.finished, c.retried, plural_s(static_cast<long long>(c.retried)),
                                  c.strays_cancelled, plural_s(static_cast<long long>(c.strays_cancelled)));
                       if (!opts.rerun.empty()) fmt::print(stderr, "{} re-run (--rerun {})\n", trials_word(static_cast<std::int64_t>(c.rerun)), a.rerun);
                     }
                     return st;
                   });
}

}  // namespace dlsweep::orch
