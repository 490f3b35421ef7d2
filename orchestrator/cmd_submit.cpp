// cmd_submit.cpp — `dlsweep submit STUDY`: validate, record, run the sweep; and the parts
// that `resume` shares with it (database lock, running the engine).
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
#include "orchestrator/engine.hpp"
#include "orchestrator/job_builder.hpp"
#include "orchestrator/trial_files.hpp"
#include "orchestrator/sweep_runner.hpp"
#include "orchestrator/study_spec.hpp"
#include "orchestrator/study_removal.hpp"
#include "orchestrator/table_format.hpp"
#include "orchestrator/backend_factory.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

std::string locate_train_binary() {
  if (const char* env = std::getenv("DLSWEEP_TRAIN"); env && *env) return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path beside = self.parent_path() / "dlsweep-train";
    if (fs::exists(beside, ec)) return beside.string();
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    std::size_t start = 0;
    while (start <= p.size()) {
      auto end = p.find(':', start);
      std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!dir.empty()) {
        fs::path cand = fs::path(dir) / "dlsweep-train";
        if (::access(cand.c_str(), X_OK) == 0) return cand.string();
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return {};
}

// The orchestrator is the database's only writer: an advisory lock on DB.lock, held for
// the whole sweep, makes a second orchestrator on the same file fail fast instead of
// interleaving its writes. The lock dies with the process, so a crash never leaves it held.
Result<int> lock_database(const std::string& db) {
  std::string path = db + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::string("cannot create lock file: ") + std::strerror(errno), path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    char buf[32] = {};
    if (::pread(fd, buf, sizeof buf - 1, 0) > 0) holder = fmt::format(" (pid {})", std::atoi(buf));
    ::close(fd);
    return fail("another dlsweep orchestrator is driving this database" + holder, db,
                "wait for it to finish, stop it, or use another --db");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, pid.data(), pid.size(), 0);
  return fd;
}

Result<std::unique_ptr<db::Storage>> open_as_orchestrator(const std::string& db) {
  if (auto lock = lock_database(db); !lock) return std::unexpected(lock.error());
  return db::Storage::open_readwrite(db);
}

Result<std::string> train_binary_for(const StudySpec& spec) {
  if (!spec.trial.embedded) return std::string();
  std::string bin = locate_train_binary();
  if (bin.empty())
    return fail("cannot find dlsweep-train", "trial.trainer",
                "install it beside dlsweep, put it on PATH, or set DLSWEEP_TRAIN");
  return bin;
}

int run_sweep(db::Storage& storage, const StudySpec& spec, std::int64_t study_id, const EngineOptions& opts,
              const std::string& db, const std::function<Status(Engine&)>& before_run) {
  boost::asio::io_context io;
  auto backend = make_backend(io, spec, opts.runs_dir / spec.name);
  if (!backend) {
    fmt::print(stderr, "error: {}\n", backend.error().message());
    return exit_code::runtime;
  }
  Progress progress = Progress::for_stderr();
  std::error_code ec;
  fs::create_directories(opts.runs_dir / spec.name, ec);
  progress.set_log((opts.runs_dir / spec.name / kOrchestratorLog).string());
  Engine engine(io, storage, **backend, spec, study_id, opts, progress);
  if (before_run) {
    if (auto st = before_run(engine); !st) {
      progress.say(fmt::format("error: {}", st.error().message()));
      return exit_code::runtime;
    }
  }
  auto outcome = engine.run();
  if (!outcome) {
    progress.say(fmt::format("error: {}", outcome.error().message()));
    return exit_code::runtime;
  }
  const auto& s = outcome->snapshot;
  if (outcome->detached) {
    progress.say(fmt::format("{} complete so far; the rest run on — `dlsweep --db {} resume {}` follows them", s.complete,
                             db, spec.name));
    return exit_code::detached;
  }
  progress.say(fmt::format("{} complete, {} pruned, {} failed, {} cancelled — results: dlsweep --db {} results {}",
                           s.complete, s.pruned, s.failed, s.cancelled, db, spec.name));
  if (outcome->interrupted) {
    if (s.cancelled > 0)
      progress.say(fmt::format("{} cancelled; `dlsweep --db {} resume {} --rerun cancelled` runs them again",
                               trials_word(s.cancelled), db, spec.name));
    return exit_code::interrupted;
  }
  if (!outcome->failed_fast.empty()) {
    progress.say(fmt::format("stopped early: {}\nfix the program, then `dlsweep --db {} resume {} --rerun failed,cancelled` "
                             "runs the failed trials again and the rest",
                             outcome->failed_fast, db, spec.name));
  }
  if (s.complete == 0 && s.created > 0) {
    std::string why;
    for (const auto& [reason, n] : outcome->failure_reasons) why += fmt::format("\n  {}: {}", trials_word(n), reason);
    progress.say(fmt::format("no trial completed{}", why.empty() ? "" : ":" + why));
    return exit_code::trials_failed;
  }
  return exit_code::ok;
}

// Before the study is recorded or anything queued: would the scheduler accept its jobs at
// all? A Slurm refusal (unknown partition, no slurm.conf) is a study error, reported with
// the key it comes from; it never becomes a round of failed trials burning their retries.
// Leaves no trace when it fails (the study's directory did not exist before).
Status preflight(const StudySpec& spec, const EngineOptions& opts) {
  if (spec.backend.kind == "local") return {};
  const fs::path study_root = opts.runs_dir / spec.name;
  Status st = [&]() -> Status {
    boost::asio::io_context io;
    auto backend = make_backend(io, spec, study_root);
    if (!backend) return std::unexpected(backend.error());
    return (*backend)->preflight(build_job(spec, opts.train_binary, 0, 0, 0, trial_dir_for(opts.runs_dir, spec.name, 0),
                                           largest_shape_params(spec)));
  }();
  if (!st) {
    std::error_code ec;
    fs::remove_all(study_root, ec);
  }
  return st;
}

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
  if (!spec) {
    for (const auto& e : spec.error()) fmt::print(stderr, "error: {}\n", e.message());
    fmt::print(stderr, "{} error{} in {}; nothing was recorded{}.\n", spec.error().size(),
               spec.error().size() == 1 ? "" : "s", a.study_file, a.replace ? " or deleted" : "");
    return exit_code::usage;
  }
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
    return dry_run(*spec, opts.runs_dir, opts.train_binary);
  }
  // --as-job with a backend that cannot run it: refused before --replace deletes anything.
  if (a.as_job && spec->backend.kind != "slurm") return submit_as_job(*spec, a.db, a.study_file, opts.runs_dir);
  // The new study file is valid: only now may --replace delete the old study.
  std::optional<Replacement> replaced;
  if (a.replace) {
    auto r = replace_study(a, spec->name);
    if (auto* code = std::get_if<int>(&r)) return *code;
    replaced = std::move(std::get<Replacement>(r));
  }
  if (a.as_job) return submit_as_job(*spec, a.db, a.study_file, opts.runs_dir);
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
  auto study_id = storage->create_study(ns);
  if (!study_id) {
    fmt::print(stderr, "error: {}\n", study_id.error().message());
    if (auto existing = storage->find_study(spec->name); existing && *existing)
      fmt::print(stderr, "(`dlsweep submit --replace {}` deletes the recorded study and submits this file)\n",
                 a.study_file);
    return exit_code::usage;
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
