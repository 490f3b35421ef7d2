#include "engine/failure_policy.hpp"

#include <fmt/format.h>

#include "common/exit_codes.hpp"

namespace dlsweep::orch {

namespace trial_exit = exit_codes::trial;

FailureVerdict classify_failure(sched::JobEventKind kind, int exit_code, int signal, bool cannot_start) {
  using K = sched::JobEventKind;
  if (cannot_start) return {false, "the program could not be started (missing or not executable)"};
  if (kind == K::lost) return {true, "lost"};
  if (kind == K::cancelled) return {true, "cancelled by the backend"};
  if (signal != 0) return {true, fmt::format("killed by signal {}", signal)};
  switch (exit_code) {
    case trial_exit::bad_input: return {false, "exit 2: rejected its parameters, input or command line (a missing script, too)"};
    case trial_exit::diverged: return {false, "diverged (exit 3: loss became NaN/inf)"};
    case trial_exit::not_executable: return {false, "program or script not executable (exit 126)"};
    case trial_exit::not_found: return {false, "program or script not found (exit 127)"};
    case trial_exit::stopped: return {true, "stopped unasked (exit 75)"};
    case trial_exit::setup_failed:
      return {false, "a backend.setup line failed before the trial started (exit 78; stderr.log names it)"};
    default: return {true, fmt::format("exit code {}", exit_code)};
  }
}

std::optional<std::string> missing_objective(const std::string& metric, const std::set<std::string>& reported) {
  if (reported.contains(metric)) return std::nullopt;
  if (reported.empty()) return fmt::format("objective {} was never reported (it reported no metric)", metric);
  std::string names;
  for (const auto& n : reported) names += (names.empty() ? "" : ", ") + n;
  return fmt::format("objective {} was never reported (it reported: {})", metric, names);
}

std::string fail_fast_fix(const std::string& why, const std::string& db, const std::string& study,
                          const std::string& study_file) {
  const std::string dlsweep = db.empty() ? "dlsweep" : fmt::format("dlsweep --db {}", db);
  const std::string file = study_file.empty() ? "STUDY_FILE" : study_file;
  const bool cannot_start = why.find("could not be started") != std::string::npos ||
                            why.find("(exit 127)") != std::string::npos || why.find("(exit 126)") != std::string::npos ||
                            why.find("can't open file") != std::string::npos;
  if (cannot_start)
    return fmt::format("the study's trial.command cannot start the program: correct it in {0}, then `{1} submit {0} "
                       "--replace` (resume would run the recorded command again)",
                       file, dlsweep);
  return fmt::format("fix the program, then `{0} resume {1} --rerun failed,cancelled` runs the failed trials again and "
                     "the rest; if the study file is at fault, correct it and `{0} submit {2} --replace` (resume runs "
                     "the study as recorded)",
                     dlsweep, study, file);
}

}  // namespace dlsweep::orch
