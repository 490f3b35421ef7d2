// reader.cpp — the error-collecting accessors of StudyReader.
#include "study/reader.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "study/did_you_mean.hpp"

namespace dlsweep::orch {

std::string Field::key() const {
  auto cut = path.find_last_of(".[");
  if (cut == std::string::npos) return path;
  std::string k = path.substr(cut + 1);
  if (!k.empty() && k.back() == ']') k.pop_back();
  return k;
}

StudyReader::StudyReader(std::string file, const StudyTree& tree) : file_(std::move(file)), tree_(tree) {}

std::string StudyReader::scalar_text(const Field& f) const {
  if (f->is_string()) return f->get<std::string>();
  if (auto it = tree_.raw_text.find(f.path); it != tree_.raw_text.end()) return it->second;
  return f->dump();
}

int StudyReader::line_of(std::string path) const {
  // A missing key has no line of its own: report the line of the nearest enclosing key.
  while (!path.empty()) {
    if (auto it = tree_.lines.find(path); it != tree_.lines.end()) return it->second;
    auto cut = path.find_last_of(".[");
    path.resize(cut == std::string::npos ? 0 : cut);
  }
  return 0;
}

void StudyReader::error(const std::string& path, std::string what, std::string fix) {
  errors_.push_back({file_, path, std::move(what), std::move(fix), line_of(path)});
}

Field StudyReader::field(const Field& map, std::string_view key) {
  Field f{nullptr, child_path(map.path, key)};
  if (map && map->is_object())
    if (auto it = map->find(std::string(key)); it != map->end()) f.node = &*it;
  return f;
}

Field StudyReader::item(const Field& list, std::size_t index) {
  Field f{nullptr, item_path(list.path, index)};
  if (list && list->is_array() && index < list->size()) f.node = &(*list)[index];
  return f;
}

bool StudyReader::require(const Field& f, std::string_view fix) {
  if (f) return true;
  error(f.path, fmt::format("missing required key '{}'", f.key()), std::string(fix));
  return false;
}

void StudyReader::wrong_type(const Field& f, std::string_view expected, std::string fix) {
  error(f.path, fmt::format("expected {}, got {}", expected, describe_value(*f)), std::move(fix));
}

bool StudyReader::any_map(const Field& f, bool null_is_empty) {
  if (f->is_object() || (null_is_empty && f->is_null())) return true;
  wrong_type(f, "a map of keys", fmt::format("write `{}:` followed by indented `key: value` lines", f.key()));
  return false;
}

bool StudyReader::map(const Field& f, std::span<const std::string_view> allowed, bool null_is_empty) {
  if (!any_map(f, null_is_empty)) return false;
  if (f->is_null()) return true;
  for (const auto& [key, value] : f->items()) {
    bool known = false;
    for (auto a : allowed) known = known || a == key;
    if (!known)
      error(child_path(f.path, key), fmt::format("unknown key '{}'", key),
            suggest_fix(key, allowed, "allowed keys"));
  }
  return true;
}

bool StudyReader::list(const Field& f, std::string_view fix) {
  if (f->is_array()) return true;
  wrong_type(f, "a list", std::string(fix));
  return false;
}

std::optional<std::string> StudyReader::string(const Field& f) {
  if (f->is_string()) return f->get<std::string>();
  wrong_type(f, "a string", "put the value in quotes");
  return std::nullopt;
}

std::optional<std::int64_t> StudyReader::integer(const Field& f, std::int64_t min, std::int64_t max) {
  if (!f->is_number_integer()) {
    wrong_type(f, "an integer", "write a whole number without quotes");
    return std::nullopt;
  }
  if (f->is_number_unsigned() && f->get<std::uint64_t>() > std::uint64_t(max)) {
    error(f.path, fmt::format("{} is too large", f->dump()), fmt::format("use at most {}", max));
    return std::nullopt;
  }
  auto v = f->get<std::int64_t>();
  if (v < min) {
    error(f.path, fmt::format("must be at least {}, got {}", min, v),
          fmt::format("use an integer >= {}", min));
    return std::nullopt;
  }
  if (v > max) {
    error(f.path, fmt::format("must be at most {}, got {}", max, v),
          fmt::format("use an integer <= {}", max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> StudyReader::number(const Field& f, double min, bool min_exclusive) {
  if (!f->is_number()) {
    wrong_type(f, "a number", "write a number without quotes (e.g. 0.5 or 1e-3)");
    return std::nullopt;
  }
  double v = f->get<double>();
  if (!std::isfinite(v) || (min_exclusive ? v <= min : v < min)) {
    error(f.path, fmt::format("must be {} {:g}, got {}", min_exclusive ? ">" : ">=", min, f->dump()),
          fmt::format("use a number {} {:g}", min_exclusive ? ">" : ">=", min));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> StudyReader::boolean(const Field& f) {
  if (f->is_boolean()) return f->get<bool>();
  wrong_type(f, "true or false", "write true or false without quotes");
  return std::nullopt;
}

std::optional<std::string> StudyReader::word(const Field& f, std::span<const std::string_view> allowed) {
  auto s = string(f);
  if (!s) return std::nullopt;
  for (auto a : allowed)
    if (a == *s) return s;
  error(f.path, fmt::format("'{}' is not a valid {}", *s, f.key()), suggest_fix(*s, allowed, "use one of"));
  return std::nullopt;
}

}  // namespace dlsweep::orch
