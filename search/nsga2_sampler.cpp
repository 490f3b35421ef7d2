// nsga2_sampler.cpp — elite selection per generation, tournament, crossover, mutation.
#include "search/nsga2_sampler.hpp"

#include "common/hash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>

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
  o.crossover = CrossoverOptions::read(r);
  const auto need = static_cast<std::int64_t>(crossover_parents(o.crossover.kind));
  if (o.population_size < need)
    r.error("population_size",
            fmt::format("crossover: {} crosses {} parents; population_size {} is smaller", crossover_name(o.crossover.kind),
                        need, o.population_size),
            fmt::format("set population_size >= {}, or another crossover", need));
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

// A binary tournament among the members of `pop` not in `chosen` (all of them when none is
// left: a population smaller than the operator's parents repeats one).
const Member& tournament_among(const std::vector<Member>& pop, SplitMix64& rng, const std::vector<const Member*>& chosen) {
  std::vector<const Member*> pool;
  for (const auto& m : pop)
    if (std::find(chosen.begin(), chosen.end(), &m) == chosen.end()) pool.push_back(&m);
  if (pool.empty())
    for (const auto& m : pop) pool.push_back(&m);
  const Member& a = *pool[rng.next_below(pool.size())];
  const Member& b = *pool[rng.next_below(pool.size())];
  return constrained_dominates(a.losses, a.violation, b.losses, b.violation) ? a : b;
}

const nlohmann::json* value_of(const Dimension& d, const Member* m) {
  auto it = m->trial->params.find(d.name);
  return it != m->trial->params.end() && fits(d, *it) ? &*it : nullptr;
}

struct Crossed {
  std::vector<const Member*> parents;
  std::map<std::string, nlohmann::json> values;  ///< crossed parameters (numerical and categorical)
};

// Optuna 3.1's perform_crossover for a non-uniform operator: parents by tournament, the
// categorical parameters from the first or last parent, the numerical ones every parent
// holds crossed as one vector; again (new parents) while a float lands below its low.
Crossed cross(const Space& space, const Nsga2Options& o, const std::vector<Member>& pop, bool multi_objective,
              SplitMix64& rng) {
  const std::size_t k = crossover_parents(o.crossover.kind);
  Crossed out;
  for (int attempt = 1;; ++attempt) {
    out.parents.clear();
    out.values.clear();
    for (std::size_t j = 0; j < k; ++j) out.parents.push_back(&tournament_among(pop, rng, out.parents));
    for (const auto& d : space.dims) {
      if (is_numerical(d)) continue;
      const bool first = rng.next_unit() < o.swapping_prob;  // Optuna: rand >= swapping_prob takes the last
      const Member* a = first ? out.parents.front() : out.parents.back();
      const Member* b = first ? out.parents.back() : out.parents.front();
      if (const auto* v = value_of(d, a) ? value_of(d, a) : value_of(d, b)) out.values[d.name] = *v;
    }
    std::vector<const Dimension*> dims;
    std::vector<Vec> xs(k);
    std::vector<Bounds> bounds;
    for (const auto& d : space.dims) {
      if (!is_numerical(d)) continue;
      if (!std::all_of(out.parents.begin(), out.parents.end(), [&](const Member* m) { return value_of(d, m) != nullptr; }))
        continue;
      dims.push_back(&d);
      bounds.push_back(transformed_bounds(d));
      for (std::size_t j = 0; j < k; ++j) xs[j].push_back(to_transformed(d, *value_of(d, out.parents[j])));
    }
    const Vec child = crossover_numerical(o.crossover, xs, bounds, multi_objective, rng);
    const bool clip = attempt >= kMaxCrossoverTries;
    bool inside = true;
    for (std::size_t i = 0; i < dims.size() && inside; ++i) {
      auto v = from_transformed(*dims[i], child[i], clip);
      if (v) out.values[dims[i]->name] = std::move(*v);
      else inside = false;
    }
    if (inside) return out;
  }
}

// The child of a non-uniform crossover, then the mutation (per parameter, as for uniform).
Params bred(const Space& space, const RandomSampler& random, const Nsga2Options& o, std::int64_t number,
            std::uint64_t key, const std::vector<Member>& pop, SplitMix64& rng, const History& history) {
  const Crossed c = cross(space, o, pop, history.multi_objective(), rng);
  std::size_t n_params = 0;
  for (const auto& d : space.dims)
    if (c.parents.front()->trial->params.contains(d.name)) ++n_params;
  const double mutation = o.mutation_prob.value_or(1.0 / double(std::max<std::size_t>(1, n_params)));
  Params p = space.fixed.is_object() ? space.fixed : Params::object();
  for (std::size_t i : sampling_order(space)) {
    const Dimension& d = space.dims[i];
    if (!d.when.empty() && !is_active(d, p)) continue;
    SplitMix64 dim_rng(SplitMix64::mix(key ^ fnv1a64(d.name)));
    const bool mutate = dim_rng.next_unit() < mutation;
    const nlohmann::json* value = nullptr;
    if (auto it = c.values.find(d.name); it != c.values.end()) value = &it->second;
    for (const Member* m : c.parents)  // a parameter not crossed (conditional): the first parent holding it
      if (!value) value = value_of(d, m);
    p[d.name] = (mutate || !value) ? random.draw(d, number) : *value;
  }
  return p;
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
  if (crossover && o_.crossover.kind != CrossoverKind::uniform) return bred(space_, random_, o_, number, key, parents, rng, history);
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
