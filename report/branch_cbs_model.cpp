// branch_cbs_model.cpp — a branching study's critical batch for the report (branch_cbs_model.hpp).
#include "report/branch_cbs_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/branch_cbs.hpp"
#include "common/pbt_link.hpp"
#include "common/trial_state.hpp"

namespace dlsweep::report {
namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// A curve point's position on the study's axis.
double position(const db::CurvePoint& p, const std::string& axis) {
  if (axis == "samples") return static_cast<double>(p.samples);
  if (axis == "step") return static_cast<double>(p.step);
  return p.epoch;
}

struct Link {
  PbtLink link;
  BranchRole role;
};

struct Curves {
  std::map<std::int64_t, std::vector<std::pair<double, double>>> objective;  // number -> (position, value), in order
  std::map<std::int64_t, std::vector<std::pair<double, double>>> noise;      // number -> (position, B_simple > 0)
};

Result<Curves> read_curves(const db::Storage& s, std::int64_t study_id, const std::string& objective,
                           const std::string& axis, const std::set<std::int64_t>& trunk) {
  Curves c;
  auto st = s.for_each_curve_point(study_id, [&](const db::CurvePoint& p) -> Status {
    if (!p.value || !std::isfinite(*p.value)) return {};
    const bool record = p.kind == "eval" || p.kind == "final";
    if (record && p.name == objective) c.objective[p.number].emplace_back(position(p, axis), *p.value);
    // B_simple: the trunk's reports (eval records, or an adaptive batch's log decisions).
    if ((record || p.kind == "log") && p.name == "grad_noise_scale" && *p.value > 0 && trunk.contains(p.number))
      c.noise[p.number].emplace_back(position(p, axis), *p.value);
    return {};
  });
  if (!st) return std::unexpected(st.error());
  return c;
}

// The branch's value: its last report that counts (common/branch_cbs.hpp branch_report_counts:
// the trainer ends a branch at the whole step nearest its end, a fraction of a step short).
std::optional<double> value_at_end(const std::vector<std::pair<double, double>>* curve, double start, double end) {
  if (!curve) return std::nullopt;
  for (auto it = curve->rbegin(); it != curve->rend(); ++it)
    if (branch_report_counts(it->first, start, end)) return it->second;
  return std::nullopt;
}

json stat_json(const BatchStat& b) {
  return {{"batch", b.batch},   {"lr_factor", num(b.lr_factor)}, {"mean", num(b.mean)}, {"sd", num(b.sd)},
          {"n", b.n},           {"worse", num(b.worse)},         {"se", num(b.se)},     {"surely", b.surely},
          {"possibly", b.possibly}, {"trials", b.trials}};
}

// The schedule's batch from `at` on: the last stage that starts at or before it.
json schedule_batch(const std::vector<RampStage>& stages, double at) {
  std::optional<std::int64_t> b;
  for (const auto& s : stages)
    if (s.at <= at + 1e-9) b = s.batch;
  return opt(b);
}

}  // namespace

Result<json> branch_cbs_model(const db::Storage& storage, const db::StudyRow& row, const StoredStudy& spec) {
  if (spec.algorithm != "branch" || !spec.branch) return json(nullptr);
  const StoredBranch& sb = *spec.branch;
  auto trials = storage.list_trials(row.id);
  if (!trials) return std::unexpected(trials.error());
  auto events = storage.events(row.id);
  if (!events) return std::unexpected(events.error());
  std::map<std::int64_t, const db::TrialRow*> by_id, by_number;
  for (const auto& t : *trials) {
    by_id[t.id] = &t;
    by_number[t.number] = &t;
  }
  // The links, as the pbt lineage reads them: the last `pbt` event of each trial.
  std::map<std::int64_t, Link> links;
  for (const auto& e : *events) {
    if (e.kind != kPbtEventKind || !e.trial_id || !by_id.contains(*e.trial_id)) continue;
    const std::int64_t n = by_id[*e.trial_id]->number;
    auto l = PbtLink::from_json(n, json::parse(e.reason, nullptr, false));
    if (!l || !l->branch.is_object()) continue;
    auto role = BranchRole::from_json(l->branch);
    if (!role) continue;
    links[n] = Link{*l, *role};
  }
  const std::string axis = sb.by;
  std::set<std::int64_t> trunk;
  for (const auto& [n, l] : links)
    if (l.role.trunk) trunk.insert(n);
  auto curves = read_curves(storage, row.id, row.objective_metric, axis, trunk);
  if (!curves) return std::unexpected(curves.error());

  BranchRule rule;
  rule.batches = sb.batches;
  std::sort(rule.batches.begin(), rule.batches.end());
  rule.batches.erase(std::unique(rule.batches.begin(), rule.batches.end()), rule.batches.end());
  rule.tolerance = sb.tolerance;
  rule.maximize = row.objective_mode == "max";
  std::vector<double> points = sb.points;
  if (points.empty())  // not stored: the points the branches were made at
    for (const auto& [n, l] : links)
      if (!l.role.trunk && l.role.point >= 1) {
        if (points.size() < static_cast<std::size_t>(l.role.point)) points.resize(static_cast<std::size_t>(l.role.point), 0);
        points[static_cast<std::size_t>(l.role.point - 1)] = l.role.at;
      }

  // Every branch with the value it reached; the values by point.
  std::map<std::int64_t, std::vector<BranchValue>> values;
  json branches = json::array(), trunk_numbers = json::array();
  for (const auto& [n, l] : links) {
    if (l.role.trunk) {
      trunk_numbers.push_back(n);
      continue;
    }
    auto c = curves->objective.find(n);
    const auto v = value_at_end(c == curves->objective.end() ? nullptr : &c->second, l.link.start, l.link.end);
    if (v) values[l.role.point].push_back({l.role.batch, l.role.lr_factor, l.role.seed, *v, n});
    branches.push_back({{"trial", n},
                        {"point", l.role.point},
                        {"at", num(l.role.at)},
                        {"end", num(l.link.end)},
                        {"batch", l.role.batch},
                        {"lr_factor", num(l.role.lr_factor)},
                        {"seed", l.role.seed},
                        {"round", l.role.round},
                        {"state", std::string(to_string(by_number[n]->state))},
                        {"value", v ? num(*v) : json(nullptr)}});
  }

  std::vector<PointAnswer> answers;
  for (std::size_t g = 0; g < points.size(); ++g) {
    const auto point = static_cast<std::int64_t>(g + 1);
    auto it = values.find(point);
    answers.push_back(branch_point_answer(point, points[g], it == values.end() ? std::vector<BranchValue>{} : it->second, rule));
  }
  const std::int64_t trunk_batch = rule.batches.empty() ? 0 : rule.batches.front();
  const std::vector<RampStage> stages = branch_schedule(answers, trunk_batch);

  json answers_json = json::array();
  for (const PointAnswer& a : answers) {
    json bs = json::array();
    for (const BatchStat& b : a.batches) bs.push_back(stat_json(b));
    answers_json.push_back({{"point", a.point},
                            {"at", num(a.at)},
                            {"lo", opt(a.lo)},
                            {"hi", opt(a.hi)},
                            {"determined", a.determined},
                            {"capped", a.capped},
                            {"min_seeds", a.min_seeds},
                            {"why", a.why},
                            {"schedule_batch", schedule_batch(stages, a.at)},
                            {"batches", bs}});
  }
  json schedule = json::array();
  for (const RampStage& s : stages) schedule.push_back({{"at", num(s.at)}, {"batch", s.batch}});
  std::vector<std::tuple<double, double, std::int64_t>> noise;
  for (const auto& [n, pts] : curves->noise)
    for (const auto& [x, b] : pts) noise.emplace_back(x, b, n);
  std::stable_sort(noise.begin(), noise.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  json noise_json = json::array();
  for (const auto& [x, b, n] : noise) noise_json.push_back({{"at", num(x)}, {"b_simple", num(b)}, {"trial", n}});

  json factors = json::array();
  for (double f : sb.lr_factors) factors.push_back(num(f));
  return json{{"axis", axis},
              {"metric", row.objective_metric},
              {"mode", rule.maximize ? "max" : "min"},
              {"points", points},
              {"batches", rule.batches},
              {"trunk_batch", trunk_batch},
              {"delta", num(sb.delta)},
              {"tolerance", num(sb.tolerance)},
              {"seeds", sb.seeds},
              {"max_seeds", sb.max_seeds},
              {"lr_factors", factors},
              {"scan", sb.scan},
              {"answers", answers_json},
              {"schedule", schedule},
              {"ramp", ramp_text(stages)},
              {"noise", noise_json},
              {"trunk", trunk_numbers},
              {"branches", branches}};
}

}  // namespace dlsweep::report
