#include "orchestrator/job_builder.hpp"

#include <string>
#include <utility>
#include <vector>

#include "common/protocol.hpp"

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

sched::JobSpec build_job(const StudySpec& spec, const fs::path& train_binary, std::int64_t trial_id,
                         std::int64_t number, int attempt, const fs::path& trial_dir) {
  std::error_code ec;
  std::string study_dir = fs::absolute(fs::path(spec.source), ec).parent_path().string();
  std::string dir = fs::absolute(trial_dir, ec).string();
  sched::JobSpec job;
  job.study = spec.name;
  job.trial_id = trial_id;
  job.attempt = attempt;
  job.argv = spec.trial.embedded ? std::vector<std::string>{train_binary.string()}
                                 : expand_placeholders(spec.trial.command, study_dir, dir);
  job.workdir = dir;
  job.env = spec.trial.env;
  job.env[protocol::kEnvTrialDir] = dir;
  job.env[protocol::kEnvTrialId] = std::to_string(number);
  job.env[protocol::kEnvAttempt] = std::to_string(attempt);
  job.env[protocol::kEnvStudy] = spec.name;
  job.ranks = spec.trial.ranks;
  job.timeout_s = spec.trial.timeout_s;
  return job;
}

}  // namespace dlsweep::orch
