// options.cpp — OptionReader: typed reads with ranges, one error per bad key.
#include "search/options.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dlsweep::search {

OptionReader::OptionReader(const nlohmann::json& options, std::string owner)
    : options_(options.is_object() ? options : nlohmann::json::object()), owner_(std::move(owner)) {
  if (!options.is_null() && !options.is_object())
    error("", fmt::format("{} options must be a map, got {}", owner_, options.dump()), "write key: value pairs");
}

void OptionReader::only(std::initializer_list<std::string_view> known) {
  for (const auto& [key, _] : options_.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || k == key;
    if (ok) continue;
    std::string list;
    for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    error(key, fmt::format("unknown option '{}' for {}", key, owner_), fmt::format("{} takes: {}", owner_, list));
  }
}

const nlohmann::json* OptionReader::find(const std::string& key) const {
  auto it = options_.find(key);
  return it == options_.end() ? nullptr : &*it;
}

bool OptionReader::has(const std::string& key) const { return find(key) != nullptr; }

double OptionReader::number(const std::string& key, double fallback, double low, double high, bool low_open) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_number()) {
    error(key, fmt::format("expected a number, got {}", v->dump()), fmt::format("write {}: <number>", key));
    return fallback;
  }
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < low || (low_open && x == low) || x > high) {
    error(key, fmt::format("{} is out of range", v->dump()),
          fmt::format("give a value in {}{:g}, {:g}]", low_open ? "(" : "[", low, high));
    return fallback;
  }
  return x;
}

std::optional<double> OptionReader::optional_number(const std::string& key) {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) {
    error(key, fmt::format("expected a finite number, got {}", v->dump()), fmt::format("write {}: <number>", key));
    return std::nullopt;
  }
  return v->get<double>();
}

std::int64_t OptionReader::integer(const std::string& key, std::int64_t fallback, std::int64_t low, std::int64_t high) {
  const auto* v = find(key);
  if (!v) return fallback;
  bool whole = v->is_number_integer() || (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
                                          std::abs(v->get<double>()) < 9e15);
  if (!whole) {
    error(key, fmt::format("expected a whole number, got {}", v->dump()), fmt::format("write {}: <integer>", key));
    return fallback;
  }
  const auto x = v->is_number_integer() ? v->get<std::int64_t>() : static_cast<std::int64_t>(v->get<double>());
  if (x < low || x > high) {
    error(key, fmt::format("{} is out of range", x),
          x < low ? fmt::format("give a whole number >= {}", low) : fmt::format("give a whole number <= {}", high));
    return fallback;
  }
  return x;
}

bool OptionReader::boolean(const std::string& key, bool fallback) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) {
    error(key, fmt::format("expected true or false, got {}", v->dump()), fmt::format("write {}: true", key));
    return fallback;
  }
  return v->get<bool>();
}

std::vector<std::string> OptionReader::strings(const std::string& key) {
  std::vector<std::string> out;
  const auto* v = find(key);
  if (!v) return out;
  if (!v->is_array()) {
    error(key, fmt::format("expected a list of names, got {}", v->dump()), fmt::format("write {}: [batch_size]", key));
    return out;
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& item = (*v)[i];
    if (!item.is_string() || item.get<std::string>().empty())
      error(fmt::format("{}[{}]", key, i), fmt::format("expected a parameter name, got {}", item.dump()),
            "name a parameter of the study, e.g. batch_size");
    else
      out.push_back(item.get<std::string>());
  }
  return out;
}

std::string OptionReader::word(const std::string& key, std::string fallback,
                               std::initializer_list<std::string_view> allowed) {
  const auto* v = find(key);
  if (!v) return fallback;
  if (v->is_string())
    for (auto a : allowed)
      if (v->get<std::string>() == a) return std::string(a);
  error(key, fmt::format("expected one of {}, got {}", fmt::join(allowed, ", "), v->dump()),
        fmt::format("write {}: {}", key, *allowed.begin()));
  return fallback;
}

void OptionReader::error(std::string key, std::string what, std::string fix) {
  errors_.push_back({std::move(key), std::move(what), std::move(fix)});
}

}  // namespace dlsweep::search
