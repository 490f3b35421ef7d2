// pooled_time.cpp — speed groups and the median wall time at a step. See pooled_time.hpp.
#include "analysis/pooled_time.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <string_view>

#include "analysis/stats.hpp"

namespace dlsweep::analysis {

namespace {

// The trainer's parameters that change the numbers a step computes, not its cost
// (trainer/train_config.cpp reads them).
constexpr std::string_view kSameCost[] = {
    "seed",          "base_lr",       "base_batch",     "lr_rule",        "warmup_start",
    "lr_floor",      "momentum",      "momentum_correction", "nesterov",  "weight_decay",
    "beta1",         "beta2",         "adam_eps",       "lamb_eps",       "lars_eps",
    "larc_eps",      "lars_trust_coefficient", "larc_trust_coefficient",  "larc_mode",
};
// The schedule's timeline: no cost of its own, but with a batch-size ramp it places the
// batch increases (smith turns decay milestones into them; a ramp spans epochs), so then
// it changes the steps' cost.
constexpr std::string_view kTimeline[] = {"epochs", "warmup_epochs", "warmup_steps", "decay",
                                          "decay_factor", "decay_milestones", "decay_power"};

bool has(std::span<const std::string_view> keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

}  // namespace

nlohmann::json speed_key(const nlohmann::json& params) {
  nlohmann::json key = nlohmann::json::object();
  if (!params.is_object()) return key;
  const auto ramp = params.find("batch_ramp");
  const bool ramped = ramp != params.end() && !ramp->is_null() && *ramp != "none" && *ramp != "";
  for (const auto& [k, v] : params.items())
    if (!has(kSameCost, k) && (ramped || !has(kTimeline, k))) key[k] = v;
  return key;
}

std::optional<double> wall_at_step(const std::vector<EvalPoint>& curve, std::int64_t step) {
  const EvalPoint* prev = nullptr;
  for (const auto& p : curve) {
    if (p.step == step) return p.wall_s;
    if (p.step > step) {
      if (!prev) return p.step > 0 ? std::optional<double>(p.wall_s * double(step) / double(p.step)) : std::nullopt;
      const double f = double(step - prev->step) / double(p.step - prev->step);
      return prev->wall_s + f * (p.wall_s - prev->wall_s);
    }
    if (!prev || p.step > prev->step) prev = &p;
  }
  return std::nullopt;
}

std::vector<std::optional<PooledTime>> pooled_times_to_target(const StudyData& study) {
  std::map<std::string, std::vector<std::size_t>> groups;
  std::vector<std::string> key_of(study.trials.size());
  for (std::size_t i = 0; i < study.trials.size(); ++i) {
    key_of[i] = study.trainer ? speed_key(study.trials[i].params).dump() : std::to_string(i);
    groups[key_of[i]].push_back(i);
  }
  std::vector<std::optional<PooledTime>> out(study.trials.size());
  for (std::size_t i = 0; i < study.trials.size(); ++i) {
    const TrialData& t = study.trials[i];
    if (!t.reached()) continue;
    std::vector<double> walls;
    for (std::size_t j : groups[key_of[i]]) {
      if (j == i) walls.push_back(*t.time_to_target_s);  // its own reading, exactly as recorded
      else if (auto w = wall_at_step(study.trials[j].curve, *t.steps_to_target)) walls.push_back(*w);
    }
    out[i] = PooledTime{percentile(walls, 0.5), static_cast<int>(walls.size())};
  }
  return out;
}

}  // namespace dlsweep::analysis
