// process_spawn.hpp — start one program as the leader of its own process group, without
// a shell, and know for certain whether it started.
//
// Invariants:
//  - argv is executed directly (execve): a study value is data, never shell code.
//  - The child is the leader of a new process group (pgid == pid), so signalling -pid
//    reaches everything it spawns (mpirun's daemons, a shell's children).
//  - stdin is /dev/null; stdout/stderr are appended to workdir/stdout.log and stderr.log;
//    cwd is workdir; env is the parent's environment without the names in `unset`, with
//    `env` added (and overriding).
//  - spawn_process() returns only after the child has exec'd or failed to: a failure in
//    the child (chdir, open, execve) travels back through a close-on-exec pipe with its
//    errno, and the failed child is reaped before returning, so no zombie is left.
//  - Between clone and exec the child makes only system calls, on a stack of its own and
//    with every signal blocked until the handlers are reset: it shares the parent's memory
//    (CLONE_VM | CLONE_VFORK, as posix_spawn), so everything it needs (C strings, envp) is
//    built before, and the parent waits in clone until the child has exec'd or died.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/program_path.hpp"  // find_on_path
#include "common/result.hpp"

namespace dlsweep::sched {

using dlsweep::find_on_path;  // common/program_path.hpp

/// The PATH a job's program is searched on: env["PATH"] if the job sets it, else ours.
std::string effective_path(const std::map<std::string, std::string>& env);

/// Starts argv (argv[0] looked up on effective_path(env)) as described above. Returns the
/// child's pid (== its process group id). Errors name the program and the failing step.
///
/// die_with_parent: the child gets SIGKILL when the thread that started it ends (Linux's
/// parent-death signal), for a process that must not outlive the orchestrator (a
/// kept-imported runner, local/warm_pool.hpp); its own children are not affected.
/// unset: names of the parent's environment not passed on. keep_fd: one descriptor (>= 3)
/// the program inherits (every other one beyond stdio is closed on exec).
Result<pid_t> spawn_process(const std::vector<std::string>& argv, const std::filesystem::path& workdir,
                            const std::map<std::string, std::string>& env, bool die_with_parent = false,
                            const std::vector<std::string>& unset = {}, int keep_fd = -1);

}  // namespace dlsweep::sched
