// parse.cpp — parsers of squeue/sacct/scontrol output; see slurm/parse.hpp.
#include "schedulers/slurm/parse.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dlsweep::sched::slurm {

namespace {

using nlohmann::json;

constexpr std::pair<std::string_view, JobState> kStateNames[] = {
    {"PENDING", JobState::pending},        {"CONFIGURING", JobState::pending},
    {"POWER_UP_NODE", JobState::pending},  {"RUNNING", JobState::running},
    {"SIGNALING", JobState::running},      {"RESIZING", JobState::running},
    {"UPDATE_DB", JobState::running},      {"SUSPENDED", JobState::suspended},
    {"STOPPED", JobState::suspended},      {"COMPLETING", JobState::completing},
    {"STAGE_OUT", JobState::completing},   {"REQUEUED", JobState::requeued},
    {"REQUEUE_FED", JobState::requeued},   {"REQUEUE_HOLD", JobState::held},
    {"SPECIAL_EXIT", JobState::held},      {"RESV_DEL_HOLD", JobState::held},
    {"COMPLETED", JobState::completed},    {"FAILED", JobState::failed},
    {"CANCELLED", JobState::cancelled},    {"TIMEOUT", JobState::timeout},
    {"NODE_FAIL", JobState::node_fail},    {"PREEMPTED", JobState::preempted},
    {"BOOT_FAIL", JobState::boot_fail},    {"DEADLINE", JobState::deadline},
    {"OUT_OF_MEMORY", JobState::out_of_memory},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

template <class T>
std::optional<T> to_number(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

/// A JSON integer that may be plain (v0.0.38) or wrapped as {"set":true,"number":N}
/// (v0.0.39+); null and "not set" give nullopt.
/// Anything else (a float, a "set" that is not a boolean) gives nullopt: get<int64_t> of
/// 1e300 would be undefined behaviour and get<bool> of a string throws.
std::optional<std::int64_t> json_int(const json& j) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_object()) {
    auto set = j.find("set");
    auto num = j.find("number");
    bool is_set = set == j.end() || (set->is_boolean() && set->get<bool>());
    if (num != j.end() && num->is_number_integer() && is_set) return num->get<std::int64_t>();
  }
  return std::nullopt;
}

std::string json_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

/// job_state is a string up to v0.0.38 and a list of words (base + flags) later; the flag
/// that changes what the backend does (completing, requeued, held) wins over the base.
std::pair<JobState, std::string> json_state(const json& j) {
  if (j.is_string()) return {parse_job_state(j.get<std::string>()), j.get<std::string>()};
  if (j.is_array()) {
    std::string joined;
    JobState best = JobState::unknown;
    for (const auto& w : j) {
      if (!w.is_string()) continue;
      std::string s = w.get<std::string>();
      joined += (joined.empty() ? "" : ",") + s;
      JobState st = parse_job_state(s);
      bool flag = st == JobState::completing || st == JobState::requeued || st == JobState::held;
      if (best == JobState::unknown || flag) best = st;
    }
    return {best, joined};
  }
  return {JobState::unknown, ""};
}

/// exit_code: a raw wait status (v0.0.38) or {"status": ..., "return_code": N,
/// "signal": {"signal_id": S}} (later versions).
int json_wait_status(const json& j) {
  if (auto v = json_int(j)) return static_cast<int>(*v);
  if (j.is_object()) {
    int code = 0, sig = 0;
    if (auto rc = j.find("return_code"); rc != j.end())
      if (auto v = json_int(*rc)) code = static_cast<int>(*v);
    if (auto s = j.find("signal"); s != j.end() && s->is_object())
      if (auto id = s->find("signal_id"); id != s->end())
        if (auto v = json_int(*id)) sig = static_cast<int>(*v);
    return sig != 0 ? (sig & 0x7f) : ((code & 0xff) << 8);
  }
  return 0;
}

}  // namespace

std::string_view to_string(JobState s) {
  switch (s) {
    case JobState::pending: return "PENDING";
    case JobState::running: return "RUNNING";
    case JobState::suspended: return "SUSPENDED";
    case JobState::completing: return "COMPLETING";
    case JobState::requeued: return "REQUEUED";
    case JobState::held: return "REQUEUE_HOLD";
    case JobState::completed: return "COMPLETED";
    case JobState::failed: return "FAILED";
    case JobState::cancelled: return "CANCELLED";
    case JobState::timeout: return "TIMEOUT";
    case JobState::node_fail: return "NODE_FAIL";
    case JobState::preempted: return "PREEMPTED";
    case JobState::boot_fail: return "BOOT_FAIL";
    case JobState::deadline: return "DEADLINE";
    case JobState::out_of_memory: return "OUT_OF_MEMORY";
    case JobState::unknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

JobState parse_job_state(std::string_view name) {
  name = trim(name);
  if (auto sp = name.find(' '); sp != std::string_view::npos) name = name.substr(0, sp);  // "CANCELLED by 0"
  for (auto [n, st] : kStateNames)
    if (n == name) return st;
  return JobState::unknown;
}

bool is_final(JobState s) {
  switch (s) {
    case JobState::completed:
    case JobState::failed:
    case JobState::cancelled:
    case JobState::timeout:
    case JobState::node_fail:
    case JobState::preempted:
    case JobState::boot_fail:
    case JobState::deadline:
    case JobState::out_of_memory: return true;
    default: return false;
  }
}

std::string JobRecord::native_id() const {
  if (array_job_id == 0) return std::to_string(job_id);
  if (array_task_id) return fmt::format("{}_{}", array_job_id, *array_task_id);
  return fmt::format("{}_[{}]", array_job_id, format_array_tasks(pending_tasks));
}

Result<std::vector<JobRecord>> parse_squeue_json(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    return fail(fmt::format("squeue printed something that is not JSON: {}", e.what()), "squeue --json",
                "check that this Slurm's squeue supports --json (Slurm >= 21.08)");
  }
  if (!doc.is_object()) return fail("squeue --json did not print a JSON object", "squeue --json");
  if (auto errs = doc.find("errors"); errs != doc.end() && errs->is_array() && !errs->empty()) {
    const json& e = errs->front();
    std::string what = e.is_object() ? json_string(e, "description") : std::string();
    std::string src = e.is_object() ? json_string(e, "source") : std::string();
    std::string err = e.is_object() ? json_string(e, "error") : std::string();
    return fail(fmt::format("the controller answered with an error: {}{}{}", what.empty() ? err : what,
                            src.empty() ? "" : " (" + src + ")", err.empty() || what.empty() ? "" : ": " + err),
                "squeue --json", "check that slurmctld is up (`scontrol ping`); dlsweep retries");
  }
  auto jobs = doc.find("jobs");
  if (jobs == doc.end() || !jobs->is_array()) return fail("no \"jobs\" list in squeue's JSON", "squeue --json");
  std::vector<JobRecord> out;
  out.reserve(jobs->size());
  for (const auto& j : *jobs) {
    if (!j.is_object()) continue;
    JobRecord r;
    auto id = j.find("job_id");
    if (id == j.end()) continue;
    r.job_id = static_cast<std::uint32_t>(json_int(*id).value_or(0));
    if (auto a = j.find("array_job_id"); a != j.end()) r.array_job_id = static_cast<std::uint32_t>(json_int(*a).value_or(0));
    if (auto t = j.find("array_task_id"); t != j.end())
      if (auto v = json_int(*t); v && *v >= 0 && *v < 0xfffffffe) r.array_task_id = static_cast<std::uint32_t>(*v);
    if (r.array_job_id != 0 && !r.array_task_id) {
      std::string expr = json_string(j, "array_task_string");
      if (!expr.empty()) {
        auto tasks = parse_array_tasks(expr);
        if (!tasks) return fail_in(tasks.error(), fmt::format("squeue --json: job {}", r.job_id));
        r.pending_tasks = std::move(*tasks);
      }
    }
    if (auto s = j.find("job_state"); s != j.end()) std::tie(r.state, r.state_name) = json_state(*s);
    if (auto e = j.find("exit_code"); e != j.end()) r.wait_status = json_wait_status(*e);
    if (auto rc = j.find("restart_cnt"); rc != j.end()) r.restart_count = static_cast<int>(json_int(*rc).value_or(0));
    r.reason = json_string(j, "state_reason");
    r.reason_detail = json_string(j, "state_description");
    r.name = json_string(j, "name");
    r.comment = json_string(j, "comment");
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<JobRecord>> parse_sacct(std::string_view text) {
  std::vector<JobRecord> out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    line = trim(line);
    if (line.empty()) continue;
    std::vector<std::string_view> cols;
    for (std::size_t start = 0;;) {
      auto bar = line.find('|', start);
      cols.push_back(line.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start));
      if (bar == std::string_view::npos) break;
      start = bar + 1;
    }
    const std::string where = fmt::format("sacct output line {}", line_no);
    if (cols.size() < 3) return fail(fmt::format("expected JobID|State|ExitCode, got '{}'", line), where);
    if (cols[0] == "JobID") continue;  // a header, when -n was not given
    std::string_view jobid = trim(cols[0]);
    if (jobid.find('.') != std::string_view::npos) continue;  // a step (12.batch), not the job
    JobRecord r;
    if (auto us = jobid.find('_'); us != std::string_view::npos) {
      auto arr = to_number<std::uint32_t>(jobid.substr(0, us));
      auto task = to_number<std::uint32_t>(jobid.substr(us + 1));
      if (!arr || !task) continue;  // "12_[4-9]": pending tasks, nothing final to learn
      r.array_job_id = *arr;
      r.array_task_id = *task;
    } else {
      auto id = to_number<std::uint32_t>(jobid);
      if (!id) return fail(fmt::format("bad job id '{}'", jobid), where);
      r.job_id = *id;
    }
    r.state_name = std::string(trim(cols[1]));
    r.state = parse_job_state(r.state_name);
    std::string_view ec = trim(cols[2]);
    auto colon = ec.find(':');
    auto code = to_number<int>(ec.substr(0, colon));
    auto sig = colon == std::string_view::npos ? std::optional<int>(0) : to_number<int>(ec.substr(colon + 1));
    if (!code || !sig) return fail(fmt::format("bad exit code '{}' (expected CODE:SIGNAL)", ec), where);
    r.wait_status = *sig != 0 ? (*sig & 0x7f) : ((*code & 0xff) << 8);
    out.push_back(std::move(r));
  }
  return out;
}

Result<int> parse_max_array_size(std::string_view text) {
  constexpr std::string_view key = "MaxArraySize";
  for (std::size_t pos = text.find(key); pos != std::string_view::npos; pos = text.find(key, pos + 1)) {
    if (pos != 0 && text[pos - 1] != '\n') continue;
    std::string_view rest = text.substr(pos + key.size());
    rest = rest.substr(0, rest.find('\n'));
    rest = trim(rest);
    if (rest.empty() || rest.front() != '=') continue;
    rest = trim(rest.substr(1));
    if (auto v = to_number<int>(rest); v && *v >= 0) return *v;
    return fail(fmt::format("MaxArraySize is '{}', not a number", rest), "scontrol show config");
  }
  return fail("MaxArraySize not found", "scontrol show config",
              "check that `scontrol show config` works with this SLURM_CONF");
}

Result<std::vector<std::uint32_t>> parse_array_tasks(std::string_view expr, std::size_t limit) {
  const std::string where = fmt::format("array task expression '{}'", expr);
  std::string_view s = trim(expr);
  if (auto pct = s.find('%'); pct != std::string_view::npos) s = s.substr(0, pct);
  if (!s.empty() && s.front() == '[') s.remove_prefix(1);
  if (!s.empty() && s.back() == ']') s.remove_suffix(1);
  std::vector<std::uint32_t> out;
  while (!s.empty()) {
    auto comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    std::uint32_t step = 1;
    if (auto colon = part.find(':'); colon != std::string_view::npos) {
      auto st = to_number<std::uint32_t>(part.substr(colon + 1));
      if (!st || *st == 0) return fail("bad step", where);
      step = *st;
      part = part.substr(0, colon);
    }
    auto dash = part.find('-');
    auto lo = to_number<std::uint32_t>(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : to_number<std::uint32_t>(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return fail(fmt::format("cannot read '{}'", part), where);
    for (std::uint64_t t = *lo; t <= *hi; t += step) {
      if (out.size() >= limit) return fail(fmt::format("more than {} tasks", limit), where);
      out.push_back(static_cast<std::uint32_t>(t));
    }
  }
  return out;
}

std::string format_array_tasks(std::vector<std::uint32_t> tasks) {
  std::sort(tasks.begin(), tasks.end());
  tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
  std::string out;
  for (std::size_t i = 0; i < tasks.size();) {
    std::size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(tasks[i]) : fmt::format("{}-{}", tasks[i], tasks[j]);
    i = j + 1;
  }
  return out;
}

ExitInfo decode_wait_status(int status) {
  if (WIFSIGNALED(status)) return {128 + WTERMSIG(status), WTERMSIG(status)};
  return {WEXITSTATUS(status), 0};
}

}  // namespace dlsweep::sched::slurm
