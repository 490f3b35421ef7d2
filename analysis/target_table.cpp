#include "analysis/target_table.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

namespace dlsweep::analysis {

std::vector<const BatchRow*> TargetTable::reaching_rows() const {
  std::vector<const BatchRow*> out;
  for (const auto& r : rows)
    if (r.best_group && r.steps && r.steps->mean > 0) out.push_back(&r);
  return out;
}

namespace {

std::string exclusion_reason(const TrialData& t) {
  std::string why = t.state;
  if (t.state == "RUNNING" || t.state == "QUEUED" || t.state == "WAITING") why += ": not finished yet";
  else if (t.state == "PRUNED") why += ": stopped early by the pruner";
  else if (t.state == "CANCELLED") why += ": cancelled";
  else if (t.state == "FAILED") why += ": failed";
  // The recorded message, unless it only repeats the state ("cancelled").
  std::string lower = t.state;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!t.message.empty() && t.message != lower) why += " (" + t.message + ")";
  return why;
}

}  // namespace

TargetTable target_table(const StudyData& study) {
  TargetTable table;
  table.target = study.target;
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < study.trials.size(); ++i) {
    const auto& t = study.trials[i];
    if (!t.complete()) table.excluded.push_back({t.number, exclusion_reason(t)});
    else if (t.batch_ramp) table.excluded.push_back({t.number, "batch_ramp: the batch changes during training, so it has no single batch size"});
    else if (t.batch <= 0)
      table.excluded.push_back({t.number, "no batch size: neither a batch_size parameter nor a reported batch_size metric"});
    else usable.push_back(i);
  }
  table.groups = group_by_seed(study.trials, usable);

  std::map<std::int64_t, std::vector<std::size_t>> by_batch;  // batch -> group indices
  for (std::size_t g = 0; g < table.groups.size(); ++g) by_batch[table.groups[g].batch].push_back(g);
  for (const auto& [batch, gs] : by_batch) {
    BatchRow row;
    row.batch = batch;
    std::optional<std::size_t> best;
    for (std::size_t g : gs) {
      const auto& grp = table.groups[g];
      row.trials += grp.members.size();
      row.reached += grp.reached;
      if (!study.target || !grp.all_reached) continue;
      if (!best) { best = g; continue; }
      const auto& b = table.groups[*best];
      if (grp.steps.mean < b.steps.mean || (grp.steps.mean == b.steps.mean && grp.time.mean < b.time.mean)) best = g;
    }
    if (best) {
      const auto& b = table.groups[*best];
      row.best_group = best;
      row.steps = b.steps;
      row.samples = b.samples;
      row.time = b.time;
      for (std::size_t i : b.members) row.best_trials.push_back(study.trials[i].number);
      row.best_config = describe_params(b.config, study.trials);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace dlsweep::analysis
