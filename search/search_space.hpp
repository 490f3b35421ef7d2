// search_space.hpp — what a study may vary, as the samplers see it.
//
// A Space is plain data, produced by the study parser (orchestrator/) after validation, so
// every Dimension here is already well formed: low < high, low > 0 for log_uniform,
// non-empty choices. Params are a JSON object (name -> scalar); nlohmann::json keeps keys
// sorted, so serialisation is deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep::search {

using Params = nlohmann::json;  ///< always an object of scalars

struct Dimension {
  enum class Kind { choice, uniform, log_uniform, int_range };
  std::string name;
  Kind kind = Kind::choice;
  std::vector<nlohmann::json> choices;  ///< kind == choice: the values, in file order
  double low = 0, high = 0;             ///< uniform / log_uniform: [low, high)
  std::int64_t int_low = 0, int_high = 0, int_step = 1;  ///< int_range: low..high inclusive
  bool log = false;                     ///< int_range sampled log-uniformly (random only)
  /// `when:` — the dimension exists only when, for every condition, the named parameter
  /// is present and equals one of the values (search/conditional.hpp). Empty: always.
  struct Condition {
    std::string param;
    std::vector<nlohmann::json> values;
  };
  std::vector<Condition> when;

  /// Number of distinct values, or 0 if continuous.
  std::int64_t cardinality() const;
};

struct Space {
  std::vector<Dimension> dims;  ///< in study-file order; grid order follows it
  Params fixed = Params::object();  ///< parameters that do not vary
};

}  // namespace dlsweep::search
