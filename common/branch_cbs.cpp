// branch_cbs.cpp — the critical batch measured by branching: the per-point rule and the
// schedule that follows the curve (branch_cbs.hpp). Pure.
#include "common/branch_cbs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace dlsweep {

using nlohmann::json;

namespace {

template <class T>
std::optional<T> number_of(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) {
      const double d = it->get<double>();
      if (d != std::floor(d)) return std::nullopt;
      return static_cast<T>(d);
    }
  }
  return it->get<T>();
}

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// A tolerance as a percentage: 0.01 -> "1%", 0.025 -> "2.5%".
std::string percent(double tolerance) { return fmt::format("{:g}%", tolerance * 100); }

// The mean and sample standard deviation (0 for one value).
std::pair<double, double> mean_sd(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  if (v.size() < 2) return {m, 0};
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / static_cast<double>(v.size() - 1))};
}

// A position on the axis for a ramp string: whole numbers without an exponent.
std::string axis_number(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{:.10g}", v);
}

}  // namespace

std::optional<BranchRole> BranchRole::from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  auto role = j.find("role");
  if (role == j.end() || !role->is_string()) return std::nullopt;
  const std::string r = role->get<std::string>();
  if (r != "trunk" && r != "branch") return std::nullopt;
  BranchRole b;
  b.trunk = r == "trunk";
  b.point = number_of<std::int64_t>(j, "point").value_or(0);
  b.at = number_of<double>(j, "at").value_or(0);
  b.batch = number_of<std::int64_t>(j, "batch").value_or(0);
  b.lr_factor = number_of<double>(j, "lr_factor").value_or(1);
  b.seed = number_of<std::int64_t>(j, "seed").value_or(0);
  b.round = number_of<std::int64_t>(j, "round").value_or(0);
  return b;
}

json BranchRole::to_json() const {
  return {{"role", trunk ? "trunk" : "branch"}, {"point", point}, {"at", at},      {"batch", batch},
          {"lr_factor", lr_factor},             {"seed", seed},   {"round", round}};
}

json PointAnswer::to_json() const {
  json bs = json::array();
  for (const auto& b : batches)
    bs.push_back({{"batch", b.batch}, {"lr_factor", b.lr_factor}, {"mean", b.mean}, {"sd", b.sd}, {"n", b.n},
                  {"worse", b.worse}, {"se", finite_or_null(b.se)}, {"surely", b.surely}, {"possibly", b.possibly},
                  {"trials", b.trials}});
  auto opt = [](const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); };
  return {{"point", point},
          {"at", at},
          {"batch", determined ? opt(lo) : json(nullptr)},
          {"interval", lo && hi ? json::array({*lo, *hi}) : json(nullptr)},
          {"lo", opt(lo)},
          {"hi", opt(hi)},
          {"determined", determined},
          {"capped", capped},
          {"min_seeds", min_seeds},
          {"why", why},
          {"batches", bs}};
}

PointAnswer branch_point_answer(std::int64_t point, double at, const std::vector<BranchValue>& values,
                                const BranchRule& rule) {
  PointAnswer out;
  out.point = point;
  out.at = at;
  const std::string tol = percent(rule.tolerance);
  // batch -> LR factor -> (values, trials)
  std::map<std::int64_t, std::map<double, std::pair<std::vector<double>, std::vector<std::int64_t>>>> by_batch;
  for (const auto& v : values) {
    if (std::find(rule.batches.begin(), rule.batches.end(), v.batch) == rule.batches.end()) continue;
    if (!std::isfinite(v.value)) continue;
    auto& cell = by_batch[v.batch][v.lr_factor];
    cell.first.push_back(v.value);
    if (v.trial >= 0) cell.second.push_back(v.trial);
  }
  auto better = [&](double a, double b) { return rule.maximize ? a > b : a < b; };
  // Per batch: the LR factor with the best mean (ties: the first, in ascending factor order).
  for (std::int64_t b : rule.batches) {
    auto it = by_batch.find(b);
    if (it == by_batch.end()) continue;
    std::optional<BatchStat> kept;
    for (const auto& [f, cell] : it->second) {
      const auto [m, sd] = mean_sd(cell.first);
      if (kept && !better(m, kept->mean)) continue;
      BatchStat s;
      s.batch = b;
      s.lr_factor = f;
      s.mean = m;
      s.sd = sd;
      s.n = static_cast<std::int64_t>(cell.first.size());
      s.trials = cell.second;
      std::sort(s.trials.begin(), s.trials.end());
      kept = std::move(s);
    }
    out.batches.push_back(std::move(*kept));
  }
  if (rule.batches.empty() || out.batches.empty() || out.batches.front().batch != rule.batches.front()) {
    out.why = rule.batches.empty() ? "no batches to compare"
                                   : fmt::format("no answer yet: the reference batch {} has no finished branch",
                                                 rule.batches.front());
    return out;
  }
  BatchStat& ref = out.batches.front();
  ref.surely = ref.possibly = true;
  const double m1 = ref.mean, tau = rule.tolerance * std::abs(m1);
  for (std::size_t j = 1; j < out.batches.size(); ++j) {
    BatchStat& s = out.batches[j];
    s.worse = rule.maximize ? m1 - s.mean : s.mean - m1;
    if (s.n < 2 || ref.n < 2) {  // no noise estimate: it may be within, never surely
      s.se = std::numeric_limits<double>::infinity();
      s.surely = false;
      s.possibly = true;
      continue;
    }
    s.se = std::sqrt(s.sd * s.sd / static_cast<double>(s.n) + ref.sd * ref.sd / static_cast<double>(ref.n));
    s.surely = s.worse + rule.z * s.se <= tau;
    s.possibly = s.worse - rule.z * s.se <= tau;
  }
  // lo and hi: contiguous from the smallest batch over the rule's batches; a batch without a
  // value stops both (nothing is known past it). `stop_*`: the first batch that ended each walk.
  std::optional<std::int64_t> stop_lo, stop_hi;
  bool lo_open = true, hi_open = true;
  const BatchStat* stopper_hi = nullptr;
  const BatchStat* stopper_lo = nullptr;
  for (std::int64_t b : rule.batches) {
    auto s = std::find_if(out.batches.begin(), out.batches.end(), [&](const BatchStat& x) { return x.batch == b; });
    const bool have = s != out.batches.end();
    if (lo_open) {
      if (have && s->surely) out.lo = b;
      else {
        lo_open = false;
        stop_lo = b;
        stopper_lo = have ? &*s : nullptr;
      }
    }
    if (hi_open) {
      if (have && s->possibly) out.hi = b;
      else {
        hi_open = false;
        stop_hi = b;
        stopper_hi = have ? &*s : nullptr;
      }
    }
  }
  out.capped = out.hi && *out.hi == rule.batches.back();
  // min_seeds over the batches the answer rests on: each up to the one that ended the hi walk
  // (0 when one of them is missing); the batches above a batch surely out change nothing.
  out.min_seeds = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t b : rule.batches) {
    auto s = std::find_if(out.batches.begin(), out.batches.end(), [&](const BatchStat& x) { return x.batch == b; });
    out.min_seeds = std::min(out.min_seeds, s == out.batches.end() ? std::int64_t{0} : s->n);
    if (stop_hi && b == *stop_hi) break;
  }
  // No noise estimate on a batch that decides the interval: undetermined whatever lo and hi say.
  const BatchStat* thin = nullptr;
  for (const auto& s : out.batches) {
    if (stop_hi && s.batch > *stop_hi) break;
    if (s.n < 2) {
      thin = &s;
      break;
    }
  }
  const bool missing_stop = stop_hi && !stopper_hi;  // hi stopped at a batch with no value
  out.determined = *out.lo == *out.hi && !thin && !missing_stop;
  const std::string answer = out.lo == out.hi ? (out.capped ? fmt::format("at least {}", *out.lo) : fmt::format("{}", *out.lo))
                                              : fmt::format("[{}, {}]", *out.lo, *out.hi);
  std::string reason;
  if (thin) {
    reason = fmt::format("undetermined: {} seed{} at batch {}, no noise estimate: more seeds needed", thin->n,
                         thin->n == 1 ? "" : "s", thin->batch);
  } else if (missing_stop) {
    reason = fmt::format("undetermined: batch {} has no finished branch yet", *stop_hi);
  } else if (!out.determined) {
    // lo < hi: the batch after lo is within only by noise.
    const BatchStat* b = stopper_lo;
    if (b)
      reason = fmt::format("undetermined: {} is within {} only by noise (worse by {:.3g} ± {:.3g}, tolerance {:.3g}): "
                           "more seeds needed",
                           b->batch, tol, b->worse, rule.z * b->se, tau);
    else
      reason = fmt::format("undetermined: batch {} has no finished branch yet", stop_lo.value_or(0));
  } else if (out.capped) {
    reason = fmt::format("every batch tried is within {}: branch larger batches", tol);
  } else {
    const BatchStat* b = stopper_hi;
    reason = fmt::format("determined: {} is worse by {:.3g} ± {:.3g}, beyond the {} tolerance ({:.3g})", b->batch,
                         b->worse, rule.z * b->se, tol, tau);
  }
  if (out.capped && !out.determined) reason += fmt::format("; possibly {} or more: branch larger batches to know", *out.hi);
  out.why = fmt::format("{} ({})", answer, reason);
  return out;
}

std::vector<RampStage> branch_schedule(const std::vector<PointAnswer>& points, std::int64_t trunk_batch) {
  std::vector<const PointAnswer*> measured;
  for (const auto& p : points)
    if (p.lo) measured.push_back(&p);
  std::stable_sort(measured.begin(), measured.end(), [](const PointAnswer* a, const PointAnswer* b) { return a->at < b->at; });
  // Suffix minimum: a stage never exceeds a later point's lower end.
  std::vector<std::int64_t> batch(measured.size());
  std::int64_t later = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = measured.size(); i-- > 0;) {
    later = std::min(later, *measured[i]->lo);
    batch[i] = later;
  }
  std::vector<RampStage> out{{0, trunk_batch}};
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (batch[i] == out.back().batch) continue;  // merged with the stage before
    if (measured[i]->at <= out.back().at) out.back().batch = batch[i];  // a point at 0 sets the first stage
    else out.push_back({measured[i]->at, batch[i]});
  }
  return out;
}

std::string ramp_text(const std::vector<RampStage>& stages) {
  std::string out;
  for (const auto& s : stages) {
    if (!out.empty()) out += ",";
    out += fmt::format("{}:{}", axis_number(s.at), s.batch);
  }
  return out;
}

}  // namespace dlsweep
