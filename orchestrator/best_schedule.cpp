#include "orchestrator/best_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/objective.hpp"
#include "analysis/stats.hpp"
#include "analysis/study_data.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

Result<BestBy> parse_best_by(const std::string& s) {
  if (s == "auto") return BestBy::automatic;
  if (s == "time") return BestBy::time;
  if (s == "steps") return BestBy::steps;
  if (s == "value") return BestBy::value;
  return fail("unknown criterion '" + s + "'", "--by", "use auto, time, steps or value");
}

std::string params_brief(const nlohmann::json& params, const nlohmann::json* only) {
  if (!params.is_object()) return params.dump();
  std::string out;
  for (auto& [k, v] : params.items()) {
    if (only && !only->contains(k)) continue;
    out += (out.empty() ? "" : ", ") + k + "=" + cell_text(v, /*full_precision=*/false);
  }
  return out;
}

namespace {

std::string params_text(const nlohmann::json& params, const nlohmann::json& varying) {
  std::string out = params_brief(params, &varying);
  return out.empty() ? params_brief(params) : out;
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

// Seed groups: trials whose params differ only in `seed` are one configuration. Candidates are
// ranked by their configuration's mean over its COMPLETE seeds (a lucky seed does not beat a
// better mean); a configuration with a COMPLETE seed that is not a candidate (did not reach
// the target) drops out. Returns the kept candidates, best first, and each one's group stats.
struct Grouped {
  std::vector<std::size_t> order;
  std::map<std::size_t, analysis::Stat> stat;  ///< candidate index -> its group's stat
};

template <class Value>
Grouped rank_by_seed_mean(const std::vector<db::TrialSummary>& trials, const std::vector<std::size_t>& cands,
                          Value value, bool maximize) {
  std::map<std::string, std::vector<std::size_t>> complete_of;  // config -> COMPLETE members
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].state == "COMPLETE") complete_of[analysis::config_key(trials[i].params).dump()].push_back(i);
  Grouped g;
  for (std::size_t i : cands) {
    const auto& members = complete_of[analysis::config_key(trials[i].params).dump()];
    std::vector<double> xs;
    for (std::size_t m : members)
      if (std::find(cands.begin(), cands.end(), m) != cands.end()) xs.push_back(value(m));
    if (xs.size() != members.size()) continue;
    g.stat[i] = analysis::summarize(xs);
    g.order.push_back(i);
  }
  std::stable_sort(g.order.begin(), g.order.end(), [&](std::size_t a, std::size_t b) {
    const double ma = g.stat[a].mean, mb = g.stat[b].mean;
    if (ma != mb) return maximize ? ma > mb : ma < mb;
    return maximize ? value(a) > value(b) : value(a) < value(b);
  });
  return g;
}

// The first candidate after the winner that belongs to another configuration.
std::optional<std::size_t> runner_up(const std::vector<db::TrialSummary>& trials, const std::vector<std::size_t>& order) {
  if (order.empty()) return std::nullopt;
  const auto key = analysis::config_key(trials[order.front()].params);
  for (std::size_t k = 1; k < order.size(); ++k)
    if (analysis::config_key(trials[order[k]].params) != key) return order[k];
  return std::nullopt;
}

std::string seed_note(const analysis::Stat& s, const std::string& unit) {
  return s.n > 1 ? fmt::format(" (its configuration: mean {:.4g}{} over {} seeds, std {:.3g}{})", s.mean, unit, s.n, s.std, unit)
                 : std::string();
}

std::optional<BestChoice> pick(const std::vector<db::TrialSummary>& trials, std::vector<std::size_t> reached,
                               std::vector<std::size_t> valued, std::size_t eligible, const std::string& metric,
                               const std::string& mode, std::optional<double> target, BestBy by,
                               const std::map<std::int64_t, PooledSeconds>& pooled);

}  // namespace

std::string BestOutcome::left_out_text() const {
  std::string parts;
  for (const auto& [state, n] : left_out) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, state);
  return parts.empty() ? parts : "left out: " + parts + " (only COMPLETE trials can win)";
}

BestOutcome choose_best(const std::vector<db::TrialSummary>& trials, const std::string& metric,
                        const std::string& mode, std::optional<double> target, BestBy by,
                        const std::map<std::int64_t, PooledSeconds>& pooled) {
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
  out.choice = pick(trials, reached, valued, out.eligible, metric, mode, target, by, pooled);
  return out;
}

namespace {

std::optional<BestChoice> pick(const std::vector<db::TrialSummary>& trials, std::vector<std::size_t> reached,
                               std::vector<std::size_t> valued, std::size_t eligible, const std::string& metric,
                               const std::string& mode, std::optional<double> target, BestBy by,
                               const std::map<std::int64_t, PooledSeconds>& pooled) {
  if (by == BestBy::automatic) by = (target && !reached.empty()) ? BestBy::time : BestBy::value;
  if ((by == BestBy::time || by == BestBy::steps) && !target) by = BestBy::value;

  BestChoice c;
  c.criterion = by;
  auto varying = varying_params(trials);
  bool maximize = maximizes(mode);
  if (by == BestBy::time || by == BestBy::steps) {
    if (reached.empty()) return std::nullopt;
    auto seconds = [&](std::size_t i) {
      auto it = pooled.find(trials[i].number);
      return it != pooled.end() ? it->second.seconds : *trials[i].time_to_target_s;
    };
    // Ties (pooled times of trials reaching the target at one step) go to the trial's own time.
    auto key = [&](std::size_t i) {
      return by == BestBy::time ? std::tuple<double, double, double>{seconds(i), double(*trials[i].steps_to_target),
                                                                     *trials[i].time_to_target_s}
                                : std::tuple<double, double, double>{double(*trials[i].steps_to_target),
                                                                     *trials[i].time_to_target_s, 0.0};
    };
    auto pooled_note = [&](std::size_t i) {
      auto it = pooled.find(trials[i].number);
      if (by != BestBy::time || it == pooled.end() || it->second.trials < 2) return std::string();
      return fmt::format(" (pooled over the {} trials that train at its speed: {:.3g} s)", it->second.trials,
                         it->second.seconds);
    };
    std::sort(reached.begin(), reached.end(), [&](auto a, auto b) { return key(a) < key(b); });
    auto g = rank_by_seed_mean(trials, reached, [&](std::size_t i) { return std::get<0>(key(i)); }, false);
    // What the seed note reports: the trials' own readings (a pooled time is shared by the
    // seeds that reach the target at one step, so it hides their spread).
    const auto own = by == BestBy::time
                         ? rank_by_seed_mean(trials, reached, [&](std::size_t i) { return *trials[i].time_to_target_s; }, false)
                         : g;
    if (g.order.empty()) return std::nullopt;
    c.index = g.order.front();
    const auto& w = trials[c.index];
    c.explanation.push_back(fmt::format("trial {} ({}) reached {} {} {:g} in {:.3g} s{} and {} steps{}",
                                        w.number, params_text(w.params, varying), metric, maximize ? ">=" : "<=",
                                        *target, *w.time_to_target_s, pooled_note(c.index), *w.steps_to_target,
                                        seed_note(own.stat.at(c.index), by == BestBy::time ? " s" : " steps")));
    c.explanation.push_back(fmt::format("{} of {} complete trial{} reached the target", reached.size(), eligible,
                                        plural_s(static_cast<long long>(eligible))));
    if (auto ru = runner_up(trials, g.order)) {
      const auto& r = trials[*ru];
      c.explanation.push_back(fmt::format("runner-up: trial {} ({}) in {:.3g} s{} and {} steps{}", r.number,
                                          params_text(r.params, varying), *r.time_to_target_s, pooled_note(*ru),
                                          *r.steps_to_target,
                                          seed_note(own.stat.at(*ru), by == BestBy::time ? " s" : " steps")));
    }
    return c;
  }
  if (valued.empty()) return std::nullopt;
  auto g = rank_by_seed_mean(trials, valued, [&](std::size_t i) { return *trials[i].best_value; }, maximize);
  if (g.order.empty()) return std::nullopt;
  c.index = g.order.front();
  const auto& w = trials[c.index];
  c.explanation.push_back(fmt::format("trial {} ({}) has the {} {}: {:.4g}{}", w.number,
                                      params_text(w.params, varying), maximize ? "highest" : "lowest", metric,
                                      *w.best_value, seed_note(g.stat[c.index], "")));
  if (target && reached.empty()) c.explanation.push_back(fmt::format("no complete trial reached the target {:g}", *target));
  else if (target)
    c.explanation.push_back(fmt::format("{} of {} complete trial{} reached the target {:g} (`--by time` ranks them by "
                                        "time-to-target)", reached.size(), eligible, plural_s(static_cast<long long>(eligible)), *target));
  if (auto ru = runner_up(trials, g.order)) {
    const auto& r = trials[*ru];
    c.explanation.push_back(fmt::format("runner-up: trial {} ({}) with {:.4g}{}", r.number,
                                        params_text(r.params, varying), *r.best_value, seed_note(g.stat[*ru], "")));
  }
  return c;
}

}  // namespace

}  // namespace dlsweep::orch
