// tree.hpp — a study file's text (YAML or JSON) turned into one generic tree, so that
// validation is written once and a study means the same in either format.
//
// The tree is an nlohmann::ordered_json: maps keep file order (the order of `space`
// dimensions is the grid order). YAML scalars are typed as the YAML 1.2 core schema does
// (ints, floats, true/false, null, else string; quoted scalars are always strings), so
// `batch_size: 128` in YAML and `"batch_size": 128` in JSON give the same tree.
// Line numbers (YAML only; JSON reports none) are kept beside the tree, keyed by key path.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/spec.hpp"

namespace dlsweep::orch {

using Tree = nlohmann::ordered_json;

struct StudyTree {
  Tree root;
  std::map<std::string, int> lines;  ///< key path -> 1-based line of its key/item (YAML)
  /// key path -> the text as written, for YAML plain scalars typed as non-strings
  /// (`010`, `1e3`, `true`): environment variables take the text, not the number.
  std::map<std::string, std::string> raw_text;
};

/// Parses YAML text. Syntax errors, several documents and duplicate keys are appended to
/// `errors` (with `file` set); returns nullopt when no tree could be built.
std::optional<StudyTree> parse_yaml_tree(const std::string& text, const std::string& file,
                                         std::vector<ValidationError>& errors);
/// Parses JSON text, likewise (duplicate keys are errors, // comments are allowed).
std::optional<StudyTree> parse_json_tree(const std::string& text, const std::string& file,
                                         std::vector<ValidationError>& errors);

/// Key-path building: child_path("space", "lr") == "space.lr"; child_path("", "name") == "name".
std::string child_path(std::string_view parent, std::string_view key);
/// item_path("space.lr.uniform", 1) == "space.lr.uniform[1]".
std::string item_path(std::string_view parent, std::size_t index);

/// Converts a tree value to the plain (key-sorted) json the search library uses; unsigned
/// integers that fit become signed so YAML and JSON values compare and dump alike.
nlohmann::json to_plain_json(const Tree& value);

/// A short description of a value for messages: `a string ("ten")`, `a list`, `a map`, `null`.
std::string describe_value(const Tree& value);

}  // namespace dlsweep::orch
