// as_job.cpp — `dlsweep submit --as-job` (as_job.hpp): the orchestrator as a job of the
// study's own backend (SlurmBackend::submit_orchestrator renders, preflights and submits it).
#include "orchestrator/error_printer.hpp"
#include "orchestrator/as_job.hpp"

#include <fmt/format.h>

#include "common/program_path.hpp"
#include "db/storage.hpp"
#include "engine/backend_factory.hpp"
#include "orchestrator/commands.hpp"
#include "schedulers/backend_kinds.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

// The job's program: the first run submits; a restarted one (requeued after the time-limit
// warning, a preemption or `scontrol requeue`: the study is in the database) resumes. Every
// value is a positional argument, never part of the script text.
constexpr const char* kOrchestratorScript =
    R"(cd "$4" || exit 70
if "$1" --db "$2" status "$3" >/dev/null 2>&1; then exec "$1" --db "$2" resume --detach-on-term "$3"; fi
exec "$1" --db "$2" submit --detach-on-term "$5")";

}  // namespace

namespace {

/// The orchestrator's job, submitted: the job id on stdout, where to look on stderr.
int submit_orchestrator_job(const StudySpec& spec, const std::string& db, const std::string& name,
                            const std::string& study_file, const fs::path& runs_dir, const char* verb) {
  auto self = self_executable();
  if (!self) {
    return print_error(Error{"cannot find the dlsweep executable (/proc/self/exe)", "", ""});
  }
  std::error_code ec;
  sched::JobSpec job;
  job.study = name;
  job.workdir = fs::absolute(runs_dir, ec) / (name + ".orchestrator");
  job.argv = {"/bin/sh", "-c", kOrchestratorScript, "dlsweep-as-job", self->string(), fs::absolute(db, ec).string(),
              name, fs::current_path(ec).string(), fs::absolute(study_file, ec).string()};
  boost::asio::io_context io;
  // Nothing of the study's own directory yet: the orchestrator's `submit` refuses a study
  // directory that holds anything.
  auto backend = make_backend(io, spec, runs_dir / name, /*create_dirs=*/false);
  if (!backend) {
    return print_error(backend.error(), exit_code::usage);
  }
  auto id = (*backend)->submit_orchestrator(job);
  if (!id) {
    return print_error(id.error(), exit_code::runtime);
  }
  fmt::print("{}\n", *id);
  fmt::print(stderr,
             "the orchestrator of {} ({}) runs as Slurm job {}; its output goes to {}/stderr.log; follow it with "
             "`dlsweep --db {} status {}`\n",
             name, verb, *id, job.workdir.string(), db, name);
  return exit_code::ok;
}

}  // namespace

Status needs_batch_scheduler(const StudySpec& spec, const std::string& where) {
  const sched::BackendKind* kind = sched::find_backend_kind(spec.backend.kind);
  if (kind && kind->batch_scheduler) return {};
  return fail_as(ErrorKind::bad_input, "--as-job needs a batch scheduler's backend", where + ": backend.kind",
                 "set `kind: slurm`, or run dlsweep inside an allocation");
}

int submit_as_job(const StudySpec& spec, const std::string& db, const std::string& study_file,
                  const fs::path& runs_dir) {
  if (auto st = needs_batch_scheduler(spec, study_file); !st) return print_error(st.error());
  std::error_code ec;
  if (fs::exists(db, ec)) {
    auto storage = db::Storage::open_readonly(db);
    if (storage)
      if (auto s = (*storage)->find_study(spec.name); s && *s) {
        return print_error(Error{fmt::format("study '{}' already exists in {}", spec.name, db), "",
                                 fmt::format("`dlsweep resume {} --as-job` or pick another name", spec.name),
                                 ErrorKind::bad_input});
      }
  }
  return submit_orchestrator_job(spec, db, spec.name, study_file, runs_dir, "submit");
}

int resume_as_job(const StudySpec& spec, const std::string& db, const std::string& name, const fs::path& runs_dir,
                  const std::string& study_file) {
  if (auto st = needs_batch_scheduler(spec, "the stored study"); !st) return print_error(st.error(), exit_code::usage);
  return submit_orchestrator_job(spec, db, name, study_file, runs_dir, "resume");
}

}  // namespace dlsweep::orch
