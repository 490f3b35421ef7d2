#include "engine/trial_curve.hpp"

#include <cmath>

namespace dlsweep::orch {

bool TrialCurve::add(const protocol::Record& r, const CurveAxis& axis) {
  if (r.kind != protocol::RecordKind::log) figures.wall_s = r.wall_s;
  if (r.kind != protocol::RecordKind::eval && r.kind != protocol::RecordKind::final) return false;
  ++evals;
  for (const auto& [name, value] : r.metrics) {
    reported.insert(name);
    figures.add_metric(name, value);
  }
  figures.last_samples = double(r.samples);
  figures.last_eval_wall_s = r.wall_s;
  auto m = r.metrics.find(axis.metric);
  if (m == r.metrics.end()) return false;
  last_nonfinite = !std::isfinite(m->second);
  if (last_nonfinite) return false;
  const double v = m->second;
  points.push_back({double(r.step), r.epoch, double(r.samples), r.wall_s, v});
  if (axis.target && !figures.steps_to_target && reached_target(v, *axis.target, axis.maximize)) {
    figures.steps_to_target = double(r.step);
    figures.samples_to_target = double(r.samples);
    figures.time_to_target_s = r.wall_s;
  }
  last_value = v;
  if (!best_value || better_value(v, *best_value, axis.maximize)) best_value = v;
  return r.kind == protocol::RecordKind::eval;
}

}  // namespace dlsweep::orch
