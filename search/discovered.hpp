// discovered.hpp — define-by-run parameters: a trial program asks for a value with
// dlsweep_trial.suggest_float/int/categorical(name, ...) (Optuna's signatures); the engine
// answers from the study's declaration (`space:`), from the trial's stored params (asked
// before: resume, requeue, another rank), or draws it here.
//
// A draw is a pure function of (algorithm, seed, options, name, distribution, the study's
// discovered distributions, trial number, history). tpe, nsga2, gp, cmaes, auto and qmc draw
// a discovered parameter as they draw a declared one: the study's sampler, with the study's
// options, over the space of the discovered distributions known so far, given the history
// with each trial's values of those names, its objective values and its constraint values
// (so constraints and several objectives steer it as they do declared parameters; issue 43).
// One stream for the whole discovered space, so a joint sampler (nsga2, gp, cmaes, qmc,
// multivariate tpe) answers a trial's names from one point, recomputed per name from the same
// history (a trial ending between two of a trial's calls can move it); univariate tpe keeps a
// stream per name. random, grid, pbt and branch draw from a seeded stream keyed by (seed,
// number, name). So resume and --add-trials draw exactly what an uninterrupted sweep would.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/history.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

/// What the program asked for: Optuna's FloatDistribution / IntDistribution /
/// CategoricalDistribution. JSON: {"type":"float","low":..,"high":..,"log":false,"step":null},
/// {"type":"int","low":..,"high":..,"log":false,"step":1}, {"type":"categorical","choices":[..]}.
struct Distribution {
  enum class Type { float_, int_, categorical };
  Type type = Type::float_;
  double low = 0, high = 0;            ///< float: [low, high] (Optuna's closed range)
  std::optional<double> step;          ///< float: the grid low, low+step, ... <= high
  std::int64_t int_low = 0, int_high = 0, int_step = 1;
  bool log = false;
  std::vector<nlohmann::json> choices;

  nlohmann::json to_json() const;
  /// As the program wrote it: `suggest_float('lr', 1e-05, 0.1, log=True)`.
  std::string call(const std::string& name) const;
  bool operator==(const Distribution&) const = default;
};

/// Parses and checks a request's distribution (Optuna's argument checks); the error says what
/// is wrong.
std::expected<Distribution, std::string> parse_distribution(const nlohmann::json& j);

/// The study file's entry, as written: `space.lr: log_uniform [1e-05, 0.1]`.
std::string describe_declared(const Dimension& d);

/// nullopt when the program's call agrees with the study's declaration of the same name;
/// otherwise the contradiction, naming both.
std::optional<std::string> contradiction(const Dimension& declared, const std::string& name, const Distribution& asked);

/// True when `v` is a value of `dist` (a stored value still answers the same call).
bool contains(const Distribution& dist, const nlohmann::json& v);

/// The space with the study's discovered parameters added as dimensions (what `dlsweep enqueue`
/// may set): categorical -> a list, int -> an int range, float -> uniform/log_uniform, a float
/// with a step -> the list of its values.
Space with_discovered(const Space& space, const std::map<std::string, Distribution>& discovered);

/// Parses the `suggest` events' reasons ({"name", "distribution"}) into the study's discovered
/// distributions, the first of each name.
std::map<std::string, Distribution> discovered_from_events(const std::vector<std::string>& reasons);

/// Draws `name` for trial `number` (see the file comment). `options` are the study's
/// `search:` options (tpe's n_startup_trials, gamma, ...; null for defaults); `known` the
/// study's discovered distributions so far (`name` is added if missing): the space the
/// sampler draws over. A trial's own record in `history` is left out.
nlohmann::json draw_discovered(const std::string& algorithm, std::uint64_t seed, const nlohmann::json& options,
                               const std::string& name, const Distribution& dist, std::int64_t number,
                               const History& history, const std::map<std::string, Distribution>& known = {});

}  // namespace dlsweep::search
