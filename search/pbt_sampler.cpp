// pbt_sampler.cpp — PBT's options, ranking, exploit and explore (pbt_sampler.hpp).
//
// Streams: the decision of trial n (donor, then per perturb key in key order: whether it is
// resampled — drawn only when resample_probability > 0 — and its factor or fresh value) draws
// from SplitMix64(mix(mix(seed ^ kPbtSalt) ^ n)): distinct from the random sampler's streams
// of the same (seed, n), and independent of history order and of call order.
#include "search/pbt_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "search/conditional.hpp"

namespace dlsweep::search {

namespace {

constexpr std::uint64_t kPbtSalt = 0x70627473616d706cULL;  // "pbtsampl"

bool numeric_dim(const Dimension& d) {
  if (d.kind != Dimension::Kind::choice) return true;
  return !d.choices.empty() &&
         std::all_of(d.choices.begin(), d.choices.end(), [](const nlohmann::json& v) { return v.is_number(); });
}

double clamp_half_open(double v, double low, double high) {
  if (!(v >= low)) return low;
  if (v >= high) return std::nextafter(high, low);
  return v;
}

/// `value` of dimension `d` multiplied by `factor`, kept in the dimension's range.
nlohmann::json perturb_value(const Dimension& d, const nlohmann::json& value, double factor) {
  if (!value.is_number()) return value;
  const double v = value.get<double>();
  switch (d.kind) {
    case Dimension::Kind::uniform:
    case Dimension::Kind::log_uniform:
      return clamp_half_open(v * factor, d.low, d.high);
    case Dimension::Kind::int_range: {
      const std::int64_t step = d.int_step > 0 ? d.int_step : 1;
      const std::int64_t last = d.int_low + (d.cardinality() - 1) * step;
      const double k = std::round((v * factor - double(d.int_low)) / double(step));
      const auto idx = static_cast<std::int64_t>(std::clamp(k, 0.0, double(d.cardinality() - 1)));
      return std::min(last, d.int_low + idx * step);
    }
    case Dimension::Kind::choice: {
      std::vector<nlohmann::json> sorted = d.choices;
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](const auto& a, const auto& b) { return a.template get<double>() < b.template get<double>(); });
      std::size_t i = 0;
      while (i + 1 < sorted.size() && sorted[i].get<double>() < v) ++i;
      if (factor < 1 && i > 0) --i;
      else if (factor > 1 && i + 1 < sorted.size()) ++i;
      return sorted[i];
    }
  }
  return value;
}

}  // namespace

std::optional<double> pbt_score(const TrialRecord& t) {
  if (t.status != TrialStatus::complete) return std::nullopt;  // failed, pruned, cancelled, running
  if (!t.curve.empty() && std::isfinite(t.curve.back().value)) return t.curve.back().value;
  if (t.value && std::isfinite(*t.value)) return t.value;
  return std::nullopt;
}

PbtOptions PbtOptions::read(OptionReader& r, const Space& space) {
  PbtOptions o;
  if (!r.has("population"))
    r.error("population", "pbt needs a population", "add `population: 8` under search: (the members trained at once)");
  o.population = r.integer("population", 0, 2, 1 << 20);
  o.generations = r.integer("generations", 0, 1, 1 << 20);
  if (!r.has("generations"))
    r.error("generations", "pbt needs a number of generations (intervals per member)",
            "add `generations: N` under search:, or `trials: population x N`");
  o.quantile = r.number("quantile", 0.25, 0, 0.5, /*low_open=*/true);
  o.resample_probability = r.number("resample_probability", 0, 0, 1);
  if (const auto* iv = r.get("interval"); !iv || !iv->is_object()) {
    r.error("interval", iv ? fmt::format("expected a map, got {}", iv->dump()) : "pbt needs an interval",
            "write interval: {by: epoch, every: 2}");
  } else {
    for (const auto& [k, _] : iv->items())
      if (k != "by" && k != "every")
        r.error("interval." + k, fmt::format("unknown option '{}' for pbt's interval", k), "interval takes: by, every");
    const auto by = iv->value("by", nlohmann::json("epoch"));
    auto axis = by.is_string() ? parse_axis(by.get<std::string>()) : std::nullopt;
    if (!axis || *axis == Axis::wall_s)
      r.error("interval.by", fmt::format("expected epoch, step or samples, got {}", by.dump()), "write by: epoch");
    else o.axis = *axis;
    const auto every = iv->value("every", nlohmann::json());
    if (!every.is_number() || !(every.get<double>() > 0) || !std::isfinite(every.get<double>()))
      r.error("interval.every", every.is_null() ? "pbt's interval needs `every`" : fmt::format("{} is not a positive length", every.dump()),
              "write every: 2 (interval length on the `by` axis)");
    else o.every = every.get<double>();
  }
  const auto* pert = r.get("perturb");
  if (!pert || !pert->is_object() || pert->empty()) {
    r.error("perturb", pert ? fmt::format("expected a map of parameter: [factors], got {}", pert->dump()) : "pbt needs `perturb`",
            "write perturb: {base_lr: [0.8, 1.25]}");
  } else {
    for (const auto& [key, factors] : pert->items()) {
      const Dimension* dim = nullptr;
      for (const auto& d : space.dims)
        if (d.name == key) dim = &d;
      if (!dim) {
        r.error("perturb." + key, fmt::format("'{}' is not a parameter of the study's space", key),
                "perturb only parameters listed under `space`");
        continue;
      }
      if (!numeric_dim(*dim)) {
        r.error("perturb." + key, fmt::format("'{}' is not numeric: a factor cannot scale it", key),
                "perturb numeric parameters (ranges, or lists of numbers)");
        continue;
      }
      if (!dim->when.empty()) {
        r.error("perturb." + key, fmt::format("'{}' is conditional (`when:`)", key), "perturb unconditional parameters");
        continue;
      }
      std::vector<double> fs;
      bool ok = factors.is_array() && !factors.empty();
      for (const auto& f : factors.is_array() ? factors : nlohmann::json::array()) {
        if (!f.is_number() || !(f.get<double>() > 0) || !std::isfinite(f.get<double>())) ok = false;
        else fs.push_back(f.get<double>());
      }
      if (!ok) {
        r.error("perturb." + key, fmt::format("expected a list of factors > 0, got {}", factors.dump()),
                fmt::format("write {}: [0.8, 1.25]", key));
        continue;
      }
      o.perturb[key] = std::move(fs);
    }
  }
  return o;
}

std::int64_t PbtOptions::quantile_count() const {
  const auto k = static_cast<std::int64_t>(std::ceil(quantile * double(population) - 1e-9));
  return std::clamp<std::int64_t>(k, 1, std::max<std::int64_t>(1, population / 2));
}

PbtSampler::PbtSampler(Space space, std::uint64_t seed, PbtOptions options)
    : space_(std::move(space)), seed_(seed), options_(std::move(options)), random_(space_, seed) {}

bool PbtSampler::ready(std::int64_t number, const History& history) const {
  const std::int64_t p = options_.population;
  const std::int64_t g = number / p;
  if (g == 0) return true;
  std::int64_t finished = 0;
  for (const auto& t : history.trials)
    if (t.number >= 0 && t.number / p == g - 1) {
      if (!t.finished()) return false;
      ++finished;
    }
  return finished >= p;
}

std::optional<Params> PbtSampler::next(std::int64_t number, const History& history) {
  auto s = step(number, history);
  if (!s) return std::nullopt;
  return std::move(s->params);
}

nlohmann::json PbtSampler::lineage(std::int64_t number, const History& history) const {
  auto s = step(number, history);
  return s ? s->lineage : nlohmann::json();
}

std::optional<PbtSampler::Step> PbtSampler::step(std::int64_t number, const History& history) const {
  const std::int64_t p = options_.population;
  if (number < 0 || number >= p * options_.generations) return std::nullopt;
  const std::int64_t g = number / p, m = number % p;
  Step out;
  out.lineage = {{"member", m},
                 {"generation", g},
                 {"axis", std::string(axis_name(options_.axis))},
                 {"start", double(g) * options_.every},
                 {"end", double(g + 1) * options_.every},
                 {"parent", nullptr},
                 {"exploit", nullptr}};
  if (g == 0) {
    RandomSampler random = random_;
    out.params = *random.next(number, history);
    return out;
  }
  if (!ready(number, history)) return std::nullopt;
  // Generation g-1 by member (its latest record per number: the history holds one each).
  std::vector<const TrialRecord*> prev(static_cast<std::size_t>(p), nullptr);
  for (const auto& t : history.trials)  // numbers < 0 (warm-start records) belong to no generation
    if (t.number >= 0 && t.number / p == g - 1) prev[static_cast<std::size_t>(t.number % p)] = &t;
  std::vector<std::int64_t> order(static_cast<std::size_t>(p));
  for (std::int64_t i = 0; i < p; ++i) order[static_cast<std::size_t>(i)] = i;
  std::vector<std::optional<double>> score(static_cast<std::size_t>(p));
  for (std::int64_t i = 0; i < p; ++i) score[static_cast<std::size_t>(i)] = pbt_score(*prev[static_cast<std::size_t>(i)]);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const auto& sa = score[static_cast<std::size_t>(a)];
    const auto& sb = score[static_cast<std::size_t>(b)];
    if (sa.has_value() != sb.has_value()) return sa.has_value();
    if (sa && *sa != *sb) return history.better(*sa, *sb);
    return a < b;
  });
  std::vector<std::int64_t> rank_of(static_cast<std::size_t>(p));
  for (std::int64_t r = 0; r < p; ++r) rank_of[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] = r;
  const std::int64_t rank = rank_of[static_cast<std::size_t>(m)];
  const std::int64_t k = options_.quantile_count();
  std::vector<std::int64_t> donors;
  for (std::int64_t r = 0; r < k; ++r)
    if (score[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])]) donors.push_back(order[static_cast<std::size_t>(r)]);
  auto exploits = [&](std::int64_t i) {
    return (rank_of[static_cast<std::size_t>(i)] >= p - k || !score[static_cast<std::size_t>(i)]) && !donors.empty() &&
           std::find(donors.begin(), donors.end(), i) == donors.end();
  };
  const bool exploit = exploits(m);
  out.lineage["rank"] = rank;
  // An exploiting member's donor and explore step (per perturb key: a factor, or with
  // probability resample_probability a fresh value from the key's dimension), drawn from its
  // own stream; a draw that an exploiter of lower member number in this generation already
  // made is drawn again (up to 64 times), so two members do not become clones (same weights,
  // same params) while other choices are left. A draw is (donor, factor per key); with
  // resample_probability > 0, (donor, explored value per key), so that a factor and a
  // resampled value that land on the same value are a repeat too. Members are decided in
  // member order from the same history, so every member's choice is still a pure function of
  // (seed, number, generation g-1).
  struct Choice {
    std::int64_t donor = 0;
    std::vector<std::size_t> factor;  ///< index into each perturb key's factors, in key order
    std::vector<nlohmann::json> fresh;  ///< per key: its resampled value, or null (a factor)
  };
  std::vector<const Dimension*> dims;  // each perturb key's dimension, in key order
  for (const auto& [name, fs] : options_.perturb) {
    const Dimension* dim = nullptr;
    for (const auto& d : space_.dims)
      if (d.name == name) dim = &d;
    dims.push_back(dim);
  }
  const double resample = options_.resample_probability;
  std::set<nlohmann::json> taken;  // [factor index (P = 0) or explored value (P > 0) per key..., donor]
  auto choose = [&](std::int64_t i) {
    SplitMix64 rng(SplitMix64::mix(SplitMix64::mix(SplitMix64::mix(seed_ ^ kPbtSalt) ^ static_cast<std::uint64_t>(g * p + i))));
    Choice c;
    nlohmann::json key;
    for (int attempt = 0; attempt < 64; ++attempt) {
      c.donor = donors[static_cast<std::size_t>(rng.next_below(donors.size()))];
      c.factor.clear();
      c.fresh.clear();
      key = nlohmann::json::array();
      std::size_t j = 0;
      for (const auto& [name, fs] : options_.perturb) {
        const Dimension* dim = dims[j++];
        // No draw at all when resample_probability is 0: the stream is the factors' alone.
        if (resample > 0 && dim && rng.next_unit() < resample) {
          c.factor.push_back(0);
          c.fresh.push_back(draw_value(*dim, rng));
          key.push_back(c.fresh.back());
          continue;
        }
        c.factor.push_back(static_cast<std::size_t>(rng.next_below(fs.size())));
        c.fresh.push_back(nullptr);
        const auto& from = prev[static_cast<std::size_t>(c.donor)]->params;
        if (auto v = from.find(name); resample > 0 && dim && v != from.end())
          key.push_back(perturb_value(*dim, *v, fs[c.factor.back()]));
        else key.push_back(c.factor.back());
      }
      key.push_back(c.donor);
      if (!taken.contains(key)) break;
    }
    taken.insert(key);
    return c;
  };
  const std::int64_t source_member = [&] {
    if (!exploit) return m;
    Choice c;
    for (std::int64_t i = 0; i <= m; ++i)
      if (exploits(i)) c = choose(i);
    nlohmann::json factors = nlohmann::json::object(), resampled = nlohmann::json::object();
    std::size_t j = 0;
    for (const auto& [key, fs] : options_.perturb) {
      if (!c.fresh[j].is_null()) resampled[key] = c.fresh[j];
      else factors[key] = fs[c.factor[j]];
      ++j;
    }
    out.lineage["exploit"] = {{"from", prev[static_cast<std::size_t>(c.donor)]->number},
                              {"from_member", c.donor},
                              {"factors", factors}};
    if (!resampled.empty()) out.lineage["exploit"]["resampled"] = resampled;  // absent: as before the option
    return c.donor;
  }();
  const TrialRecord& source = *prev[static_cast<std::size_t>(source_member)];
  out.lineage["parent"] = source.number;
  // The source's hyperparameters: fixed ones from the space, searched ones from the source
  // (anything else the engine added to its params, e.g. dlsweep-train's schedule strings,
  // is not copied).
  out.params = space_.fixed.is_object() ? space_.fixed : Params::object();
  for (const auto& d : space_.dims)
    if (auto it = source.params.find(d.name); it != source.params.end()) out.params[d.name] = *it;
  if (exploit) {
    const nlohmann::json& e = out.lineage["exploit"];
    for (const auto& [key, f] : e["factors"].items())
      for (const auto& d : space_.dims)
        if (d.name == key && out.params.contains(key)) out.params[key] = perturb_value(d, out.params[key], f.get<double>());
    if (e.contains("resampled"))
      for (const auto& [key, v] : e["resampled"].items())
        if (out.params.contains(key)) out.params[key] = v;
  }
  drop_inactive(space_, out.params);
  return out;
}

}  // namespace dlsweep::search
