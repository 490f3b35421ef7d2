// options.cpp — validation of SlurmOptions; see slurm/options.hpp for the trust model.
#include "schedulers/slurm/options.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "schedulers/slurm/quote.hpp"

namespace dlsweep::sched {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

/// Slurm object names (partitions, accounts, QOS): no whitespace, quotes or control chars.
Status check_name(const std::string& value, const char* key) {
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '"' || c == '\'' || c == '\\' || c == '#') {
      return fail(fmt::format("'{}' is not a valid Slurm name: it contains {}", value,
                              u < 0x20 ? "a control character" : fmt::format("'{}'", c)),
                  fmt::format("slurm.{}", key), "use the name exactly as `sinfo`/`sacctmgr show` prints it");
    }
  }
  return {};
}

constexpr std::array<std::string_view, 12> kReservedOptions = {
    "array", "job-name", "output", "error", "open-mode", "comment", "chdir", "signal", "requeue", "no-requeue",
    "wrap",  "parsable"};

}  // namespace

Result<std::string> normalize_extra_sbatch(const std::string& line, std::size_t index) {
  const std::string where = fmt::format("slurm.extra_sbatch[{}]", index);
  constexpr std::string_view prefix = "#SBATCH --";
  if (line.find('\0') != std::string::npos || slurm::first_control_char(line) >= 0) {
    return fail("the line contains a line break or control character", where, "give one #SBATCH option per entry");
  }
  if (line.rfind(prefix, 0) != 0) {
    return fail(fmt::format("'{}' does not start with '#SBATCH --'", line), where,
                "write the line as `#SBATCH --option=value`");
  }
  std::string_view rest = std::string_view(line).substr(prefix.size());
  std::size_t end = 0;
  while (end < rest.size() && (is_lower(rest[end]) || is_digit(rest[end]) || rest[end] == '-')) ++end;
  std::string_view name = rest.substr(0, end);
  if (name.empty() || !is_lower(name[0])) {
    return fail(fmt::format("'{}' has no option name after '--'", line), where,
                "write the line as `#SBATCH --option=value` (long option names only)");
  }
  if (std::find(kReservedOptions.begin(), kReservedOptions.end(), name) != kReservedOptions.end()) {
    return fail(fmt::format("--{} is set by dlsweep itself", name), where, "remove this line");
  }
  std::string_view value = rest.substr(end);
  if (value.empty()) return fmt::format("#SBATCH --{}", name);
  if (value[0] != '=' && value[0] != ' ') {
    return fail(fmt::format("unexpected '{}' after --{}", value[0], name), where,
                "write the line as `#SBATCH --option=value`");
  }
  value.remove_prefix(1);
  auto q = slurm::sbatch_quote(value, where);
  if (!q) return std::unexpected(q.error());
  return fmt::format("#SBATCH --{}={}", name, *q);
}

std::uint64_t mem_megabytes(std::string_view mem) {
  std::uint64_t v = 0;
  std::size_t i = 0;
  while (i < mem.size() && is_digit(mem[i])) v = v * 10 + static_cast<std::uint64_t>(mem[i++] - '0');
  std::string_view unit = mem.substr(i);
  if (unit == "K") return (v + 1023) / 1024;
  if (unit == "G") return v * 1024;
  if (unit == "T") return v * 1024 * 1024;
  return v;  // "M" or no unit: megabytes
}

Status validate_options(const SlurmOptions& o) {
  if (o.driver != "cli" && o.driver != "api") {
    return fail(fmt::format("unknown driver '{}'", o.driver), "slurm.driver",
                "use `cli` (sbatch/squeue, works everywhere) or `api` (libslurm)");
  }
  if (o.slurm_conf.find('\0') != std::string::npos || slurm::first_control_char(o.slurm_conf) >= 0)
    return fail("the path contains a control character", "slurm.slurm_conf");
  for (auto [value, key] : {std::pair{&o.partition, "partition"}, {&o.account, "account"}, {&o.qos, "qos"},
                            {&o.constraint, "constraint"}}) {
    if (auto st = check_name(*value, key); !st) return st;
  }
  if (!o.mem.empty()) {
    std::string_view m = o.mem;
    std::size_t digits = 0;
    while (digits < m.size() && is_digit(m[digits])) ++digits;
    std::string_view unit = m.substr(digits);
    bool ok = digits > 0 && (unit.empty() || unit == "K" || unit == "M" || unit == "G" || unit == "T");
    if (!ok) return fail(fmt::format("'{}' is not a memory size", o.mem), "slurm.mem", "write e.g. 16G or 4000 (MB)");
  }
  for (auto [value, key] : {std::pair{&o.gpus_per_node, "gpus_per_node"}, {&o.gpus_per_task, "gpus_per_task"}}) {
    if (value->empty()) continue;
    std::string_view g = *value;
    auto colon = g.rfind(':');
    std::string_view type = colon == std::string_view::npos ? std::string_view{} : g.substr(0, colon);
    std::string_view count = colon == std::string_view::npos ? g : g.substr(colon + 1);
    bool ok = !count.empty() && std::all_of(count.begin(), count.end(), is_digit) &&
              std::all_of(type.begin(), type.end(), [](char c) {
                return is_lower(c) || is_digit(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.';
              });
    if (!ok) return fail(fmt::format("'{}' is not a GPU count", *value), fmt::format("slurm.{}", key),
                         "write a count (4) or type:count (a100:4)");
  }
  for (auto [value, key] : {std::pair{&o.gpu_bind, "gpu_bind"}, {&o.cpu_bind, "cpu_bind"}}) {
    bool ok = std::all_of(value->begin(), value->end(), [](char c) {
      return is_lower(c) || is_digit(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c == ',' || c == '.' ||
             c == '-';
    });
    if (!ok) return fail(fmt::format("'{}' is not a binding srun understands", *value), fmt::format("slurm.{}", key),
                         "write it as for srun, e.g. closest, single:1, map_gpu:0,1 (gpu_bind) or cores, rank, "
                         "map_cpu:0,4 (cpu_bind)");
  }
  if (!o.mpi.empty() && o.mpi != "pmix" && o.mpi != "pmi2" && o.mpi != "none" && o.mpi.rfind("pmix_v", 0) != 0)
    return fail(fmt::format("unknown MPI plugin '{}'", o.mpi), "slurm.mpi",
                "use pmix, pmi2 or none (`srun --mpi=list` shows what this cluster has)");
  if (o.cpus_per_gpu > 0 && o.cpus_per_task > 0)
    return fail("cpus_per_gpu and cpus_per_task are both set; Slurm takes one or the other", "slurm.cpus_per_gpu",
                "keep cpus_per_gpu (CPUs follow the GPUs) or cpus_per_task, not both");
  if (o.cpus_per_gpu > 0 && o.gpus_per_node.empty() && o.gpus_per_task.empty())
    return fail("cpus_per_gpu without GPUs", "slurm.cpus_per_gpu", "request GPUs with gpus_per_task or gpus_per_node");
  for (auto [v, key] : {std::pair{o.time_limit, "time_limit"}, {o.nodes, "nodes"},
                        {o.ntasks_per_node, "ntasks_per_node"}, {o.cpus_per_task, "cpus_per_task"}, {o.cpus_per_gpu, "cpus_per_gpu"},
                        {o.signal_lead_s, "signal_lead_s"}, {o.workers, "workers"}}) {
    if (v < 0) return fail(fmt::format("{} is negative", v), fmt::format("slurm.{}", key), "use 0 (not set) or more");
  }
  if (o.keep_imported && o.workers < 1)
    return fail("keep_imported applies to pilot workers: the trials of per-trial jobs each start afresh",
                "slurm.keep_imported", "add workers: N (N allocations that run the trials one after another), or remove keep_imported");
  if (!(o.worker_idle_s > 0))
    return fail(fmt::format("worker_idle_s {}", o.worker_idle_s), "slurm.worker_idle_s",
                "give the seconds an idle pilot worker waits for work before it exits (e.g. 120)");
  if (o.signal_lead_s > 65535)
    return fail("more than 65535 s", "slurm.signal_lead_s", "Slurm's warning signal lead is at most 65535 s");
  if (!(o.poll_min_s > 0) || !(o.poll_max_s >= o.poll_min_s))
    return fail(fmt::format("poll_min_s {} / poll_max_s {}", o.poll_min_s, o.poll_max_s), "slurm.poll_min_s",
                "use 0 < poll_min_s <= poll_max_s");
  if (!(o.command_timeout_s > 0)) return fail("must be positive", "slurm.command_timeout_s");
  if (o.vanish_polls < 1) return fail("must be at least 1", "slurm.vanish_polls");
  if (o.script_dir.empty())
    return fail("no script directory", "slurm.script_dir", "set it (e.g. the study's runs directory)/slurm");
  if (slurm::first_control_char(o.script_dir.string()) >= 0)
    return fail("the path contains a control character", "slurm.script_dir", "use a plain path");
  for (std::size_t i = 0; i < o.extra_sbatch.size(); ++i) {
    if (auto l = normalize_extra_sbatch(o.extra_sbatch[i], i); !l) return std::unexpected(l.error());
  }
  if (o.driver == "api" && !o.extra_sbatch.empty()) {
    return fail("extra #SBATCH lines are read by sbatch, which the api driver does not run", "slurm.extra_sbatch",
                "use driver: cli, or move the option into the site's batch template");
  }
  for (std::size_t i = 0; i < o.setup.size(); ++i) {
    if (o.setup[i].find('\0') != std::string::npos)
      return fail("the line contains a NUL byte", fmt::format("slurm.setup[{}]", i));
  }
  return {};
}

Status validate_study_options(SlurmOptions o) {
  o.script_dir = "slurm";
  auto st = validate_options(o);
  if (st) return st;
  Error e = st.error();
  if (e.where.rfind("slurm.", 0) == 0) e.where = e.where.substr(6);
  if (e.where == "time_limit") e.where = "time";
  return std::unexpected(e);
}

}  // namespace dlsweep::sched
