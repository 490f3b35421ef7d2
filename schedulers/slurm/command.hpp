// command.hpp — run one Slurm client command (sbatch, squeue, ...) and capture what
// it prints, with a deadline. Used by the CLI driver; no shell is ever involved.
//
// Invariants:
//  - argv is executed with posix_spawnp: every word reaches the program as one argument.
//  - The child gets stdin from /dev/null, our environment plus `env` (overriding), default
//    signal dispositions and an empty signal mask, and its own process group, so a command
//    past its deadline (or interrupted) is killed with its whole group and reaped: nothing
//    is left behind and the call returns within the deadline (plus a few ms).
//  - Only the child's own pid is waited for (never waitpid(-1)).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched::slurm {

struct CommandOutput {
  int exit_code = -1;     ///< the exit status; 128+signal if it was killed by a signal
  std::string out;        ///< everything written to stdout
  std::string err;        ///< everything written to stderr
  bool timed_out = false; ///< killed because the deadline passed (exit_code is then -1)
  bool interrupted = false;
  bool stopped = false;   ///< killed because stderr said `stop_on_stderr` (exit_code is then -1)
};

/// Runs argv (argv[0] looked up on PATH). An Error only when the program could not be
/// started at all (not found, fork failed); a non-zero exit or a timeout is reported in
/// CommandOutput. `interrupt`, if given, is polled: setting it kills the command.
/// `stop_on_stderr`, if not empty: the command is killed (and `stopped` set) as soon as its
/// stderr holds one of these texts — sbatch's "sleeping and retrying", which it would
/// otherwise repeat for two minutes.
Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                  double timeout_s, const std::atomic<bool>* interrupt = nullptr,
                                  const std::vector<std::string>& stop_on_stderr = {});

/// "sbatch --parsable /path/x.sh" for messages (words joined with spaces, quoted for a shell).
std::string describe_command(const std::vector<std::string>& argv);

}  // namespace dlsweep::sched::slurm
