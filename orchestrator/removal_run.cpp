// removal_run.cpp — the file and database steps of removing a study: read and check
// (plan_removal), then carry out (remove_study), and the marker `submit` writes. The rules
// are in removal.hpp; the checks themselves are the pure functions of
// removal.cpp.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "orchestrator/removal.hpp"
#include "engine/trial_files.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t kMaxMarkerBytes = 64 * 1024;

// Blocks the signals that end a command line program until release() or destruction.
class HeldSignals {
 public:
  HeldSignals() {
    sigset_t set;
    ::sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaddset(&set, sig);
    held_ = ::pthread_sigmask(SIG_BLOCK, &set, &old_) == 0;
  }
  ~HeldSignals() { release(); }
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;
  void release() {
    if (held_) ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    held_ = false;
  }

 private:
  sigset_t old_{};
  bool held_ = false;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<std::optional<std::string>> read_marker(const fs::path& dir) {
  const fs::path file = dir / kStudyMarkerFile;
  std::error_code ec;
  auto st = fs::symlink_status(file, ec);
  if (ec || !fs::exists(st)) return std::optional<std::string>{};
  if (!fs::is_regular_file(st) || fs::file_size(file, ec) > kMaxMarkerBytes || ec)
    return std::optional<std::string>(std::string());  // present but not a marker: proves nothing
  std::ifstream in(file);
  if (!in) return fail("cannot read the study marker", file.string(), "check the directory's permissions");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::optional<std::string>(std::move(text));
}

Result<std::vector<std::string>> entry_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename().string());
  if (ec) return fail("cannot list the directory: " + ec.message(), dir.string(), "check its permissions");
  return names;
}

// Checks the study's directory; sets plan.dir_exists.
Status check_dir(RemovalPlan& plan) {
  const auto& study = plan.study;
  if (study.root_dir.empty())
    return fail_as(ErrorKind::bad_input, "the study has no directory recorded", study.name,
                   "delete it without --files");
  const fs::path dir = study.root_dir;
  std::error_code ec;
  auto st = fs::symlink_status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    return fail("cannot look at the study's directory: " + ec.message(), dir.string());
  if (!fs::exists(st)) return {};  // already gone: nothing to remove
  if (fs::is_symlink(st))
    return fail_as(ErrorKind::bad_input, "not removing it: it is a symbolic link, not the directory dlsweep made",
                   dir.string(), "remove what it points to by hand if you no longer need it, or delete without --files");
  if (!fs::is_directory(st))
    return fail_as(ErrorKind::bad_input, "not removing it: it is not a directory", dir.string(),
                   "delete the study without --files");
  auto marker = read_marker(dir);
  if (!marker) return std::unexpected(marker.error());
  auto names = entry_names(dir);
  if (!names) return std::unexpected(names.error());
  if (auto ok = check_study_dir(dir, study.name, study.created_at, *marker, *names); !ok) return ok;
  plan.dir_exists = true;
  return {};
}

// Appends one line to <runs_dir>/dlsweep-deletions.log; says where, or why not.
std::string log_removal(const std::string& line, const fs::path& study_dir) {
  const fs::path runs_dir = study_dir.lexically_normal().parent_path();
  std::error_code ec;
  if (runs_dir.empty() || !fs::is_directory(runs_dir, ec))
    return fmt::format("not logged to a file: {} does not exist", runs_dir.string());
  const fs::path file = runs_dir / kDeletionLogFile;
  std::ofstream out(file, std::ios::app);
  out << line << '\n';
  out.flush();
  if (!out) return fmt::format("could not log it to {}", file.string());
  return fmt::format("logged in {}", file.string());
}

}  // namespace

Result<RemovalPlan> plan_removal(const db::Storage& storage, const db::StudyRow& study, bool files) {
  RemovalPlan plan;
  plan.study = study;
  plan.files = files;
  auto rows = storage.count_study_rows(study.id);
  if (!rows) return std::unexpected(rows.error());
  plan.rows = std::move(*rows);
  auto states = storage.state_counts(study.id);
  if (!states) return std::unexpected(states.error());
  plan.states = std::move(*states);
  std::int64_t live = 0;
  for (const auto& [state, n] : plan.states)
    if (auto s = parse_trial_state(state); s && is_active(*s)) live += n;
  if (live > 0)
    return fail_as(ErrorKind::bad_input,
                   fmt::format("{} QUEUED or RUNNING: their processes or jobs may still run and write",
                               live == 1 ? std::string("1 trial is") : fmt::format("{} trials are", live)),
                   "study '" + study.name + "'",
                   fmt::format("`dlsweep cancel {}` stops them and records it; then delete the study", study.name));
  if (files)
    if (auto st = check_dir(plan); !st) return std::unexpected(st.error());
  return plan;
}

Result<Removed> remove_study(db::Storage& storage, const RemovalPlan& plan, const std::string& db,
                             const std::string& command) {
  const fs::path dir = plan.study.root_dir;
  // From the rename to the commit, Ctrl-C (or SIGTERM, SIGHUP) waits: it would leave the
  // rows without their directory; such a signal takes effect at release().
  HeldSignals held;
  // Moved aside first: one rename, undone if the rows cannot be deleted, so the study is
  // never left with its rows gone and its files half there (or the other way round).
  fs::path aside;
  std::error_code ec;
  if (plan.files && plan.dir_exists) {
    aside = dir.lexically_normal().parent_path() / fmt::format(".{}.deleting-{}", plan.study.name, ::getpid());
    fs::rename(dir, aside, ec);
    if (ec)
      return fail("cannot move the study's directory aside to remove it: " + ec.message(), dir.string(),
                  "check the permissions of its parent directory; nothing was deleted");
  }
  auto rows = storage.delete_study(plan.study.id);
  if (!rows) {
    Error e = rows.error();
    if (!aside.empty()) {
      fs::rename(aside, dir, ec);
      if (ec) e.fix += fmt::format("; its directory is at {} (moving it back failed: {})", aside.string(), ec.message());
    }
    e.fix += e.fix.empty() ? "nothing was deleted" : "; nothing was deleted";
    return std::unexpected(std::move(e));
  }
  held.release();
  Removed out;
  out.rows = std::move(*rows);
  if (!plan.files) {
    out.files_note = fmt::format("kept its directory {}", dir.string());
  } else if (aside.empty()) {
    out.files_note = fmt::format("its directory {} was already gone", dir.string());
  } else {
    fs::remove_all(aside, ec);
    out.files_note = ec ? fmt::format("removed {} from its place, but not all of it: what is left is in {} ({})",
                                      dir.string(), aside.string(), ec.message())
                        : fmt::format("removed {}", dir.string());
  }
  const std::string db_path = fs::absolute(db, ec).string();
  out.log_note = log_removal(deletion_log_line(now_seconds(), plan.study, db_path, out.rows,
                                               out.files_note, command),
                             dir);
  return out;
}

Status write_study_marker(const fs::path& root, const std::string& study, double created_at, const std::string& db) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return fail("cannot create the study's directory: " + ec.message(), root.string(), "check runs_dir");
  return write_file_atomic(root / kStudyMarkerFile, study_marker_text(study, created_at, db), Durability::none);
}

}  // namespace dlsweep::orch
