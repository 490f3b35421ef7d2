// sync_cancel_backend.hpp — a backend that breaks the contract the way the pilot pool and
// Slurm jobs held back by a site limit did: it answers cancel() with `cancelled` delivered
// from inside cancel() itself, before cancel() returns. Around the timer-driven fake
// (tests/support/fake_backend.hpp), which runs the jobs; the fake's own, posted, `cancelled`
// is dropped, so each job still ends exactly once.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>

#include "tests/support/fake_backend.hpp"

namespace engine_test {

class SyncCancelBackend final : public dlsweep::sched::Backend {
 public:
  SyncCancelBackend(boost::asio::io_context& io, std::size_t max_concurrent, dlsweep::sched::FakeScript script)
      : inner_(io, max_concurrent, std::move(script)) {}

  std::string_view name() const override { return "fake"; }
  void set_event_handler(dlsweep::sched::EventHandler h) override {
    handler_ = std::move(h);
    inner_.set_event_handler([this](const dlsweep::sched::JobEvent& ev) {
      if (ended_.count(ev.job_id)) return;  // answered already, from inside cancel()
      if (is_terminal(ev.kind)) ended_.insert(ev.job_id);
      if (handler_) handler_(ev);
    });
  }
  dlsweep::Result<std::string> submit(const dlsweep::sched::JobSpec& job) override {
    auto id = inner_.submit(job);
    if (id) jobs_[*id] = {job.trial_id, job.attempt};
    return id;
  }
  void cancel(const std::string& job_id) override {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end() || ended_.count(job_id)) return;
    inner_.cancel(job_id);  // the fake ends it now and posts its event (dropped above)
    ended_.insert(job_id);
    ++sync_answers_;
    dlsweep::sched::JobEvent ev;
    ev.job_id = job_id;
    ev.trial_id = it->second.first;
    ev.attempt = it->second.second;
    ev.kind = dlsweep::sched::JobEventKind::cancelled;
    ev.exit_code = 128 + 15;
    ev.signal = 15;
    ev.message = "cancelled";
    if (handler_) handler_(ev);  // from inside cancel(): what the contract forbids
  }
  std::size_t active() const override { return inner_.active(); }
  std::size_t max_concurrent() const override { return inner_.max_concurrent(); }
  dlsweep::Result<std::vector<std::string>> dry_run(const std::vector<dlsweep::sched::JobSpec>& jobs,
                                                    const std::filesystem::path& out_dir) override {
    return inner_.dry_run(jobs, out_dir);
  }

  const std::vector<dlsweep::sched::JobSpec>& submitted() const { return inner_.submitted(); }
  /// How many cancels were answered from inside cancel().
  int sync_answers() const { return sync_answers_; }

 private:
  static bool is_terminal(dlsweep::sched::JobEventKind k) {
    using K = dlsweep::sched::JobEventKind;
    return k == K::exited || k == K::cancelled || k == K::lost;
  }

  dlsweep::sched::FakeBackend inner_;
  dlsweep::sched::EventHandler handler_;
  std::map<std::string, std::pair<std::int64_t, int>> jobs_;  ///< job id -> trial id, attempt
  std::set<std::string> ended_;
  int sync_answers_ = 0;
};

}  // namespace engine_test
