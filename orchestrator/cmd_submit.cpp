// cmd_submit.cpp — `dlsweep submit STUDY`: validate, record, run the sweep. What `resume`
// shares with it: db/orchestrator_lock (the study's lock), engine/sweep_runner (preflight, running the engine), orchestrator/run_sweep (what the user sees of it).
//
// Order matters: the study is validated completely before the database is opened, so an
// invalid study leaves no trace; the study row is written before any trial exists.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "common/asio.hpp"
#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/as_job.hpp"
#include "orchestrator/dry_run.hpp"
#include "orchestrator/read_support.hpp"
#include "schedulers/backend_kinds.hpp"
#include "engine/engine.hpp"
#include "engine/job_builder.hpp"
#include "engine/trial_files.hpp"
#include "db/orchestrator_lock.hpp"
#include "orchestrator/run_sweep.hpp"
#include "engine/sweep_runner.hpp"
#include "engine/warm_start_load.hpp"
#include "study/spec.hpp"
#include "orchestrator/relocation.hpp"
#include "orchestrator/removal.hpp"
#include "orchestrator/table_format.hpp"
#include "engine/backend_factory.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

// `submit --replace`: under the study's lock (kept for the sweep that follows), the study
// of this name, if the database holds one, is removed as `delete --files --yes` removes it.
// Returns the lock's storage handle and what was removed (nullopt: there was none), or the
// exit code of a refusal (nothing deleted).
struct Replacement {
  std::unique_ptr<db::Storage> storage;
  std::optional<db::StudyRow> old;
  Removed removed;
};

std::variant<Replacement, int> replace_study(const SubmitArgs& a, const std::string& name) {
  // The study's lock: a study its orchestrator drives is refused, naming it; the database's
  // other studies (and their orchestrators) are left as they are.
  auto storage = db::open_as_orchestrator(a.db, name);
  if (!storage) {
    return print_error(storage.error(), exit_code::runtime, "nothing was deleted or recorded.");
  }
  Replacement r{std::move(*storage), std::nullopt, {}};
  auto row = r.storage->find_study(name);
  if (!row) {
    return print_error(row.error(), exit_code::runtime);
  }
  if (!*row) {
    fmt::print(stderr, "--replace: {} holds no study named '{}'; nothing to replace\n", a.db, name);
    return r;
  }
  // Only files this database owns go: after a move, where the project is now; in a copy, the
  // copy's own — never the original's (relocation.hpp).
  db::StudyRow study = **row;
  auto trials = r.storage->list_trials(study.id);
  if (!trials) return print_error(trials.error(), exit_code::runtime);
  auto owned = owned_study_dir(study, *trials, a.db);
  if (!owned) return print_error(owned.error(), exit_code::runtime);
  if (*owned) study.root_dir = (*owned)->string();
  else fmt::print(stderr, "--replace: {} belongs to the original of this copied study; it stays\n", study.root_dir);
  auto plan = plan_removal(*r.storage, study, /*files=*/owned->has_value());
  if (!plan) {
    return print_error(under("--replace", plan.error()),
                       plan.error().is(ErrorKind::bad_input) ? exit_code::usage : exit_code::runtime,
                       "nothing was deleted or recorded.");
  }
  auto removed = remove_study(*r.storage, *plan, a.db, "dlsweep submit --replace");
  if (!removed) {
    return print_error(under("--replace", removed.error()), exit_code::runtime);
  }
  fmt::print(stderr, "replaced study '{}': deleted {}; {}\n({})\n", name, describe_rows(removed->rows),
             removed->files_note, removed->log_note);
  r.old = **row;
  r.removed = std::move(*removed);
  return r;
}

// The steps of `submit`, in order; each returns the exit code of a refusal (its message
// printed), or what the next step needs.

/// A study file's refusal: every error, then "N errors in FILE; nothing was recorded."
int refuse_file(const SubmitArgs& a, const auto& errors) {
  return report_file_errors(errors, a.study_file, a.replace ? "recorded or deleted" : "recorded");
}

/// Step 1: the study file read and checked whole, where its runs go, dlsweep-train, and
/// the warm start's earlier trials (read-only) — before anything is recorded or deleted.
struct Prepared {
  StudySpec spec;
  EngineOptions opts;
  std::optional<WarmStartLoad> warm;
  fs::path study_root;
};
std::variant<Prepared, int> prepare(const SubmitArgs& a) {
  auto spec = load_study(a.study_file);
  if (!spec) return refuse_file(a, spec.error());
  Prepared p{std::move(*spec), {}, std::nullopt, {}};
  auto train = train_binary_for(p.spec);
  if (!train) return print_error(train.error(), exit_code::runtime);
  p.opts.train_binary = *train;
  p.opts.detach_on_sigterm = a.detach_on_term;
  std::error_code ec;
  p.opts.runs_dir = fs::absolute(p.spec.runs_dir, ec);
  p.study_root = p.opts.runs_dir / p.spec.name;
  if (!a.dry_run && !p.spec.search.warm_start.empty()) {
    auto loaded = load_warm_start(p.spec, a.db, nullptr);
    if (!loaded) return refuse_file(a, loaded.error());
    p.warm = std::move(*loaded);
  }
  return p;
}

/// Step 3: the study's name is free in the database and its runs directory is empty. The
/// same study submitted again (an edited file, a second `submit`) is told how to go on,
/// before the runs directory's own complaint; while its orchestrator still drives it, the
/// refusal names that orchestrator (its pid and host).
std::optional<int> check_name_free(const SubmitArgs& a, const Prepared& p) {
  std::error_code ec;
  bool found_here = false;
  if (!a.replace && fs::is_regular_file(a.db, ec))
    if (auto ro = db::Storage::open_readonly(a.db))
      if (auto found = (*ro)->find_study(p.spec.name); found && *found) found_here = true;
  if (found_here) {
    // Taken here (after the read-only handle is closed: closing a lock file's descriptor
    // would drop this process's lock on it); the process exits right after the refusal.
    if (auto lock = db::lock_study(a.db, p.spec.name); !lock)
      return print_error(lock.error(), exit_code::runtime, "nothing was recorded.");
    return print_error(
            Error{fmt::format("a study named '{}' is already in {}", p.spec.name, a.db), a.study_file + ": name",
                  fmt::format("`dlsweep --db {} resume {}` continues it; `dlsweep --db {} submit --replace {}` deletes "
                              "it and submits this file; or give this study another name",
                              a.db, p.spec.name, a.db, a.study_file),
                  ErrorKind::bad_input},
            exit_code::usage, "nothing was recorded.");
  }
  if (fs::exists(p.study_root, ec) && !fs::is_empty(p.study_root, ec)) {
    const std::string fix = a.replace ? "no study of this database owns it: remove that directory, or set runs_dir "
                                        "in the study"
                                      : fmt::format("`dlsweep submit --replace {}` deletes that study and its "
                                                    "directory first when this database holds it; else remove the "
                                                    "directory, or set runs_dir in the study",
                                                    a.study_file);
    return print_error(Error{fmt::format("{} already holds trial directories of an earlier study named '{}'",
                                         p.study_root.string(), p.spec.name),
                             a.study_file + ": runs_dir", fix, ErrorKind::bad_input},
                       exit_code::usage);
  }
  return std::nullopt;
}

/// Step 5: the study's rows (with its warm-start trials, in one commit: a resume never finds
/// a warm-started study without them), its directory's marker, and the --replace event.
std::variant<std::int64_t, int> record_study(const SubmitArgs& a, const Prepared& p, db::Storage& storage,
                                             const std::optional<Replacement>& replaced) {
  std::error_code ec;
  db::NewStudy ns{p.spec.name, p.spec.to_json().dump(), fs::absolute(a.study_file, ec).string(), p.study_root.string(),
                  p.spec.objective.metric, p.spec.objective.mode, p.spec.objective.target};
  // Where the study lives (relocation.hpp): what `resume` compares with where it finds it.
  ns.home_db = fs::absolute(a.db, ec).lexically_normal().string();
  ns.home_root = home_root(ns.home_db, ns.source_path, ns.root_dir).string();
  if (p.warm)
    if (auto b = storage.begin_batch(); !b) return print_error(b.error(), exit_code::runtime);
  auto study_id = storage.create_study(ns);
  if (!study_id) {
    auto existing = storage.find_study(p.spec.name);
    return print_error(study_id.error(), exit_code::usage,
                       existing && *existing
                           ? fmt::format("(`dlsweep submit --replace {}` deletes the recorded study and submits this file)",
                                         a.study_file)
                           : std::string());
  }
  if (p.warm) {
    auto st = storage.add_warm_start_trials(*study_id, p.warm->rows, p.warm->summary());
    if (st) st = storage.commit_batch();
    if (!st) return print_error(st.error(), exit_code::runtime, "nothing was recorded.");
    for (const auto& n : p.warm->notes) fmt::print(stderr, "{}\n", n);
  }
  if (auto row = storage.find_study(p.spec.name); row && *row) {
    if (auto st = write_study_marker(p.study_root, p.spec.name, (*row)->created_at, fs::absolute(a.db, ec).string()); !st)
      print_warning(st.error());
    if (replaced && replaced->old) {
      db::EventRow why;
      why.study_id = *study_id;
      why.who = "user";
      why.kind = "replace";
      why.reason = fmt::format("replaced the study of this name created {} (`dlsweep submit --replace`): deleted {}; {}",
                               iso_utc(replaced->old->created_at), describe_rows(replaced->removed.rows),
                               replaced->removed.files_note);
      if (auto e = storage.note_event(why); !e) print_warning(e.error());
    }
  }
  return *study_id;
}

}  // namespace

int cmd_submit(const SubmitArgs& a) {
  // 1. The study, checked whole: an invalid study leaves no trace.
  auto prepared = prepare(a);
  if (auto* code = std::get_if<int>(&prepared)) return *code;
  Prepared& p = std::get<Prepared>(prepared);
  if (a.dry_run) {
    if (a.replace) fmt::print(stderr, "--replace: a dry run deletes nothing\n");
    return dry_run(p.spec, p.opts.runs_dir, p.opts.train_binary, a.db);
  }
  // 2. --as-job with a backend that cannot run it is refused before --replace deletes
  // anything; the new study file is valid: only now may --replace delete the old study.
  const sched::BackendKind* kind = sched::find_backend_kind(p.spec.backend.kind);
  if (a.as_job && !(kind && kind->batch_scheduler)) return submit_as_job(p.spec, a.db, a.study_file, p.opts.runs_dir);
  std::optional<Replacement> replaced;
  if (a.replace) {
    auto r = replace_study(a, p.spec.name);
    if (auto* code = std::get_if<int>(&r)) return *code;
    replaced = std::move(std::get<Replacement>(r));
  }
  if (a.as_job) return submit_as_job(p.spec, a.db, a.study_file, p.opts.runs_dir);
  // 3. Its name and directory are free.
  if (auto code = check_name_free(a, p)) return *code;
  // 4. The scheduler would take its jobs.
  if (auto st = preflight(p.spec, p.opts); !st)
    return print_error(under(a.study_file, st.error()), exit_code::usage, "nothing was recorded or queued.");
  // 5. Recorded, under the study's lock (taken by --replace already): a second submit of
  // this study is refused; other studies' orchestrators write the same database beside it.
  std::unique_ptr<db::Storage> storage;
  if (replaced) {
    storage = std::move(replaced->storage);
  } else {
    auto opened = db::open_as_orchestrator(a.db, p.spec.name);
    if (!opened) return print_error(opened.error(), exit_code::runtime);
    storage = std::move(*opened);
  }
  auto study_id = record_study(a, p, *storage, replaced);
  if (auto* code = std::get_if<int>(&study_id)) return *code;
  // 6. The sweep.
  return run_sweep(*storage, p.spec, std::get<std::int64_t>(study_id), p.opts, a.db, nullptr);
}

}  // namespace dlsweep::orch
