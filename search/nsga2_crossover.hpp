// nsga2_crossover.hpp — the crossover operators of Optuna 3.1's NSGAIISampler
// (optuna/samplers/nsgaii/_crossovers/*.py, _crossover.py), as pure functions.
//
// `search.crossover` picks one: uniform (the default: each parameter from one of two
// parents; nsga2_sampler.cpp does it per parameter, as before), blx_alpha, sbx, vsbx (two
// parents), undx, spx (three parents). The non-uniform ones work on the numerical
// parameters as one vector in Optuna's transformed space (_SearchSpaceTransform): a float
// as is, a log range as its log, an int as is (log: its log) with bounds widened by half a
// step; the child is mapped back by rounding ints onto their step and clipping them, and
// clipping a float above its high to the largest value below it. A float child below its
// low is outside the space: Optuna draws new parents and crosses again (so do we, up to
// kMaxCrossoverTries, then clip). Categorical parameters take the value of the first or
// the last parent (first with probability swapping_prob, as Optuna's inlined uniform
// crossover).
// Every draw comes from the caller's SplitMix64 stream: a pure function of its state.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/options.hpp"
#include "search/random_sampler.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

enum class CrossoverKind { uniform, blx_alpha, sbx, vsbx, undx, spx };

struct CrossoverOptions {
  CrossoverKind kind = CrossoverKind::uniform;
  double alpha = 0.5;               ///< blx_alpha (Optuna's BLXAlphaCrossover(alpha))
  std::optional<double> eta;        ///< sbx, vsbx: nullopt: 20 with several objectives, else 2
  double sigma_xi = 0.5;            ///< undx (UNDXCrossover(sigma_xi))
  std::optional<double> sigma_eta;  ///< undx: nullopt: 0.35 / sqrt(number of numerical params)
  std::optional<double> epsilon;    ///< spx: nullopt: sqrt(number of numerical params + 2)

  /// Reads `crossover` and `crossover_alpha|eta|sigma_xi|sigma_eta|epsilon`; a parameter
  /// of another operator than the one chosen is an error naming the key.
  static CrossoverOptions read(OptionReader& r);
};

/// Parents the operator crosses (Optuna's n_parents): 3 for undx and spx, else 2.
std::size_t crossover_parents(CrossoverKind kind);
std::string_view crossover_name(CrossoverKind kind);

/// Give up redrawing parents for a child outside the space after this many tries, and clip.
inline constexpr int kMaxCrossoverTries = 100;

using Vec = std::vector<double>;
struct Bounds {
  double low, high;
};

/// The child of `parents` (each a vector over the same numerical parameters, in the
/// transformed space; crossover_parents(kind) of them) under Optuna's formulas. `bounds`:
/// the transformed bounds (sbx reads them). Not clipped. Uniform: parameter-wise from the
/// first or second parent (second with probability 0.5).
Vec crossover_numerical(const CrossoverOptions& o, const std::vector<Vec>& parents, const std::vector<Bounds>& bounds,
                        bool multi_objective, SplitMix64& rng);

/// Whether `d` is crossed numerically (uniform, log_uniform, int_range).
bool is_numerical(const Dimension& d);
/// Optuna's transformed bounds of a numerical dimension.
Bounds transformed_bounds(const Dimension& d);
/// A value of `d` (inside the space) in the transformed space.
double to_transformed(const Dimension& d, const nlohmann::json& v);
/// The value of `d` at transformed `x`; nullopt when Optuna's child would be outside the
/// space (a float below low, or not finite). `clip`: clip instead (never nullopt).
std::optional<nlohmann::json> from_transformed(const Dimension& d, double x, bool clip = false);

/// A standard normal draw (Box-Muller, two uniforms).
double standard_normal(SplitMix64& rng);

}  // namespace dlsweep::search
