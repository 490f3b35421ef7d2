// cli_driver.cpp — Slurm through its client commands; see slurm/cli_driver.hpp.
#include "schedulers/slurm/cli_driver.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include <pwd.h>
#include <unistd.h>

#include <fmt/format.h>

namespace dlsweep::sched::slurm {

namespace {

constexpr std::string_view kTransientMarks[] = {
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "connect failure",
    "Zero Bytes were transmitted",
    "backup controller in standby",
    "Communication connection failure",
    "Resource temporarily unavailable",
    "Transport endpoint",
    "Slurm temporarily unable",
    "Job violates accounting/QOS policy (job submit limit",  // MaxSubmitJobs: wait for jobs to end
    "Failed while looking for jobs",
};

std::string first_line(std::string_view s) {
  while (!s.empty() && (s.front() == '\n' || s.front() == ' ')) s.remove_prefix(1);
  auto nl = s.find('\n');
  std::string out(s.substr(0, nl));
  if (out.size() > 300) out = out.substr(0, 300) + "...";
  return out;
}

DriverError transient(Error e) { return DriverError{std::move(e), true}; }
DriverError permanent(Error e) { return DriverError{std::move(e), false}; }

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(1, sep)) + s;
  return out;
}

}  // namespace

bool is_transient_slurm_error(std::string_view text) {
  return std::any_of(std::begin(kTransientMarks), std::end(kTransientMarks),
                     [&](std::string_view m) { return text.find(m) != std::string_view::npos; });
}

CliDriver::CliDriver(const SlurmOptions& options) : timeout_s_(options.command_timeout_s) {
  if (!options.slurm_conf.empty()) env_["SLURM_CONF"] = options.slurm_conf;
}

DriverResult<CommandOutput> CliDriver::run(const std::vector<std::string>& argv, bool accept_nonzero,
                                           const std::vector<std::string>& stop_on_stderr) {
  const std::string what = describe_command(argv);
  auto r = run_command(argv, env_, timeout_s_, &interrupted_, stop_on_stderr);
  if (!r) return std::unexpected(permanent(r.error()));
  if (r->interrupted) return std::unexpected(transient(Error{"interrupted (the backend is shutting down)", what, ""}));
  if (r->stopped) {
    // sbatch's own retry loop ("sleeping and retrying"): the controller refuses jobs for now.
    // Stopped at its first word, so dlsweep decides what waits (site_limit.hpp), not sbatch.
    return std::unexpected(transient(Error{first_line(r->err) + " (sbatch stopped: it would retry by itself)", what,
                                           "the controller refuses more jobs for now; dlsweep waits for room"}));
  }
  if (r->timed_out) {
    return std::unexpected(transient(Error{fmt::format("no answer within {:g} s", timeout_s_), what,
                                           "the controller may be overloaded or down; dlsweep retries",
                                           ErrorKind::timeout}));
  }
  if (r->exit_code != 0 && !accept_nonzero) {
    std::string msg = first_line(r->err.empty() ? r->out : r->err);
    bool t = is_transient_slurm_error(r->err) || is_transient_slurm_error(r->out);
    Error e{fmt::format("exit status {}: {}", r->exit_code, msg.empty() ? "(no message)" : msg), what,
            t ? "check that slurmctld is up (`scontrol ping`); dlsweep retries" : ""};
    return std::unexpected(t ? transient(std::move(e)) : permanent(std::move(e)));
  }
  return std::move(*r);
}

DriverResult<void> CliDriver::test_only(const SubmitRequest& req) {
  // All of stderr is kept: the line that names the problem is not always the first.
  auto r = run({"sbatch", "--test-only", req.script_path.string()}, /*accept_nonzero=*/true);
  if (!r) return std::unexpected(r.error());
  if (r->exit_code == 0) return {};
  const std::string text = r->err.empty() ? r->out : r->err;
  const bool t = is_transient_slurm_error(text);
  Error e{text.empty() ? fmt::format("exit status {} (no message)", r->exit_code) : text,
          describe_command({"sbatch", "--test-only", req.script_path.string()}), ""};
  return std::unexpected(t ? transient(std::move(e)) : permanent(std::move(e)));
}

DriverResult<std::uint32_t> CliDriver::submit(const SubmitRequest& req) {
  auto r = run({"sbatch", "--parsable", req.script_path.string()}, /*accept_nonzero=*/false, sbatch_retry_marks());
  if (!r) return std::unexpected(r.error());
  std::string_view out = r->out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.remove_suffix(1);
  if (auto semi = out.find(';'); semi != std::string_view::npos) out = out.substr(0, semi);  // "id;cluster"
  if (auto nl = out.rfind('\n'); nl != std::string_view::npos) out = out.substr(nl + 1);     // warnings first
  std::uint32_t id = 0;
  auto [p, ec] = std::from_chars(out.data(), out.data() + out.size(), id);
  if (ec != std::errc() || p != out.data() + out.size() || id == 0) {
    return std::unexpected(permanent(Error{fmt::format("sbatch printed '{}' instead of a job id", first_line(r->out)),
                                           describe_command({"sbatch", "--parsable", req.script_path.string()}),
                                           ""}));
  }
  return id;
}

DriverResult<std::vector<JobRecord>> CliDriver::list_jobs() {
  // One RPC whatever the filter; --me keeps the answer small on Slurm versions that honour
  // filters with --json.
  auto r = run({"squeue", "--json", "--me"});
  if (!r) return std::unexpected(r.error());
  auto recs = parse_squeue_json(r->out);
  if (!recs) return std::unexpected(transient(recs.error()));  // garbled or "controller unreachable"
  return std::move(*recs);
}

DriverResult<std::vector<JobRecord>> CliDriver::query(const std::vector<std::uint32_t>& job_ids) {
  auto all = list_jobs();
  if (!all) return all;
  std::vector<JobRecord> out;
  for (auto& rec : *all) {
    std::uint32_t key = rec.array_job_id != 0 ? rec.array_job_id : rec.job_id;
    if (std::find(job_ids.begin(), job_ids.end(), key) != job_ids.end()) out.push_back(std::move(rec));
  }
  return out;
}

DriverResult<std::vector<JobRecord>> CliDriver::accounting(const std::vector<std::string>& native_ids) {
  if (native_ids.empty() || sacct_ == Sacct::none) return std::vector<JobRecord>{};
  std::vector<std::string> argv = {"sacct", "-X", "-P", "-n", "-o", "JobID,State,ExitCode", "-j", join(native_ids, ',')};
  if (sacct_ == Sacct::jobcomp) argv.insert(argv.begin() + 1, "-c");
  auto r = run(argv, /*accept_nonzero=*/true);
  if (!r) return std::unexpected(r.error());
  if (r->exit_code != 0) {
    if (sacct_ == Sacct::unknown && r->err.find("accounting storage is disabled") != std::string::npos) {
      sacct_ = Sacct::jobcomp;  // no slurmdbd: the jobcomp text log, if there is one
      return accounting(native_ids);
    }
    if (sacct_ == Sacct::jobcomp) {
      sacct_ = Sacct::none;  // neither: nothing to ask, ever
      return std::vector<JobRecord>{};
    }
    std::string msg = first_line(r->err);
    Error e{fmt::format("exit status {}: {}", r->exit_code, msg), describe_command(argv), ""};
    return std::unexpected(transient(std::move(e)));
  }
  if (sacct_ == Sacct::unknown) sacct_ = Sacct::dbd;
  auto recs = parse_sacct(r->out);
  if (!recs) return std::unexpected(transient(recs.error()));
  return std::move(*recs);
}

DriverResult<void> CliDriver::cancel(const std::vector<std::string>& native_ids) {
  if (native_ids.empty()) return {};
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), native_ids.begin(), native_ids.end());
  auto r = run(argv);
  if (!r) return std::unexpected(r.error());
  return {};
}

DriverResult<int> CliDriver::max_array_size() {
  auto r = run({"scontrol", "show", "config"});
  if (!r) return std::unexpected(r.error());
  auto v = parse_max_array_size(r->out);
  if (!v) return std::unexpected(permanent(v.error()));
  return *v;
}

std::optional<KnownLimit> CliDriver::submit_limit(const std::string& qos) {
  // Read-only, and only where the user may (a site without slurmdbd has no sacctmgr to
  // ask): each call is short, and a failure just means "not known".
  const char* user = std::getenv("USER");
  std::string who = user && *user ? user : "";
  if (who.empty())
    if (const passwd* pw = getpwuid(geteuid())) who = pw->pw_name;
  auto ask = [&](std::vector<std::string> argv) -> std::string {
    auto r = run_command(argv, env_, std::min(timeout_s_, 10.0), &interrupted_);
    if (!r || r->timed_out || r->interrupted || r->exit_code != 0 || r->err.find("error") != std::string::npos) return {};
    return r->out;
  };
  std::string assoc;
  if (!who.empty())
    assoc = ask({"sacctmgr", "-nP", "show", "assoc", "where", "user=" + who, "format=MaxSubmit,GrpSubmit"});
  std::string q = ask({"sacctmgr", "-nP", "show", "qos", "where", "name=" + (qos.empty() ? std::string("normal") : qos),
                       "format=MaxSubmitPU,MaxSubmitPA,GrpSubmit"});
  return parse_sacctmgr_limits(assoc, q);
}

}  // namespace dlsweep::sched::slurm
