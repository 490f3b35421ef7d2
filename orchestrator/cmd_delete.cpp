// cmd_delete.cpp — `dlsweep delete STUDY [--files] [--yes]`: remove a study from the
// database (every row of it, in one transaction) and, with --files, its directory
// <runs_dir>/<study>; so that a study recorded wrong (a wrong script path, a wrong space)
// can be submitted again.
//
// Order: the name is looked up read-only first (an unknown one is a usage error with a
// suggestion, whether or not an orchestrator runs); then the database lock is taken, so no
// orchestrator drives the file while the study is counted, confirmed and deleted; then what
// would go is shown and confirmed (a terminal's y/N, or --yes); then removal does it.
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/removal.hpp"
#include "db/orchestrator_lock.hpp"
#include "orchestrator/relocation.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

int refuse(const Error& e, int code) { return print_error(e, code, "nothing was deleted."); }

// The study, or an error: not_found (with a suggestion) for a name the database lacks.
Result<db::StudyRow> find_named(const db::Storage& storage, const std::string& name, const std::string& db) {
  auto row = storage.find_study(name);
  if (!row) return std::unexpected(row.error());
  if (*row) return **row;
  std::vector<std::string> known;
  if (auto all = storage.list_studies(); all)
    for (const auto& s : *all) known.push_back(s.name);
  return fail_as(ErrorKind::not_found, fmt::format("no study named '{}'", name), db, unknown_study_fix(name, known));
}

int lookup_failed(const Error& e) {
  return refuse(e, e.is(ErrorKind::not_found) ? exit_code::usage : exit_code::runtime);
}

// Asks on the terminal; true when the answer is yes.
bool ask(const std::string& question) {
  fmt::print(stderr, "{} [y/N] ", question);
  std::fflush(stderr);
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return confirmed(answer);
}

}  // namespace

int cmd_delete(const DeleteArgs& a) {
  std::error_code ec;
  if (!fs::exists(a.db, ec))
    return refuse(Error{"no such database", a.db, "pass the --db that holds the study"}, exit_code::usage);
  {
    auto ro = db::Storage::open_readonly(a.db);
    if (!ro) return refuse(ro.error(), exit_code::runtime);
    if (auto study = find_named(**ro, a.study, a.db); !study) return lookup_failed(study.error());
  }
  // The study's lock: while an orchestrator drives this study, nothing is deleted; the
  // database's other studies may run meanwhile (each under its own lock).
  auto lock = db::lock_study(a.db, a.study);
  if (!lock) {
    Error e = lock.error();
    if (db::study_lock_state(a.db, a.study) == db::LockState::held)
      e.fix = fmt::format("wait for it to finish, or stop it (Ctrl-C, or `dlsweep --db {} cancel {}`), then delete",
                          a.db, a.study);
    return refuse(Error{e.what, a.db, e.fix}, exit_code::runtime);
  }
  auto storage = db::Storage::open_readwrite(a.db);
  if (!storage) return refuse(storage.error(), exit_code::runtime);
  auto study = find_named(**storage, a.study, a.db);
  if (!study) return lookup_failed(study.error());
  if (a.files) {
    // Only a directory this database owns: after a move, where the project is now; in a copy,
    // the copy's own, never the original's (relocation.hpp).
    auto trials = (*storage)->list_trials(study->id);
    if (!trials) return refuse(trials.error(), exit_code::runtime);
    auto owned = owned_study_dir(*study, *trials, a.db);
    if (!owned) return refuse(owned.error(), exit_code::runtime);
    if (!*owned)
      return refuse(Error{"not removing it: this database is a copy, and the directory belongs to the original study",
                          study->root_dir, "delete the study without --files", ErrorKind::bad_input},
                    exit_code::usage);
    study->root_dir = (*owned)->string();
  }
  auto plan = plan_removal(**storage, *study, a.files);
  if (!plan) return refuse(plan.error(), plan.error().is(ErrorKind::bad_input) ? exit_code::usage : exit_code::runtime);

  const std::string dir_words = !a.files           ? fmt::format("its directory {} is kept (--files removes it)", study->root_dir)
                                : plan->dir_exists ? fmt::format("and its directory {}", study->root_dir)
                                                   : fmt::format("its directory {} is already gone", study->root_dir);
  fmt::print(stderr, "study '{}' in {} ({}, created {}): {}\nto delete: {}; {}\n", a.study, a.db, study->state,
             iso_utc(study->created_at), describe_states(plan->states), describe_rows(plan->rows), dir_words);
  if (!a.yes) {
    if (::isatty(STDIN_FILENO) != 1)
      return refuse(Error{"not confirmed: standard input is not a terminal to ask on", "delete",
                          "pass --yes to delete without asking"},
                    exit_code::usage);
    if (!ask(fmt::format("delete study '{}'{}?", a.study, a.files && plan->dir_exists ? " and its files" : ""))) {
      fmt::print(stderr, "nothing was deleted.\n");
      return exit_code::usage;
    }
  }
  auto removed = remove_study(**storage, *plan, a.db, a.files ? "dlsweep delete --files" : "dlsweep delete");
  if (!removed) {
    return print_error(removed.error(), exit_code::runtime);
  }
  fmt::print(stderr, "deleted study '{}' from {}: {}; {}\n({})\n", a.study, a.db, describe_rows(removed->rows),
             removed->files_note, removed->log_note);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
