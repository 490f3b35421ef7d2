// options.hpp — how each sampler and pruner reads and validates its own options.
//
// The study parser hands an algorithm the keys of its section (`search:` or `pruner:`)
// as JSON; the algorithm reads them through an OptionReader, which records one
// OptionError per problem (key, what is wrong, the fix). The parser prefixes the file and
// the section's key path, so users see the usual `study.yaml:12: search.gamma: ...` lines.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep::search {

struct OptionError {
  std::string key;   ///< the option's key inside the section ("gamma", "group_by[1]")
  std::string what;
  std::string fix;
};

class OptionReader {
 public:
  /// `options`: the section's keys (an object, or null for none). `owner` names the
  /// algorithm in messages ("tpe", "asha").
  OptionReader(const nlohmann::json& options, std::string owner);

  /// Records an error for every key not in `known` (those the algorithm reads plus
  /// those the caller handles itself).
  void only(std::initializer_list<std::string_view> known);
  bool has(const std::string& key) const;
  /// The raw value of `key` (nullptr when absent), for options with a structure of their own.
  const nlohmann::json* get(const std::string& key) const { return find(key); }
  double number(const std::string& key, double fallback, double low, double high, bool low_open = false);
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t low, std::int64_t high);
  bool boolean(const std::string& key, bool fallback);
  std::optional<double> optional_number(const std::string& key);
  std::vector<std::string> strings(const std::string& key);
  /// One of `allowed` (the first is named as the default in the fix), or `fallback`.
  std::string word(const std::string& key, std::string fallback, std::initializer_list<std::string_view> allowed);
  void error(std::string key, std::string what, std::string fix);

  const std::vector<OptionError>& errors() const { return errors_; }
  std::vector<OptionError> take_errors() { return std::move(errors_); }

 private:
  const nlohmann::json* find(const std::string& key) const;
  nlohmann::json options_;
  std::string owner_;
  std::vector<OptionError> errors_;
};

}  // namespace dlsweep::search
