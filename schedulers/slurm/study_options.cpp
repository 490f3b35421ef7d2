// study_options.cpp — see study_options.hpp.
#include "schedulers/slurm/study_options.hpp"

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <algorithm>

#include <fmt/format.h>

namespace dlsweep::sched::slurm {

namespace {

constexpr std::string_view kDrivers[] = {"cli", "api"};
constexpr std::string_view kMpiPlugins[] = {"pmix", "pmi2", "none"};
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

}  // namespace

void read_study_options(OptionReader& r, SlurmOptions& o, std::size_t max_concurrent) {
  auto text = [&](std::string_view key, std::string& out) {
    if (auto v = r.text(key)) out = *v;
  };
  auto count = [&](std::string_view key, int& out) {
    if (auto v = r.integer(key, 0, kIntMax)) out = int(*v);
  };
  auto lines = [&](std::string_view key, std::vector<std::string>& out) {
    if (auto v = r.strings(key, "write a list of strings")) out = std::move(*v);
  };
  // In the order of the kind's key list (backend_kinds.cpp), as the errors come out.
  if (r.has("driver"))
    if (auto v = r.word("driver", kDrivers)) o.driver = *v;
  if (r.has("slurm_conf")) text("slurm_conf", o.slurm_conf);
  if (r.has("partition")) text("partition", o.partition);
  if (r.has("account")) text("account", o.account);
  if (r.has("qos")) text("qos", o.qos);
  if (r.has("time")) count("time", o.time_limit);
  if (r.has("nodes")) count("nodes", o.nodes);
  if (r.has("ntasks_per_node")) count("ntasks_per_node", o.ntasks_per_node);
  if (r.has("cpus_per_task")) count("cpus_per_task", o.cpus_per_task);
  if (r.has("gpus_per_node")) text("gpus_per_node", o.gpus_per_node);
  if (r.has("mem")) text("mem", o.mem);
  if (r.has("constraint")) text("constraint", o.constraint);
  if (r.has("extra_sbatch")) lines("extra_sbatch", o.extra_sbatch);
  if (r.has("setup")) lines("setup", o.setup);
  if (r.has("template")) {
    std::string t;
    text("template", t);
    if (!t.empty()) o.template_path = t;
  }
  if (r.has("signal_lead_s")) count("signal_lead_s", o.signal_lead_s);
  if (r.has("requeue"))
    if (auto v = r.boolean("requeue")) o.requeue = *v;
  if (r.has("poll_min_s"))
    if (auto v = r.number("poll_min_s", 0, true)) o.poll_min_s = *v;
  if (r.has("poll_max_s"))
    if (auto v = r.number("poll_max_s", 0, true)) o.poll_max_s = *v;
  if (r.has("gpus_per_task")) text("gpus_per_task", o.gpus_per_task);
  if (r.has("cpus_per_gpu")) count("cpus_per_gpu", o.cpus_per_gpu);
  if (r.has("gpu_bind")) text("gpu_bind", o.gpu_bind);
  if (r.has("cpu_bind")) text("cpu_bind", o.cpu_bind);
  if (r.has("mpi"))
    if (auto v = r.word("mpi", kMpiPlugins)) o.mpi = *v;
  if (r.has("workers")) count("workers", o.workers);
  if (r.has("keep_imported"))
    if (auto v = r.boolean("keep_imported")) o.keep_imported = *v;
  if (r.has("worker_idle_s"))
    if (auto v = r.number("worker_idle_s", 0, true)) o.worker_idle_s = *v;
  // The Slurm syntax of the whole (every value is shell-quoted or refused), at its key.
  SlurmOptions probe = o;
  probe.max_concurrent = max_concurrent;
  if (auto st = validate_study_options(probe); !st) r.error(st.error().where, st.error().what, st.error().fix);
}

void write_study_options(const SlurmOptions& o, nlohmann::json& b) {
  const SlurmOptions d;  // defaults: only what the study changed is written back
  b["driver"] = o.driver;
  for (auto [key, value] : {std::pair<const char*, const std::string*>{"slurm_conf", &o.slurm_conf},
                            {"partition", &o.partition}, {"account", &o.account}, {"qos", &o.qos},
                            {"gpus_per_node", &o.gpus_per_node}, {"gpus_per_task", &o.gpus_per_task},
                            {"gpu_bind", &o.gpu_bind}, {"cpu_bind", &o.cpu_bind}, {"mem", &o.mem},
                            {"constraint", &o.constraint}})
    if (!value->empty()) b[key] = *value;
  for (auto [key, value] : {std::pair<const char*, int>{"time", o.time_limit}, {"nodes", o.nodes},
                            {"ntasks_per_node", o.ntasks_per_node}, {"cpus_per_task", o.cpus_per_task},
                            {"cpus_per_gpu", o.cpus_per_gpu}})
    if (value != 0) b[key] = value;
  if (o.mpi != d.mpi) b["mpi"] = o.mpi;
  if (!o.extra_sbatch.empty()) b["extra_sbatch"] = o.extra_sbatch;
  if (!o.setup.empty()) b["setup"] = o.setup;
  if (!o.template_path.empty()) b["template"] = o.template_path.string();
  if (o.signal_lead_s != d.signal_lead_s) b["signal_lead_s"] = o.signal_lead_s;
  if (o.requeue != d.requeue) b["requeue"] = o.requeue;
  if (o.poll_min_s != d.poll_min_s) b["poll_min_s"] = o.poll_min_s;
  if (o.poll_max_s != d.poll_max_s) b["poll_max_s"] = o.poll_max_s;
  if (o.workers != d.workers) b["workers"] = o.workers;
  if (o.worker_idle_s != d.worker_idle_s) b["worker_idle_s"] = o.worker_idle_s;
  if (o.keep_imported != d.keep_imported) b["keep_imported"] = o.keep_imported;
}

std::optional<Error> check_ranks(const SlurmOptions& o, std::span<const std::int64_t> ranks, std::string_view launcher,
                                 const std::string& where) {
  for (auto n : ranks) {
    if (o.nodes > 0 && o.ntasks_per_node > 0 && n != std::int64_t(o.nodes) * o.ntasks_per_node)
      return Error{fmt::format("{} ranks do not fit nodes: {} x ntasks_per_node: {} = {} tasks", n, o.nodes,
                               o.ntasks_per_node, o.nodes * o.ntasks_per_node),
                   where, "make ranks = nodes x ntasks_per_node, or leave one of the two out", ErrorKind::bad_input};
    if (o.nodes > 0 && n < o.nodes)
      return Error{fmt::format("{} ranks cannot spread over nodes: {} (each node needs at least one)", n, o.nodes),
                   where, "lower backend.nodes or raise the ranks", ErrorKind::bad_input};
    if (launcher == "torchrun" && n % std::max(o.nodes, 1) != 0)
      return Error{fmt::format("torchrun starts the same number of workers on every node: {} ranks over {} nodes", n,
                               std::max(o.nodes, 1)),
                   where, "make the ranks a multiple of backend.nodes", ErrorKind::bad_input};
  }
  return std::nullopt;
}

std::optional<Error> check_gpu_request(const SlurmOptions& o, const std::string& where) {
  if (!o.gpus_per_task.empty() || !o.gpus_per_node.empty()) return std::nullopt;
  for (const auto& line : o.extra_sbatch)
    if (line.find("gres") != std::string::npos || line.find("gpu") != std::string::npos) return std::nullopt;
  return Error{"device: cuda, but the Slurm jobs request no GPU (every trial would fail on a node without one)", where,
               "add gpus_per_task: \"1\" under backend (one GPU per rank; or gpus_per_node, or a --gres line in "
               "extra_sbatch)",
               ErrorKind::bad_input};
}

}  // namespace dlsweep::sched::slurm
