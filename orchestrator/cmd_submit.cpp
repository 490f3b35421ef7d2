// cmd_submit.cpp — `dlsweep submit STUDY`: validate, record, run the sweep. What `resume`
// shares with it (database lock, preflight, running the engine) is engine/sweep_runner.cpp.
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
#include "orchestrator/commands.hpp"
#include "orchestrator/as_job.hpp"
#include "orchestrator/dry_run.hpp"
#include "orchestrator/read_support.hpp"
#include "schedulers/backend_kinds.hpp"
#include "engine/engine.hpp"
#include "engine/job_builder.hpp"
#include "engine/trial_files.hpp"
#include "engine/sweep_runner.hpp"
#include "engine/warm_start_load.hpp"
#include "study/spec.hpp"
#include "orchestrator/removal.hpp"
#include "orchestrator/table_format.hpp"
#include "engine/backend_factory.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

// `submit --replace`: under the database lock (kept for the sweep that follows), the study
// of this name, if the database holds one, is removed as `delete --files --yes` removes it.
// Returns the lock's storage handle and what was removed (nullopt: there was none), or the
// exit code of a refusal (nothing deleted).
struct Replacement {
  std::unique_ptr<db::Storage> storage;
  std::optional<db::StudyRow> old;
  Removed removed;
};

std::variant<Replacement, int> replace_study(const SubmitArgs& a, const std::string& name) {
  auto storage = open_as_orchestrator(a.db);
  if (!storage) {
    fmt::print(stderr, "error: {}\nnothing was deleted or recorded.\n", storage.error().message());
    return exit_code::runtime;
  }
  Replacement r{std::move(*storage), std::nullopt, {}};
  auto row = r.storage->find_study(name);
  if (!row) {
    fmt::print(stderr, "error: {}\n", row.error().message());
    return exit_code::runtime;
  }
  if (!*row) {
    fmt::print(stderr, "--replace: {} holds no study named '{}'; nothing to replace\n", a.db, name);
    return r;
  }
  auto plan = plan_removal(*r.storage, **row, /*files=*/true);
  if (!plan) {
    fmt::print(stderr, "error: --replace: {}\nnothing was deleted or recorded.\n", plan.error().message());
    return plan.error().is(ErrorKind::bad_input) ? exit_code::usage : exit_code::runtime;
  }
  auto removed = remove_study(*r.storage, *plan, a.db, "dlsweep submit --replace");
  if (!removed) {
    fmt::print(stderr, "error: --replace: {}\n", removed.error().message());
    return exit_code::runtime;
  }
  fmt::print(stderr, "replaced study '{}': deleted {}; {}\n({})\n", name, describe_rows(removed->rows),
             removed->files_note, removed->log_note);
  r.old = **row;
  r.removed = std::move(*removed);
  return r;
}

}  // namespace

int cmd_submit(const SubmitArgs& a) {
  auto spec = load_study(a.study_file);
  if (!spec) return report_file_errors(spec.error(), a.study_file, a.replace ? "recorded or deleted" : "recorded");
  EngineOptions opts;
  auto train = train_binary_for(*spec);
  if (!train) {
    fmt::print(stderr, "error: {}\n", train.error().message());
    return exit_code::runtime;
  }
  opts.train_binary = *train;
  opts.detach_on_sigterm = a.detach_on_term;
  std::error_code ec;
  opts.runs_dir = fs::absolute(spec->runs_dir, ec);
  if (a.dry_run) {
    if (a.replace) fmt::print(stderr, "--replace: a dry run deletes nothing\n");
    return dry_run(*spec, opts.runs_dir, opts.train_binary, a.db);
  }
  // search.warm_start: the earlier trials are read and placed before anything is recorded
  // or --replace deletes anything (read-only, this study's own database too).
  std::optional<WarmStartLoad> warm;
  if (!spec->search.warm_start.empty()) {
    auto loaded = load_warm_start(*spec, a.db, nullptr);
    if (!loaded)
      return report_file_errors(loaded.error(), a.study_file, a.replace ? "recorded or deleted" : "recorded");
    warm = std::move(*loaded);
  }
  // --as-job with a backend that cannot run it: refused before --replace deletes anything.
  const sched::BackendKind* kind = sched::find_backend_kind(spec->backend.kind);
  if (a.as_job && !(kind && kind->batch_scheduler)) return submit_as_job(*spec, a.db, a.study_file, opts.runs_dir);
  // The new study file is valid: only now may --replace delete the old study.
  std::optional<Replacement> replaced;
  if (a.replace) {
    auto r = replace_study(a, spec->name);
    if (auto* code = std::get_if<int>(&r)) return *code;
    replaced = std::move(std::get<Replacement>(r));
  }
  if (a.as_job) return submit_as_job(*spec, a.db, a.study_file, opts.runs_dir);
  // The same study submitted again (an edited file, a second `submit`): say that this
  // database holds it and how to go on, before the runs directory's own complaint.
  if (!a.replace && fs::is_regular_file(a.db, ec)) {
    if (auto ro = db::Storage::open_readonly(a.db)) {
      if (auto found = (*ro)->find_study(spec->name); found && *found) {
        fmt::print(stderr,
                   "error: {}: name: a study named '{}' is already in {} (fix: `dlsweep --db {} resume {}` continues "
                   "it; `dlsweep --db {} submit --replace {}` deletes it and submits this file; or give this study "
                   "another name)\nnothing was recorded.\n",
                   a.study_file, spec->name, a.db, a.db, spec->name, a.db, a.study_file);
        return exit_code::usage;
      }
    }
  }
  fs::path study_root = opts.runs_dir / spec->name;
  if (fs::exists(study_root, ec) && !fs::is_empty(study_root, ec)) {
    const std::string fix = a.replace ? "no study of this database owns it: remove that directory, or set runs_dir "
                                        "in the study"
                                      : fmt::format("`dlsweep submit --replace {}` deletes that study and its "
                                                    "directory first when this database holds it; else remove the "
                                                    "directory, or set runs_dir in the study",
                                                    a.study_file);
    fmt::print(stderr,
               "error: {}: runs_dir: {} already holds trial directories of an earlier study named '{}' (fix: {})\n",
               a.study_file, study_root.string(), spec->name, fix);
    return exit_code::usage;
  }

  if (auto st = preflight(*spec, opts); !st) {
    fmt::print(stderr, "error: {}: {}\nnothing was recorded or queued.\n", a.study_file, st.error().message());
    return exit_code::usage;
  }

  std::unique_ptr<db::Storage> storage;
  if (replaced) {
    storage = std::move(replaced->storage);
  } else {
    auto opened = open_as_orchestrator(a.db);
    if (!opened) {
      fmt::print(stderr, "error: {}\n", opened.error().message());
      return exit_code::runtime;
    }
    storage = std::move(*opened);
  }
  db::NewStudy ns{spec->name, spec->to_json().dump(), fs::absolute(a.study_file, ec).string(), study_root.string(),
                  spec->objective.metric, spec->objective.mode, spec->objective.target};
  // With warm-start trials, the study row and their copies commit together: a resume never
  // finds a warm-started study without them.
  if (warm)
    if (auto b = storage->begin_batch(); !b) {
      fmt::print(stderr, "error: {}\n", b.error().message());
      return exit_code::runtime;
    }
  auto study_id = storage->create_study(ns);
  if (!study_id) {
    fmt::print(stderr, "error: {}\n", study_id.error().message());
    if (auto existing = storage->find_study(spec->name); existing && *existing)
      fmt::print(stderr, "(`dlsweep submit --replace {}` deletes the recorded study and submits this file)\n",
                 a.study_file);
    return exit_code::usage;
  }
  if (warm) {
    auto st = storage->add_warm_start_trials(*study_id, warm->rows, warm->summary());
    if (st) st = storage->commit_batch();
    if (!st) {
      fmt::print(stderr, "error: {}\nnothing was recorded.\n", st.error().message());
      return exit_code::runtime;
    }
    for (const auto& n : warm->notes) fmt::print(stderr, "{}\n", n);
  }
  if (auto row = storage->find_study(spec->name); row && *row) {
    if (auto st = write_study_marker(study_root, spec->name, (*row)->created_at, fs::absolute(a.db, ec).string()); !st)
      fmt::print(stderr, "warning: {}\n", st.error().message());
    if (replaced && replaced->old) {
      db::EventRow why;
      why.study_id = *study_id;
      why.who = "user";
      why.kind = "replace";
      why.reason = fmt::format("replaced the study of this name created {} (`dlsweep submit --replace`): deleted {}; {}",
                               iso_utc(replaced->old->created_at), describe_rows(replaced->removed.rows),
                               replaced->removed.files_note);
      if (auto e = storage->note_event(why); !e) fmt::print(stderr, "warning: {}\n", e.error().message());
    }
  }

  return run_sweep(*storage, *spec, *study_id, opts, a.db, nullptr);
}

}  // namespace dlsweep::orch
