// reader.hpp — typed, path-aware access to a study tree that collects every problem.
//
// Validation never stops at the first problem: each accessor records an error (file, key
// path, what, fix, line) and returns nullopt/false, and the caller carries on with the
// next key. A key is reported once: an accessor that fails does not also make later checks
// on the same value fire (callers skip a value whose accessor failed).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "study/spec.hpp"
#include "study/tree.hpp"

namespace dlsweep::orch {

/// A value in the tree and where it sits. `node` is null when the key is absent, so that a
/// missing key still has a path to report.
struct Field {
  const Tree* node = nullptr;
  std::string path;
  explicit operator bool() const { return node != nullptr; }
  const Tree& operator*() const { return *node; }
  const Tree* operator->() const { return node; }
  /// The last component of the path ("mode" for "objective.mode").
  std::string key() const;
};

class StudyReader {
 public:
  StudyReader(std::string file, const StudyTree& tree);

  /// Records a problem at `path`.
  void error(const std::string& path, std::string what, std::string fix);
  std::vector<ValidationError> take_errors() { return std::move(errors_); }
  std::size_t error_count() const { return errors_.size(); }
  const std::string& file() const { return file_; }

  /// `map.key` (absent Field if `map` is absent or not a map).
  static Field field(const Field& map, std::string_view key);
  /// `list[index]`.
  static Field item(const Field& list, std::size_t index);

  /// True if present, else records "missing required key" with `fix`.
  bool require(const Field& f, std::string_view fix);
  /// True if `f` is a map; records unknown keys (with did-you-mean against `allowed`).
  /// A null value counts as an empty map when `null_is_empty`.
  bool map(const Field& f, std::span<const std::string_view> allowed, bool null_is_empty = false);
  /// True if `f` is a map (keys not checked).
  bool any_map(const Field& f, bool null_is_empty = false);
  bool list(const Field& f, std::string_view fix);

  std::optional<std::string> string(const Field& f);
  /// An integer in [min, max].
  std::optional<std::int64_t> integer(const Field& f, std::int64_t min, std::int64_t max);
  /// A finite number >= min (> min when `min_exclusive`).
  std::optional<double> number(const Field& f, double min, bool min_exclusive);
  std::optional<bool> boolean(const Field& f);
  /// A string that must be one of `allowed` (did-you-mean otherwise).
  std::optional<std::string> word(const Field& f, std::span<const std::string_view> allowed);

  /// The scalar at `f` as text: as written in YAML, else strings as is, others dumped.
  std::string scalar_text(const Field& f) const;

  /// Records "expected <expected>, got <what it is>".
  void wrong_type(const Field& f, std::string_view expected, std::string fix);

  /// The 1-based line of `path` in the file (a missing key: its nearest enclosing key's);
  /// 0 when unknown (JSON). What errors found after validation (search.warm_start's
  /// databases, read at submit) keep to name the line.
  int line_of(std::string path) const;

 private:
  std::string file_;
  const StudyTree& tree_;
  std::vector<ValidationError> errors_;
};

}  // namespace dlsweep::orch
