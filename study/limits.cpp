// limits.cpp — size, depth and node-count limits of study files; see study/limits.hpp.
//
// The YAML check is an EventHandler: it keeps one frame per open map/list and, per anchor,
// the size and height of the node it names, so an alias counts as the whole subtree it
// stands for without anything being copied. It stops (by throwing, which unwinds
// yaml-cpp's parser cleanly) at the first node past a limit, so its work is bounded by
// the limits, not by what the file would expand to.
#include "study/limits.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace dlsweep::orch {

ValidationError too_deep_error(const std::string& file, int line, bool yaml) {
  return {file, "",
          fmt::format("maps and lists are nested more than {} levels deep{}", kMaxStudyDepth,
                      yaml ? " (counting what YAML aliases stand for)" : ""),
          "a study needs only a few levels (section, parameter, values): look for unclosed brackets",
          line};
}

ValidationError too_many_nodes_error(const std::string& file, int line, bool via_alias) {
  return {file, "",
          fmt::format("the study holds more than {} keys and values{}", kMaxStudyNodes,
                      via_alias ? " once its YAML aliases (*name) are expanded" : ""),
          via_alias ? "a study needs a few dozen values: write them out instead of nesting aliases of "
                      "aliases"
                    : "a study needs a few dozen values: check that this is the study file",
          line};
}

std::optional<ValidationError> check_study_size(std::size_t bytes, const std::string& file) {
  if (bytes <= kMaxStudyBytes) return std::nullopt;
  return ValidationError{file, "",
                         fmt::format("the file is {} bytes; a study file may hold at most {} bytes (1 MiB)",
                                     bytes, kMaxStudyBytes),
                         "a study holds settings, not data: check that this is the study file, and "
                         "keep data in the trial's own files"};
}

std::size_t invalid_utf8_at(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Sequence length and the allowed range of the second byte (no overlongs, no
    // surrogates, nothing above U+10FFFF), as in RFC 3629's table.
    std::size_t n = 1;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) n = 1;
    else if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else n = 0;
    bool ok = n > 0 && i + n <= text.size();
    for (std::size_t k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (!ok) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::optional<ValidationError> check_study_utf8(std::string_view text, const std::string& file) {
  const std::size_t at = invalid_utf8_at(text);
  if (at == std::string_view::npos) return std::nullopt;
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  return ValidationError{file, "",
                         fmt::format("the file is not valid UTF-8 (byte 0x{:02X} at offset {})",
                                     static_cast<unsigned char>(text[at]), at),
                         "save the study file as UTF-8 text", line};
}

void JsonLimitCounter::on_event(int depth, bool opens) {
  if (opens && depth + 1 > kMaxStudyDepth) throw StudyLimitExceeded{too_deep_error(file_, 0, false)};
  if (++nodes_ > kMaxStudyNodes) throw StudyLimitExceeded{too_many_nodes_error(file_, 0, false)};
}

namespace {

struct Stop {
  ValidationError error;
};

class YamlLimitHandler : public YAML::EventHandler {
 public:
  explicit YamlLimitHandler(const std::string& file) : file_(file) {}

  void OnDocumentStart(const YAML::Mark&) override {
    anchors_.clear();
    open_.clear();
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end() || !it->second.complete)
      throw Stop{{file_, "",
                  "an alias (*name) is used inside the very value its anchor (&name) names, which "
                  "makes the value contain itself",
                  "write the value out, or anchor a value that does not contain the alias",
                  line(mark)}};
    add(mark, it->second.nodes, it->second.height, true);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    YAML::anchor_t anchor;
    std::size_t nodes = 1;  ///< this collection and everything in it, aliases expanded
    int height = 1;         ///< levels of maps/lists, itself included
  };
  struct Anchored {
    std::size_t nodes = 1;
    int height = 0;
    bool complete = false;  ///< false while the anchored collection is still open
  };

  static int line(const YAML::Mark& mark) { return mark.line + 1; }

  // Counts `nodes` more nodes of `height` levels at the current position.
  void add(const YAML::Mark& mark, std::size_t nodes, int height, bool via_alias) {
    total_ += nodes;
    if (total_ > kMaxStudyNodes) throw Stop{too_many_nodes_error(file_, line(mark), via_alias)};
    if (static_cast<int>(open_.size()) + height > kMaxStudyDepth) throw Stop{too_deep_error(file_, line(mark), true)};
    if (!open_.empty()) {
      open_.back().nodes += nodes;
      open_.back().height = std::max(open_.back().height, height + 1);
    }
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    add(mark, 1, 0, false);
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {1, 0, true};
  }

  void open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (++total_ > kMaxStudyNodes) throw Stop{too_many_nodes_error(file_, line(mark), false)};
    if (static_cast<int>(open_.size()) + 1 > kMaxStudyDepth) throw Stop{too_deep_error(file_, line(mark), true)};
    if (anchor != YAML::NullAnchor) anchors_[anchor] = {};  // incomplete until closed
    open_.push_back({anchor});
  }

  void close() {
    Frame done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) anchors_[done.anchor] = {done.nodes, done.height, true};
    if (!open_.empty()) {
      // The collection itself was counted in total_ when it opened; pass its size up only.
      open_.back().nodes += done.nodes;
      open_.back().height = std::max(open_.back().height, done.height + 1);
    }
  }

  const std::string& file_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  std::vector<Frame> open_;
  std::size_t total_ = 0;  ///< nodes in all documents so far, aliases expanded
};

}  // namespace

std::optional<ValidationError> check_yaml_limits(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YamlLimitHandler handler(file);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(handler)) {
    }
  } catch (const Stop& stop) {
    return stop.error;
  } catch (const YAML::Exception&) {
    return std::nullopt;  // a syntax error: reported by the tree builder, with line and column
  }
  return std::nullopt;
}

}  // namespace dlsweep::orch
