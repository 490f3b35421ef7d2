// warm_runner.hpp — the runner kept imported between trials (`python3 -m dlsweep_optuna
// TARGET --serve DIR`, python/dlsweep_optuna.py serve()): which trials it can run, which
// trials may share one, and the two files of its hand-over. One copy for both users: the local
// backend (`backend: {kind: local, keep_imported: true}`, local/warm_pool.hpp) and Slurm pilot
// workers (`backend: {kind: slurm, workers: N, keep_imported: true}`, slurm/pool_worker.cpp).
//
// The hand-over, in DIR (the runner polls every 20 ms):
//   job.json   {"seq", "dir", "env", "stdout", "stderr"}: the next trial (seq grows by one),
//              written atomically by the side that starts trials;
//   done.json  {"seq", "exit_code"}: that trial's end, as a fresh process's exit status;
//   stop       the runner exits before its next trial.
// A trial that kills its process (os._exit, a signal, a segfault) ends the runner with it.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched::warm {

/// The Optuna-style runner on one rank, started directly: `<python...> -m dlsweep_optuna ...`.
bool runs_warm(const std::vector<std::string>& argv, int ranks, std::string_view launcher);

/// Two trials may share one runner when this is equal: the command and the environment that
/// is not the trial's own (DLSWEEP_*).
std::string share_key(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

/// The runner's command line: the trial's with `--serve DIR`.
std::vector<std::string> server_argv(const std::vector<std::string>& argv, const std::filesystem::path& serve_dir);

/// Writes DIR/job.json for trial `seq` of the runner: its directory, environment and logs
/// (trial_dir/stdout.log, stderr.log).
Status hand_over(const std::filesystem::path& serve_dir, long seq, const std::filesystem::path& trial_dir,
                 const std::map<std::string, std::string>& env);

/// The exit status the runner reported for trial `seq`; nullopt while it runs.
std::optional<int> finished(const std::filesystem::path& serve_dir, long seq);

/// Asks the runner to exit before its next trial.
void request_stop(const std::filesystem::path& serve_dir);

}  // namespace dlsweep::sched::warm
