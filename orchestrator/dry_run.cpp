#include "orchestrator/error_printer.hpp"
#include "orchestrator/dry_run.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/objective.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "engine/backend_factory.hpp"
#include "engine/warm_start_load.hpp"
#include "engine/job_builder.hpp"
#include "engine/progress.hpp"
#include "engine/search_parts.hpp"
#include "engine/trial_files.hpp"
#include "engine/trial_objectives.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

int dry_run(const StudySpec& spec, const fs::path& runs_dir, const fs::path& train_binary, const std::string& db) {
  fs::path out = runs_dir / (spec.name + ".dry-run");  // beside, not inside, the real runs
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    return print_error(Error{fmt::format("cannot create {}: {}", out.string(), ec.message()), "", ""});
  }
  auto parts = make_search_parts(spec);
  if (!parts) {  // the study validator ran the factories already
    return print_error(parts.error(), exit_code::usage);
  }
  auto& sampler = parts->sampler;
  search::History history;
  history.maximize = maximizes(spec.objective.mode);
  set_directions(history, spec);
  if (!spec.search.warm_start.empty()) {  // what the real sweep's sampler would see
    auto warm = load_warm_start(spec, db, nullptr);
    if (!warm) return report_file_errors(warm.error(), spec.source, "submitted or run");
    for (const auto& n : warm->notes) fmt::print(stderr, "{}\n", n);
    history.trials = warm_history(warm->rows);
  }
  const std::int64_t total = std::max<std::int64_t>(parts->budget, 0);
  std::vector<sched::JobSpec> jobs;
  std::string params_lines;
  for (std::int64_t n = 0; n < total; ++n) {
    auto params = sampler->next(n, history);
    if (!params) break;
    params_lines += params->dump() + "\n";
    jobs.push_back(build_job(spec, train_binary, n, n, 0, trial_dir_for(runs_dir, spec.name, n), *params));
  }
  if (auto st = write_file_atomic(out / "params.jsonl", params_lines); !st) {
    return print_error(st.error(), exit_code::runtime);
  }
  fmt::print(stderr, "dry run of {}: {}; params of each in {}\n", spec.name, trials_word(static_cast<std::int64_t>(jobs.size())),
             (out / "params.jsonl").string());
  if (static_cast<std::int64_t>(jobs.size()) < total && sampler->name() == "pbt")
    fmt::print(stderr, "pbt: these are generation 0's members; each later generation ({} trials in all) is decided "
                       "from the one before it\n", total);

  boost::asio::io_context io;
  auto backend = make_backend(io, spec, runs_dir / spec.name, /*create_dirs=*/false);
  if (!backend) {
    return print_error(backend.error(), exit_code::usage);
  }
  auto wrote = (*backend)->dry_run(jobs, fs::absolute(out, ec));
  if (!wrote) {
    return print_error(wrote.error(), exit_code::usage);
  }
  for (const auto& line : *wrote) fmt::print(stderr, "{}\n", line);
  fmt::print(stderr, "nothing was submitted or run.\n");
  return exit_code::ok;
}

}  // namespace dlsweep::orch
