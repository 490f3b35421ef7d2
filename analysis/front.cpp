// front.cpp — seed groups sorted into fronts, feasible first; the hypervolume as trials came.
#include "analysis/front.hpp"

#include "common/objective.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "analysis/seed_groups.hpp"
#include "common/pareto.hpp"

namespace dlsweep::analysis {

namespace {

std::vector<ObjectiveDef> objectives_of(const StudyData& study) {
  if (!study.objectives.empty()) return study.objectives;
  return {{study.metric, maximizes(study.mode)}};
}

Losses to_losses(const std::vector<double>& v, const std::vector<ObjectiveDef>& o) {
  Losses out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = o[i].maximize ? -v[i] : v[i];
  return out;
}

std::string number(double v) { return fmt::format("{:.4g}", v); }

}  // namespace

ParetoFront pareto_front(const StudyData& study) {
  ParetoFront f;
  f.objectives = objectives_of(study);
  const std::size_t n = study.trials.size();
  f.rank.assign(n, std::nullopt);
  f.values.assign(n, std::nullopt);
  f.violation.assign(n, 0.0);
  std::map<std::string, std::size_t> by_state;
  std::size_t no_value = 0;
  std::vector<std::size_t> eligible;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& t = study.trials[i];
    f.values[i] = objective_values(f.objectives, t.figures);
    f.violation[i] = total_violation(constraint_values(study.constraints, t.figures));
    if (!t.complete()) { ++by_state[t.state]; continue; }
    ++f.complete;
    if (f.violation[i] <= 0) ++f.feasible;
    if (!f.values[i]) { ++no_value; continue; }
    eligible.push_back(i);
  }
  for (const char* s : {"FAILED", "PRUNED", "CANCELLED", "RUNNING", "QUEUED", "WAITING"})
    if (auto it = by_state.find(s); it != by_state.end()) f.left_out.emplace_back(s, it->second);
  if (no_value) f.left_out.emplace_back("NO VALUE", no_value);

  const auto groups = group_by_seed(study.trials, eligible);
  std::vector<Losses> pts;
  std::vector<double> viol;
  std::vector<std::vector<double>> means;
  for (const auto& g : groups) {
    std::vector<double> mean(f.objectives.size(), 0.0);
    double v = 0;
    for (std::size_t m : g.members) {
      for (std::size_t k = 0; k < mean.size(); ++k) mean[k] += (*f.values[m])[k] / double(g.members.size());
      v = std::max(v, f.violation[m]);
    }
    means.push_back(mean);
    pts.push_back(to_losses(mean, f.objectives));
    viol.push_back(v);
  }
  const auto fronts = non_dominated_sort(pts, viol);
  for (std::size_t r = 0; r < fronts.size(); ++r)
    for (std::size_t g : fronts[r])
      for (std::size_t m : groups[g].members) f.rank[m] = r;
  if (!fronts.empty())
    for (std::size_t g : fronts[0]) {
      if (viol[g] > 0) continue;  // infeasible groups never are on the front
      FrontPoint p;
      p.members = groups[g].members;
      std::sort(p.members.begin(), p.members.end(),
                [&](std::size_t a, std::size_t b) { return study.trials[a].number < study.trials[b].number; });
      p.trial = p.members.front();
      p.values = means[g];
      f.points.push_back(std::move(p));
    }
  std::sort(f.points.begin(), f.points.end(), [&](const FrontPoint& a, const FrontPoint& b) {
    const double la = to_losses(a.values, f.objectives)[0], lb = to_losses(b.values, f.objectives)[0];
    if (la != lb) return la < lb;
    return study.trials[a.trial].number < study.trials[b.trial].number;
  });
  return f;
}

std::vector<std::pair<std::int64_t, double>> hypervolume_over_trials(const StudyData& study) {
  const auto objectives = objectives_of(study);
  std::vector<std::size_t> order(study.trials.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return study.trials[a].number < study.trials[b].number; });
  std::vector<std::pair<std::int64_t, Losses>> seen;
  for (std::size_t i : order) {
    const auto& t = study.trials[i];
    if (!t.complete() || total_violation(constraint_values(study.constraints, t.figures)) > 0) continue;
    if (auto v = objective_values(objectives, t.figures)) seen.emplace_back(t.number, to_losses(*v, objectives));
  }
  std::vector<std::pair<std::int64_t, double>> out;
  if (seen.empty()) return out;
  Losses lo = seen[0].second, hi = seen[0].second;
  for (const auto& [n, l] : seen)
    for (std::size_t k = 0; k < l.size(); ++k) {
      lo[k] = std::min(lo[k], l[k]);
      hi[k] = std::max(hi[k], l[k]);
    }
  Losses ref(hi.size());
  for (std::size_t k = 0; k < hi.size(); ++k) {
    const double span = hi[k] - lo[k];
    ref[k] = hi[k] + (span > 0 ? 0.1 * span : std::max(1e-12, 0.1 * std::abs(hi[k])));
  }
  std::vector<Losses> pts;
  for (const auto& [n, l] : seen) {
    pts.push_back(l);
    out.emplace_back(n, hypervolume(pts, ref));
  }
  return out;
}

std::vector<std::string> explain_front(const StudyData& study, const ParetoFront& front) {
  std::vector<std::string> out;
  const auto& o = front.objectives;
  for (std::size_t i = 0; i < front.points.size(); ++i) {
    const auto& p = front.points[i];
    std::string line = fmt::format("trial {}:", study.trials[p.trial].number);
    for (std::size_t k = 0; k < o.size(); ++k) line += fmt::format(" {} {}", o[k].metric, number(p.values[k]));
    if (p.members.size() > 1) line += fmt::format(" (mean of {} seeds)", p.members.size());
    if (i + 1 < front.points.size()) {
      const auto& q = front.points[i + 1];
      std::string gains, costs;
      for (std::size_t k = 0; k < o.size(); ++k) {
        const double d = p.values[k] - q.values[k];
        if (d == 0) continue;
        const bool better = o[k].maximize ? d > 0 : d < 0;
        std::string& into = better ? gains : costs;
        into += fmt::format("{}{} {}{}", into.empty() ? "" : ", ", o[k].metric, d > 0 ? "+" : "", number(d));
      }
      line += fmt::format(" — against trial {}: better {}; pays {}", study.trials[q.trial].number,
                          gains.empty() ? "nothing" : gains, costs.empty() ? "nothing" : costs);
    } else if (front.points.size() > 1 && o.size() == 2) {
      line += fmt::format(" — the best {} of the front", o[1].metric);
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace dlsweep::analysis
