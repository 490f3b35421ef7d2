// backend_offline.cpp — what SlurmBackend does without an event loop for a command that is
// not a sweep: dry_run (the batch scripts submit would send, written for inspection; the
// planning and rendering are submit's own), cancel_detached (offline `dlsweep cancel`) and
// submit_orchestrator (`submit --as-job`).
#include <unistd.h>

#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/refusal.hpp"

namespace dlsweep::sched {

namespace fs = std::filesystem;
using namespace slurm;

namespace {
constexpr std::size_t kDefaultMaxArraySize = 1001;  // Slurm's default MaxArraySize
}

Result<std::vector<std::string>> SlurmBackend::dry_run(const std::vector<JobSpec>& given, const fs::path& out_dir) {
  std::vector<JobSpec> jobs = given;
  std::error_code ec;
  for (auto& j : jobs) j.workdir = fs::absolute(j.workdir, ec);  // as submit() has it
  std::vector<WaitingJob> waiting;
  std::map<std::string, const JobSpec*> by_id;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (auto st = check_job(jobs[i]); !st) return std::unexpected(st.error());
    std::string id = std::to_string(i);
    waiting.push_back({id, shape_of(jobs[i])});
    by_id[id] = &jobs[i];
  }
  std::vector<std::string> lines;
  std::size_t max_array = kDefaultMaxArraySize;
  if (!waiting.empty()) {
    // MaxArraySize N allows indexes 0..N-1, i.e. N tasks per array (as flush() reads it).
    if (auto m = driver_->max_array_size())
      max_array = static_cast<std::size_t>(std::max(*m, 1));
    else
      lines.push_back(fmt::format("MaxArraySize: the controller did not say ({}); assumed Slurm's default {}",
                                  m.error().error.what, kDefaultMaxArraySize));
  }
  // The site's submit limit (sacctmgr), where the user may read it: what submit will do.
  std::size_t room = SubmitCapacity::kUnlimited;
  if (!waiting.empty())
    if (auto known = driver_->submit_limit(options_.qos)) {
      room = known->jobs;
      if (jobs.size() > known->jobs)
        lines.push_back(fmt::format("site limit (sacctmgr): {}: this study's {} jobs go at most {} at a time, the "
                                    "rest wait in dlsweep and go as jobs end",
                                    capacity_line(known->limit, known->jobs), jobs.size(), known->jobs));
    }
  int n = 0;
  while (!waiting.empty()) {
    auto plan = plan_arrays(waiting, options_.max_concurrent, /*live=*/0, max_array, std::max<std::size_t>(room, 1));
    if (plan.empty()) return fail("planned no array for the waiting jobs", "slurm dry run", "report this as a bug");
    std::set<std::string> planned;
    for (const auto& a : plan) {
      // Rendered for the study's script dir, as submit renders it (output, chdir, the index
      // path in the script); written to out_dir under the same names.
      BatchRequest req = request_for(a, fmt::format("dry-run-{}", ++n), options_.script_dir);
      for (const auto& id : a.ids) {
        const JobSpec& j = *by_id.at(id);
        req.tasks.push_back(BatchTask{j.token(), j.workdir, j.argv, j.env});
        planned.insert(id);
      }
      auto prepared = prepare_batch(template_text_, options_, req);
      if (!prepared) return std::unexpected(prepared.error());
      const fs::path index = out_dir / req.index_path().filename(), script = out_dir / req.script_path().filename();
      if (auto st = write_file_atomic(index, prepared->index_text); !st) return std::unexpected(st.error());
      if (auto st = write_file_atomic(script, prepared->request.script); !st) return std::unexpected(st.error());
      std::string shape = fmt::format("{} task{}", a.ids.size(), a.ids.size() == 1 ? "" : "s");
      if (!prepared->request.array.empty()) shape += ", --array=" + prepared->request.array;
      if (a.shape.ranks > 1) shape += fmt::format(", {} ranks each", a.shape.ranks);
      if (a.shape.time_limit_min > 0) shape += fmt::format(", --time={}", a.shape.time_limit_min);
      lines.push_back(fmt::format("batch script {} ({}): {}", n, shape, script.string()));
      lines.push_back(fmt::format("index file {}: {} (read from {} when submitted)", n, index.string(),
                                  req.index_path().string()));
    }
    std::erase_if(waiting, [&](const WaitingJob& w) { return planned.count(w.id) != 0; });
  }
  return lines;
}

Status SlurmBackend::cancel_detached(const std::vector<std::string>& native_ids) {
  if (native_ids.empty()) return {};
  std::set<std::string> unique(native_ids.begin(), native_ids.end());
  auto r = driver_->cancel({unique.begin(), unique.end()});
  if (r) return {};
  std::string ids;
  for (const auto& id : unique) ids += (ids.empty() ? "" : " ") + id;
  return fail(fmt::format("cancelling Slurm jobs {} failed: {}", ids, r.error().error.what),
              options_.slurm_conf.empty() ? std::string("backend") : "backend.slurm_conf: " + options_.slurm_conf,
              r.error().transient ? "check that slurmctld is up (`scontrol ping`), then run `dlsweep cancel` again"
                                  : "cancel them with scancel; `squeue --me` lists them");
}

Result<std::string> SlurmBackend::submit_orchestrator(const JobSpec& job) {
  if (auto st = check_job(job); !st) return std::unexpected(st.error());
  SlurmOptions o = options_;
  o.script_dir = job.workdir;
  o.time_limit = 0;
  o.nodes = 1;
  o.ntasks_per_node = 0;
  o.cpus_per_task = 1;
  o.cpus_per_gpu = 0;
  o.gpus_per_node.clear();
  o.gpus_per_task.clear();
  o.gpu_bind.clear();
  o.cpu_bind.clear();
  o.constraint.clear();
  o.extra_sbatch.clear();  // the trials' extras (--exclusive, --gres) are not the orchestrator's
  o.mem = "1G";
  o.requeue = true;
  std::error_code ec;
  fs::create_directories(o.script_dir, ec);
  if (ec) return fail("cannot create " + o.script_dir.string() + ": " + ec.message(), "submit --as-job", "check runs_dir");
  JobSpec orchestrator = job;
  orchestrator.study = job.study + ".orchestrator";
  orchestrator.ranks = 1;
  orchestrator.launcher.clear();
  orchestrator.warn_always = true;
  BatchRequest req = single_job_request(orchestrator, fmt::format("orchestrator-{}-{}", std::time(nullptr), getpid()),
                                        o.script_dir);
  req.tasks.front().token = job.token();
  auto prepared = prepare_batch(template_text_, o, req);
  if (!prepared) return std::unexpected(prepared.error());
  if (auto st = write_file_atomic(req.index_path(), prepared->index_text); !st) return std::unexpected(st.error());
  if (auto st = write_file_atomic(req.script_path(), prepared->request.script); !st) return std::unexpected(st.error());
  if (auto t = driver_->test_only(prepared->request); !t) {
    if (t.error().transient)
      return fail("the Slurm controller did not answer `sbatch --test-only`: " + t.error().error.message(), "backend",
                  "check that slurmctld is up (`scontrol ping`), then submit again");
    return std::unexpected(explain_refusal(t.error().error.what, o));
  }
  auto id = driver_->submit(prepared->request);
  if (!id) return fail("sbatch " + req.script_path().string() + " failed: " + id.error().error.what, "backend",
                       "check `sinfo` and the study's partition/account/qos");
  return std::to_string(*id);
}

}  // namespace dlsweep::sched
