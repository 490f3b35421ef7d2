// sweep_runner.cpp — what `submit` and `resume` share (sweep_runner.hpp): the database
// lock, where dlsweep-train is, the scheduler preflight, and running the engine.
#include "engine/sweep_runner.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "common/asio.hpp"
#include "common/exit_codes.hpp"
#include "common/program_path.hpp"
#include "engine/backend_factory.hpp"
#include "engine/job_builder.hpp"
#include "engine/progress.hpp"
#include "engine/trial_files.hpp"
#include "engine/warm_start_load.hpp"
#include "db/db_lock.hpp"
#include "db/fs_kind.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;
namespace exit_code = ::dlsweep::exit_codes::cli;

namespace {
std::string this_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}
}  // namespace

std::string locate_train_binary() {
  if (const char* env = std::getenv("DLSWEEP_TRAIN"); env && *env) return env;
  std::error_code ec;
  if (auto self = self_executable()) {
    fs::path beside = self->parent_path() / "dlsweep-train";
    if (fs::exists(beside, ec)) return beside.string();
  }
  if (const char* path = std::getenv("PATH"))
    if (auto found = find_on_path("dlsweep-train", path)) return *found;
  return {};
}

// The orchestrator is the database's only writer: a lock on DB.lock, held for the whole
// sweep, makes a second orchestrator on the same file fail fast instead of interleaving its
// writes. It is a POSIX record lock (fcntl F_SETLK), which belongs to this process alone:
// it dies with the process, and a child does not share it. (flock's lock belongs to the open
// file description, which a child shares from clone to exec: a resume started just after a
// kill -9 found the lock held by a trial still on its way to exec, seen in CI.) It also
// works over NFS (lockd), where flock is emulated. The fd stays open for the process's life:
// closing any fd of this file would drop the lock, so nothing else here opens it.
// The holder writes "host pid" into the file, so that a second orchestrator, on any host,
// can say who holds it; why a lock fails (held, or a filesystem without working locks:
// Lustre without -o flock) is db/db_lock's lock_outcome.
Result<int> lock_database(const std::string& db) {
  std::string path = db + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::string("cannot create lock file: ") + std::strerror(errno), path);
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_SETLK, &whole);
  const int err = rc == 0 ? 0 : errno;
  const std::string host = this_host_name();
  if (rc != 0) {
    char buf[320] = {};
    std::optional<db::LockHolder> holder;
    if (auto n = ::pread(fd, buf, sizeof buf - 1, 0); n > 0) holder = db::parse_lock_file(std::string_view(buf, n));
    if (!holder) {  // an older dlsweep wrote nothing; the kernel knows a local holder's pid
      struct flock probe {};
      probe.l_type = F_WRLCK;
      probe.l_whence = SEEK_SET;
      if (::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK && probe.l_pid > 0)
        holder = db::LockHolder{"", static_cast<long>(probe.l_pid)};
    }
    ::close(fd);
    auto fs_kind = db::probe_fs(path);
    return std::unexpected(
        db::lock_outcome(rc, err, db, path, holder, host, fs_kind ? *fs_kind : db::classify_fs_magic(0)).error());
  }
  std::string text = db::lock_file_text(host, ::getpid());
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, text.data(), text.size(), 0);
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
  auto parts = make_search_parts(spec);
  if (!parts) {
    fmt::print(stderr, "error: {}\n", parts.error().message());
    return exit_code::usage;
  }
  if (!spec.search.warm_start.empty()) {  // stored at submit: resume never reads the earlier databases
    auto warm = storage.warm_start_trials(study_id);
    if (!warm) {
      fmt::print(stderr, "error: {}\n", warm.error().message());
      return exit_code::runtime;
    }
    parts->warm = warm_history(*warm);
  }
  const std::size_t warm_count = parts->warm.size();
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
  if (warm_count > 0)
    progress.say(fmt::format("warm start: {} of earlier studies seed the sampler (not run; `results` shows them as WARM)",
                             trials_word(static_cast<std::int64_t>(warm_count))));
  Engine engine(io, storage, **backend, spec, std::move(*parts), study_id, opts, progress);
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
  if (!outcome->failed_fast.empty() && !outcome->stop_fix.empty()) {
    // The study itself is wrong (a parameter the program never reads): an invalid study.
    progress.say(fmt::format("stopped early: {}\nfix: {}", outcome->failed_fast, outcome->stop_fix));
    return exit_code::usage;
  } else if (!outcome->failed_fast.empty()) {
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

}  // namespace dlsweep::orch
