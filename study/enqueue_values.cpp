// enqueue_values.cpp — `--set name=value` to typed params checked against the space (see
// enqueue_values.hpp for the rules).
#include "study/enqueue_values.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "study/did_you_mean.hpp"

namespace dlsweep::orch {

namespace {

using search::Dimension;
using K = Dimension::Kind;

std::string join_values(const std::vector<nlohmann::json>& values) {
  std::vector<std::string> parts;
  parts.reserve(values.size());
  for (const auto& v : values) parts.push_back(v.dump());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// A finite number spelled completely by `text` (no spaces, no trailing characters).
std::optional<double> read_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (text.front() == '+') text.remove_prefix(1);  // "+1e-3" is a number too
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool in_closed(double v, double low, double high) { return v >= low && v <= high; }

Error value_error(const Dimension& d, std::string what) {
  return Error{std::move(what), {}, "give " + allowed_values(d), ErrorKind::bad_input};
}

std::string where_of(const std::map<std::string, std::string>& where, const std::string& name) {
  auto it = where.find(name);
  return it != where.end() ? it->second : "enqueue: " + name;
}

std::vector<std::string_view> dim_names(const search::Space& space) {
  std::vector<std::string_view> names;
  for (const auto& d : space.dims) names.push_back(d.name);
  return names;
}

}  // namespace

std::expected<std::vector<SetArg>, Errors> parse_set_args(const std::vector<std::string>& args) {
  std::vector<SetArg> out;
  Errors errors;
  std::set<std::string> seen;
  for (const auto& a : args) {
    const std::string where = "--set " + a;
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      errors.push_back({"expected NAME=VALUE, found no '='", where, "write it as --set batch_size=4096",
                        ErrorKind::bad_input});
      continue;
    }
    SetArg s{a.substr(0, eq), a.substr(eq + 1)};
    if (s.name.empty()) {
      errors.push_back({"the parameter name before '=' is empty", where, "write it as --set batch_size=4096",
                        ErrorKind::bad_input});
      continue;
    }
    if (!seen.insert(s.name).second) {
      errors.push_back({fmt::format("'{}' is set more than once", s.name), where, "give each parameter one --set",
                        ErrorKind::bad_input});
      continue;
    }
    out.push_back(std::move(s));
  }
  if (!errors.empty()) return std::unexpected(std::move(errors));
  return out;
}

std::string allowed_values(const Dimension& d) {
  switch (d.kind) {
    case K::choice:
      return fmt::format("one of {}", join_values(d.choices));
    case K::uniform:
      return fmt::format("a number in [{}, {}]", d.low, d.high);
    case K::log_uniform:
      return fmt::format("a number in [{}, {}], searched on a log scale", d.low, d.high);
    case K::int_range:
      if (d.int_step > 1) return fmt::format("an integer in [{}, {}] in steps of {} from {}", d.int_low, d.int_high, d.int_step, d.int_low);
      return fmt::format("an integer in [{}, {}]", d.int_low, d.int_high);
  }
  return "a value of the space";
}

namespace {

// check_dim_value; `shown` is how the value appears in messages (what the user typed).
Status check_value(const Dimension& d, const nlohmann::json& v, const std::string& shown) {
  switch (d.kind) {
    case K::choice:
      if (std::find(d.choices.begin(), d.choices.end(), v) == d.choices.end())
        return std::unexpected(value_error(d, fmt::format("{} is not one of {}'s choices", shown, d.name)));
      return {};
    case K::uniform:
    case K::log_uniform: {
      if (!v.is_number()) return std::unexpected(value_error(d, fmt::format("{} is not a number", shown)));
      const double x = v.get<double>();
      if (!std::isfinite(x) || !in_closed(x, d.low, d.high))
        return std::unexpected(value_error(d, fmt::format("{} is outside {}'s range [{}, {}]", shown, d.name, d.low, d.high)));
      return {};
    }
    case K::int_range: {
      if (!v.is_number_integer())
        return std::unexpected(value_error(d, fmt::format("{} is not an integer", shown)));
      const auto x = v.get<std::int64_t>();
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        return std::unexpected(value_error(d, fmt::format("{} is outside {}'s range [{}, {}]", shown, d.name, d.int_low, d.int_high)));
      if (x < d.int_low || x > d.int_high)
        return std::unexpected(value_error(d, fmt::format("{} is outside {}'s range [{}, {}]", shown, d.name, d.int_low, d.int_high)));
      const std::int64_t step = d.int_step > 0 ? d.int_step : 1;
      // In unsigned arithmetic: x - low may not fit an int64 when the range spans most of it.
      const auto offset = static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(d.int_low);
      if (offset % static_cast<std::uint64_t>(step) != 0) {
        const std::int64_t below = d.int_low + static_cast<std::int64_t>(offset / step * step);
        return std::unexpected(value_error(d, fmt::format("{} is not on {}'s steps of {} from {} (nearest: {} or {})", shown,
                                                          d.name, step, d.int_low, below,
                                                          below <= d.int_high - step ? below + step : below)));
      }
      return {};
    }
  }
  return {};
}

}  // namespace

Status check_dim_value(const Dimension& d, const nlohmann::json& v) { return check_value(d, v, v.dump()); }

Result<nlohmann::json> parse_dim_value(const Dimension& d, std::string_view text) {
  switch (d.kind) {
    case K::choice: {
      // The text itself names a string choice ("sqrt"); otherwise it is read as JSON, so
      // that 4096, 1e3, true and [512, 512] match the study's numbers, booleans and lists.
      for (const auto& c : d.choices)
        if (c.is_string() && c.get_ref<const std::string&>() == text) return c;
      auto parsed = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded())
        for (const auto& c : d.choices)
          if (c == parsed) return c;
      return std::unexpected(value_error(d, fmt::format("'{}' is not one of {}'s choices", text, d.name)));
    }
    case K::uniform:
    case K::log_uniform: {
      auto x = read_number(text);
      if (!x) return std::unexpected(value_error(d, fmt::format("'{}' is not a number", text)));
      nlohmann::json v = *x;
      if (auto st = check_value(d, v, std::string(text)); !st) return std::unexpected(st.error());
      return v;
    }
    case K::int_range: {
      std::string_view t = text;
      if (!t.empty() && t.front() == '+') t.remove_prefix(1);
      std::int64_t i = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), i);
      if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
        // 4e3 or 4096.0 are integers spelled as numbers; 40.5 and 1e30 are not.
        auto x = read_number(text);
        if (!x || std::trunc(*x) != *x || std::fabs(*x) > 9.0e18)
          return std::unexpected(value_error(d, fmt::format("'{}' is not an integer", text)));
        i = static_cast<std::int64_t>(*x);
      }
      nlohmann::json v = i;
      if (auto st = check_value(d, v, std::string(text)); !st) return std::unexpected(st.error());
      return v;
    }
  }
  return std::unexpected(value_error(d, "unknown kind of dimension"));
}

namespace {

// check_enqueued_params; `unreadable` names params given with a value that could not be
// read (already reported): conditions on them are not reported again.
Errors check_params(const search::Space& space, const search::Params& params,
                    const std::map<std::string, std::string>& where, const std::set<std::string>& unreadable) {
  Errors errors;
  if (!params.is_object() || params.empty()) {
    errors.push_back({"nothing to enqueue: no parameter is given", "enqueue",
                      "give at least one --set NAME=VALUE; the parameters not given are sampled",
                      ErrorKind::bad_input});
    return errors;
  }
  const auto names = dim_names(space);
  std::map<std::string, const Dimension*> dims;
  for (const auto& d : space.dims) dims[d.name] = &d;
  for (const auto& [name, value] : params.items()) {
    const std::string at = where_of(where, name);
    auto it = dims.find(name);
    if (it == dims.end()) {
      if (space.fixed.is_object() && space.fixed.contains(name))
        errors.push_back({fmt::format("'{}' is fixed at {} in this study, not searched", name, space.fixed[name].dump()),
                          at, fmt::format("drop it; enqueue sets the parameters of `space`: {}", fmt::join(names, ", ")),
                          ErrorKind::bad_input});
      else
        errors.push_back({fmt::format("unknown parameter '{}'", name), at,
                          suggest_fix(name, names, "the study's search parameters are"), ErrorKind::bad_input});
      continue;
    }
    const Dimension& d = *it->second;
    if (auto st = check_dim_value(d, value); !st) {
      Error e = st.error();
      e.where = at;
      errors.push_back(std::move(e));
      continue;
    }
    for (const auto& c : d.when) {
      if (dims.find(c.param) == dims.end()) continue;  // a fixed param: the study validator checked it
      if (unreadable.contains(c.param)) continue;
      const std::string need = fmt::format("{} exists only when {} is one of {}", d.name, c.param, join_values(c.values));
      if (!params.contains(c.param)) {
        errors.push_back({need + ", and that is left to the sampler", at,
                          fmt::format("also give --set {}={}", c.param,
                                      c.values.front().is_string() ? c.values.front().get<std::string>() : c.values.front().dump()),
                          ErrorKind::bad_input});
      } else if (std::find(c.values.begin(), c.values.end(), params[c.param]) == c.values.end()) {
        errors.push_back({fmt::format("{}, and it is set to {}", need, params[c.param].dump()), at,
                          fmt::format("set {} to one of {}, or drop {}", c.param, join_values(c.values), d.name),
                          ErrorKind::bad_input});
      }
    }
  }
  return errors;
}

}  // namespace

Errors check_enqueued_params(const search::Space& space, const search::Params& params,
                             const std::map<std::string, std::string>& where) {
  return check_params(space, params, where, {});
}

std::expected<search::Params, Errors> enqueue_params_from_args(const search::Space& space,
                                                               const std::vector<std::string>& args) {
  auto sets = parse_set_args(args);
  if (!sets) return std::unexpected(sets.error());
  search::Params params = search::Params::object();
  std::map<std::string, std::string> where;
  std::set<std::string> unreadable;
  Errors errors;
  for (const auto& s : *sets) {
    const std::string at = fmt::format("--set {}={}", s.name, s.value);
    where[s.name] = at;
    const Dimension* dim = nullptr;
    for (const auto& d : space.dims)
      if (d.name == s.name) dim = &d;
    if (!dim) {
      // Reported by check_enqueued_params (unknown or fixed); any JSON stands in for it.
      params[s.name] = nullptr;
      continue;
    }
    auto v = parse_dim_value(*dim, s.value);
    if (!v) {
      Error e = v.error();
      e.where = at;
      errors.push_back(std::move(e));
      unreadable.insert(s.name);
      continue;
    }
    params[s.name] = std::move(*v);
  }
  // Names and conditions, over the values that could be read (the others are reported).
  if (!params.empty() || errors.empty())
    for (auto& e : check_params(space, params, where, unreadable)) errors.push_back(std::move(e));
  if (!errors.empty()) return std::unexpected(std::move(errors));
  return params;
}

}  // namespace dlsweep::orch
