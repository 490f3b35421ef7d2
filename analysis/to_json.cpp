#include "analysis/to_json.hpp"

namespace dlsweep::analysis {

using nlohmann::json;

namespace {
template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
}  // namespace

json to_json(const Stat& s) { return {{"mean", s.mean}, {"std", s.std}, {"n", s.n}}; }

json to_json(const BatchFit& f) {
  return {{"s_min", f.s_min},         {"e_min", f.e_min},         {"b_crit", f.b_crit},
          {"b_crit_lo", f.b_crit_lo}, {"b_crit_hi", f.b_crit_hi}, {"level", f.level},
          {"resamples", f.resamples}, {"rmse_log", f.rmse_log},   {"points", f.points},
          {"batch_lo", f.batch_lo},   {"batch_hi", f.batch_hi},   {"at_edge", f.at_edge},
          {"determined", f.determined},
          {"undetermined_reason", f.determined ? json(nullptr) : json(f.undetermined_reason)},
          {"to_determine", f.determined ? json(nullptr) : json(f.to_determine)},
          // No bands from an undetermined B_crit (docs/math.md#when-b_crit-is-determined).
          {"regime_bands", f.determined ? json{{"perfect_scaling_below", f.b_crit / kRegimeFactor},
                                               {"maximal_parallelism_above", f.b_crit * kRegimeFactor}}
                                        : json(nullptr)}};
}

json to_json(const TargetTable& t) {
  json rows = json::array();
  for (const auto& r : t.rows) {
    rows.push_back({{"batch", r.batch},
                    {"trials", r.trials},
                    {"reached", r.reached},
                    {"reached_target", r.best_group.has_value()},
                    {"steps", r.steps ? to_json(*r.steps) : json(nullptr)},
                    {"samples", r.samples ? to_json(*r.samples) : json(nullptr)},
                    {"time_s", r.time ? to_json(*r.time) : json(nullptr)},
                    {"best_trials", r.best_trials},
                    {"best_config", r.best_config}});
  }
  json ex = json::array();
  for (const auto& x : t.excluded) ex.push_back({{"trial", x.trial}, {"reason", x.reason}});
  return {{"target", opt(t.target)}, {"rows", rows}, {"excluded", ex}};
}

json to_json(const std::vector<TrialNoise>& n) {
  json out = json::array();
  for (const auto& t : n) {
    json series = json::array();
    for (const auto& p : t.series) series.push_back({{"step", p.step}, {"samples", p.samples}, {"b_simple", p.b_simple}});
    out.push_back({{"trial", t.trial}, {"batch", t.batch}, {"at_target", opt(t.at_target)}, {"series", series}});
  }
  return out;
}

json to_json(const NoiseSummary& n) {
  return {{"trials", n.trials}, {"median_at_target", opt(n.median_at_target)}, {"min_at_target", opt(n.lo)},
          {"max_at_target", opt(n.hi)}, {"ratio_to_b_crit", opt(n.ratio_to_b_crit)}};
}

json to_json(const std::vector<LearningSpeedup>& s) {
  json out = json::array();
  for (const auto& x : s)
    out.push_back({{"batch", x.batch}, {"steps", x.steps}, {"learning_speedup", x.learning_speedup},
                   {"time_s", opt(x.time_s)}, {"time_speedup", opt(x.time_speedup)},
                   {"parallel_speedup", opt(x.parallel_speedup)}});
  return out;
}

json to_json(const ScalingTable& t) {
  auto rows = [](const std::vector<ScalingRow>& rs) {
    json out = json::array();
    for (const auto& r : rs)
      out.push_back({{"config", r.config}, {"batch", r.batch}, {"per_worker_batch", r.per_worker_batch},
                     {"resources", r.resources}, {"samples_per_s", to_json(r.samples_per_s)},
                     {"speedup", r.speedup}, {"efficiency", r.efficiency}});
    return out;
  };
  return {{"resource", t.resource}, {"strong", rows(t.strong)}, {"weak", rows(t.weak)}};
}

json to_json(const StepTimeModel& m) {
  json ar = json::object(), ev = json::object();
  for (auto& [n, t] : m.allreduce_measured) ar[std::to_string(n)] = t;
  for (auto& [n, t] : m.eval_measured) ev[std::to_string(n)] = t;
  return {{"compute_a_s", m.a_c},          {"compute_b_s_per_sample", m.b_c}, {"compute_points", m.compute_points},
          {"compute_rms_rel", m.compute_rms_rel}, {"allreduce_measured_s", ar}, {"eval_measured_s", ev},
          {"net_rule", m.net_rule},        {"start_s", m.start_s},           {"eval_interval_samples", m.eval_interval_samples},
          {"trials_without_time_eval_s", m.eval_untimed},
          {"multi_rank_trials_without_time_allreduce_exposed_s", m.allreduce_untimed}};
}

json to_json(const Prediction& p) {
  return {{"batch", p.batch},   {"ranks", p.ranks},     {"steps", p.steps},         {"samples", p.samples},
          {"compute_s", p.compute_s}, {"allreduce_s", p.allreduce_s}, {"step_s", p.step_s}, {"evals", p.evals},
          {"eval_s", p.eval_s}, {"start_s", p.start_s}, {"time_to_target_s", p.time_s},
          {"regime", p.regime ? json(regime_id(*p.regime)) : json(nullptr)}};
}

json to_json(const Plan& p) {
  json rows = json::array();
  for (const auto& r : p.rows) {
    json cands = json::array();
    for (const auto& c : r.candidates) cands.push_back(to_json(c));
    rows.push_back({{"ranks", r.ranks}, {"best", to_json(r.best)}, {"candidates", cands}});
  }
  return {{"kind", "model prediction"}, {"rows", rows}, {"inputs", p.inputs}, {"assumptions", p.assumptions}};
}

json to_json(const Explanation& e) {
  auto contender = [](const Contender& c) {
    return json{{"trials", c.trials}, {"best_trial", c.best_trial}, {"config", c.config}, {"batch", c.batch}, {"n", c.n},
                {"mean", c.mean},     {"std", c.std},       {"delta_rel", c.delta_rel}};
  };
  json runner = json::array();
  for (const auto& r : e.runner_ups) runner.push_back(contender(r));
  json ex = json::array();
  for (const auto& x : e.excluded) ex.push_back({{"trial", x.trial}, {"reason", x.reason}});
  return {{"study", e.study},
          {"metric", e.metric},
          {"mode", e.mode},
          {"target", opt(e.target)},
          {"criterion", criterion_name(e.criterion, e.final)},
          {"rank_by", e.final ? "final" : "best"},
          {"complete", e.complete},
          {"reached", e.reached},
          {"pooled_over_several", e.pooled_over_several},
          {"winner", e.winner ? contender(*e.winner) : json(nullptr)},
          {"batch_model", e.fit ? to_json(*e.fit) : json(nullptr)},
          {"batch_model_refusal", e.fit_refusal.empty() ? json(nullptr) : json(e.fit_refusal)},
          {"regime", e.regime ? json(regime_id(*e.regime)) : json(nullptr)},
          {"seed_noise_sd", opt(e.seed_log_sd)},
          {"runner_ups", runner},
          {"runner_ups_within_noise", e.runner_ups_within_noise},
          {"speedup", e.speedup ? to_json(std::vector<LearningSpeedup>{*e.speedup}).at(0) : json(nullptr)},
          {"noise_scale", to_json(e.noise)},
          {"noise_scale_reported", e.noise_reported},
          {"scaling", [&] {
             json a = json::array();
             for (const auto& t : e.scaling) a.push_back(to_json(t));
             return a;
           }()},
          {"steps_to_target", to_json(e.table)},
          {"excluded", ex},
          {"lines", e.lines()}};
}

json to_json(const GroupedFit& g) {
  json groups = json::array();
  for (const auto& x : g.groups) {
    json pts = json::array();
    for (const auto& p : x.points) pts.push_back({{"batch", p.batch}, {"steps", p.steps}, {"samples", p.samples}});
    const bool fitted = x.fit.has_value();
    groups.push_back({{"value", x.value},
                      {"label", x.label},
                      {"trials", x.trials},
                      {"complete", x.complete},
                      {"batch_sizes", x.batch_sizes},
                      {"fitted_batch_sizes", x.points.size()},
                      {"b_crit", fitted ? json(x.fit->b_crit) : json(nullptr)},
                      {"b_crit_lo", fitted ? json(x.fit->b_crit_lo) : json(nullptr)},
                      {"b_crit_hi", fitted ? json(x.fit->b_crit_hi) : json(nullptr)},
                      {"level", fitted ? json(x.fit->level) : json(nullptr)},
                      {"determined", fitted ? json(x.fit->determined) : json(nullptr)},
                      {"fit", fitted ? to_json(*x.fit) : json(nullptr)},
                      {"cannot_fit", fitted ? json(nullptr) : json(x.cannot_fit)},
                      {"points", pts},
                      {"epochs_reference_batch", opt(x.reference_batch)},
                      {"largest_batch_within_1_5x_epochs", opt(x.largest_batch_within_budget)},
                      {"largest_batch_epochs_ratio", opt(x.largest_batch_epochs_ratio)}});
  }
  return {{"param", g.param}, {"epoch_factor", g.epoch_factor}, {"groups", groups}, {"lines", g.lines()}};
}

}  // namespace dlsweep::analysis
