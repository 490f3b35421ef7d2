// nsga2_sampler.cpp — elite selection per generation, tournament, uniform crossover, mutation.
#include "search/nsga2_sampler.hpp"

#include "common/hash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "search/conditional.hpp"
#include "search/pareto.hpp"

namespace dlsweep::search {

Nsga2Options Nsga2Options::read(OptionReader& r) {
  Nsga2Options o;
  o.population_size = r.integer("population_size", o.population_size, 2, 1'000'000);
  o.crossover_prob = r.number("crossover_prob", o.crossover_prob, 0.0, 1.0);
  if (r.has("mutation_prob")) o.mutation_prob = r.number("mutation_prob", 0.0, 0.0, 1.0);
  o.swapping_prob = r.number("swapping_prob", o.swapping_prob, 0.0, 1.0);
  o.startup_qmc = read_startup(r);
  return o;
}

Nsga2Sampler::Nsga2Sampler(Space space, std::uint64_t seed, Nsga2Options options)
    : space_(std::move(space)), seed_(seed), o_(options), random_(space_, seed) {
  if (qmc_fits(space_)) qmc_.emplace(space_, seed, /*scramble=*/true);
}

namespace {

struct Member {
  const TrialRecord* trial;
  Losses losses;
  double violation;
};

// The elite of `pool`: at most `size` members by fronts, then crowding distance.
std::vector<Member> elite(std::vector<Member> pool, std::size_t size) {
  std::sort(pool.begin(), pool.end(), [](const Member& a, const Member& b) { return a.trial->number < b.trial->number; });
  if (pool.size() <= size) return pool;
  std::vector<Losses> pts;
  std::vector<double> viol;
  for (const auto& m : pool) {
    pts.push_back(m.losses);
    viol.push_back(m.violation);
  }
  std::vector<Member> out;
  for (const auto& front : non_dominated_sort(pts, viol)) {
    if (out.size() + front.size() <= size) {
      for (std::size_t i : front) out.push_back(pool[i]);
      if (out.size() == size) break;
      continue;
    }
    const auto dist = crowding_distance(pts, front);
    std::vector<std::size_t> order(front.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return dist[a] > dist[b]; });
    for (std::size_t r = 0; out.size() < size; ++r) out.push_back(pool[front[order[r]]]);
    break;
  }
  return out;
}

bool fits(const Dimension& d, const nlohmann::json& v) {
  switch (d.kind) {
    case Dimension::Kind::choice: return std::find(d.choices.begin(), d.choices.end(), v) != d.choices.end();
    case Dimension::Kind::uniform:
    case Dimension::Kind::log_uniform:
      return v.is_number() && v.get<double>() >= d.low && v.get<double>() < d.high;
    case Dimension::Kind::int_range: {
      if (!v.is_number_integer()) return false;
      const auto x = v.get<std::int64_t>();
      return x >= d.int_low && x <= d.int_high && (x - d.int_low) % std::max<std::int64_t>(1, d.int_step) == 0;
    }
  }
  return false;
}

// Binary tournament among `pop` without `skip` (Optuna 3.1's _select_parent: two members drawn
// with replacement; the first if it dominates the second, else the second).
const Member& tournament(const std::vector<Member>& pop, SplitMix64& rng, const Member* skip = nullptr) {
  std::vector<const Member*> pool;
  for (const auto& m : pop)
    if (&m != skip) pool.push_back(&m);
  if (pool.empty()) return *skip;
  const Member& a = *pool[rng.next_below(pool.size())];
  const Member& b = *pool[rng.next_below(pool.size())];
  return constrained_dominates(a.losses, a.violation, b.losses, b.violation) ? a : b;
}

}  // namespace

std::optional<Params> Nsga2Sampler::first_draw(std::int64_t number, const History& history) {
  if (qmc_ && o_.startup_qmc.value_or(history.multi_objective())) return qmc_->next(number, history);
  return random_.next(number, history);
}

std::optional<Params> Nsga2Sampler::next(std::int64_t number, const History& history) {
  const auto pop_size = static_cast<std::size_t>(o_.population_size);
  const std::int64_t generation = number / o_.population_size;
  // Warm-start trials (numbers < 0, search.warm_start) are generation -1: the first parents.
  const bool warm = std::any_of(history.trials.begin(), history.trials.end(),
                                [](const TrialRecord& t) { return t.number < 0 && t.status == TrialStatus::complete; });
  if (generation == 0 && !warm) return first_draw(number, history);

  // COMPLETE trials with a loss vector, by generation.
  std::map<std::int64_t, std::vector<Member>> by_generation;
  for (const auto& t : history.trials) {
    if (t.status != TrialStatus::complete || t.number >= generation * o_.population_size) continue;
    auto l = to_losses(t, history);
    if (!l) continue;
    double v = total_violation(t.constraints);
    if (history.constrained && t.constraints.empty()) v = std::numeric_limits<double>::infinity();
    by_generation[t.number < 0 ? -1 : t.number / o_.population_size].push_back({&t, std::move(*l), v});
  }
  std::vector<Member> parents;
  for (std::int64_t g = warm ? -1 : 0; g < generation; ++g) {
    auto pool = parents;
    if (auto it = by_generation.find(g); it != by_generation.end())
      pool.insert(pool.end(), it->second.begin(), it->second.end());
    parents = elite(std::move(pool), pop_size);
  }
  if (parents.empty()) return first_draw(number, history);

  const std::uint64_t key = SplitMix64::mix(SplitMix64::mix(seed_ ^ 0x45a2b1c3d9e8f701ULL) ^ static_cast<std::uint64_t>(number));
  SplitMix64 rng(key);
  // Optuna 3.1's child: with crossover_prob, uniform crossover of two tournament winners (the
  // second drawn from the parents without the first); else a copy of a parent chosen uniformly.
  const bool crossover = rng.next_unit() < o_.crossover_prob;
  const Member& first = crossover ? tournament(parents, rng) : parents[rng.next_below(parents.size())];
  const Member* second = crossover ? &tournament(parents, rng, &first) : nullptr;

  const auto order = sampling_order(space_);
  std::size_t n_params = 0;
  for (const auto& d : space_.dims)
    if (first.trial->params.contains(d.name)) ++n_params;
  const double mutation = o_.mutation_prob.value_or(1.0 / double(std::max<std::size_t>(1, n_params)));

  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  for (std::size_t i : order) {
    const Dimension& d = space_.dims[i];
    if (!d.when.empty() && !is_active(d, p)) continue;
    SplitMix64 dim_rng(SplitMix64::mix(key ^ fnv1a64(d.name)));
    const TrialRecord* from = first.trial;
    if (second && dim_rng.next_unit() < o_.swapping_prob) from = second->trial;
    const TrialRecord* other = from == first.trial ? (second ? second->trial : nullptr) : first.trial;
    const bool mutate = dim_rng.next_unit() < mutation;
    const nlohmann::json* value = nullptr;
    for (const TrialRecord* t : {from, other}) {
      if (!t || value) continue;
      if (auto it = t->params.find(d.name); it != t->params.end() && fits(d, *it)) value = &*it;
    }
    p[d.name] = (mutate || !value) ? random_.draw(d, number) : *value;
  }
  return p;
}

}  // namespace dlsweep::search
