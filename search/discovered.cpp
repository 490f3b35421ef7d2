// discovered.cpp — see discovered.hpp.
#include "search/discovered.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <fmt/format.h>

#include "common/hash.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

namespace {

std::string num(double v) {
  nlohmann::json j = v;
  return j.dump();
}

bool is_number(const nlohmann::json& j) { return j.is_number() && !j.is_boolean(); }

// A float with a step: the number of grid points low, low+step, ... <= high.
std::int64_t grid_points(const Distribution& d) {
  return static_cast<std::int64_t>(std::floor((d.high - d.low) / *d.step + 1e-9)) + 1;
}

}  // namespace

nlohmann::json Distribution::to_json() const {
  switch (type) {
    case Type::float_:
      return {{"type", "float"}, {"low", low}, {"high", high}, {"log", log},
              {"step", step ? nlohmann::json(*step) : nlohmann::json(nullptr)}};
    case Type::int_:
      return {{"type", "int"}, {"low", int_low}, {"high", int_high}, {"log", log}, {"step", int_step}};
    case Type::categorical:
      return {{"type", "categorical"}, {"choices", choices}};
  }
  return nullptr;
}

std::string Distribution::call(const std::string& name) const {
  switch (type) {
    case Type::float_: {
      std::string s = fmt::format("suggest_float('{}', {}, {}", name, num(low), num(high));
      if (step) s += ", step=" + num(*step);
      if (log) s += ", log=True";
      return s + ")";
    }
    case Type::int_: {
      std::string s = fmt::format("suggest_int('{}', {}, {}", name, int_low, int_high);
      if (int_step != 1) s += fmt::format(", step={}", int_step);
      if (log) s += ", log=True";
      return s + ")";
    }
    case Type::categorical:
      return fmt::format("suggest_categorical('{}', {})", name, nlohmann::json(choices).dump());
  }
  return {};
}

std::expected<Distribution, std::string> parse_distribution(const nlohmann::json& j) {
  using U = std::unexpected<std::string>;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return U("the distribution must be an object with a \"type\" (float, int or categorical)");
  Distribution d;
  const std::string type = j["type"].get<std::string>();
  auto flag = [&](const char* k) { return j.contains(k) && j[k].is_boolean() && j[k].get<bool>(); };
  if (type == "float") {
    d.type = Distribution::Type::float_;
    if (!j.contains("low") || !j.contains("high") || !is_number(j["low"]) || !is_number(j["high"]))
      return U("float: low and high must be numbers");
    d.low = j["low"].get<double>();
    d.high = j["high"].get<double>();
    d.log = flag("log");
    if (j.contains("step") && !j["step"].is_null()) {
      if (!is_number(j["step"])) return U("float: step must be a number or null");
      d.step = j["step"].get<double>();
    }
    if (!std::isfinite(d.low) || !std::isfinite(d.high)) return U("float: low and high must be finite");
    if (d.low > d.high) return U(fmt::format("float: low ({}) must be <= high ({})", num(d.low), num(d.high)));
    if (d.log && d.step) return U("float: step and log cannot be used together");
    if (d.log && d.low <= 0) return U(fmt::format("float: log=True needs low > 0 (got low={})", num(d.low)));
    if (d.step && !(*d.step > 0)) return U(fmt::format("float: step must be > 0 (got {})", num(*d.step)));
    if (d.step) d.high = d.low + static_cast<double>(grid_points(d) - 1) * *d.step;  // Optuna adjusts high so
    return d;
  }
  if (type == "int") {
    d.type = Distribution::Type::int_;
    if (!j.contains("low") || !j.contains("high") || !j["low"].is_number_integer() || !j["high"].is_number_integer())
      return U("int: low and high must be integers");
    d.int_low = j["low"].get<std::int64_t>();
    d.int_high = j["high"].get<std::int64_t>();
    d.log = flag("log");
    if (j.contains("step") && !j["step"].is_null()) {
      if (!j["step"].is_number_integer()) return U("int: step must be an integer");
      d.int_step = j["step"].get<std::int64_t>();
    }
    if (d.int_low > d.int_high) return U(fmt::format("int: low ({}) must be <= high ({})", d.int_low, d.int_high));
    if (d.int_step <= 0) return U(fmt::format("int: step must be >= 1 (got {})", d.int_step));
    if (d.log && d.int_step != 1) return U("int: step and log cannot be used together");
    if (d.log && d.int_low < 1) return U(fmt::format("int: log=True needs low >= 1 (got low={})", d.int_low));
    d.int_high = d.int_low + (d.int_high - d.int_low) / d.int_step * d.int_step;
    return d;
  }
  if (type == "categorical") {
    d.type = Distribution::Type::categorical;
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
      return U("categorical: choices must be a non-empty list");
    for (const auto& c : j["choices"]) {
      if (!(c.is_null() || c.is_boolean() || c.is_number() || c.is_string()))
        return U("categorical: each choice must be None, a bool, an int, a float or a str (got " + c.dump() + ")");
      d.choices.push_back(c);
    }
    return d;
  }
  return U("unknown distribution type '" + type + "' (float, int or categorical)");
}

std::string describe_declared(const Dimension& d) {
  using K = Dimension::Kind;
  std::string s = "space." + d.name + ": ";
  switch (d.kind) {
    case K::choice: return s + "choice " + nlohmann::json(d.choices).dump();
    case K::uniform: return s + "uniform [" + num(d.low) + ", " + num(d.high) + "]";
    case K::log_uniform: return s + "log_uniform [" + num(d.low) + ", " + num(d.high) + "]";
    case K::int_range:
      s += fmt::format("int [{}, {}]", d.int_low, d.int_high);
      if (d.int_step != 1) s += fmt::format(" step {}", d.int_step);
      if (d.log) s += " log";
      return s;
  }
  return s;
}

std::optional<std::string> contradiction(const Dimension& declared, const std::string& name, const Distribution& a) {
  using K = Dimension::Kind;
  bool agrees = false;
  switch (declared.kind) {
    case K::choice:
      if (a.type == Distribution::Type::categorical) {
        agrees = a.choices.size() == declared.choices.size() &&
                 std::all_of(a.choices.begin(), a.choices.end(), [&](const nlohmann::json& c) {
                   return std::find(declared.choices.begin(), declared.choices.end(), c) != declared.choices.end();
                 });
      }
      break;
    case K::uniform:
    case K::log_uniform:
      agrees = a.type == Distribution::Type::float_ && !a.step && a.log == (declared.kind == K::log_uniform) &&
               a.low == declared.low && a.high == declared.high;
      break;
    case K::int_range:
      agrees = a.type == Distribution::Type::int_ && a.int_low == declared.int_low &&
               a.int_high == declared.int_low + (declared.int_high - declared.int_low) / std::max<std::int64_t>(1, declared.int_step) * std::max<std::int64_t>(1, declared.int_step) &&
               a.int_step == std::max<std::int64_t>(1, declared.int_step) && a.log == declared.log;
      break;
  }
  if (agrees) return std::nullopt;
  return fmt::format("the study file declares {} but the program calls {}: make them agree (or drop the "
                     "study's entry and let the program's call define the space)",
                     describe_declared(declared), a.call(name));
}

bool contains(const Distribution& d, const nlohmann::json& v) {
  switch (d.type) {
    case Distribution::Type::categorical:
      return std::find(d.choices.begin(), d.choices.end(), v) != d.choices.end();
    case Distribution::Type::int_:
      if (!v.is_number_integer()) return false;
      {
        const auto x = v.get<std::int64_t>();
        return x >= d.int_low && x <= d.int_high && (x - d.int_low) % d.int_step == 0;
      }
    case Distribution::Type::float_:
      if (!is_number(v)) return false;
      {
        const double x = v.get<double>();
        const double slack = d.step ? 1e-9 * *d.step : 0.0;  // a grid value rounded for display
        return x >= d.low - slack && x <= d.high + slack;
      }
  }
  return false;
}

namespace {

// The dimension the samplers draw from. A float with a step is drawn as its grid index.
Dimension as_dimension(const std::string& name, const Distribution& d) {
  Dimension dim;
  dim.name = name;
  switch (d.type) {
    case Distribution::Type::categorical:
      dim.kind = Dimension::Kind::choice;
      dim.choices = d.choices;
      break;
    case Distribution::Type::int_:
      dim.kind = Dimension::Kind::int_range;
      dim.int_low = d.int_low;
      dim.int_high = d.int_high;
      dim.int_step = d.int_step;
      dim.log = d.log;
      break;
    case Distribution::Type::float_:
      if (d.step) {
        dim.kind = Dimension::Kind::int_range;
        dim.int_low = 0;
        dim.int_high = grid_points(d) - 1;
      } else {
        dim.kind = d.log ? Dimension::Kind::log_uniform : Dimension::Kind::uniform;
        dim.low = d.low;
        dim.high = d.high;
      }
      break;
  }
  return dim;
}

// A value of `d` as the dimension's value (a stepped float: its grid index); nullopt if it is
// not one (a trial that stored something else under the name is left out of the model).
std::optional<nlohmann::json> to_dim_value(const Distribution& d, const nlohmann::json& v) {
  if (!contains(d, v)) return std::nullopt;
  if (d.type == Distribution::Type::float_ && d.step)
    return nlohmann::json(static_cast<std::int64_t>(std::llround((v.get<double>() - d.low) / *d.step)));
  return v;
}

nlohmann::json from_dim_value(const Distribution& d, const nlohmann::json& v) {
  if (d.type == Distribution::Type::float_ && d.step && v.is_number()) {
    // low + k*step rounded to 12 significant digits: 0.85, not 0.8500000000000001, so the
    // value reads as typed (`dlsweep enqueue --set momentum=0.85`, the study's results).
    const double x = d.low + static_cast<double>(v.get<std::int64_t>()) * *d.step;
    return std::stod(fmt::format("{:.12g}", x));
  }
  return v;
}

}  // namespace

Space with_discovered(const Space& space, const std::map<std::string, Distribution>& discovered) {
  Space out = space;
  for (const auto& entry : discovered) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 (the fuzz build) cannot capture one
    const Distribution& d = entry.second;
    if (std::any_of(out.dims.begin(), out.dims.end(), [&](const Dimension& x) { return x.name == name; })) continue;
    if (out.fixed.is_object() && out.fixed.contains(name)) continue;
    Dimension dim = as_dimension(name, d);
    if (d.type == Distribution::Type::float_ && d.step) {
      dim.kind = Dimension::Kind::choice;
      for (std::int64_t k = 0; k < grid_points(d); ++k) dim.choices.push_back(from_dim_value(d, nlohmann::json(k)));
    }
    if (d.type == Distribution::Type::float_ && d.low == d.high) {
      dim.kind = Dimension::Kind::choice;
      dim.choices = {d.low};
    }
    out.dims.push_back(std::move(dim));
  }
  return out;
}

std::map<std::string, Distribution> discovered_from_events(const std::vector<std::string>& reasons) {
  std::map<std::string, Distribution> out;
  for (const auto& r : reasons) {
    auto j = nlohmann::json::parse(r, nullptr, false);
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) continue;
    if (auto d = parse_distribution(j.value("distribution", nlohmann::json())))
      out.emplace(j["name"].get<std::string>(), *d);
  }
  return out;
}

namespace {

// The algorithms whose proposals follow the history or the space: a discovered parameter is
// drawn by the study's own sampler over the discovered space. grid, pbt and branch keep the
// seeded stream (a grid of names that appear at run time, a pbt member's explore step);
// random's seeded stream is the same distribution.
bool models_discovered(const std::string& algorithm) {
  return algorithm == "tpe" || algorithm == "nsga2" || algorithm == "gp" || algorithm == "cmaes" ||
         algorithm == "auto" || algorithm == "qmc";
}

// The study's discovered space (every known name's dimension, `name` included; a one-point
// distribution is a constant, not a dimension) and the history over it: each trial's values of
// those names as the dimensions' values, its objective values and constraints kept, the trial
// being drawn left out.
std::optional<nlohmann::json> draw_as_declared(const std::string& algorithm, std::uint64_t seed,
                                               const nlohmann::json& options, const std::string& name,
                                               const Distribution& d, std::int64_t number, const History& history,
                                               const std::map<std::string, Distribution>& known) {
  std::map<std::string, Distribution> all = known;
  all.insert_or_assign(name, d);
  Space space;
  std::vector<std::pair<std::string, const Distribution*>> dims;
  for (const auto& entry : all) {
    const Distribution& x = entry.second;
    if (x.type == Distribution::Type::float_ && x.low == x.high) continue;
    if (x.type == Distribution::Type::int_ && x.int_low == x.int_high) continue;
    space.dims.push_back(as_dimension(entry.first, x));
    dims.emplace_back(entry.first, &x);
  }
  History h = history;  // directions, constrained, rank_final, maximize as the study's
  h.trials.clear();
  for (const auto& t : history.trials) {
    if (t.number == number) continue;
    TrialRecord r = t;
    r.params = Params::object();
    if (t.params.is_object())
      for (const auto& [n, x] : dims)
        if (auto it = t.params.find(n); it != t.params.end())
          if (auto v = to_dim_value(*x, *it)) r.params[n] = *v;
    h.trials.push_back(std::move(r));
  }
  // A sampler that proposes the parameters jointly (nsga2, gp, cmaes, qmc, multivariate tpe)
  // answers a trial's names from one point: one stream for the whole discovered space. Univariate
  // tpe draws each name on its own: the name's stream, the one it had before the space was known
  // (so an unconstrained single-objective study draws what it drew before issue 43).
  const nlohmann::json multivariate = options.is_object() ? options.value("multivariate", nlohmann::json()) : nlohmann::json();
  const bool univariate = algorithm == "tpe" && (multivariate.is_boolean() ? !multivariate.get<bool>() : !history.multi_objective());
  const std::uint64_t key = seed ^ fnv1a64(univariate ? "\x02" "discovered:" + name : std::string("\x02" "discovered"));
  try {
    auto s = make_sampler(algorithm, space, key, options.is_object() ? options : nlohmann::json::object());
    if (!s) return std::nullopt;
    auto p = (*s)->next(number, h);
    if (!p || !p->contains(name)) return std::nullopt;
    return from_dim_value(d, (*p)[name]);
  } catch (const std::exception&) {
    return std::nullopt;  // the seeded draw instead
  }
}

}  // namespace

nlohmann::json draw_discovered(const std::string& algorithm, std::uint64_t seed, const nlohmann::json& options,
                               const std::string& name, const Distribution& d, std::int64_t number,
                               const History& history, const std::map<std::string, Distribution>& known) {
  if (d.type == Distribution::Type::float_ && d.low == d.high) return d.low;
  if (d.type == Distribution::Type::int_ && d.int_low == d.int_high) return d.int_low;
  if (models_discovered(algorithm))
    if (auto v = draw_as_declared(algorithm, seed, options, name, d, number, history, known)) return *v;
  const Dimension dim = as_dimension(name, d);
  // Its own stream, apart from the declared dimensions' (which hash the name without the prefix).
  const std::uint64_t key = seed ^ fnv1a64("\x02" "discovered:" + name);
  const std::uint64_t trial_key = SplitMix64::mix(SplitMix64::mix(key) ^ static_cast<std::uint64_t>(number));
  SplitMix64 rng(SplitMix64::mix(trial_key ^ fnv1a64(name)));
  nlohmann::json v = draw_value(dim, rng);
  // Optuna's float range is [low, high]; a continuous draw lies in [low, high) (the one point high aside, the same).
  return from_dim_value(d, v);
}

}  // namespace dlsweep::search
