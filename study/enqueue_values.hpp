// enqueue_values.hpp — the values of `dlsweep enqueue STUDY --set name=value ...` read and
// checked against the study's space, before anything is written.
//
// Rules (what a sampler could have proposed, so that an enqueued trial is a trial the
// study could have had):
//  - a name must be a dimension of `space`; an unknown one is an error with a
//    did-you-mean, a name of `fixed` (or of trial.trainer) is an error saying it is fixed;
//  - a choice takes one of its values, matched by the value's text ("sqrt") or as JSON
//    ("4096", "true", "[512, 512]"), and is stored as the study's own value (4096, not
//    "4096"); an int range takes an integer on its step in [low, high]; a uniform or
//    log-uniform range a finite number in [low, high];
//  - a conditional dimension (`when:`) may be set only together with the parameters it
//    depends on, set to values that switch it on (unless they are fixed in the study);
//  - every problem is reported, not just the first.
// The values are data: they go into JSON (the database, params.json), never to a shell.
// Pure: no I/O.
#pragma once

#include <expected>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "search/search_space.hpp"

namespace dlsweep::orch {

/// One `--set name=value` as typed.
struct SetArg {
  std::string name, value;
};

using Errors = std::vector<Error>;

/// Splits each argument at its first '='. Errors: no '=', an empty name, a name given twice.
std::expected<std::vector<SetArg>, Errors> parse_set_args(const std::vector<std::string>& args);

/// What `d` takes, for messages: "one of [256, 512]", "an integer in [64, 4096] in steps of 64", ...
std::string allowed_values(const search::Dimension& d);

/// `text` read as a value of `d` (see the rules above); the error says what d takes.
Result<nlohmann::json> parse_dim_value(const search::Dimension& d, std::string_view text);

/// Whether `v` (already JSON) is a value `d` can take; the error says what d takes.
Status check_dim_value(const search::Dimension& d, const nlohmann::json& v);

/// Every problem with enqueued `params` (name -> value) against `space`: not an object or
/// empty, unknown or fixed names, values, conditions. `where` names each param's origin in
/// messages (default "enqueue: NAME").
Errors check_enqueued_params(const search::Space& space, const search::Params& params,
                             const std::map<std::string, std::string>& where = {});

/// The whole path from the command line: parse_set_args, parse_dim_value for each, then
/// check_enqueued_params. The params to record, or every problem found.
std::expected<search::Params, Errors> enqueue_params_from_args(const search::Space& space,
                                                               const std::vector<std::string>& args);

}  // namespace dlsweep::orch
