// sweep_runner.cpp — the sweep's shared actions (sweep_runner.hpp): the scheduler
// preflight and running the engine.
#include "engine/sweep_runner.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "common/asio.hpp"
#include "engine/backend_factory.hpp"
#include "engine/job_builder.hpp"
#include "engine/trial_files.hpp"
#include "engine/warm_start_load.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {
/// The study was fine; what failed is the machine, the database or the scheduler.
Error runtime_error(Error e) {
  if (e.is(ErrorKind::bad_input) || e.is(ErrorKind::not_found)) e.kind = ErrorKind::general;
  return e;
}
}  // namespace

Result<SweepOutcome> run_study(db::Storage& storage, const StudySpec& spec, std::int64_t study_id,
                               const EngineOptions& opts, Progress& progress,
                               const std::function<Status(Engine&)>& before_run) {
  auto parts = make_search_parts(spec);
  if (!parts) {
    Error e = parts.error();
    e.kind = ErrorKind::bad_input;  // the study asks for what cannot be built
    return std::unexpected(e);
  }
  if (!spec.search.warm_start.empty()) {  // stored at submit: resume never reads the earlier databases
    auto warm = storage.warm_start_trials(study_id);
    if (!warm) return std::unexpected(runtime_error(warm.error()));
    parts->warm = warm_history(*warm);
  }
  const std::size_t warm_count = parts->warm.size();
  boost::asio::io_context io;
  auto backend = make_backend(io, spec, opts.runs_dir / spec.name);
  if (!backend) return std::unexpected(runtime_error(backend.error()));
  std::error_code ec;
  fs::create_directories(opts.runs_dir / spec.name, ec);
  progress.set_log((opts.runs_dir / spec.name / kOrchestratorLog).string());
  if (warm_count > 0)
    progress.say(fmt::format("warm start: {} of earlier studies seed the sampler (not run; `results` shows them as WARM)",
                             trials_word(static_cast<std::int64_t>(warm_count))));
  Engine engine(io, storage, **backend, spec, std::move(*parts), study_id, opts, progress);
  if (before_run)
    if (auto st = before_run(engine); !st) return std::unexpected(runtime_error(st.error()));
  auto outcome = engine.run();
  if (!outcome) return std::unexpected(runtime_error(outcome.error()));
  return outcome;
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
