// pool_files.cpp — see pool_files.hpp.
#include "schedulers/slurm/pool_files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <algorithm>
#include <tuple>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"

namespace dlsweep::sched::pool {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kOtherVersionFix =
    "a dlsweep of another version wrote it (pilot workers outlive the orchestrator that started them): finish "
    "the study with that dlsweep, or, once its workers have ended, remove the pool directory and `dlsweep resume`";

Status version_mismatch(const fs::path& p, const std::string& found) {
  return fail(fmt::format("pool version {} here, and this dlsweep reads version {}", found, kPoolVersion), p.string(),
              std::string(kOtherVersionFix));
}

Result<json> read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return fail("cannot read " + p.string(), p.string(), "check the pool directory's permissions");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("not a pool record (damaged or half-written)", p.string(), "remove the file; the task is retried");
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer())
    return std::unexpected(version_mismatch(p, "1 (a record without \"v\")").error());
  if (v->get<int>() != kPoolVersion) return std::unexpected(version_mismatch(p, std::to_string(v->get<int>())).error());
  return j;
}

Status write_json(const fs::path& p, json j) {
  j["v"] = kPoolVersion;
  return write_file_atomic(p, j.dump() + "\n");
}

/// A field a record must have, of the right type: no silent default.
template <class T>
Result<T> required(const json& j, const char* key, const fs::path& p) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return fail(fmt::format("a pool record without \"{}\"", key), p.string(), "remove it; the orchestrator re-queues the trial");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fail(fmt::format("a pool record whose \"{}\" is {}", key, it->dump()), p.string(),
                "remove it; the orchestrator re-queues the trial");
  }
}

/// rename(2) of a directory, replacing an earlier `to` (a done/ directory of the same tag).
Status move_dir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::exists(to, ec)) fs::remove_all(to, ec);
  if (std::rename(from.c_str(), to.c_str()) != 0)
    return fail(fmt::format("cannot move {} to {}: {}", from.string(), to.string(), std::strerror(errno)), from.string(),
                "check the pool directory's permissions and free space");
  return {};
}

json run_json(const RunRecord& r) {
  json j{{"host", r.host}, {"pgid", r.pgid}, {"started", r.started}};
  if (!r.lease.empty()) j["lease"] = r.lease;
  return j;
}

Result<RunRecord> run_of(const json& j, const fs::path& p) {
  auto host = required<std::string>(j, "host", p);
  auto pgid = required<long>(j, "pgid", p);
  auto started = required<double>(j, "started", p);
  if (!host) return std::unexpected(host.error());
  if (!pgid) return std::unexpected(pgid.error());
  if (!started) return std::unexpected(started.error());
  return RunRecord{*host, *pgid, *started, j.value("lease", "")};
}

json task_json(const TaskFile& t) {
  json j{{"token", t.token},
         {"script", t.script.string()},
         {"ranks", t.ranks},
         {"timeout_s", t.timeout_s},
         {"estimate_s", t.estimate_s}};
  if (t.warm) {
    j["warm"] = true;
    j["argv"] = t.argv;
    j["env"] = t.env;
    j["trial_dir"] = t.trial_dir.string();
  }
  if (!t.unfinished_runs.empty()) {
    j["unfinished_runs"] = json::array();
    for (const auto& r : t.unfinished_runs) j["unfinished_runs"].push_back(run_json(r));
  }
  return j;
}

}  // namespace

std::string task_tag(std::int64_t trial_id, int attempt) { return fmt::format("t{:08d}-a{}", trial_id, attempt); }

std::string task_tag(std::int64_t trial_id, std::int64_t number, int attempt) {
  return number >= 0 ? fmt::format("trial-{:04d}-a{}", number, attempt) : task_tag(trial_id, attempt);
}

bool tag_before(const std::string& a, const std::string& b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare the numbers without their leading zeros: by length, then digit by digit.
      std::size_t is = i, js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      if (const int c = a.compare(is, ie - is, b, js, je - js); c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal as numbers (other padding): the text decides, so the order is strict
}

Status PoolDir::check_version() const {
  std::ifstream in(version_file());
  int v = 0;
  if (!(in >> v)) return version_mismatch(root_, "1 (no version file)");
  if (v != kPoolVersion) return version_mismatch(root_, std::to_string(v));
  return {};
}

Status PoolDir::create() const {
  std::error_code ec;
  if (fs::exists(version_file(), ec)) {
    if (auto st = check_version(); !st) return st;
  } else if (fs::exists(queue_dir(), ec) || fs::exists(workers_dir(), ec)) {
    return check_version();  // a pool of the layout before versions
  }
  for (const auto& d : {queue_dir(), scripts_dir(), done_dir(), workers_dir()}) {
    fs::create_directories(d, ec);
    if (ec) return fail("cannot create " + d.string() + ": " + ec.message(), d.string(), "check runs_dir is writable");
  }
  if (!fs::exists(version_file(), ec)) return write_file_atomic(version_file(), fmt::format("{}\n", kPoolVersion));
  return {};
}

Status PoolDir::enqueue(const std::string& tag, const TaskFile& t) const {
  // Written in a directory of its own beside the queue, then renamed in: a worker never sees
  // a task directory without its record.
  std::error_code ec;
  fs::remove_all(done_task_dir(tag), ec);
  const fs::path staging = queue_dir() / ("." + tag + ".new");
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) return fail("cannot create " + staging.string() + ": " + ec.message(), staging.string(), "check runs_dir is writable");
  if (auto st = write_json(staging / "task", task_json(t)); !st) return st;
  return move_dir(staging, queued_dir(tag));
}

std::string PoolDir::lease_name(const fs::path& lease) const { return lease.lexically_relative(root_).generic_string(); }

std::vector<std::string> PoolDir::queued_tags() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(queue_dir(), ec)) {
    std::string name = e.path().filename().string();
    if (!name.empty() && name[0] == 't' && e.is_directory(ec)) out.push_back(name);
  }
  std::sort(out.begin(), out.end(), tag_before);
  return out;
}

bool PoolDir::claim(const std::string& tag, const std::string& wid) const {
  // rename(2) of one directory within one filesystem is atomic: of several workers, one wins
  // and the others get ENOENT.
  std::error_code ec;
  fs::create_directories(worker_dir(wid), ec);
  return std::rename(queued_dir(tag).c_str(), claimed_dir(wid, tag).c_str()) == 0;
}

bool PoolDir::unclaim(const std::string& tag, const std::string& wid) const {
  std::error_code ec;
  // Moved out of the worker's reach first (a worker still alive writes into w/<wid>/<tag>/ and
  // finds it gone), into a staging name no worker claims; cleaned there; then queued by one
  // more rename. Nothing of the earlier run reaches the queue but its record in the task.
  const fs::path stage = queue_dir() / ("." + tag + ".back");
  fs::remove_all(stage, ec);
  if (std::rename(claimed_dir(wid, tag).c_str(), stage.c_str()) != 0) return false;
  // A run that started and whose end nobody saw may still have processes: the task goes
  // back naming it, and the next claimant waits for it (pool_rerun.hpp).
  if (fs::exists(stage / "run", ec) && !fs::exists(stage / "exit", ec)) {
    auto run = read_run(stage / "run");
    auto task = read_task(stage / "task");
    if (run && task) {
      task->unfinished_runs.push_back(*run);
      // Not written: the task goes back without the record (the worker's wrapper and the
      // allocation's end are then all that stops the earlier run), rather than not at all.
      (void)write_json(stage / "task", task_json(*task));
    }
  }
  // Everything but the task: its run, exit, cancel, and any half-written file a worker left.
  std::vector<fs::path> leftovers;
  for (const auto& e : fs::directory_iterator(stage, ec))
    if (e.path().filename() != "task") leftovers.push_back(e.path());
  for (const auto& p : leftovers) fs::remove_all(p, ec);
  return std::rename(stage.c_str(), queued_dir(tag).c_str()) == 0;
}

bool PoolDir::withdraw(const std::string& tag) const {
  // One rename, so that a worker cannot claim it between a check and the removal.
  std::error_code ec;
  fs::remove_all(done_task_dir(tag), ec);
  return std::rename(queued_dir(tag).c_str(), done_task_dir(tag).c_str()) == 0;
}

Status PoolDir::retire(const std::string& tag, const std::string& wid) const {
  return move_dir(claimed_dir(wid, tag), done_task_dir(tag));
}

std::vector<Claim> PoolDir::claims(const std::set<std::string>& skip_workers) const {
  std::vector<Claim> out;
  std::error_code ec;
  for (const auto& wid : worker_ids()) {
    if (skip_workers.contains(wid)) continue;
    for (const auto& e : fs::directory_iterator(worker_dir(wid), ec)) {
      const std::string tag = e.path().filename().string();
      if (tag.empty() || tag[0] != 't' || !e.is_directory(ec)) continue;
      Claim c{wid, tag};
      c.has_run = fs::exists(e.path() / "run", ec);
      c.has_exit = fs::exists(e.path() / "exit", ec);
      c.has_cancel = fs::exists(e.path() / "cancel", ec);
      out.push_back(std::move(c));
    }
  }
  std::sort(out.begin(), out.end(), [](const Claim& a, const Claim& b) {
    if (a.tag != b.tag) return tag_before(a.tag, b.tag);
    return a.worker < b.worker;
  });
  return out;
}

std::vector<Claim> PoolDir::claims_of(const std::string& tag) const {
  std::vector<Claim> out;
  std::error_code ec;
  for (const auto& wid : worker_ids()) {
    const fs::path d = claimed_dir(wid, tag);
    if (!fs::is_directory(d, ec)) continue;
    Claim c{wid, tag};
    c.has_run = fs::exists(d / "run", ec);
    c.has_exit = fs::exists(d / "exit", ec);
    c.has_cancel = fs::exists(d / "cancel", ec);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> PoolDir::worker_ids() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(workers_dir(), ec))
    if (e.is_directory(ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

Status PoolDir::write_claimed(const std::string& wid, const std::string& tag, const TaskFile& t) const {
  return write_json(in_worker(wid, tag, ".task"), task_json(t));
}

Status PoolDir::write_run(const std::string& wid, const std::string& tag, const RunRecord& r) const {
  return write_json(in_worker(wid, tag, ".run"), run_json(r));
}

Status PoolDir::write_exit(const std::string& wid, const std::string& tag, const ExitRecord& e) const {
  json j{{"exit_code", e.exit_code}, {"signal", e.signal}, {"warned", e.warned},
         {"cancelled", e.cancelled}, {"timed_out", e.timed_out}, {"seconds", e.seconds}};
  if (e.not_started) {
    j["not_started"] = true;
    j["error"] = e.error;
  }
  return write_json(in_worker(wid, tag, ".exit"), j);
}

Status PoolDir::request_cancel(const std::string& wid, const std::string& tag) const {
  std::error_code ec;
  if (!fs::is_directory(claimed_dir(wid, tag), ec)) return {};  // moved on meanwhile
  return write_file_atomic(in_worker(wid, tag, ".cancel"), "cancel\n");
}

Result<TaskFile> PoolDir::read_task(const fs::path& p) {
  auto j = read_json(p);
  if (!j) return std::unexpected(j.error());
  TaskFile t;
  auto token = required<std::string>(*j, "token", p);
  auto script = required<std::string>(*j, "script", p);
  auto ranks = required<int>(*j, "ranks", p);
  auto timeout = required<double>(*j, "timeout_s", p);
  auto estimate = required<double>(*j, "estimate_s", p);
  if (!token) return std::unexpected(token.error());
  if (!script) return std::unexpected(script.error());
  if (!ranks) return std::unexpected(ranks.error());
  if (!timeout) return std::unexpected(timeout.error());
  if (!estimate) return std::unexpected(estimate.error());
  t.token = *token;
  t.script = *script;
  t.ranks = *ranks;
  t.timeout_s = *timeout;
  t.estimate_s = *estimate;
  t.warm = j->value("warm", false);
  if (t.warm) {
    if (auto a = j->find("argv"); a != j->end() && a->is_array())
      for (const auto& w : *a)
        if (w.is_string()) t.argv.push_back(w.get<std::string>());
    if (auto e = j->find("env"); e != j->end() && e->is_object())
      for (const auto& [k, v] : e->items())
        if (v.is_string()) t.env[k] = v.get<std::string>();
    t.trial_dir = j->value("trial_dir", "");
    if (t.argv.empty() || t.trial_dir.empty())
      return fail("a task kept imported without its command or trial directory", p.string(),
                  "remove it; the orchestrator re-queues the trial");
  }
  if (auto u = j->find("unfinished_runs"); u != j->end() && u->is_array())
    for (const auto& r : *u) {
      if (!r.is_object()) continue;
      auto run = run_of(r, p);
      if (!run) return std::unexpected(run.error());
      t.unfinished_runs.push_back(*run);
    }
  if (t.token.empty() || t.script.empty() || t.ranks < 1)
    return fail("a task file without token, script or ranks", p.string(), "remove it; the orchestrator re-queues the trial");
  return t;
}

Result<RunRecord> PoolDir::read_run(const fs::path& p) {
  auto j = read_json(p);
  if (!j) return std::unexpected(j.error());
  return run_of(*j, p);
}

Result<ExitRecord> PoolDir::read_exit(const fs::path& p) {
  auto j = read_json(p);
  if (!j) return std::unexpected(j.error());
  ExitRecord e;
  auto code = required<int>(*j, "exit_code", p);
  auto sig = required<int>(*j, "signal", p);
  if (!code) return std::unexpected(code.error());
  if (!sig) return std::unexpected(sig.error());
  e.exit_code = *code;
  e.signal = *sig;
  e.warned = j->value("warned", false);
  e.cancelled = j->value("cancelled", false);
  e.timed_out = j->value("timed_out", false);
  e.seconds = j->value("seconds", 0.0);
  e.not_started = j->value("not_started", false);
  e.error = j->value("error", "");
  return e;
}

std::optional<ExitRecord> PoolDir::done_exit(const std::string& tag) const {
  auto e = read_exit(done_task_dir(tag) / "exit");
  if (!e) return std::nullopt;
  return *e;
}

double PoolDir::estimate_s() const {
  std::ifstream in(estimate_file());
  double s = 0;
  if (in >> s && s > 0) return s;
  return 0;
}

Status PoolDir::set_estimate_s(double s) const { return write_file_atomic(estimate_file(), fmt::format("{:.1f}\n", s)); }

}  // namespace dlsweep::sched::pool
