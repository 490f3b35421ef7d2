// warm_pool.hpp — the local backend's kept-imported runners (`backend: {kind: local,
// keep_imported: true}`): Python objectives run by `python3 -m dlsweep_optuna` stay imported
// between trials, as in a Slurm pilot worker (the same runner and hand-over: warm_runner.hpp),
// instead of a new interpreter importing torch or scikit-learn for every trial.
//
// Contract:
//  - A runner runs one trial at a time. take() gives an idle runner whose share_key matches
//    the job's (the command and its non-DLSWEEP_ environment), else starts one in the job's
//    directory (what it prints before its first trial goes to that trial's logs).
//  - Each runner is the leader of its own process group and gets SIGKILL when the
//    orchestrator's thread ends (kill -9 included): a trial never outlives the orchestrator
//    to run twice after `resume`.
//  - What ends a runner ends its trial: the backend kills the group on cancel and timeout,
//    and a trial that exits its process (os._exit, a signal) takes the runner with it. The
//    backend forgets such a runner (forget()); only a runner whose trial ended through
//    done.json is given back (give_back()) for the next trial.
//  - At most `max_idle` idle runners are kept; the oldest beyond that is stopped.
//  - The serve directories live in one private temporary directory, removed by the destructor,
//    which also stops (SIGKILL) every idle runner and reaps it. Running ones are the backend's.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched {

struct WarmRunner {
  pid_t pid = -1;
  std::filesystem::path dir;  ///< its serve directory (job.json, done.json, stop)
  std::string key;            ///< warm::share_key of the trials it can run
  long seq = 0;               ///< trials handed over so far
};

class WarmPool {
 public:
  explicit WarmPool(std::size_t max_idle);
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  /// An idle runner for this command, or a fresh one (started = true). Errors: the runner
  /// cannot be started (the program not found, the directory not writable).
  Result<WarmRunner> take(const std::vector<std::string>& argv, const std::filesystem::path& workdir,
                          const std::map<std::string, std::string>& env, bool& started);
  /// Hands the next trial to `r` (its seq grows by one).
  Status hand_over(WarmRunner& r, const std::filesystem::path& workdir, const std::map<std::string, std::string>& env);
  /// The trial's exit status once the runner reported it through done.json.
  std::optional<int> finished(const WarmRunner& r) const;
  /// The runner's trial ended through done.json: idle again.
  void give_back(WarmRunner r);
  /// The runner is gone (the backend reaped it): its directory is removed.
  void forget(const WarmRunner& r);
  /// Reaps idle runners that ended on their own (an import error, the parent check).
  void reap_idle();
  std::size_t idle() const { return idle_.size(); }

 private:
  void stop(WarmRunner& r);

  std::size_t max_idle_;
  std::filesystem::path root_;
  long started_ = 0;
  std::deque<WarmRunner> idle_;  ///< oldest first
};

}  // namespace dlsweep::sched
