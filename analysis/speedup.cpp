#include "analysis/speedup.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace dlsweep::analysis {

std::vector<LearningSpeedup> learning_speedups(const TargetTable& table) {
  std::vector<LearningSpeedup> out;
  const auto rows = table.reaching_rows();
  if (rows.empty()) return out;
  const BatchRow& base = *rows.front();  // rows are in ascending batch order
  for (const BatchRow* r : rows) {
    LearningSpeedup s;
    s.batch = r->batch;
    s.steps = r->steps->mean;
    s.learning_speedup = base.steps->mean / r->steps->mean;
    if (r->time && base.time && r->time->mean > 0) {
      s.time_s = r->time->mean;
      s.time_speedup = base.time->mean / r->time->mean;
      s.parallel_speedup = *s.time_speedup / s.learning_speedup;
    }
    out.push_back(s);
  }
  return out;
}

ScalingTable scaling_table(const std::string& resource, const std::vector<ThroughputPoint>& points) {
  ScalingTable t;
  t.resource = resource;
  // (config, key batch, resources) -> throughputs; the key batch is the global batch (strong)
  // or the per-worker batch (weak).
  auto build = [&](bool weak) {
    std::map<std::tuple<std::string, double, int>, std::vector<double>> cells;
    for (const auto& p : points) {
      if (p.resources < 1 || !(p.samples_per_s > 0)) continue;
      const double key = weak ? static_cast<double>(p.batch) / p.resources : static_cast<double>(p.batch);
      cells[{p.config, key, p.resources}].push_back(p.samples_per_s);
    }
    std::vector<ScalingRow> rows;
    std::map<std::pair<std::string, double>, std::vector<ScalingRow>> series;
    for (const auto& [k, xs] : cells) {
      ScalingRow r;
      r.config = std::get<0>(k);
      r.resources = std::get<2>(k);
      r.per_worker_batch = weak ? std::get<1>(k) : std::get<1>(k) / r.resources;
      r.batch = static_cast<std::int64_t>(weak ? std::get<1>(k) * r.resources : std::get<1>(k));
      r.samples_per_s = summarize(xs);
      series[{r.config, std::get<1>(k)}].push_back(r);
    }
    for (auto& [k, rs] : series) {
      if (rs.size() < 2) continue;  // one resource count: nothing to compare
      std::sort(rs.begin(), rs.end(), [](auto& a, auto& b) { return a.resources < b.resources; });
      const double x0 = rs.front().samples_per_s.mean;
      const double p0 = rs.front().resources;
      for (auto& r : rs) {
        r.speedup = r.samples_per_s.mean / x0;
        r.efficiency = r.speedup / (r.resources / p0);
        rows.push_back(r);
      }
    }
    return rows;
  };
  t.strong = build(false);
  if (resource == "ranks") t.weak = build(true);
  return t;
}

std::vector<ScalingTable> scaling_tables(const StudyData& study) {
  std::vector<ScalingTable> out;
  // The params whose value differs between trials (or that some trial lacks), found once.
  std::map<std::string, nlohmann::json> first;
  std::set<std::string> varying;
  for (const auto& t : study.trials)
    for (auto& [k, v] : t.params.items())
      if (auto [it, fresh] = first.try_emplace(k, v); !fresh && it->second != v) varying.insert(k);
  for (const auto& [k, v] : first)
    for (const auto& t : study.trials)
      if (!t.params.contains(k)) varying.insert(k);
  for (const std::string resource : {"ranks", "threads"}) {
    std::set<int> values;
    std::vector<ThroughputPoint> pts;
    for (const auto& t : study.trials) {
      if (!t.complete() || !t.samples_per_s || t.batch_ramp || t.batch <= 0) continue;
      const int r = resource == "ranks" ? t.ranks : t.threads;
      values.insert(r);
      auto cfg = config_key(t.params);
      cfg.erase(resource);
      cfg.erase("batch_size");
      // What else differs between trials, as "k=v, ..." ("" when nothing does): the series
      // key, and readable in best --explain and the report.
      std::string label;
      for (auto& [k, v] : cfg.items())
        if (varying.count(k)) label += (label.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
      pts.push_back({label, r, t.batch, *t.samples_per_s});
    }
    if (values.size() < 2) continue;
    out.push_back(scaling_table(resource, pts));
  }
  return out;
}

}  // namespace dlsweep::analysis
