// api_driver.cpp — Slurm through libslurm; see slurm/api_driver.hpp. Compiled only
// when CMake found libslurm (DLSWEEP_HAVE_LIBSLURM).
#include "schedulers/slurm/api_driver.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include <fmt/format.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

extern char** environ;

// Exported by libslurm (22.05: slurm_job_reason_string, the alias of job_reason_string) but
// not declared in <slurm/slurm.h>: the reason code's name as squeue prints it ("Priority",
// "JobHeldUser"), so that both drivers report the same words.
extern "C" char* slurm_job_reason_string(enum job_state_reason inx);

namespace dlsweep::sched::slurm {

namespace {

// libslurm keeps its configuration in process-wide state: one slurm_init per process, and
// every call made under one lock (the backend's worker is the only caller anyway).
std::mutex g_mutex;
int g_users = 0;
std::string g_conf;

char* c_str_or_null(const std::string& s) { return s.empty() ? nullptr : const_cast<char*>(s.c_str()); }

DriverError api_error(const std::string& call, const std::string& where) {
  int err = slurm_get_errno();
  std::string msg = slurm_strerror(err);
  bool transient = is_transient_slurm_error(msg) || err == SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR ||
                   err == SLURM_COMMUNICATIONS_CONNECTION_ERROR || err == SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT ||
                   err == ESLURM_IN_STANDBY_MODE || err == EAGAIN;
  // Sent but unanswered: the controller may have acted on it (a submission may exist).
  const bool no_answer = err == SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT || err == SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR ||
                         err == SLURM_COMMUNICATIONS_RECEIVE_ERROR;
  return DriverError{Error{fmt::format("{} failed: {} (error {})", call, msg, err), where,
                           transient ? "check that slurmctld is up (`scontrol ping`); dlsweep retries" : "",
                           no_answer ? ErrorKind::timeout : transient ? ErrorKind::unavailable : ErrorKind::general},
                     transient || no_answer};
}

/// The state word Slurm itself prints (job_state_string's order: flags before the base).
std::string state_word(std::uint32_t st) {
  constexpr std::pair<std::uint32_t, const char*> flags[] = {
      {JOB_COMPLETING, "COMPLETING"},       {JOB_STAGE_OUT, "STAGE_OUT"},     {JOB_CONFIGURING, "CONFIGURING"},
      {JOB_RESIZING, "RESIZING"},           {JOB_REQUEUE, "REQUEUED"},        {JOB_REQUEUE_FED, "REQUEUE_FED"},
      {JOB_REQUEUE_HOLD, "REQUEUE_HOLD"},   {JOB_SPECIAL_EXIT, "SPECIAL_EXIT"}, {JOB_STOPPED, "STOPPED"},
      {JOB_RESV_DEL_HOLD, "RESV_DEL_HOLD"}, {JOB_SIGNALING, "SIGNALING"},     {JOB_POWER_UP_NODE, "POWER_UP_NODE"},
  };
  for (auto [bit, word] : flags)
    if (st & bit) return word;
  switch (st & JOB_STATE_BASE) {
    case JOB_PENDING: return "PENDING";
    case JOB_RUNNING: return "RUNNING";
    case JOB_SUSPENDED: return "SUSPENDED";
    case JOB_COMPLETE: return "COMPLETED";
    case JOB_CANCELLED: return "CANCELLED";
    case JOB_FAILED: return "FAILED";
    case JOB_TIMEOUT: return "TIMEOUT";
    case JOB_NODE_FAIL: return "NODE_FAIL";
    case JOB_PREEMPTED: return "PREEMPTED";
    case JOB_BOOT_FAIL: return "BOOT_FAIL";
    case JOB_DEADLINE: return "DEADLINE";
    case JOB_OOM: return "OUT_OF_MEMORY";
    default: return "UNKNOWN";
  }
}

DriverResult<std::vector<JobRecord>> to_records(job_info_msg_t* msg) {
  std::vector<JobRecord> out;
  if (!msg) return out;
  out.reserve(msg->record_count);
  for (std::uint32_t i = 0; i < msg->record_count; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    JobRecord r;
    r.job_id = j.job_id;
    r.array_job_id = j.array_job_id;
    if (j.array_job_id != 0 && j.array_task_id != NO_VAL) r.array_task_id = j.array_task_id;
    if (j.array_job_id != 0 && !r.array_task_id && j.array_task_str) {
      auto tasks = parse_array_tasks(j.array_task_str);
      if (!tasks) return std::unexpected(DriverError{tasks.error(), true});
      r.pending_tasks = std::move(*tasks);
    }
    r.state_name = state_word(j.job_state);
    r.state = parse_job_state(r.state_name);
    r.wait_status = static_cast<int>(j.exit_code);
    r.restart_count = j.restart_cnt;
    if (const char* why = slurm_job_reason_string(static_cast<enum job_state_reason>(j.state_reason))) r.reason = why;
    if (j.state_desc) r.reason_detail = j.state_desc;
    if (j.name) r.name = j.name;
    if (j.comment) r.comment = j.comment;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

ApiDriver::ApiDriver(const SlurmOptions& options) : options_(options), sacct_(options) {}

Result<std::unique_ptr<ApiDriver>> ApiDriver::create(const SlurmOptions& options) {
  std::lock_guard lock(g_mutex);
  if (g_users > 0 && g_conf != options.slurm_conf) {
    return fail(fmt::format("libslurm is already in use with SLURM_CONF '{}' in this process", g_conf),
                "slurm driver api", "use one slurm_conf per process, or the cli driver");
  }
  if (g_users == 0) {
    // Re-initialise for this configuration (a previous one, if any, was finished).
    slurm_init(options.slurm_conf.empty() ? nullptr : options.slurm_conf.c_str());
    g_conf = options.slurm_conf;
  }
  ++g_users;
  return std::unique_ptr<ApiDriver>(new ApiDriver(options));
}

ApiDriver::~ApiDriver() {
  std::lock_guard lock(g_mutex);
  if (--g_users == 0) slurm_fini();
}

DriverResult<std::uint32_t> ApiDriver::submit(const SubmitRequest& req) {
  std::lock_guard lock(g_mutex);
  const std::string where = fmt::format("slurm_submit_batch_job ({})", req.script_path.string());
  // The job's environment: ours, with SLURM_CONF pointing at the same controller.
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!options_.slurm_conf.empty() && kv.rfind("SLURM_CONF=", 0) == 0) continue;
    env.emplace_back(kv);
  }
  if (!options_.slurm_conf.empty()) env.push_back("SLURM_CONF=" + options_.slurm_conf);
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::string script = req.script, work_dir = req.work_dir.string(), gres;
  const std::string cpus_per_gpu_text = req.cpus_per_gpu > 0 ? fmt::format("gres:gpu:{}", req.cpus_per_gpu) : "";
  if (!req.gpus_per_node.empty()) gres = "gres:gpu:" + req.gpus_per_node;

  job_desc_msg_t d;
  slurm_init_job_desc_msg(&d);
  d.name = c_str_or_null(req.job_name);
  d.script = script.data();
  d.environment = envp.data();
  d.env_size = static_cast<std::uint32_t>(env.size());
  d.work_dir = work_dir.data();
  d.std_out = c_str_or_null(req.std_out);
  d.comment = c_str_or_null(req.comment);
  d.array_inx = c_str_or_null(req.array);
  d.partition = c_str_or_null(req.partition);
  d.account = c_str_or_null(req.account);
  d.qos = c_str_or_null(req.qos);
  d.features = c_str_or_null(req.constraint);
  d.tres_per_node = c_str_or_null(gres);
  std::string gres_task;
  if (!req.gpus_per_task.empty()) gres_task = "gres:gpu:" + req.gpus_per_task;
  d.tres_per_task = c_str_or_null(gres_task);
  if (req.cpus_per_gpu > 0) d.cpus_per_tres = c_str_or_null(cpus_per_gpu_text);
  d.user_id = getuid();
  d.group_id = getgid();
  d.open_mode = OPEN_MODE_APPEND;
  d.requeue = req.requeue ? 1 : 0;
  if (req.time_limit_min > 0) d.time_limit = static_cast<std::uint32_t>(req.time_limit_min);
  if (req.nodes > 0) d.min_nodes = d.max_nodes = static_cast<std::uint32_t>(req.nodes);
  if (req.ntasks > 0) d.num_tasks = static_cast<std::uint32_t>(req.ntasks);
  if (req.ntasks_per_node > 0) d.ntasks_per_node = static_cast<std::uint16_t>(req.ntasks_per_node);
  if (req.cpus_per_task > 0) d.cpus_per_task = static_cast<std::uint16_t>(req.cpus_per_task);
  int tasks = req.ntasks > 0 ? req.ntasks : (req.ntasks_per_node > 0 ? req.ntasks_per_node * std::max(1, req.nodes) : 1);
  d.min_cpus = static_cast<std::uint32_t>(tasks * std::max(1, req.cpus_per_task));
  if (!req.mem.empty()) d.pn_min_memory = mem_megabytes(req.mem);
  if (req.signal_lead_s > 0) {
    d.warn_signal = SIGUSR2;
    d.warn_time = static_cast<std::uint16_t>(req.signal_lead_s);
    d.warn_flags = KILL_JOB_BATCH;  // B: the batch shell only, which forwards it
  }
  submit_response_msg_t* resp = nullptr;
  if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) return std::unexpected(api_error("submit", where));
  std::uint32_t id = resp ? resp->job_id : 0;
  slurm_free_submit_response_response_msg(resp);
  if (id == 0) return std::unexpected(DriverError{Error{"the controller returned job id 0", where, ""}, false});
  return id;
}

DriverResult<std::vector<JobRecord>> ApiDriver::query(const std::vector<std::uint32_t>& job_ids) {
  if (job_ids.size() != 1) {
    auto all = list_jobs();
    if (!all) return all;
    std::vector<JobRecord> out;
    for (auto& r : *all) {
      std::uint32_t key = r.array_job_id != 0 ? r.array_job_id : r.job_id;
      if (std::find(job_ids.begin(), job_ids.end(), key) != job_ids.end()) out.push_back(std::move(r));
    }
    return out;
  }
  std::lock_guard lock(g_mutex);
  job_info_msg_t* msg = nullptr;
  if (slurm_load_job(&msg, job_ids[0], SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS) {
    if (slurm_get_errno() == ESLURM_INVALID_JOB_ID) return std::vector<JobRecord>{};  // purged: ask accounting
    return std::unexpected(api_error("slurm_load_job", fmt::format("job {}", job_ids[0])));
  }
  auto out = to_records(msg);
  slurm_free_job_info_msg(msg);
  return out;
}

DriverResult<std::vector<JobRecord>> ApiDriver::list_jobs() {
  std::lock_guard lock(g_mutex);
  job_info_msg_t* msg = nullptr;
  if (slurm_load_job_user(&msg, getuid(), SHOW_ALL | SHOW_LOCAL) != SLURM_SUCCESS)
    return std::unexpected(api_error("slurm_load_job_user", "the controller's job table"));
  auto out = to_records(msg);
  slurm_free_job_info_msg(msg);
  return out;
}

DriverResult<std::vector<JobRecord>> ApiDriver::accounting(const std::vector<std::string>& native_ids) {
  return sacct_.accounting(native_ids);
}

DriverResult<void> ApiDriver::cancel(const std::vector<std::string>& native_ids) {
  std::lock_guard lock(g_mutex);
  for (const auto& id : native_ids) {
    if (slurm_kill_job2(id.c_str(), SIGKILL, 0, nullptr) != SLURM_SUCCESS) {
      int err = slurm_get_errno();
      if (err == ESLURM_INVALID_JOB_ID || err == ESLURM_ALREADY_DONE) continue;  // nothing left to cancel
      return std::unexpected(api_error("slurm_kill_job2", fmt::format("job {}", id)));
    }
  }
  return {};
}

DriverResult<int> ApiDriver::max_array_size() {
  std::lock_guard lock(g_mutex);
  slurm_conf_t* conf = nullptr;
  if (slurm_load_ctl_conf(static_cast<time_t>(0), &conf) != SLURM_SUCCESS)
    return std::unexpected(api_error("slurm_load_ctl_conf", "the controller's configuration"));
  int v = static_cast<int>(conf->max_array_sz);
  slurm_free_ctl_conf(conf);
  return v;
}

}  // namespace dlsweep::sched::slurm
