// tree.cpp — YAML (yaml-cpp) and JSON (nlohmann) text to one ordered tree.
//
// Invariants of the tree produced here: map keys are unique (duplicates are reported, not
// silently merged); integers are int64 where they fit (never "unsigned" for one format and
// "signed" for the other); YAML plain scalars are typed by the YAML 1.2 core schema and
// quoted/block/!!str scalars stay strings.
#include "study/tree.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "study/limits.hpp"

namespace dlsweep::orch {

std::string child_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return fmt::format("{}.{}", parent, key);
}

std::string item_path(std::string_view parent, std::size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

namespace {

bool all_of(std::string_view s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!pred(c)) return false;
  return true;
}

// The number a decimal text stands for, or nullopt (the text stays a string) when it is
// beyond a double's range ("1e999"): JSON cannot carry infinity and std::stod would throw.
// strtod reads "+1.5", ".5" and "-.5" alike.
std::optional<Tree> finite_number(std::string_view s) {
  const std::string text(s);
  const double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return Tree(v);
}

// YAML 1.2 core schema, integer: [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+.
std::optional<Tree> resolve_int(std::string_view s) {
  int base = 10;
  std::string_view digits = s;
  bool negative = false;
  if (s.starts_with("0o")) {
    base = 8, digits = s.substr(2);
    if (!all_of(digits, [](int c) { return int(c >= '0' && c <= '7'); })) return std::nullopt;
  } else if (s.starts_with("0x")) {
    base = 16, digits = s.substr(2);
    if (!all_of(digits, isxdigit)) return std::nullopt;
  } else {
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (!all_of(digits, isdigit)) return std::nullopt;
  }
  std::uint64_t u = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
  if (ec == std::errc() && p == digits.data() + digits.size()) {
    constexpr auto max = std::uint64_t(std::numeric_limits<std::int64_t>::max());
    if (!negative && u <= max) return Tree(std::int64_t(u));
    if (negative && u <= max + 1) return Tree(u == max + 1 ? std::numeric_limits<std::int64_t>::min()
                                                            : -std::int64_t(u));
    if (!negative) return Tree(u);
  }
  // Too large for 64 bits: a decimal becomes a float, as JSON parsers do; hex/octal a string.
  if (base != 10) return std::nullopt;
  return finite_number(s);
}

// YAML 1.2 core schema, float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
// (.inf/.nan are left as strings: a study has no use for them and JSON cannot carry them).
std::optional<Tree> resolve_float(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return std::nullopt;
  } else {
    if (digits() == 0) return std::nullopt;
    if (i < s.size() && s[i] == '.') ++i, digits();
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return finite_number(s);
}

Tree resolve_plain_scalar(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (auto v = resolve_int(s)) return *v;
  if (auto v = resolve_float(s)) return *v;
  return s;
}

struct YamlConverter {
  const std::string& file;
  std::vector<ValidationError>& errors;
  std::map<std::string, int>& lines;
  std::map<std::string, std::string>& raw_text;
  bool too_deep = false;  // reported once

  // Every json dump of a string (messages, the stored spec) throws on invalid UTF-8.
  bool utf8(const YAML::Node& scalar, const std::string& path) {
    if (invalid_utf8_at(scalar.Scalar()) == std::string_view::npos) return true;
    errors.push_back({file, path, "text that is not valid UTF-8 (the file's encoding was misread)",
                      "save the study file as UTF-8 text", scalar.Mark().line + 1});
    return false;
  }

  // check_yaml_limits() has bounded depth and size before this runs; the depth guard
  // stays as a second line of defence, since this recursion is the one that would overflow.
  Tree convert(const YAML::Node& node, const std::string& path, int depth = 0) {
    if (depth > kMaxStudyDepth) {
      if (!too_deep) errors.push_back(too_deep_error(file, node.Mark().line + 1, true));
      too_deep = true;
      return nullptr;
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined: return nullptr;
      case YAML::NodeType::Scalar: {
        if (!utf8(node, path)) return nullptr;
        const std::string& tag = node.Tag();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") return node.Scalar();
        Tree v = resolve_plain_scalar(node.Scalar());
        if (!v.is_string()) raw_text.emplace(path, node.Scalar());
        return v;
      }
      case YAML::NodeType::Sequence: {
        Tree list = Tree::array();
        std::size_t i = 0;
        for (const auto& item : node) {
          std::string p = item_path(path, i++);
          lines.emplace(p, item.Mark().line + 1);
          list.push_back(convert(item, p, depth + 1));
        }
        return list;
      }
      case YAML::NodeType::Map: {
        Tree map = Tree::object();
        for (auto it = node.begin(); it != node.end(); ++it) {
          // Copies, not references: the iterator's -> yields a temporary pair (Nodes are handles).
          const YAML::Node key = it->first;
          const YAML::Node value = it->second;
          int line = key.Mark().line + 1;
          if (!key.IsScalar()) {
            errors.push_back({file, path, "a key must be a plain word", "write `name: value`", line});
            continue;
          }
          if (!utf8(key, path)) continue;
          std::string p = child_path(path, key.Scalar());
          if (map.contains(key.Scalar())) {
            errors.push_back({file, p,
                              fmt::format("duplicate key '{}' (first set on line {})", key.Scalar(),
                                          lines[p]),
                              "keep only one of them", line});
            continue;
          }
          lines.emplace(p, line);
          map[key.Scalar()] = convert(value, p, depth + 1);
        }
        return map;
      }
    }
    return nullptr;
  }
};

// Unsigned integers (nlohmann's type for any non-negative JSON integer) become signed
// when they fit, matching what the YAML side produces.
void normalise_integers(Tree& v) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u <= std::uint64_t(std::numeric_limits<std::int64_t>::max())) v = std::int64_t(u);
  } else if (v.is_structured()) {
    for (auto& child : v) normalise_integers(child);
  }
}

bool blank(const std::string& text) {
  for (unsigned char c : text)
    if (!std::isspace(c)) return false;
  return true;
}

ValidationError empty_file(const std::string& file) {
  return {file, "", "the study file is empty",
          "start from an example in examples/ (name, trial, objective, space)"};
}

}  // namespace

std::optional<StudyTree> parse_yaml_tree(const std::string& text, const std::string& file,
                                         std::vector<ValidationError>& errors) {
  auto limit = check_study_size(text.size(), file);
  if (!limit) limit = check_study_utf8(text, file);
  if (!limit) limit = check_yaml_limits(text, file);
  if (limit) {
    errors.push_back(std::move(*limit));
    return std::nullopt;
  }
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    errors.push_back({file, "",
                      fmt::format("YAML syntax error at line {}, column {}: {}", e.mark.line + 1,
                                  e.mark.column + 1, e.msg),
                      "check the indentation and brackets there (YAML needs spaces, not tabs, "
                      "and a space after ':')"});
    return std::nullopt;
  }
  if (docs.empty() || (docs.size() == 1 && docs[0].IsNull())) {
    errors.push_back(empty_file(file));
    return std::nullopt;
  }
  if (docs.size() > 1) {
    errors.push_back({file, "", fmt::format("the file holds {} YAML documents", docs.size()),
                      "keep one study per file (remove the '---' separators)"});
    return std::nullopt;
  }
  StudyTree tree;
  std::size_t before = errors.size();
  YamlConverter conv{file, errors, tree.lines, tree.raw_text};
  tree.root = conv.convert(docs[0], "");
  if (errors.size() != before) return std::nullopt;
  return tree;
}

std::optional<StudyTree> parse_json_tree(const std::string& text, const std::string& file,
                                         std::vector<ValidationError>& errors) {
  auto limit = check_study_size(text.size(), file);
  if (!limit) limit = check_study_utf8(text, file);
  if (limit) {
    errors.push_back(std::move(*limit));
    return std::nullopt;
  }
  if (blank(text)) {
    errors.push_back(empty_file(file));
    return std::nullopt;
  }
  JsonLimitCounter limits(file);
  // nlohmann keeps the last of duplicate keys silently; the callback sees every key and
  // reports repeats instead. `keys` holds the keys seen per open object, `path` their names.
  std::vector<std::set<std::string>> keys;
  std::vector<std::string> path;
  std::vector<ValidationError> duplicates;
  auto callback = [&](int depth, Tree::parse_event_t event, Tree& parsed) {
    using E = Tree::parse_event_t;
    if (event != E::object_end && event != E::array_end)
      limits.on_event(depth, event == E::object_start || event == E::array_start);
    if (event == E::object_start) {
      keys.emplace_back();
      path.emplace_back();
    } else if (event == E::object_end) {
      keys.pop_back();
      path.pop_back();
    } else if (event == E::key && !keys.empty()) {
      auto key = parsed.get<std::string>();
      path.back() = key;
      if (!keys.back().insert(key).second) {
        std::string p;
        for (const auto& k : path) p = child_path(p, k);
        duplicates.push_back({file, p, fmt::format("duplicate key '{}'", key), "keep only one of them"});
      }
    }
    return true;
  };
  StudyTree tree;
  try {
    tree.root = Tree::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const StudyLimitExceeded& stop) {
    errors.push_back(stop.error);
    return std::nullopt;
  } catch (const Tree::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    std::string what = e.what();
    if (auto at = what.find("at line"); at != std::string::npos) what = what.substr(at);
    errors.push_back({file, "", "JSON syntax error " + what,
                      "check the commas, quotes and brackets there (JSON allows no trailing commas)"});
    return std::nullopt;
  } catch (const Tree::out_of_range& e) {
    // A number beyond a double: "[json.exception.out_of_range.406] number overflow parsing '1e999'".
    std::string what = e.what();
    if (auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    errors.push_back({file, "", "JSON " + what, "write numbers between -1.7e308 and 1.7e308"});
    return std::nullopt;
  }
  if (!duplicates.empty()) {
    errors.insert(errors.end(), duplicates.begin(), duplicates.end());
    return std::nullopt;
  }
  normalise_integers(tree.root);
  return tree;
}

nlohmann::json to_plain_json(const Tree& value) {
  switch (value.type()) {
    case Tree::value_t::object: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, v] : value.items()) out[k] = to_plain_json(v);
      return out;
    }
    case Tree::value_t::array: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& v : value) out.push_back(to_plain_json(v));
      return out;
    }
    case Tree::value_t::number_unsigned: {
      auto u = value.get<std::uint64_t>();
      if (u <= std::uint64_t(std::numeric_limits<std::int64_t>::max())) return std::int64_t(u);
      return u;
    }
    case Tree::value_t::number_integer: return value.get<std::int64_t>();
    case Tree::value_t::number_float: return value.get<double>();
    case Tree::value_t::string: return value.get<std::string>();
    case Tree::value_t::boolean: return value.get<bool>();
    default: return nullptr;
  }
}

std::string describe_value(const Tree& value) {
  auto shown = [&] {
    std::string s = value.dump();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return s;
  };
  switch (value.type()) {
    case Tree::value_t::object: return "a map";
    case Tree::value_t::array:
      return value.size() == 1 ? "a list of 1 value" : fmt::format("a list of {} values", value.size());
    case Tree::value_t::null: return "no value (null)";
    case Tree::value_t::string: return fmt::format("a string ({})", shown());
    case Tree::value_t::boolean: return fmt::format("a boolean ({})", shown());
    case Tree::value_t::number_float: return fmt::format("a number ({})", shown());
    default: return fmt::format("an integer ({})", shown());
  }
}

}  // namespace dlsweep::orch
