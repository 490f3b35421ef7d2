// report_model.cpp — builds the report model (report_model.hpp) from one read-only Storage.
#include "report/report_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "common/objective.hpp"
#include "common/stored_study.hpp"
#include "analysis/load.hpp"
#include "analysis/ranking.hpp"
#include "analysis/speedup.hpp"
#include "analysis/to_json.hpp"
#include "report/branch_cbs_model.hpp"
#include "report/pbt_lineage_model.hpp"
#include "report/report_analysis.hpp"
#include "report/report_stats.hpp"

namespace dlsweep::report {
namespace {

using nlohmann::json;

json num(std::optional<double> v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }
json num(std::optional<std::int64_t> v) { return v ? json(*v) : json(nullptr); }

std::optional<double> as_number(const json& params, const char* key) {
  if (!params.is_object()) return std::nullopt;
  auto it = params.find(key);
  if (it == params.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

struct Row {  // one eval/final (or log) record of one attempt of one trial
  int attempt = 0;
  std::int64_t seq = 0, step = 0, samples = 0;
  double wall_s = 0, epoch = 0;
  std::map<std::string, double> values;
};

// Curves keyed by trial NUMBER: the eval/final records of every attempt (a retried trial's
// earlier attempts too: what `export --curves` has), in attempt then seq order, each with the
// requested metrics.
// `decisions` gets the `log` records' batch_size, grad_noise_scale and lr (an adaptive batch's
// decisions, docs/trainer.md), keyed the same way.
Result<std::map<std::int64_t, std::vector<Row>>> read_curves(const db::Storage& s, std::int64_t study_id,
                                                             const std::vector<std::string>& names,
                                                             std::map<std::int64_t, std::vector<Row>>& decisions) {
  const std::set<std::string> wanted(names.begin(), names.end());
  static const std::set<std::string> decision_metrics = {"batch_size", "grad_noise_scale", "lr"};
  std::map<std::int64_t, std::vector<Row>> out;
  auto st = s.for_each_curve_point(study_id, [&](const db::CurvePoint& p) -> Status {
    const bool log = p.kind == "log";
    if (log ? !decision_metrics.contains(p.name) : (p.kind != "eval" && p.kind != "final") || !wanted.contains(p.name))
      return {};
    auto& rows = log ? decisions[p.number] : out[p.number];
    if (rows.empty() || rows.back().seq != p.seq || rows.back().attempt != p.attempt)
      rows.push_back(Row{p.attempt, p.seq, p.step, p.samples, p.wall_s, p.epoch, {}});
    if (p.value && std::isfinite(*p.value)) rows.back().values[p.name] = *p.value;
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return out;
}

json curve_json(const std::vector<Row>& rows, const std::string& objective, std::size_t cap) {
  json c = {{"step", json::array()},          {"samples", json::array()}, {"wall_s", json::array()},
            {"objective", json::array()},     {"lr", json::array()},      {"noise_scale", json::array()},
            {"samples_per_s", json::array()}, {"attempt", json::array()}};
  auto get = [](const Row& r, const std::string& k) {
    auto it = r.values.find(k);
    return it == r.values.end() ? json(nullptr) : json(it->second);
  };
  std::vector<int> attempts;
  for (const Row& r : rows) attempts.push_back(r.attempt);
  for (std::size_t i : thin_by_attempt(attempts, cap)) {
    const Row& r = rows[i];
    c["attempt"].push_back(r.attempt);
    c["step"].push_back(r.step);
    c["samples"].push_back(r.samples);
    c["wall_s"].push_back(std::isfinite(r.wall_s) ? json(r.wall_s) : json(nullptr));
    c["objective"].push_back(get(r, objective));
    c["lr"].push_back(get(r, "lr"));
    c["noise_scale"].push_back(get(r, "grad_noise_scale"));
    c["samples_per_s"].push_back(get(r, "samples_per_s"));
  }
  return c;
}


// The batch over training of the trials whose batch was decided as they trained (`log` records
// with a batch_size: batch_ramp adaptive): per trial the decisions' step, epoch, batch,
// B_simple (null before the first estimate) and attempt. Trials with no decision are absent.
json batch_over_training_json(const std::map<std::int64_t, std::vector<Row>>& decisions) {
  json trials = json::array(), curves = json::object();
  for (const auto& [number, rows] : decisions) {
    json c = {{"step", json::array()}, {"epoch", json::array()}, {"batch_size", json::array()},
              {"grad_noise_scale", json::array()}, {"attempt", json::array()}};
    for (const Row& r : rows) {
      auto b = r.values.find("batch_size");
      if (b == r.values.end()) continue;
      auto ns = r.values.find("grad_noise_scale");
      c["step"].push_back(r.step);
      c["epoch"].push_back(std::isfinite(r.epoch) ? json(r.epoch) : json(nullptr));
      c["batch_size"].push_back(b->second);
      c["grad_noise_scale"].push_back(ns != r.values.end() && ns->second > 0 ? json(ns->second) : json(nullptr));
      c["attempt"].push_back(r.attempt);
    }
    if (c["step"].empty()) continue;
    trials.push_back(number);
    curves[std::to_string(number)] = std::move(c);
  }
  return {{"trials", trials}, {"curves", curves}};
}

json study_json(const db::StudyRow& st) {
  return {{"name", st.name},
          {"state", st.state},
          {"objective_metric", st.objective_metric},
          {"objective_mode", st.objective_mode},
          {"objective_target", num(st.objective_target)},
          {"created_at", st.created_at},
          {"source_path", st.source_path}};
}

Result<db::StudyRow> find(const db::Storage& storage, const std::string& name) {
  auto s = storage.find_study(name);
  if (!s) return std::unexpected(s.error());
  if (*s) return **s;
  std::string known;
  if (auto all = storage.list_studies(); all)
    for (const auto& st : *all) known += (known.empty() ? "" : ", ") + st.name;
  return fail_as(ErrorKind::not_found, "no study named '" + name + "'", "study",
                 known.empty() ? "the database holds no study yet: run `dlsweep submit STUDY` first"
                               : "known studies: " + known);
}

// Whether any trial reported the gradient noise scale. When none did, render.js hides the
// B_simple chart and shows the note: which metric a program reports to get it.
json noise_json(const std::map<std::int64_t, std::vector<Row>>& curves) {
  std::size_t trials = 0;
  for (const auto& [id, rows] : curves)
    trials += std::any_of(rows.begin(), rows.end(), [](const Row& r) {
      auto it = r.values.find("grad_noise_scale");
      return it != r.values.end() && it->second > 0;
    });
  return {{"metric", "grad_noise_scale"},
          {"trials", trials},
          {"reported", trials > 0},
          {"note", trials > 0 ? ""
                              : "no trial reported the metric grad_noise_scale, so the chart is hidden. A program "
                                "shows it by reporting grad_noise_scale (its gradient noise scale B_simple = "
                                "tr(Sigma)/|G|^2, e.g. from the squared gradient norms at two batch sizes: "
                                "docs/math.md, \"Gradient noise scale\") in the metrics of its eval records; the "
                                "embedded trainer does with noise_scale_every > 0"}};
}

// Whether the study has a batch size (a batch_size parameter, or a reported batch_size
// metric): the batch-size model's cards (to target vs batch size, B_simple, throughput,
// B_crit per value, time vs compute) are drawn only when it does; otherwise render.js hides
// them with this reason, in one line.
json batch_space_json(std::size_t with_batch, std::size_t trials) {
  if (with_batch > 0 || trials == 0) return {{"present", with_batch > 0}, {"hide", false}, {"trials", with_batch}, {"reason", ""}};
  return {{"present", false},
          {"hide", true},
          {"trials", 0},
          {"reason", "no trial has a batch_size (no batch_size parameter in the space and none reported), "
                     "so there is no batch-size model to draw"}};
}

json importance_json(const std::vector<db::TrialSummary>& sums, const std::vector<std::string>& names) {
  json values = json::array(), not_rated = json::array();
  std::size_t used = 0;
  for (const auto& name : names) {
    std::vector<ImportanceInput> rows;
    for (const auto& t : sums) {
      if (t.state != "COMPLETE" || !t.value || !std::isfinite(*t.value)) continue;
      auto it = t.params.find(name);
      rows.push_back({it == t.params.end() ? json(nullptr) : *it, *t.value});
    }
    used = std::max(used, rows.size());
    const ImportanceRating r = rate_importance(rows);
    if (r.eta2)
      values.push_back({{"param", name}, {"importance", *r.eta2}, {"trials", r.trials}, {"groups", r.groups},
                        {"chance", r.chance}});
    else
      not_rated.push_back({{"param", name}, {"reason", r.why_not}});
  }
  std::stable_sort(values.begin(), values.end(),
                   [](const json& a, const json& b) { return a["importance"].get<double>() > b["importance"].get<double>(); });
  // Why a parameter has no bar (docs/math.md#parameter-importance); render.js shows it.
  std::string note;
  if (names.empty()) note = "no parameter varies between the trials";
  else if (used < 3) note = "needs at least 3 COMPLETE trials with an objective value";
  else
    for (const auto& n : not_rated)
      note += (note.empty() ? "not shown (a parameter needs at least 2 COMPLETE trials per value or bin on average): "
                            : "; ") +
              n["param"].get<std::string>() + ": " + n["reason"].get<std::string>();
  return {{"method",
           "correlation ratio (eta squared): the share of the variance of the objective over COMPLETE trials "
           "explained by grouping the trials by the parameter's value (numbers in up to 8 equal-count bins), shown "
           "only with at least 2 trials per group on average; each parameter on its own, so interactions are not "
           "separated (not fANOVA)"},
          {"target", "objective value (last reported) of COMPLETE trials"},
          {"trials", used},
          {"values", values},
          {"not_rated", not_rated},
          {"note", note}};
}

// The winner by `by`, from the one ranking (analysis/ranking.hpp): what `dlsweep best --by`
// names ("trial") and its seed group (`best --explain`'s winner, "trials").
json winner_json(const analysis::StudyData& study, analysis::RankBy by,
                 const std::vector<std::optional<analysis::PooledTime>>& pooled) {
  const analysis::Ranking r = analysis::rank(study, by, pooled);
  json j = {{"criterion", analysis::criterion_name(r.criterion, r.final)}, {"trial", nullptr}, {"trials", json::array()},
            {"mean", nullptr}};
  if (const auto w = r.winner()) {
    j["trial"] = study.trials[*w].number;
    for (std::size_t i : r.groups[r.order.front().group].members) j["trials"].push_back(study.trials[i].number);
    j["mean"] = num(std::optional<double>(r.order.front().value.mean));
  }
  return j;
}

json best_json(const analysis::StudyData& study) {
  const auto pooled = analysis::pooled_times_to_target(study);  // computed once for the four
  json best = winner_json(study, analysis::RankBy::automatic, pooled);
  best["by"] = {{"time", winner_json(study, analysis::RankBy::time, pooled)},
                {"steps", winner_json(study, analysis::RankBy::steps, pooled)},
                {"value", winner_json(study, analysis::RankBy::value, pooled)}};
  best["rank_by"] = study.rank_final ? "final" : "best";  // objective.rank_by: which report is a trial's value
  return best;
}

}  // namespace

Result<json> build_report_model(const db::Storage& storage, const std::string& study_name,
                                const ModelOptions& options) {
  auto st = find(storage, study_name);
  if (!st) return std::unexpected(st.error());
  auto sums = storage.summaries(st->id);
  if (!sums) return std::unexpected(sums.error());
  auto counts = storage.state_counts(st->id);
  if (!counts) return std::unexpected(counts.error());
  std::sort(sums->begin(), sums->end(), [](const auto& a, const auto& b) { return a.number < b.number; });

  const std::string& objective = st->objective_metric;
  std::vector<std::string> metric_names = {objective, "lr", "grad_noise_scale", "samples_per_s", "batch_size"};
  std::sort(metric_names.begin(), metric_names.end());
  metric_names.erase(std::unique(metric_names.begin(), metric_names.end()), metric_names.end());
  std::map<std::int64_t, std::vector<Row>> decisions;
  auto curves = read_curves(storage, st->id, metric_names, decisions);
  if (!curves) return std::unexpected(curves.error());

  json model = {{"version", kModelVersion}, {"study", study_json(*st)}};
  model["generated_at"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  json c = json::object();
  for (const auto& [state, n] : *counts) c[state] = n;
  model["counts"] = c;
  if (auto warm = storage.warm_start_trials(st->id); warm && !warm->empty()) {  // search.warm_start: evidence, not run
    std::set<std::string> from;
    for (const auto& w : *warm) from.insert(w.source_study);
    model["warm_start"] = {{"trials", warm->size()}, {"studies", std::vector<std::string>(from.begin(), from.end())}};
  }

  std::set<std::string> names;
  for (const auto& t : *sums)
    if (t.params.is_object())
      for (auto it = t.params.begin(); it != t.params.end(); ++it) names.insert(it.key());
  model["param_names"] = std::vector<std::string>(names.begin(), names.end());

  auto spec = read_stored_study(st->spec_json, st->name);
  if (!spec) return std::unexpected(spec.error());
  json trials = json::array(), curve_map = json::object();
  std::vector<BatchTrial> batch_rows;
  std::vector<ParetoPoint> pareto_rows;
  std::vector<ThroughputTrial> tput_rows;
  for (const auto& t : *sums) {
    std::optional<double> batch = as_number(t.params, "batch_size");
    auto cit = curves->find(t.number);
    if (!batch && cit != curves->end())  // a custom program may report its batch instead
      for (auto r = cit->second.rbegin(); r != cit->second.rend() && !batch; ++r)
        if (auto v = r->values.find("batch_size"); v != r->values.end()) batch = v->second;
    const double ranks = trial_ranks(*spec, t.params);  // the one rule (common/stored_study.hpp)
    const double threads = as_number(t.params, "threads").value_or(1.0);
    std::optional<double> rank_s;
    if (t.time_to_target_s && std::isfinite(*t.time_to_target_s)) rank_s = *t.time_to_target_s * ranks;
    trials.push_back({{"number", t.number},
                      {"state", t.state},
                      {"attempt", t.attempt},
                      {"params", t.params.is_object() ? t.params : json::object()},
                      {"value", num(t.value)},
                      {"best_value", num(t.best_value)},
                      {"steps_to_target", num(t.steps_to_target)},
                      {"samples_to_target", num(t.samples_to_target)},
                      {"time_to_target_s", num(t.time_to_target_s)},
                      {"samples_per_s", num(t.samples_per_s)},
                      {"wall_s", num(t.wall_s)},
                      {"batch_size", num(batch)},
                      {"ranks", ranks},
                      {"threads", threads},
                      {"rank_seconds_to_target", num(rank_s)},
                      {"message", t.message}});
    if (cit != curves->end() && !cit->second.empty())
      curve_map[std::to_string(t.number)] = curve_json(cit->second, objective, options.max_points_per_curve);
    if (batch) {
      BatchTrial b{t.number, *batch, {}, {}, {}};
      if (t.steps_to_target) b.steps = static_cast<double>(*t.steps_to_target);
      if (t.samples_to_target) b.samples = static_cast<double>(*t.samples_to_target);
      b.time_s = t.time_to_target_s;
      batch_rows.push_back(b);
      if (t.samples_per_s && t.state == "COMPLETE") tput_rows.push_back({*batch, ranks, threads, *t.samples_per_s});
    }
    if (rank_s) pareto_rows.push_back({t.number, *t.time_to_target_s, *rank_s});
  }
  model["trials"] = trials;
  model["curves"] = curve_map;
  model["batch_space"] = batch_space_json(batch_rows.size(), sums->size());
  model["batch_over_training"] = batch_over_training_json(decisions);
  model["noise_scale"] = noise_json(*curves);

  json per_batch = json::array();
  for (const auto& b : best_per_batch(batch_rows))
    per_batch.push_back({{"batch_size", b.batch},
                         {"trials", b.trials},
                         {"reached", b.reached},
                         {"steps", num(b.steps)},
                         {"samples", num(b.samples)},
                         {"time_s", num(b.time_s)},
                         {"steps_trial", num(b.steps_trial)},
                         {"samples_trial", num(b.samples_trial)},
                         {"time_trial", num(b.time_trial)}});
  model["per_batch"] = per_batch;
  model["pareto"] = pareto_front(pareto_rows);

  json scaling = json::array();
  for (const auto& s : scaling_over_ranks(tput_rows)) {
    json pts = json::array();
    for (const auto& p : s.points)
      pts.push_back({{"ranks", p.ranks},
                     {"samples_per_s", p.samples_per_s},
                     {"trials", p.trials},
                     {"speedup", num(p.speedup)},
                     {"efficiency", num(p.efficiency)}});
    scaling.push_back({{"batch_size", s.batch}, {"threads", s.threads}, {"points", pts}});
  }
  model["scaling"] = scaling;

  // Optimization history: COMPLETE trials with a value, in number order, and the best so far.
  json history = json::array();
  std::optional<double> best;
  for (const auto& t : *sums) {
    if (t.state != "COMPLETE" || !t.value || !std::isfinite(*t.value)) continue;
    if (!best || better_value(*t.value, *best, st->objective_mode)) best = *t.value;
    history.push_back({{"number", t.number}, {"value", *t.value}, {"best_so_far", *best}});
  }
  model["history"] = history;

  std::vector<std::string> varying;
  for (const auto& n : names) {
    std::set<std::string> seen;
    for (const auto& t : *sums)
      if (auto it = t.params.find(n); t.params.is_object() && it != t.params.end()) seen.insert(it->dump());
    if (seen.size() > 1) varying.push_back(n);
  }
  model["varying_params"] = varying;
  model["importance"] = importance_json(*sums, varying);
  // The batch-size model comes from analysis/, which reads the same read-only Storage.
  model["scaling_tables"] = json::array();
  model["lr_trials"] = json::array();
  model["best"] = nullptr;
  model["grouped_fits"] = json::array();
  auto data = analysis::load_study(storage, study_name);
  // Population-based training: the lineage card's data; its winner is the last generation's best, as `best`'s is.
  auto pbt = pbt_lineage_model(storage, *st, *spec, data ? &*data : nullptr);
  if (!pbt) return std::unexpected(pbt.error());
  model["pbt"] = *pbt;
  // A branching study: the critical batch over training, the critical-batch card's data (report/branch_cbs_model.hpp).
  auto branch = branch_cbs_model(storage, *st, *spec);
  if (!branch) return std::unexpected(branch.error());
  model["branch"] = *branch;
  if (data) {
    // The winner and the LR chart's best few trials come from the one ranking, as `best`'s do.
    model["best"] = best_json(pbt_last_generation(*data, *pbt));
    for (std::size_t i : analysis::best_value_order(*data)) {
      if (model["lr_trials"].size() >= options.lr_trials) break;
      if (curve_map.contains(std::to_string(data->trials[i].number))) model["lr_trials"].push_back(data->trials[i].number);
    }
    model["analysis"] = analysis_model(*data);
    model["grouped_fits"] = grouped_fits_model(*data);
    model["multi_objective"] = pareto_model(*data);  // several objectives: the front, hypervolume (null: one)
    // Strong and weak scaling over ranks and threads (analysis/speedup.hpp), when varied.
    for (const auto& t : analysis::scaling_tables(*data)) model["scaling_tables"].push_back(analysis::to_json(t));
  } else {
    model["analysis"] = {{"available", false}, {"reason", data.error().message()}};
  }
  return model;
}

Result<json> list_studies_model(const db::Storage& storage) {
  auto all = storage.list_studies();
  if (!all) return std::unexpected(all.error());
  json out = json::array();
  for (const auto& st : *all) {
    auto counts = storage.state_counts(st.id);
    if (!counts) return std::unexpected(counts.error());
    json c = json::object();
    for (const auto& [state, n] : *counts) c[state] = n;
    json s = study_json(st);
    s["counts"] = c;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dlsweep::report
