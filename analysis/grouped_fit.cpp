// grouped_fit.cpp — the batch-size model per value of one parameter. See grouped_fit.hpp and
// docs/math.md#the-batch-size-model-per-group.
#include "analysis/grouped_fit.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "analysis/target_table.hpp"

namespace dlsweep::analysis {

using nlohmann::json;

namespace {

std::string value_label(const json& v) {
  if (v.is_null()) return "(unset)";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string join(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// The value of `param` in a trial's params (null when it has none).
json value_of(const TrialData& t, const std::string& param) {
  if (!t.params.is_object()) return nullptr;
  auto it = t.params.find(param);
  return it == t.params.end() ? json(nullptr) : *it;
}

GroupFit fit_group(const StudyData& study, const std::string& param, const json& value, const FitOptions& opt) {
  GroupFit g;
  g.value = value;
  g.label = value_label(value);
  StudyData sub;
  sub.name = study.name;
  sub.metric = study.metric;
  sub.mode = study.mode;
  sub.target = study.target;
  sub.trainer = study.trainer;
  for (const auto& t : study.trials)
    if (value_of(t, param) == value) sub.trials.push_back(t);
  g.trials = sub.trials.size();
  std::set<std::int64_t> batches;
  for (const auto& t : sub.trials) {
    g.complete += t.complete();
    if (t.complete() && !t.batch_ramp && t.batch > 0) batches.insert(t.batch);
  }
  g.batch_sizes = batches.size();
  if (!study.target) {
    g.cannot_fit = "the study has no objective target, so there are no steps to a target to fit";
    return g;
  }
  const TargetTable table = target_table(sub);
  std::vector<BatchPoint> pts;
  for (const BatchRow* r : table.reaching_rows()) {
    g.points.push_back({r->batch, r->steps->mean, r->samples ? r->samples->mean : r->steps->mean * r->batch});
    pts.push_back({static_cast<double>(r->batch), r->steps->mean, r->steps->n});
  }
  if (auto f = fit_batch_model(pts, opt)) g.fit = *f;
  else g.cannot_fit = f.error().what;
  // The epoch budget: samples (epochs on the same data) against the smallest batch at the target.
  if (!g.points.empty() && g.points.front().samples > 0) {
    const GroupPoint& ref = g.points.front();
    g.reference_batch = ref.batch;
    for (const auto& p : g.points) {
      const double ratio = p.samples / ref.samples;
      if (ratio <= kEpochBudgetFactor) g.largest_batch_within_budget = p.batch, g.largest_batch_epochs_ratio = ratio;
    }
  }
  return g;
}

bool overlap(const BatchFit& a, const BatchFit& b) { return a.b_crit_lo <= b.b_crit_hi && b.b_crit_lo <= a.b_crit_hi; }

}  // namespace

std::vector<std::string> parameter_names(const StudyData& study) {
  std::set<std::string> names;
  for (const auto& t : study.trials)
    if (t.params.is_object())
      for (auto it = t.params.begin(); it != t.params.end(); ++it) names.insert(it.key());
  return {names.begin(), names.end()};
}

Result<GroupedFit> fit_by_group(const StudyData& study, const std::string& param, const FitOptions& opt) {
  const auto names = parameter_names(study);
  if (std::find(names.begin(), names.end(), param) == names.end())
    return fail(fmt::format("study {} has no parameter '{}'", study.name, param), "--group-by",
                names.empty() ? "the study has no trial with parameters yet"
                              : fmt::format("group by one of the study's parameters: {}", join(names)));
  if (param == "batch_size")
    return fail("cannot group by batch_size: the batch-size model is fitted over the batch sizes of each group",
                "--group-by", fmt::format("group by another of the study's parameters: {}", join(names)));
  GroupedFit out;
  out.param = param;
  std::vector<json> values;  // in order of first appearance
  for (const auto& t : study.trials) {
    json v = value_of(t, param);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
  }
  for (const auto& v : values) out.groups.push_back(fit_group(study, param, v, opt));
  return out;
}

std::vector<std::string> categorical_parameters(const StudyData& study) {
  std::vector<std::string> out;
  for (const auto& name : parameter_names(study)) {
    if (name == "batch_size" || name == "seed") continue;
    std::set<std::string> seen;
    bool categorical = true;
    for (const auto& t : study.trials) {
      if (!t.complete()) continue;
      const json v = value_of(t, name);
      if (v.is_null()) continue;
      categorical = categorical && (v.is_string() || v.is_boolean());
      seen.insert(v.dump());
    }
    if (categorical && seen.size() >= 2 && seen.size() <= 8) out.push_back(name);
  }
  return out;
}

std::vector<std::string> GroupedFit::lines() const {
  std::vector<std::string> out;
  out.push_back(fmt::format("B_crit per {} (each value fitted on its own: best seed group per batch size, COMPLETE "
                            "trials; bootstrap intervals):",
                            param));
  for (const auto& g : groups) {
    std::string s = fmt::format("  {}={}: ", param, g.label);
    if (g.fit) {
      const auto& f = *g.fit;
      s += fmt::format("B_crit = {:.4g} ({:.0f}% interval {:.4g} .. {:.4g}), S_min = {:.4g} steps, fitted on {} batch "
                       "sizes {:g}..{:g}",
                       f.b_crit, f.level * 100, f.b_crit_lo, f.b_crit_hi, f.s_min, f.points, f.batch_lo, f.batch_hi);
      if (!f.determined) s += " (B_crit not determined: " + f.undetermined_reason + ")";
    } else {
      s += g.cannot_fit.starts_with("cannot fit") ? g.cannot_fit : "cannot fit: " + g.cannot_fit;
    }
    s += fmt::format("; {} trial{} ({} COMPLETE)", g.trials, g.trials == 1 ? "" : "s", g.complete);
    if (g.largest_batch_within_budget && g.points.size() >= 2)
      s += fmt::format("; largest batch at the target within {:g}x the epochs of batch {}: {} ({:.2f}x)", epoch_factor,
                       *g.reference_batch, *g.largest_batch_within_budget, *g.largest_batch_epochs_ratio);
    out.push_back(std::move(s));
  }
  const GroupFit* first = nullptr;
  for (const auto& g : groups) {
    if (!g.fit) continue;
    if (!first) {
      first = &g;
      continue;
    }
    out.push_back(fmt::format("  {}={} vs {}={}: B_crit {:.3g}x; the intervals {}", param, g.label, param, first->label,
                              g.fit->b_crit / first->fit->b_crit,
                              overlap(*g.fit, *first->fit) ? "overlap: the data do not tell the two apart"
                                                           : "do not overlap: a difference the data show"));
  }
  return out;
}

}  // namespace dlsweep::analysis
