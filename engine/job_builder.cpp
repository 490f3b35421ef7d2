#include "engine/job_builder.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/protocol.hpp"
#include "common/stored_study.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> expand_placeholders(const std::vector<std::string>& argv, const std::string& study_dir,
                                             const std::string& trial_dir) {
  std::vector<std::string> out;
  for (std::string w : argv) {
    for (auto [key, value] : {std::pair<std::string, std::string>{"{study_dir}", study_dir}, {"{trial_dir}", trial_dir}})
      for (auto pos = w.find(key); pos != std::string::npos; pos = w.find(key, pos + value.size()))
        w.replace(pos, key.size(), value);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

int trial_ranks(const StudySpec& spec, const nlohmann::json& params) {
  return dlsweep::trial_ranks(spec.trial.ranks, params);  // the one rule, common/stored_study.hpp
}

nlohmann::json largest_shape_params(const StudySpec& spec) {
  std::int64_t most = 0;
  for (const auto& d : spec.space.dims) {
    if (d.name != "ranks") continue;
    if (d.kind == search::Dimension::Kind::int_range) most = d.int_high;
    for (const auto& v : d.choices)
      if (v.is_number_integer()) most = std::max(most, v.get<std::int64_t>());
  }
  if (most < 1) return nlohmann::json::object();
  return {{"ranks", most}};
}

bool decides_on_reports(const StudySpec& spec) {
  return spec.pruner.kind != "none" || spec.objective.stop_at_target || spec.search.algorithm == "pbt" ||
         spec.search.algorithm == "branch";
}

sched::JobSpec build_job(const StudySpec& spec, const fs::path& train_binary, std::int64_t trial_id,
                         std::int64_t number, int attempt, const fs::path& trial_dir, const nlohmann::json& params) {
  std::error_code ec;
  const std::string study_dir = spec.study_dir.string();
  std::string dir = fs::absolute(trial_dir, ec).string();
  sched::JobSpec job;
  job.study = spec.name;
  job.trial_id = trial_id;
  job.number = number;
  job.attempt = attempt;
  job.argv = spec.trial.embedded ? std::vector<std::string>{train_binary.string()}
                                 : expand_placeholders(spec.trial.command, study_dir, dir);
  job.workdir = dir;
  job.env = spec.trial.env;
  job.env[protocol::kEnvTrialDir] = dir;
  job.env[protocol::kEnvTrialId] = std::to_string(number);
  job.env[protocol::kEnvAttempt] = std::to_string(attempt);
  job.env[protocol::kEnvStudy] = spec.name;
  job.env[protocol::kEnvRunName] = spec.name + "-" + std::to_string(number);
  // Whether a report can be answered with a stop: then dlsweep_trial's should_stop() waits for
  // the decision on the last report (decided.json), else it never waits.
  job.env[protocol::kEnvDecides] = decides_on_reports(spec) ? "1" : "0";
  job.ranks = trial_ranks(spec, params);
  job.launcher = spec.trial.embedded ? "" : spec.trial.launcher;
  // dlsweep-train handles the time-limit warning; another program gets it once it asks.
  job.warn_always = spec.trial.embedded;
  job.timeout_s = spec.trial.timeout_s;
  return job;
}

}  // namespace dlsweep::orch
