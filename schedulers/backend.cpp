// backend.cpp — the small pieces of the Backend contract that every backend shares: the
// job token and the names of event kinds (used in logs and in the events table).
#include "schedulers/backend.hpp"

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "common/shell_quote.hpp"

namespace dlsweep::sched {

JobEvent job_event(std::string job_id, std::int64_t trial_id, int attempt, JobEventKind kind, std::string message,
                   std::string native_id, int exit_code, int signal) {
  JobEvent ev;
  ev.job_id = std::move(job_id);
  ev.trial_id = trial_id;
  ev.attempt = attempt;
  ev.kind = kind;
  ev.message = std::move(message);
  ev.native_id = std::move(native_id);
  ev.exit_code = exit_code;
  ev.signal = signal;
  return ev;
}

std::string JobSpec::token() const { return fmt::format("{}/{}/{}", study, trial_id, attempt); }

Result<std::vector<std::string>> write_command_lines(const std::vector<JobSpec>& jobs,
                                                     const std::vector<std::vector<std::string>>& argvs,
                                                     const std::filesystem::path& out_dir) {
  std::string lines;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& j = jobs[i];
    lines += "cd " + shell_quote(j.workdir.string()) + " &&";
    if (!j.env.empty()) lines += " env";
    for (const auto& [k, v] : j.env) lines += " " + shell_quote(k + "=" + v);
    lines += " " + shell_join(argvs[i]) + "\n";
  }
  const auto path = out_dir / "commands.sh";
  if (auto st = write_file_atomic(path, lines); !st) return std::unexpected(st.error());
  return std::vector<std::string>{"command lines: " + path.string()};
}

std::string_view to_string(JobEventKind k) {
  switch (k) {
    case JobEventKind::queued: return "queued";
    case JobEventKind::started: return "started";
    case JobEventKind::exited: return "exited";
    case JobEventKind::cancelled: return "cancelled";
    case JobEventKind::lost: return "lost";
    case JobEventKind::requeued: return "requeued";
    case JobEventKind::pending: return "pending";
  }
  return "unknown";
}

}  // namespace dlsweep::sched
