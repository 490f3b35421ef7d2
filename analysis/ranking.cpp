// ranking.cpp — the criterion, the seed groups and their order. See ranking.hpp for the rules.
#include "analysis/ranking.hpp"

#include <limits>

#include <algorithm>
#include <array>
#include <cmath>

#include "common/objective.hpp"
#include "common/pareto.hpp"

namespace dlsweep::analysis {

Result<RankBy> parse_rank_by(const std::string& s) {
  if (s == "auto") return RankBy::automatic;
  if (s == "time") return RankBy::time;
  if (s == "steps") return RankBy::steps;
  if (s == "value") return RankBy::value;
  return fail("unknown criterion '" + s + "'", "--by", "use auto, time, steps or value");
}

std::string criterion_name(Criterion c, bool final) {
  switch (c) {
    case Criterion::time: return "time-to-target";
    case Criterion::steps: return "steps-to-target";
    case Criterion::value: return final ? "final value" : "best value";
  }
  return "?";
}

Criterion resolve_criterion(RankBy by, bool has_target, std::size_t reached) {
  switch (by) {
    case RankBy::automatic: return has_target && reached > 0 ? Criterion::time : Criterion::value;
    case RankBy::time: return has_target ? Criterion::time : Criterion::value;
    case RankBy::steps: return has_target ? Criterion::steps : Criterion::value;
    case RankBy::value: return Criterion::value;
  }
  return Criterion::value;
}

std::optional<std::size_t> Ranking::winner() const {
  if (order.empty() || order.front().violation > 0) return std::nullopt;
  return order.front().members.front();
}

std::vector<std::size_t> Ranking::trials() const {
  std::vector<std::size_t> out;
  for (const auto& g : order) out.insert(out.end(), g.members.begin(), g.members.end());
  return out;
}

bool Ranking::ranks(std::size_t g) const {
  return std::any_of(order.begin(), order.end(), [&](const RankedGroup& r) { return r.group == g; });
}

namespace {

std::optional<double> finite(std::optional<double> v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::optional<double> own_time(const TrialData& t) {
  return t.reached() ? finite(t.time_to_target_s) : std::nullopt;
}

// Rule 4: the value a trial is ranked by.
std::optional<double> ranking_value(const TrialData& t, Criterion c, const std::optional<PooledTime>& pooled,
                                    bool final) {
  switch (c) {
    case Criterion::time:
      if (!own_time(t)) return std::nullopt;
      return pooled && std::isfinite(pooled->seconds) ? pooled->seconds : *own_time(t);
    case Criterion::steps:
      return own_time(t) ? std::optional<double>(static_cast<double>(*t.steps_to_target)) : std::nullopt;
    case Criterion::value: return finite(final ? t.final_value() : t.best_value);
  }
  return std::nullopt;
}

// Rule 6 as a key compared lexicographically, lower first (a maximized value is negated).
using Key = std::array<double, 3>;

Key member_key(const TrialData& t, Criterion c, double value, bool maximize) {
  switch (c) {
    case Criterion::time: return {value, static_cast<double>(*t.steps_to_target), *t.time_to_target_s};
    case Criterion::steps: return {value, *t.time_to_target_s, 0.0};
    // Exact ties of value: the trial that finished first (Optuna's best_trial), unknown last.
    case Criterion::value:
      return {maximize ? -value : value, t.ended_at.value_or(std::numeric_limits<double>::infinity()), 0.0};
  }
  return {};
}

}  // namespace

bool has_value(const TrialData& t, Criterion c, bool final) {
  return ranking_value(t, c, std::nullopt, final).has_value();
}

Ranking rank(const StudyData& study, RankBy by) { return rank(study, by, pooled_times_to_target(study)); }

Ranking rank(const StudyData& study, RankBy by, std::vector<std::optional<PooledTime>> pooled) {
  Ranking r;
  r.pooled = std::move(pooled);
  r.pooled.resize(study.trials.size());
  for (const char* state : {"FAILED", "PRUNED", "CANCELLED", "RUNNING", "QUEUED", "WAITING"}) {
    const auto n = static_cast<std::size_t>(
        std::count_if(study.trials.begin(), study.trials.end(), [&](const TrialData& t) { return t.state == state; }));
    if (n) r.left_out.emplace_back(state, n);
  }
  std::vector<std::size_t> complete;
  for (std::size_t i = 0; i < study.trials.size(); ++i)
    if (study.trials[i].complete()) {
      complete.push_back(i);
      r.reached += own_time(study.trials[i]).has_value();
    }
  r.complete = complete.size();
  r.criterion = resolve_criterion(by, study.target.has_value(), r.reached);
  r.maximize = r.criterion == Criterion::value && maximizes(study.mode);
  r.final = study.rank_final;
  r.groups = group_by_seed(study.trials, complete);

  struct Entry {
    RankedGroup g;
    std::array<double, 2> mean{};  // rule 5: mean value (oriented), mean own time
    Key best{};                    // the best member's key
  };
  std::vector<Entry> entries;
  for (std::size_t gi = 0; gi < r.groups.size(); ++gi) {
    const auto& members = r.groups[gi].members;
    struct Seed {
      Key key;
      std::size_t trial;
      double value;
    };
    std::vector<Seed> seeds;
    for (std::size_t i : members) {
      const auto v = ranking_value(study.trials[i], r.criterion, r.pooled[i], r.final);
      if (!v) break;
      seeds.push_back({member_key(study.trials[i], r.criterion, *v, r.maximize), i, *v});
    }
    if (seeds.empty() || seeds.size() != members.size()) continue;
    std::stable_sort(seeds.begin(), seeds.end(), [](const Seed& a, const Seed& b) { return a.key < b.key; });
    Entry e;
    e.g.group = gi;
    std::vector<double> own_times;  // time and steps: every member reached the target
    for (const Seed& m : seeds) {
      e.g.members.push_back(m.trial);
      e.g.values.push_back(m.value);
      e.g.own.push_back(r.criterion == Criterion::time ? *study.trials[m.trial].time_to_target_s : m.value);
      if (r.criterion != Criterion::value) own_times.push_back(*study.trials[m.trial].time_to_target_s);
    }
    e.g.value = summarize(e.g.values);
    e.g.own_stat = summarize(e.g.own);
    e.mean = {r.maximize ? -e.g.value.mean : e.g.value.mean, own_times.empty() ? 0.0 : summarize(own_times).mean};
    e.best = seeds.front().key;
    for (std::size_t i : members)
      if (!study.constraints.empty())
        e.g.violation = std::max(e.g.violation, total_violation(constraint_values(study.constraints, study.trials[i].figures)));
    entries.push_back(std::move(e));
  }
  // Groups come in the order of their first member (trial order): stable_sort keeps it for ties.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.g.violation != b.g.violation) return a.g.violation < b.g.violation;  // rule 7: feasible (0) first
    if (a.mean != b.mean) return a.mean < b.mean;
    return a.best < b.best;
  });
  for (auto& e : entries) r.order.push_back(std::move(e.g));
  return r;
}

std::vector<std::size_t> best_value_order(const StudyData& study) {
  // By value no pooled time is read.
  std::vector<std::size_t> out = rank(study, RankBy::value, {}).trials();
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < study.trials.size(); ++i)
    if (finite(study.objective_value(study.trials[i])) && std::find(out.begin(), out.end(), i) == out.end())
      rest.push_back(i);
  const bool maximize = maximizes(study.mode);
  std::stable_sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) {
    const auto& ta = study.trials[a];
    const auto& tb = study.trials[b];
    if (ta.complete() != tb.complete()) return ta.complete();
    return better_value(*study.objective_value(ta), *study.objective_value(tb), maximize);
  });
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace dlsweep::analysis
