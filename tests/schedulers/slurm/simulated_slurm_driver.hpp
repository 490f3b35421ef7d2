// simulated_slurm_driver.hpp — a Slurm controller that runs its jobs by itself, for the
// backend conformance suite (tests/schedulers/backend_conformance_test.cpp): the FakeController
// of fake_slurm_driver.hpp, advanced on every query as slurmctld would advance it. A task's
// behaviour comes from its environment in the batch's index file (FAKE_RUN_S seconds of
// running, then exit FAKE_EXIT); pending tasks start in task order while the array's
// throttle (`%N`) has room; scancel ends pending and running tasks (CANCELLED); a running
// task past its --time ends TIMEOUT. Nothing runs: a "running" task is a record and a clock.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fake_slurm_driver.hpp"
#include "schedulers/slurm/quote.hpp"

namespace slurm_test {

class SimulatedDriver final : public Driver {
 public:
  explicit SimulatedDriver(std::shared_ptr<FakeController> c) : c_(std::move(c)), fake_(c_) {}
  std::string_view name() const override { return "simulated"; }

  DriverResult<std::uint32_t> submit(const SubmitRequest& req) override {
    auto id = fake_.submit(req);
    if (!id) return id;
    Array a;
    if (auto pct = req.array.find('%'); pct != std::string::npos) a.throttle = std::stoul(req.array.substr(pct + 1));
    a.time_limit_s = req.time_limit_min * 60.0;
    a.tasks = read_index(req.script_path.parent_path() / (req.script_path.stem().string() + ".index"));
    std::lock_guard l(c_->m);
    arrays_[*id] = std::move(a);
    return id;
  }
  DriverResult<std::vector<JobRecord>> query(const std::vector<std::uint32_t>& ids) override {
    advance();
    return fake_.query(ids);
  }
  DriverResult<std::vector<JobRecord>> list_jobs() override { return fake_.list_jobs(); }
  DriverResult<std::vector<JobRecord>> accounting(const std::vector<std::string>& ids) override {
    return fake_.accounting(ids);
  }
  DriverResult<void> cancel(const std::vector<std::string>& exprs) override {
    auto r = fake_.cancel(exprs);
    if (!r) return r;
    std::lock_guard l(c_->m);
    for (const auto& e : exprs) {
      const auto us = e.find('_');
      const std::uint32_t job = static_cast<std::uint32_t>(std::stoul(e.substr(0, us)));
      std::set<std::uint32_t> tasks;  // empty: every task of the job
      if (us != std::string::npos) tasks = parse_tasks(e.substr(us + 1));
      for (auto& rec : c_->table) {
        const bool of_job = rec.array_job_id == job || (rec.array_job_id == 0 && rec.job_id == job);
        if (!of_job || final(rec)) continue;
        if (!tasks.empty() && (!rec.array_task_id || !tasks.count(*rec.array_task_id))) continue;
        set_state(rec, JobState::cancelled, 15);
      }
    }
    return {};
  }
  DriverResult<int> max_array_size() override { return fake_.max_array_size(); }
  void interrupt() override {}

 private:
  struct Task {
    double run_s = 0;
    int exit_code = 0;
    std::optional<std::chrono::steady_clock::time_point> started;
  };
  struct Array {
    std::size_t throttle = 0;  ///< 0: none
    double time_limit_s = 0;   ///< 0: none
    std::vector<Task> tasks;
  };

  static bool final(const JobRecord& r) {
    return r.state != JobState::pending && r.state != JobState::running;
  }
  static void set_state(JobRecord& r, JobState st, int wait_status = 0) {
    r.state = st;
    r.state_name = std::string(to_string(st));
    r.wait_status = wait_status;
  }
  /// "3", "[1,3-4]" -> {1, 3, 4}.
  static std::set<std::uint32_t> parse_tasks(std::string s) {
    if (!s.empty() && s.front() == '[') s = s.substr(1, s.size() - 2);
    std::set<std::uint32_t> out;
    std::size_t at = 0;
    while (at <= s.size()) {
      auto comma = s.find(',', at);
      std::string part = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      auto dash = part.find('-');
      auto lo = std::stoul(part.substr(0, dash));
      auto hi = dash == std::string::npos ? lo : std::stoul(part.substr(dash + 1));
      for (auto t = lo; t <= hi; ++t) out.insert(static_cast<std::uint32_t>(t));
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    return out;
  }
  /// Each task's FAKE_RUN_S / FAKE_EXIT, from the index line TASK TOKEN DIR N_ENV K=V... ARGV...
  static std::vector<Task> read_index(const std::filesystem::path& index) {
    std::vector<Task> out;
    std::istringstream in(read_file(index));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      Task t;
      auto words = dlsweep::sched::slurm::split_index_line(line);
      REQUIRE(words.has_value());
      const std::size_t n_env = std::stoul(words->at(3));
      for (std::size_t i = 4; i < 4 + n_env; ++i) {
        const std::string& kv = words->at(i);
        if (kv.rfind("FAKE_RUN_S=", 0) == 0) t.run_s = std::stod(kv.substr(11));
        if (kv.rfind("FAKE_EXIT=", 0) == 0) t.exit_code = std::stoi(kv.substr(10));
      }
      out.push_back(t);
    }
    return out;
  }

  /// What slurmctld would have done since the last query.
  void advance() {
    std::lock_guard l(c_->m);
    const auto now = std::chrono::steady_clock::now();
    for (auto& [job, a] : arrays_) {
      auto record = [&](std::size_t task) -> JobRecord* {
        for (auto& r : c_->table)
          if ((r.array_job_id == job && r.array_task_id == task) || (r.array_job_id == 0 && r.job_id == job)) return &r;
        return nullptr;
      };
      std::size_t running = 0;
      for (std::size_t i = 0; i < a.tasks.size(); ++i) {
        JobRecord* r = record(i);
        if (!r || r->state != JobState::running) continue;
        const double ran = std::chrono::duration<double>(now - *a.tasks[i].started).count();
        if (a.time_limit_s > 0 && ran >= a.time_limit_s && a.time_limit_s < a.tasks[i].run_s)
          set_state(*r, JobState::timeout);
        else if (ran >= a.tasks[i].run_s)
          set_state(*r, a.tasks[i].exit_code == 0 ? JobState::completed : JobState::failed, a.tasks[i].exit_code << 8);
        else
          ++running;
      }
      for (std::size_t i = 0; i < a.tasks.size() && (a.throttle == 0 || running < a.throttle); ++i) {
        JobRecord* r = record(i);
        if (!r || r->state != JobState::pending) continue;
        set_state(*r, JobState::running);
        a.tasks[i].started = now;
        ++running;
      }
    }
  }

  std::shared_ptr<FakeController> c_;
  FakeDriver fake_;
  std::map<std::uint32_t, Array> arrays_;  ///< under c_->m
};

}  // namespace slurm_test
