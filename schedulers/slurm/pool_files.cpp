// pool_files.cpp — see pool_files.hpp.
#include "schedulers/slurm/pool_files.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"

namespace dlsweep::sched::pool {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Result<json> read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return fail("cannot read " + p.string(), p.string(), "check the pool directory's permissions");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail("not a pool record (damaged or half-written)", p.string(), "remove the file; the task is retried");
  return j;
}

Status write_json(const fs::path& p, const json& j) { return write_file_atomic(p, j.dump() + "\n"); }

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

json run_json(const RunRecord& r) {
  json j{{"host", r.host}, {"pgid", r.pgid}, {"started", r.started}};
  if (!r.lease.empty()) j["lease"] = r.lease;
  return j;
}

RunRecord run_of(const json& j) {
  return RunRecord{j.value("host", ""), j.value("pgid", 0L), j.value("started", 0.0), j.value("lease", "")};
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

Status PoolDir::create() const {
  std::error_code ec;
  for (const auto& d : {queue_dir(), scripts_dir(), done_dir(), workers_dir()}) {
    fs::create_directories(d, ec);
    if (ec) return fail("cannot create " + d.string() + ": " + ec.message(), d.string(), "check runs_dir is writable");
  }
  return {};
}

Status PoolDir::enqueue(const std::string& tag, const TaskFile& t) const {
  std::error_code ec;
  for (const char* ext : {".task", ".run", ".exit", ".cancel"}) fs::remove(done_dir() / (tag + ext), ec);
  return write_json(queued(tag), task_json(t));
}

std::string PoolDir::lease_name(const fs::path& lease) const { return lease.lexically_relative(root_).generic_string(); }

std::vector<std::string> PoolDir::queued_tags() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(queue_dir(), ec)) {
    std::string name = e.path().filename().string();
    if (ends_with(name, ".task")) out.push_back(name.substr(0, name.size() - 5));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool PoolDir::claim(const std::string& tag, const std::string& wid) const {
  // rename(2) of one file within one filesystem is atomic: of several workers, one wins and
  // the others get ENOENT.
  return std::rename(queued(tag).c_str(), in_worker(wid, tag, ".task").c_str()) == 0;
}

bool PoolDir::unclaim(const std::string& tag, const std::string& wid) const {
  std::error_code ec;
  // A run that started and whose end nobody saw may still have processes: the task goes
  // back naming it, and the next claimant waits for it (pool_rerun.hpp).
  const fs::path task_path = in_worker(wid, tag, ".task");
  if (fs::exists(in_worker(wid, tag, ".run"), ec) && !fs::exists(in_worker(wid, tag, ".exit"), ec)) {
    auto run = read_run(in_worker(wid, tag, ".run"));
    auto task = read_task(task_path);
    if (run && task) {
      task->unfinished_runs.push_back(*run);
      // Not written: the task goes back without the record (the worker's wrapper and the
      // allocation's end are then all that stops the earlier run), rather than not at all.
      (void)write_json(task_path, task_json(*task));
    }
  }
  for (const char* ext : {".run", ".exit", ".cancel"}) fs::remove(in_worker(wid, tag, ext), ec);
  return std::rename(in_worker(wid, tag, ".task").c_str(), queued(tag).c_str()) == 0;
}

bool PoolDir::withdraw(const std::string& tag) const {
  // Renamed away first, so that a worker cannot claim it between a check and the removal.
  const fs::path gone = done_dir() / (tag + ".task");
  if (std::rename(queued(tag).c_str(), gone.c_str()) != 0) return false;
  return true;
}

void PoolDir::retire(const std::string& tag, const std::string& wid) const {
  for (const char* ext : {".task", ".run", ".exit", ".cancel"})
    std::rename(in_worker(wid, tag, ext).c_str(), (done_dir() / (tag + ext)).c_str());
}

std::vector<std::pair<std::string, Claim>> PoolDir::claims() const {
  std::map<std::string, Claim> by_tag;
  std::error_code ec;
  for (const auto& wid : worker_ids())
    for (const auto& e : fs::directory_iterator(worker_dir(wid), ec)) {
      const std::string name = e.path().filename().string();
      auto dot = name.rfind('.');
      if (dot == std::string::npos || name[0] != 't') continue;
      const std::string tag = name.substr(0, dot), ext = name.substr(dot);
      if (ext != ".task" && ext != ".run" && ext != ".exit" && ext != ".cancel") continue;
      Claim& c = by_tag[tag];
      c.worker = wid;
      c.has_run = c.has_run || ext == ".run";
      c.has_exit = c.has_exit || ext == ".exit";
      c.has_cancel = c.has_cancel || ext == ".cancel";
    }
  return {by_tag.begin(), by_tag.end()};
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
  return write_json(in_worker(wid, tag, ".exit"),
                    json{{"exit_code", e.exit_code}, {"signal", e.signal}, {"warned", e.warned},
                         {"cancelled", e.cancelled}, {"timed_out", e.timed_out}, {"seconds", e.seconds}});
}

Status PoolDir::request_cancel(const std::string& wid, const std::string& tag) const {
  return write_file_atomic(in_worker(wid, tag, ".cancel"), "cancel\n");
}

Result<TaskFile> PoolDir::read_task(const fs::path& p) {
  auto j = read_json(p);
  if (!j) return std::unexpected(j.error());
  TaskFile t;
  t.token = j->value("token", "");
  t.script = j->value("script", "");
  t.ranks = j->value("ranks", 1);
  t.timeout_s = j->value("timeout_s", 0.0);
  t.estimate_s = j->value("estimate_s", 0.0);
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
    for (const auto& r : *u)
      if (r.is_object()) t.unfinished_runs.push_back(run_of(r));
  if (t.token.empty() || t.script.empty() || t.ranks < 1)
    return fail("a task file without token, script or ranks", p.string(), "remove it; the orchestrator re-queues the trial");
  return t;
}

Result<RunRecord> PoolDir::read_run(const fs::path& p) {
  auto j = read_json(p);
  if (!j) return std::unexpected(j.error());
  return run_of(*j);
}

Result<ExitRecord> PoolDir::read_exit(const fs::path& p) {
  auto j = read_json(p);
  if (!j) return std::unexpected(j.error());
  ExitRecord e;
  e.exit_code = j->value("exit_code", 0);
  e.signal = j->value("signal", 0);
  e.warned = j->value("warned", false);
  e.cancelled = j->value("cancelled", false);
  e.timed_out = j->value("timed_out", false);
  e.seconds = j->value("seconds", 0.0);
  return e;
}

std::optional<ExitRecord> PoolDir::done_exit(const std::string& tag) const {
  auto e = read_exit(done_dir() / (tag + ".exit"));
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
