#include "analysis/noise.hpp"

#include <algorithm>

#include "analysis/stats.hpp"

namespace dlsweep::analysis {

std::vector<TrialNoise> noise_scales(const StudyData& study) {
  std::vector<TrialNoise> out;
  for (const auto& t : study.trials) {
    TrialNoise n;
    n.trial = t.number;
    n.batch = t.batch;
    std::optional<double> latest;  // the latest value at or before the record that reached the target
    bool passed = false;
    for (const auto& p : t.curve) {
      if (p.noise_scale) n.series.push_back({p.step, p.samples, *p.noise_scale});
      if (!passed && t.steps_to_target) {
        if (p.noise_scale && p.step <= *t.steps_to_target) latest = p.noise_scale;
        if (p.step >= *t.steps_to_target) passed = true;
      }
    }
    if (n.series.empty()) continue;
    if (t.reached()) n.at_target = latest;
    out.push_back(std::move(n));
  }
  return out;
}

NoiseSummary summarize_noise(const StudyData& study, const std::vector<TrialNoise>& noise,
                             std::optional<double> b_crit) {
  NoiseSummary s;
  std::vector<double> at;
  for (const auto& n : noise) {
    if (!n.at_target || !(*n.at_target > 0)) continue;
    auto it = std::find_if(study.trials.begin(), study.trials.end(), [&](const TrialData& t) { return t.number == n.trial; });
    if (it == study.trials.end() || !it->complete()) continue;
    at.push_back(*n.at_target);
  }
  s.trials = at.size();
  if (at.empty()) return s;
  s.median_at_target = median(at);
  s.lo = *std::min_element(at.begin(), at.end());
  s.hi = *std::max_element(at.begin(), at.end());
  if (b_crit && *b_crit > 0) s.ratio_to_b_crit = *s.median_at_target / *b_crit;
  return s;
}

}  // namespace dlsweep::analysis
