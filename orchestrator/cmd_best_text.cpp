// cmd_best_text.cpp — see cmd_best_text.hpp.
#include "orchestrator/cmd_best_text.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/multi_objective.hpp"
#include "common/objective.hpp"
#include "common/plural.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using analysis::Criterion;

std::string params_brief(const nlohmann::json& params, const nlohmann::json* only) {
  if (!params.is_object()) return params.dump();
  std::string out;
  for (auto& [k, v] : params.items()) {
    if (only && !only->contains(k)) continue;
    out += (out.empty() ? "" : ", ") + k + "=" + cell_text(v, /*full_precision=*/false);
  }
  return out;
}

std::string never_reported_text(const analysis::StudyData& study) {
  std::set<std::string> reported;
  bool any = false;
  for (const auto& t : study.trials) {
    if (!t.complete()) continue;
    any = true;
    for (const auto& [name, _] : t.figures.metrics) reported.insert(name);
  }
  if (!any) return "";
  std::vector<std::string> missing;
  auto check = [&](const std::string& metric, const char* role) {
    if (metric.empty() || is_derived_figure(metric) || reported.contains(metric)) return;
    const std::string item = fmt::format("{} ({})", metric, role);
    if (std::find(missing.begin(), missing.end(), item) == missing.end()) missing.push_back(item);
  };
  if (study.objectives.empty()) check(study.metric, "objective");
  for (const auto& o : study.objectives) check(o.metric, "objective");
  for (const auto& c : study.constraints) check(c.metric, "constraint");
  if (missing.empty()) return "";
  return fmt::format("{} {} never reported by a COMPLETE trial (they reported: {}); fix the metric's name in the "
                     "study, or report it from the program",
                     fmt::join(missing, ", "), missing.size() == 1 ? "was" : "were",
                     reported.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(reported, ", ")));
}

std::string left_out_text(const analysis::Ranking& ranking) {
  std::string parts;
  for (const auto& [state, n] : ranking.left_out) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, state);
  return parts.empty() ? parts : "left out: " + parts + " (only COMPLETE trials can win)";
}

namespace {

// Parameters whose value differs between trials: the ones worth naming in an explanation.
nlohmann::json varying_params(const std::vector<analysis::TrialData>& trials) {
  nlohmann::json varying = nlohmann::json::object();
  if (trials.empty()) return varying;
  for (auto& [k, v] : trials.front().params.items())
    for (const auto& t : trials)
      if (!t.params.contains(k) || t.params[k] != v) {
        varying[k] = true;
        break;
      }
  return varying;
}

std::string seed_note(const analysis::Stat& s, const std::string& unit) {
  return s.n > 1 ? fmt::format(" (its configuration: mean {:.4g}{} over {} seeds, std {:.3g}{})", s.mean, unit, s.n, s.std, unit)
                 : std::string();
}

}  // namespace

std::string ranked_by_text(bool final) {
  return final ? "ranked by final report (objective.rank_by: final): each trial's last report of the objective"
               : "ranked by best report (objective.rank_by: best, the default): each trial's best report of the "
                 "objective; `rank_by: final` ranks by the last one, as Optuna does";
}

bool schedule_study(const analysis::StudyData& study) {
  return study.trainer || std::any_of(study.trials.begin(), study.trials.end(), [](const analysis::TrialData& t) {
           return t.params.contains("batch_size") || t.params.contains("batch_ramp");
         });
}

std::string winner_model_text(const analysis::TrialData& t, bool final, const std::vector<CheckpointRecord>& checkpoints) {
  auto where = [](const CheckpointRecord& c) {
    return fmt::format("{}step {}, epoch {:g}", c.path.empty() ? "" : c.path + ", ", c.step, c.epoch);
  };
  if (checkpoints.empty())
    return fmt::format("model: trial {} recorded no checkpoint; the winning model was not kept", t.number);
  const auto& last = checkpoints.back();
  if (final) return fmt::format("model: the trial's last checkpoint ({}) holds the final model that won", where(last));
  // The step of the best report (the first one of that value) in the current attempt.
  std::optional<std::int64_t> best_step;
  for (const auto& p : t.curve)
    if (p.value && t.best_value && *p.value == *t.best_value) {
      best_step = p.step;
      break;
    }
  if (!best_step)
    return fmt::format("model: the best report was in an earlier attempt; the last checkpoint ({}) is not its model",
                       where(last));
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    if (checkpoints[i].step != *best_step) continue;
    const bool overwritten = !checkpoints[i].path.empty() &&
        std::any_of(checkpoints.begin() + static_cast<std::ptrdiff_t>(i) + 1, checkpoints.end(),
                    [&](const CheckpointRecord& c) { return c.path == checkpoints[i].path; });
    if (!overwritten)
      return fmt::format("model: the best report's checkpoint ({}) holds the model that won", where(checkpoints[i]));
  }
  return fmt::format("model: the best report (step {}) has no checkpoint of its own left; the last checkpoint ({}) is "
                     "not the best report's model (write `rank_by: final` to rank by the model it holds, or keep a "
                     "checkpoint per best report)",
                     *best_step, where(last));
}

std::vector<std::string> best_explanation(const analysis::StudyData& study, const analysis::Ranking& ranking) {
  std::vector<std::string> out;
  if (ranking.order.empty()) return out;
  const nlohmann::json varying = varying_params(study.trials);
  auto params_text = [&](std::size_t i) {
    std::string s = params_brief(study.trials[i].params, &varying);
    return s.empty() ? params_brief(study.trials[i].params) : s;
  };
  const auto& best = ranking.order.front();
  const auto* second = ranking.order.size() > 1 ? &ranking.order[1] : nullptr;
  const std::size_t w = best.members.front();
  const auto& t = study.trials[w];
  const auto complete = static_cast<long long>(ranking.complete);
  if (ranking.criterion == Criterion::value) {
    out.push_back(fmt::format("trial {} ({}) has the {} {}{}: {:.4g}{}", t.number, params_text(w),
                              ranking.maximize ? "highest" : "lowest", ranking.final ? "final " : "", study.metric,
                              best.values.front(), seed_note(best.value, "")));
    if (study.target && ranking.reached == 0)
      out.push_back(fmt::format("no complete trial reached the target {:g}", *study.target));
    else if (study.target)
      out.push_back(fmt::format("{} of {} complete trial{} reached the target {:g} (`--by time` ranks them by "
                                "time-to-target)", ranking.reached, complete, plural_s(complete), *study.target));
    if (second) {
      const std::size_t r = second->members.front();
      out.push_back(fmt::format("runner-up: trial {} ({}) with {:.4g}{}", study.trials[r].number, params_text(r),
                                second->values.front(), seed_note(second->value, "")));
    }
    return out;
  }
  // By time or steps. The seed note reports the trials' own readings (a pooled time is shared
  // by the seeds that reach the target at one step, so it hides their spread).
  const std::string unit = ranking.criterion == Criterion::time ? " s" : " steps";
  auto pooled_note = [&](std::size_t i) {
    const auto& p = ranking.pooled[i];
    if (ranking.criterion != Criterion::time || !p || p->trials < 2) return std::string();
    return fmt::format(" (pooled over the {} trials that train at its speed: {:.3g} s)", p->trials, p->seconds);
  };
  out.push_back(fmt::format("trial {} ({}) reached {} {} {:g} in {:.3g} s{} and {} steps{}", t.number, params_text(w),
                            study.metric, reach_op(study.mode), *study.target, *t.time_to_target_s, pooled_note(w),
                            *t.steps_to_target, seed_note(best.own_stat, unit)));
  out.push_back(fmt::format("{} of {} complete trial{} reached the target", ranking.reached, complete, plural_s(complete)));
  if (second) {
    const std::size_t r = second->members.front();
    const auto& rt = study.trials[r];
    out.push_back(fmt::format("runner-up: trial {} ({}) in {:.3g} s{} and {} steps{}", rt.number, params_text(r),
                              *rt.time_to_target_s, pooled_note(r), *rt.steps_to_target, seed_note(second->own_stat, unit)));
    // Equal means: say what decided (analysis/ranking.hpp, rule 5).
    auto mean_time = [&](const analysis::RankedGroup& g) {
      double sum = 0;
      for (std::size_t i : g.members) sum += *study.trials[i].time_to_target_s;
      return sum / static_cast<double>(g.members.size());
    };
    if (second->value.mean == best.value.mean && mean_time(*second) != mean_time(best))
      out.push_back(fmt::format("the two tie on the mean {}; the lower mean time to target decides ({:.4g} s against "
                                "{:.4g} s)", ranking.criterion == Criterion::time ? "pooled time" : "steps",
                                mean_time(best), mean_time(*second)));
  }
  return out;
}

}  // namespace dlsweep::orch
