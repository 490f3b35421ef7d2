#include "orchestrator/dry_run.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/objective.hpp"
#include "common/shell_quote.hpp"
#include "orchestrator/commands.hpp"
#include "engine/job_builder.hpp"
#include "engine/progress.hpp"
#include "engine/trial_files.hpp"
#include "schedulers/slurm/script.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

int dry_run(const StudySpec& spec, const fs::path& runs_dir, const fs::path& train_binary) {
  fs::path out = runs_dir / (spec.name + ".dry-run");  // beside, not inside, the real runs
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    fmt::print(stderr, "error: cannot create {}: {}\n", out.string(), ec.message());
    return exit_code::runtime;
  }
  auto made = search::make_sampler(spec.search.algorithm, spec.space, spec.search.seed, spec.search.options);
  if (!made) {  // the study validator ran make_sampler already
    fmt::print(stderr, "error: search.{}: {}\n", made.error().front().key, made.error().front().what);
    return exit_code::usage;
  }
  auto& sampler = *made;
  search::History history;
  history.maximize = maximizes(spec.objective.mode);
  std::int64_t total = spec.search.trials > 0 ? spec.search.trials : sampler->size().value_or(0);
  if (auto size = sampler->size()) total = std::min(total, *size);
  std::vector<sched::JobSpec> jobs;
  std::string params_lines;
  for (std::int64_t n = 0; n < total; ++n) {
    auto params = sampler->next(n, history);
    if (!params) break;
    params_lines += params->dump() + "\n";
    jobs.push_back(build_job(spec, train_binary, n, n, 0, trial_dir_for(runs_dir, spec.name, n), *params));
  }
  if (auto st = write_file_atomic(out / "params.jsonl", params_lines); !st) {
    fmt::print(stderr, "error: {}\n", st.error().message());
    return exit_code::runtime;
  }
  fmt::print(stderr, "dry run of {}: {}; params of each in {}\n", spec.name, trials_word(static_cast<std::int64_t>(jobs.size())),
             (out / "params.jsonl").string());

  if (spec.backend.kind == "slurm") {
    sched::SlurmOptions o = spec.backend.slurm;
    o.script_dir = fs::absolute(out, ec);
    o.max_concurrent = static_cast<std::size_t>(spec.backend.max_concurrent);
    if (!o.template_path.empty() && o.template_path.is_relative())
      o.template_path = fs::absolute(fs::path(spec.source), ec).parent_path() / o.template_path;
    auto tmpl = sched::slurm::load_template(o);
    if (!tmpl) {
      fmt::print(stderr, "error: {}\n", tmpl.error().message());
      return exit_code::usage;
    }
    sched::slurm::BatchRequest batch;
    batch.study = spec.name;
    batch.tag = "dry-run";
    batch.script_dir = o.script_dir;
    batch.ranks = jobs.empty() ? spec.trial.ranks : jobs.front().ranks;  // one script: the first trial's shape
    if (!jobs.empty()) {
      batch.launcher = jobs.front().launcher;
      batch.warn_always = jobs.front().warn_always;
    }
    batch.time_limit_min = spec.trial.timeout_s > 0 ? static_cast<int>(std::ceil(spec.trial.timeout_s / 60.0)) : 0;
    batch.throttle = o.max_concurrent;
    for (const auto& j : jobs) batch.tasks.push_back({j.token(), j.workdir, j.argv, j.env});
    auto prepared = sched::slurm::prepare_batch(*tmpl, o, batch);
    if (!prepared) {
      fmt::print(stderr, "error: {}\n", prepared.error().message());
      return exit_code::usage;
    }
    if (auto st = write_file_atomic(batch.script_path(), prepared->request.script); !st) {
      fmt::print(stderr, "error: {}\n", st.error().message());
      return exit_code::runtime;
    }
    if (auto st = write_file_atomic(batch.index_path(), prepared->index_text); !st) {
      fmt::print(stderr, "error: {}\n", st.error().message());
      return exit_code::runtime;
    }
    fmt::print(stderr, "batch script: {}\nindex file:   {}\nnothing was submitted.\n", batch.script_path().string(),
               batch.index_path().string());
    return exit_code::ok;
  }
  std::string lines;
  for (const auto& j : jobs) {
    lines += "cd " + shell_quote(j.workdir.string()) + " &&";
    for (const auto& [k, v] : j.env) lines += " " + shell_quote(k + "=" + v);
    lines += " " + shell_join(j.argv) + "\n";
  }
  if (auto st = write_file_atomic(out / "commands.sh", lines); !st) {
    fmt::print(stderr, "error: {}\n", st.error().message());
    return exit_code::runtime;
  }
  fmt::print(stderr, "command lines: {}\nnothing was run.\n", (out / "commands.sh").string());
  return exit_code::ok;
}

}  // namespace dlsweep::orch
