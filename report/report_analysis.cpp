// report_analysis.cpp — see report_analysis.hpp.
#include "report/report_analysis.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "analysis/batch_model.hpp"
#include "analysis/front.hpp"
#include "analysis/grouped_fit.hpp"
#include "analysis/noise.hpp"
#include "analysis/target_table.hpp"
#include "analysis/to_json.hpp"

namespace dlsweep::report {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }

constexpr int kGrid = 60;  // points of a fitted curve

// S(B) of a fit on a log grid a factor 2 beyond the fitted batch range.
json steps_curve(const analysis::BatchFit& fit) {
  json out = json::array();
  const double lo = fit.batch_lo / 2, hi = fit.batch_hi * 2;
  for (int i = 0; i <= kGrid; ++i) {
    const double b = lo * std::pow(hi / lo, static_cast<double>(i) / kGrid);
    out.push_back({{"batch_size", b}, {"value", analysis::steps_at(fit, b)}});
  }
  return out;
}

}  // namespace

json analysis_model(const analysis::StudyData& study) {
  const analysis::TargetTable table = analysis::target_table(study);
  json points = json::array();
  std::vector<analysis::BatchPoint> fit_in;
  for (const auto* row : table.reaching_rows()) {
    if (!row->steps) continue;
    points.push_back({{"batch_size", row->batch},
                      {"steps", row->steps->mean},
                      {"samples", row->samples ? json(row->samples->mean) : json(nullptr)},
                      {"time_s", row->time ? json(row->time->mean) : json(nullptr)},
                      {"trials", row->best_trials}});
    fit_in.push_back({static_cast<double>(row->batch), row->steps->mean, row->steps->n});
  }
  if (!study.target) return {{"available", false}, {"reason", "the study has no objective target"}, {"points", points}};
  auto fit = analysis::fit_batch_model(fit_in);
  if (!fit) return {{"available", false}, {"reason", fit.error().message()}, {"points", points}};

  json out = {{"available", true},
              {"method", "S(B) = S_min (1 + B_crit/B), least squares in log space over the best seed group per batch "
                         "(COMPLETE trials); E(B) = B S(B); interval: bootstrap over batch sizes"},
              {"b_crit", fit->b_crit},
              {"b_crit_interval", {fit->b_crit_lo, fit->b_crit_hi}},
              {"level", fit->level},
              {"s_min", fit->s_min},
              {"e_min", fit->e_min},
              {"at_edge", fit->at_edge},
              {"determined", fit->determined},
              {"undetermined_reason", fit->determined ? json(nullptr) : json(fit->undetermined_reason)},
              {"to_determine", fit->determined ? json(nullptr) : json(fit->to_determine)},
              {"rmse_log", fit->rmse_log},
              {"points", points},
              {"excluded", table.excluded.size()}};
  // The fitted curves on a log grid a factor 2 beyond the fitted batch range.
  json steps_fit = json::array(), samples_fit = json::array();
  const double lo = fit->batch_lo / 2, hi = fit->batch_hi * 2;
  for (int i = 0; i <= kGrid; ++i) {
    const double b = lo * std::pow(hi / lo, static_cast<double>(i) / kGrid);
    steps_fit.push_back({{"batch_size", b}, {"value", analysis::steps_at(*fit, b)}});
    samples_fit.push_back({{"batch_size", b}, {"value", analysis::samples_at(*fit, b)}});
  }
  out["steps_fit"] = steps_fit;
  out["samples_fit"] = samples_fit;
  // Regime bands (and B_simple / B_crit) only from a determined B_crit
  // (docs/math.md#when-b_crit-is-determined): an undetermined one shades nothing.
  json regimes = json::array();
  if (fit->determined) {
    const double edge1 = fit->b_crit / analysis::kRegimeFactor, edge2 = fit->b_crit * analysis::kRegimeFactor;
    using analysis::Regime;
    for (auto [from, to, r] : {std::tuple{lo / 1e3, edge1, Regime::perfect_scaling},
                               std::tuple{edge1, edge2, Regime::diminishing_returns},
                               std::tuple{edge2, hi * 1e3, Regime::maximal_parallelism}})
      regimes.push_back({{"from", from}, {"to", to}, {"regime", analysis::regime_id(r)}, {"label", analysis::regime_name(r)}});
  }
  out["regimes"] = regimes;
  const auto noise = analysis::noise_scales(study);
  const auto ns = analysis::summarize_noise(study, noise, fit->determined ? std::optional<double>(fit->b_crit) : std::nullopt);
  out["noise"] = {{"trials", ns.trials},
                  {"median_at_target", opt(ns.median_at_target)},
                  {"lo", opt(ns.lo)},
                  {"hi", opt(ns.hi)},
                  {"ratio_to_b_crit", opt(ns.ratio_to_b_crit)}};
  return out;
}

json grouped_fits_model(const analysis::StudyData& study) {
  json out = json::array();
  for (const auto& param : analysis::categorical_parameters(study)) {
    auto g = analysis::fit_by_group(study, param);
    if (!g) continue;  // cannot happen: the parameter comes from the study
    json j = analysis::to_json(*g);
    for (std::size_t i = 0; i < g->groups.size(); ++i)
      j["groups"][i]["steps_fit"] = g->groups[i].fit ? steps_curve(*g->groups[i].fit) : json::array();
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json pareto_model(const analysis::StudyData& study) {
  using nlohmann::json;
  if (!study.multi_objective()) return nullptr;
  const auto f = analysis::pareto_front(study);
  json objectives = json::array(), front = json::array(), points = json::array(), hv = json::array();
  for (const auto& o : f.objectives) objectives.push_back({{"metric", o.metric}, {"mode", o.maximize ? "max" : "min"}});
  for (const auto& p : f.points) front.push_back({{"trial", study.trials[p.trial].number}, {"values", p.values}});
  for (std::size_t i = 0; i < study.trials.size(); ++i)
    if (f.values[i])
      points.push_back({{"trial", study.trials[i].number}, {"values", *f.values[i]}, {"front", f.on_front(i)},
                        {"feasible", f.violation[i] <= 0}});
  for (const auto& [n, v] : analysis::hypervolume_over_trials(study)) hv.push_back({{"trial", n}, {"value", v}});
  return {{"objectives", objectives}, {"front", front}, {"points", points}, {"hypervolume", hv}};
}

}  // namespace dlsweep::report
