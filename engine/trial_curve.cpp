#include "engine/trial_curve.hpp"

#include <cmath>

namespace dlsweep::orch {

bool TrialCurve::add(const protocol::Record& r, const CurveAxis& axis) {
  if (r.kind != protocol::RecordKind::eval && r.kind != protocol::RecordKind::final) return false;
  ++evals;
  for (const auto& [name, value] : r.metrics) reported.insert(name);
  auto m = r.metrics.find(axis.metric);
  if (m == r.metrics.end()) return false;
  last_nonfinite = !std::isfinite(m->second);
  if (last_nonfinite) return false;
  const double v = m->second;
  points.push_back({double(r.step), r.epoch, double(r.samples), r.wall_s, v});
  last_value = v;
  if (!best_value || better_value(v, *best_value, axis.maximize)) best_value = v;
  return r.kind == protocol::RecordKind::eval;
}

}  // namespace dlsweep::orch
