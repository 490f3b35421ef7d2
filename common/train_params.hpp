// train_params.hpp — the parameters dlsweep-train understands in params.json: names, types,
// allowed values, defaults. This table is the single source of truth; the study validator
// (orchestrator/) uses it to check a study's trainer settings and search space before
// anything runs, and dlsweep-train uses it to parse params.json.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace dlsweep::trainer {

struct ParamInfo {
  enum class Type { integer, number, string, boolean, int_list, number_list };  ///< number_list may be empty
  std::string name;
  Type type = Type::number;
  nlohmann::json default_value;        ///< null when required
  std::vector<std::string> allowed;    ///< for strings: the accepted words (empty = any)
  double min = -1e300, max = 1e300;    ///< inclusive bounds for numbers/integers/list items
  bool min_exclusive = false;          ///< true: value must be > min
  std::string help;                    ///< one line, shown in --help and did-you-mean
};

/// The metrics dlsweep-train reports in every eval record that a study may optimise.
std::span<const std::string_view> reported_metrics();

/// Every parameter dlsweep-train accepts, in documentation order.
std::span<const ParamInfo> param_table();
/// nullptr if unknown.
const ParamInfo* find_param(const std::string& name);

/// Checks one value against its ParamInfo. The error's `what`/`fix` say what is wrong and
/// what is accepted; `where` is left empty for the caller to fill with the key path.
Status check_param_value(const ParamInfo& info, const nlohmann::json& value);

}  // namespace dlsweep::trainer
