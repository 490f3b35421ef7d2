// run_sweep.cpp — see run_sweep.hpp.
#include "orchestrator/run_sweep.hpp"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "common/exit_codes.hpp"
#include "common/program_path.hpp"
#include "engine/failure_policy.hpp"
#include "engine/progress.hpp"
#include "engine/sweep_runner.hpp"
#include "orchestrator/error_printer.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;
namespace exit_code = ::dlsweep::exit_codes::cli;

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
  Progress progress = Progress::for_stderr();
  // From here the errors go to the terminal and the study's orchestrator log alike.
  ErrorSink sink([&](const std::string& line) { progress.say(line); });
  auto outcome = run_study(storage, spec, study_id, opts, progress, before_run);
  if (!outcome) return print_error(outcome.error());
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
    progress.say(fmt::format("stopped early: {}\nfix: {}", outcome->failed_fast,
                             fail_fast_fix(outcome->failed_fast, db, spec.name, spec.source)));
  }
  if (s.complete == 0 && s.created > 0) {
    std::string why;
    for (const auto& [reason, n] : outcome->failure_reasons) why += fmt::format("\n  {}: {}", trials_word(n), reason);
    progress.say(fmt::format("no trial completed{}", why.empty() ? "" : ":" + why));
    return exit_code::trials_failed;
  }
  return exit_code::ok;
}

}  // namespace dlsweep::orch
