#include "orchestrator/as_job.hpp"

#include <fmt/format.h>

#include "common/program_path.hpp"
#include "common/shell_quote.hpp"
#include "db/storage.hpp"
#include "orchestrator/commands.hpp"
#include "engine/trial_files.hpp"
#include "schedulers/slurm/command.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

int submit_as_job(const StudySpec& spec, const std::string& db, const std::string& study_file,
                  const fs::path& runs_dir) {
  if (spec.backend.kind != "slurm") {
    fmt::print(stderr, "error: {}: backend.kind: --as-job needs the slurm backend (fix: set `kind: slurm`, or run "
                       "`dlsweep submit` inside an allocation)\n", study_file);
    return exit_code::usage;
  }
  std::error_code ec;
  if (fs::exists(db, ec)) {
    auto storage = db::Storage::open_readonly(db);
    if (storage)
      if (auto s = (*storage)->find_study(spec.name); s && *s) {
        fmt::print(stderr, "error: study '{}' already exists in {} (fix: `dlsweep resume {}` or pick another name)\n",
                   spec.name, db, spec.name);
        return exit_code::usage;
      }
  }
  auto self_exe = self_executable();
  if (!self_exe) {
    fmt::print(stderr, "error: cannot find the dlsweep executable (/proc/self/exe)\n");
    return exit_code::runtime;
  }
  const std::string self = self_exe->string();
  fs::create_directories(runs_dir, ec);
  fs::path script = runs_dir / (spec.name + ".orchestrator.sh");
  const auto& o = spec.backend.slurm;
  // Partition/account/qos were validated as plain Slurm names; paths go through shell_quote.
  std::string text = "#!/bin/bash\n";
  text += fmt::format("#SBATCH --job-name=dlsweep-orchestrator:{}\n", spec.name);
  text += fmt::format("#SBATCH --output={}\n", (fs::absolute(runs_dir) / (spec.name + ".orchestrator-%j.out")).string());
  // --requeue: if Slurm requeues the orchestrator (preemption, node failure, scontrol
  // requeue), it comes back and resumes; its SIGTERM detaches instead of cancelling trials.
  text += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n#SBATCH --requeue\n";
  if (!o.partition.empty()) text += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) text += "#SBATCH --account=" + o.account + "\n";
  if (!o.qos.empty()) text += "#SBATCH --qos=" + o.qos + "\n";
  text += fmt::format("cd {}\n", shell_quote(fs::current_path().string()));
  const std::string dlsweep = shell_join({self, "--db", fs::absolute(db).string()});
  // The first run submits; a restarted one (the study is in the database) resumes.
  text += fmt::format("if {} status {} >/dev/null 2>&1; then\n", dlsweep, shell_quote(spec.name));
  text += fmt::format("  exec {} resume --detach-on-term {}\n", dlsweep, shell_quote(spec.name));
  text += "fi\n";
  text += fmt::format("exec {} submit --detach-on-term {}\n", dlsweep, shell_quote(fs::absolute(study_file).string()));
  if (auto st = write_file_atomic(script, text); !st) {
    fmt::print(stderr, "error: {}\n", st.error().message());
    return exit_code::runtime;
  }
  std::map<std::string, std::string> env;
  if (!o.slurm_conf.empty()) env["SLURM_CONF"] = o.slurm_conf;
  auto r = sched::slurm::run_command({"sbatch", "--parsable", script.string()}, env, 60);
  if (!r || r->exit_code != 0) {
    fmt::print(stderr, "error: sbatch {} failed: {}\n", script.string(), r ? r->err : r.error().message());
    return exit_code::runtime;
  }
  std::string id = r->out.substr(0, r->out.find_first_of(";\n"));
  fmt::print("{}\n", id);
  fmt::print(stderr, "the orchestrator of {} runs as Slurm job {} (script {}); follow it with `dlsweep --db {} status {}`\n",
             spec.name, id, script.string(), db, spec.name);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
