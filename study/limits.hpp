// limits.hpp — the bounds a study file must stay within, so that no input can hang,
// exhaust memory or overflow the stack of `dlsweep submit`.
//
// A study is a few dozen settings; these limits are orders of magnitude above any real one:
//   size   at most kMaxStudyBytes (1 MiB) of text;
//   depth  maps/lists nested at most kMaxStudyDepth (64) deep, counted after YAML aliases
//          are expanded (the tree converter and validation recurse once per level);
//   text   valid UTF-8;
//   nodes  at most kMaxStudyNodes (100,000) keys and values in all, counted after YAML
//          aliases are expanded (a "billion laughs" file of 1 KiB expands to 10^9 nodes).
// Both checks run on the parser's event stream, before any tree is built and before any
// recursive code sees the input: yaml-cpp's own guard stops only at 2,000 levels and its
// node graph shares aliased nodes, which our converter would copy out one by one. Every
// violation is a ValidationError naming the file, what is wrong and the fix.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "study/spec.hpp"

namespace dlsweep::orch {

inline constexpr std::size_t kMaxStudyBytes = std::size_t(1) << 20;
inline constexpr int kMaxStudyDepth = 64;
inline constexpr std::size_t kMaxStudyNodes = 100'000;

/// Refuses a file over kMaxStudyBytes (`bytes` is its size).
std::optional<ValidationError> check_study_size(std::size_t bytes, const std::string& file);

/// Refuses text that is not valid UTF-8 (yaml-cpp passes such bytes through, and every
/// later json dump of the value — messages, the spec stored in the database — would throw).
std::optional<ValidationError> check_study_utf8(std::string_view text, const std::string& file);
/// Offset of the first byte that breaks UTF-8 in `text`, or npos. The YAML converter also
/// checks each scalar with it: yaml-cpp guesses UTF-16/32 from NUL bytes and transcodes.
std::size_t invalid_utf8_at(std::string_view text);

/// Walks the YAML event stream of `text` (every document; no node graph is built) and
/// returns the first limit exceeded: depth or node count after alias expansion, or an alias
/// used inside the node it names (a cycle). Syntax errors give nullopt: the parser that
/// builds the tree reports them with their line and column.
std::optional<ValidationError> check_yaml_limits(const std::string& text, const std::string& file);

/// Counts what nlohmann's parser reports, for use inside its parser callback: call on
/// every event with the callback's `depth`; throws StudyLimitExceeded past a limit, which
/// stops the parser at once (nlohmann's parser is iterative, so depth alone never
/// overflows it; the bound protects everything that later walks the tree).
class JsonLimitCounter {
 public:
  explicit JsonLimitCounter(std::string file) : file_(std::move(file)) {}
  /// `opens`: the event starts an object or array (it then sits at depth + 1).
  void on_event(int depth, bool opens);

 private:
  std::string file_;
  std::size_t nodes_ = 0;
};

/// Thrown only by JsonLimitCounter and caught by the JSON reader, never beyond it.
struct StudyLimitExceeded {
  ValidationError error;
};

/// The errors themselves (shared by both formats; `line` 0 when unknown).
ValidationError too_deep_error(const std::string& file, int line, bool yaml);
ValidationError too_many_nodes_error(const std::string& file, int line, bool via_alias);

}  // namespace dlsweep::orch
