// exit_codes.hpp — every exit status in the project, in one place:
//   trial::   what a trial program (dlsweep-train, or any protocol-speaking program)
//             exits with, and what the orchestrator concludes from it;
//   cli::     what `dlsweep` itself exits with (README, "Exit codes of dlsweep").
// A plain list of constants: no logic here (engine/failure_policy decides what to
// retry). Keep README's tables in step with it.
#pragma once

namespace dlsweep::exit_codes {

/// Exit statuses of a trial program (the trial protocol; dlsweep-train uses all of them).
namespace trial {
inline constexpr int done = 0;           ///< finished its work (must have reported the objective)
inline constexpr int failure = 1;        ///< runtime failure (I/O, out of memory, ...): may be transient, retried
inline constexpr int bad_input = 2;      ///< rejected its parameters or data: deterministic, never retried
inline constexpr int diverged = 3;       ///< loss became NaN/inf: deterministic with the same params, never retried
inline constexpr int internal = 70;      ///< dlsweep-train's own bug (EX_SOFTWARE)
inline constexpr int stopped = 75;       ///< stopped on request or by signal after a checkpoint; resumable (EX_TEMPFAIL)
inline constexpr int setup_failed = 78;  ///< Slurm: a backend.setup line failed before the trial started (EX_CONFIG): never retried
inline constexpr int not_executable = 126;  ///< shell: the program exists but cannot be run: never retried
inline constexpr int not_found = 127;    ///< shell: the program or script does not exist: never retried
}  // namespace trial

/// Exit statuses of `dlsweep`.
namespace cli {
inline constexpr int ok = 0;             ///< success
inline constexpr int runtime = 1;        ///< database, disk or backend failure
inline constexpr int usage = 2;          ///< bad arguments, invalid study, unknown study or trial
inline constexpr int trials_failed = 3;  ///< submit/resume: no trial completed; best: no COMPLETE trial to pick
inline constexpr int internal = 70;      ///< a bug: please report it
inline constexpr int detached = 75;      ///< --detach-on-term + SIGTERM: trials run on; `resume` follows them
inline constexpr int interrupted = 130;  ///< Ctrl-C / SIGTERM: live trials cancelled and recorded
}  // namespace cli

}  // namespace dlsweep::exit_codes
