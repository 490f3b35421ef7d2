#include "schedulers/slurm/refusal.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

namespace dlsweep::sched::slurm {

namespace {

bool contains(std::string_view text, std::string_view needle) {
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) ==
                                                    std::tolower(static_cast<unsigned char>(b)); });
  return it != text.end();
}

// The last "error:" line of sbatch's output (its final word on the matter), trimmed.
std::string last_error_line(std::string_view text) {
  std::string best;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (!line.empty() && (best.empty() || contains(line, "error"))) best = std::string(line);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  if (best.size() > 300) best = best.substr(0, 300) + "...";
  return best;
}

std::string or_unset(const std::string& v) { return v.empty() ? std::string("(not set)") : "\"" + v + "\""; }

}  // namespace

bool is_missing_config(std::string_view text) {
  return contains(text, "resolve_ctls_from_dns_srv") || contains(text, "Could not establish a configuration source") ||
         contains(text, "fetch_config: DNS SRV lookup failed") || contains(text, "_establish_config_source") ||
         contains(text, "Unable to process configuration file") || contains(text, "cannot stat file");
}

Error explain_refusal(std::string_view text, const SlurmOptions& o) {
  const std::string said = last_error_line(text);
  const std::string quote = " (sbatch: " + said + ")";
  if (is_missing_config(text)) {
    return Error{"no Slurm configuration found: the Slurm commands found no slurm.conf" +
                     (o.slurm_conf.empty() ? std::string(" (SLURM_CONF is not set, none at the default path)")
                                           : " at " + o.slurm_conf) +
                     " and no DNS SRV record for a controller",
                 "backend.slurm_conf",
                 "set backend.slurm_conf to the cluster's slurm.conf, or export SLURM_CONF=/path/to/slurm.conf "
                 "(on a single machine, `scripts/slurm-local.sh start` prints it); `sinfo` must work first"};
  }
  if (contains(text, "invalid partition")) {
    return Error{fmt::format("partition {} does not exist on this cluster{}", or_unset(o.partition), quote),
                 "backend.partition", "use one that `sinfo -s` lists, or remove backend.partition for the default"};
  }
  if (contains(text, "Invalid account") || contains(text, "account/partition combination")) {
    return Error{fmt::format("account {} is not valid here (or not with this partition){}", or_unset(o.account), quote),
                 "backend.account", "use an account `sacctmgr show assoc user=$USER` lists, or remove backend.account"};
  }
  if (contains(text, "Invalid qos")) {
    return Error{fmt::format("QOS {} is not valid here{}", or_unset(o.qos), quote), "backend.qos",
                 "use one `sacctmgr show qos` lists for your account, or remove backend.qos"};
  }
  if (contains(text, "Invalid feature") || contains(text, "constraint")) {
    return Error{fmt::format("constraint {} matches no node feature{}", or_unset(o.constraint), quote),
                 "backend.constraint", "use features that `sinfo -o '%f'` lists, or remove backend.constraint"};
  }
  if (contains(text, "gres") || contains(text, "generic resource")) {
    // Name the GPU request the study made (gpus_per_task, gpus_per_node or both), not an unset key.
    const bool per_task = !o.gpus_per_task.empty(), per_node = !o.gpus_per_node.empty();
    std::string asked, key;
    if (per_task) asked = fmt::format("gpus_per_task {}", or_unset(o.gpus_per_task)), key = "backend.gpus_per_task";
    if (per_node)
      asked += (asked.empty() ? "" : " with ") + fmt::format("gpus_per_node {}", or_unset(o.gpus_per_node)),
          key = key.empty() ? "backend.gpus_per_node" : key;
    if (asked.empty()) asked = "the GPU request", key = "backend.gpus_per_task";
    return Error{fmt::format("{} cannot be granted here{}", asked, quote), key,
                 "check `sinfo -o '%G'` for the GPUs nodes have, or remove it"};
  }
  if (contains(text, "time limit")) {
    return Error{"the time limit exceeds what the partition allows" + quote, "backend.time",
                 "lower backend.time (or trial.timeout) below the partition's MaxTime (`sinfo -o '%P %l'`)"};
  }
  if (contains(text, "Memory required") || contains(text, "memory specification")) {
    return Error{fmt::format("mem {} is more than a node has{}", or_unset(o.mem), quote), "backend.mem",
                 "lower backend.mem below the nodes' RealMemory (`sinfo -o '%m'`), or remove it"};
  }
  if (contains(text, "node configuration is not available") || contains(text, "More processors requested") ||
      contains(text, "Requested node count")) {
    return Error{"no node of the cluster has the requested shape (nodes, ntasks_per_node, cpus_per_task, mem, "
                 "gpus_per_node, trial.ranks)" + quote,
                 "backend", "compare the request with `sinfo -N -o '%N %c %m %G'` and lower it"};
  }
  return Error{"Slurm refused the batch script" + quote, "backend",
               "fix the key the message names; `dlsweep submit --dry-run` writes the script for `sbatch --test-only`"};
}

}  // namespace dlsweep::sched::slurm
