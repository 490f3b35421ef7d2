#include "orchestrator/best_schedule.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace dlsweep::orch {

Result<BestBy> parse_best_by(const std::string& s) {
  if (s == "auto") return BestBy::automatic;
  if (s == "time") return BestBy::time;
  if (s == "steps") return BestBy::steps;
  if (s == "value") return BestBy::value;
  return fail("unknown criterion '" + s + "'", "--by", "use auto, time, steps or value");
}

namespace {

std::string params_text(const nlohmann::json& params, const nlohmann::json& varying) {
  std::string out;
  for (auto& [k, v] : params.items()) {
    if (!varying.contains(k)) continue;
    out += (out.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out.empty() ? params.dump() : out;
}

// Parameters whose value differs between trials: the ones worth naming in an explanation.
nlohmann::json varying_params(const std::vector<db::TrialSummary>& trials) {
  nlohmann::json varying = nlohmann::json::object();
  if (trials.empty()) return varying;
  for (auto& [k, v] : trials.front().params.items())
    for (const auto& t : trials)
      if (!t.params.contains(k) || t.params[k] != v) { varying[k] = true; break; }
  return varying;
}

std::optional<BestChoice> pick(const std::vector<db::TrialSummary>& trials, std::vector<std::size_t> reached,
                               std::vector<std::size_t> valued, std::size_t eligible, const std::string& metric,
                               const std::string& mode, std::optional<double> target, BestBy by);

}  // namespace

std::string BestOutcome::left_out_text() const {
  std::string parts;
  for (const auto& [state, n] : left_out) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, state);
  return parts.empty() ? parts : "left out: " + parts + " (only COMPLETE trials can win)";
}

BestOutcome choose_best(const std::vector<db::TrialSummary>& trials, const std::string& metric,
                        const std::string& mode, std::optional<double> target, BestBy by) {
  BestOutcome out;
  for (const char* state : {"FAILED", "PRUNED", "CANCELLED", "RUNNING", "QUEUED", "WAITING"}) {
    std::size_t n = 0;
    for (const auto& t : trials) n += t.state == state;
    if (n) out.left_out.emplace_back(state, n);
  }
  std::vector<std::size_t> reached, valued;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (trials[i].state != "COMPLETE") continue;
    ++out.eligible;
    if (trials[i].time_to_target_s && trials[i].steps_to_target) reached.push_back(i);
    if (trials[i].best_value) valued.push_back(i);
  }
  out.choice = pick(trials, reached, valued, out.eligible, metric, mode, target, by);
  return out;
}

namespace {

std::optional<BestChoice> pick(const std::vector<db::TrialSummary>& trials, std::vector<std::size_t> reached,
                               std::vector<std::size_t> valued, std::size_t eligible, const std::string& metric,
                               const std::string& mode, std::optional<double> target, BestBy by) {
  if (by == BestBy::automatic) by = (target && !reached.empty()) ? BestBy::time : BestBy::value;
  if ((by == BestBy::time || by == BestBy::steps) && !target) by = BestBy::value;

  BestChoice c;
  c.criterion = by;
  auto varying = varying_params(trials);
  bool maximize = mode == "max";
  if (by == BestBy::time || by == BestBy::steps) {
    if (reached.empty()) return std::nullopt;
    auto key = [&](std::size_t i) {
      return by == BestBy::time ? std::pair<double, double>{*trials[i].time_to_target_s, double(*trials[i].steps_to_target)}
                                : std::pair<double, double>{double(*trials[i].steps_to_target), *trials[i].time_to_target_s};
    };
    std::sort(reached.begin(), reached.end(), [&](auto a, auto b) { return key(a) < key(b); });
    c.index = reached.front();
    const auto& w = trials[c.index];
    c.explanation.push_back(fmt::format("trial {} ({}) reached {} {} {:g} in {:.3g} s and {} steps",
                                        w.number, params_text(w.params, varying), metric, maximize ? ">=" : "<=",
                                        *target, *w.time_to_target_s, *w.steps_to_target));
    c.explanation.push_back(fmt::format("{} of {} complete trials reached the target", reached.size(), eligible));
    if (reached.size() > 1) {
      const auto& r = trials[reached[1]];
      c.explanation.push_back(fmt::format("runner-up: trial {} ({}) in {:.3g} s and {} steps", r.number,
                                          params_text(r.params, varying), *r.time_to_target_s, *r.steps_to_target));
    }
    return c;
  }
  if (valued.empty()) return std::nullopt;
  std::sort(valued.begin(), valued.end(), [&](auto a, auto b) {
    return maximize ? *trials[a].best_value > *trials[b].best_value : *trials[a].best_value < *trials[b].best_value;
  });
  c.index = valued.front();
  const auto& w = trials[c.index];
  c.explanation.push_back(fmt::format("trial {} ({}) has the {} {}: {:.4g}", w.number,
                                      params_text(w.params, varying), maximize ? "highest" : "lowest", metric,
                                      *w.best_value));
  if (target && reached.empty()) c.explanation.push_back(fmt::format("no complete trial reached the target {:g}", *target));
  else if (target)
    c.explanation.push_back(fmt::format("{} of {} complete trials reached the target {:g} (`--by time` ranks them by "
                                        "time-to-target)", reached.size(), eligible, *target));
  if (valued.size() > 1) {
    const auto& r = trials[valued[1]];
    c.explanation.push_back(fmt::format("runner-up: trial {} ({}) with {:.4g}", r.number,
                                        params_text(r.params, varying), *r.best_value));
  }
  return c;
}

}  // namespace

}  // namespace dlsweep::orch
