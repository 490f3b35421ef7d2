// Study files built to hang or crash the reader (issue 8): each must come back quickly as
// an error that names the file, says what is wrong and carries a fix — never a crash, an
// exception or a tree of a billion nodes. The limits are in study/limits.hpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "study/limits.hpp"
#include "study/spec.hpp"
#include "study/tree.hpp"

using dlsweep::orch::load_study;
using dlsweep::orch::parse_study;
using dlsweep::orch::StudyFormat;
using dlsweep::orch::StudyResult;

namespace {

constexpr const char* kHead = "name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max}\n";

// The single error of a refused file; checks that it names the file and has a fix.
dlsweep::orch::ValidationError only_error(const StudyResult& r, const std::string& file) {
  REQUIRE_FALSE(r.has_value());
  std::string all;
  for (const auto& e : r.error()) all += e.message() + "\n";
  INFO(all);
  REQUIRE(r.error().size() == 1);
  const auto& e = r.error()[0];
  CHECK(e.file == file);
  CHECK_FALSE(e.what.empty());
  CHECK_FALSE(e.fix.empty());
  CHECK(e.message().starts_with(file));
  return e;
}

// "a: &a [x,...]", "b: &b [*a,...]", ... levels deep, `width` items per level.
std::string billion_laughs(int levels, int width) {
  std::string text = "a0: &a0 [";
  for (int i = 0; i < width; ++i) text += i ? ",x" : "x";
  text += "]\n";
  for (int l = 1; l < levels; ++l) {
    const std::string n = std::to_string(l);
    text += "a";
    text += n;
    text += ": &a";
    text += n;
    text += " [";
    for (int i = 0; i < width; ++i) {
      text += i ? ",*a" : "*a";
      text += std::to_string(l - 1);
    }
    text += "]\n";
  }
  return text;
}

}  // namespace

TEST_CASE("a YAML billion laughs is refused by its expanded size") {
  auto e = only_error(parse_study(billion_laughs(9, 10), StudyFormat::yaml, "laughs.yaml"), "laughs.yaml");
  CHECK(e.what.find("100000 keys and values") != std::string::npos);
  CHECK(e.what.find("aliases") != std::string::npos);
  CHECK(e.line > 0);
}

TEST_CASE("a few aliases within the limits still work") {
  auto r = parse_study(std::string(kHead) + "space:\n  batch_size: &b [64, 128]\nfixed: {}\nx: *b\n",
                       StudyFormat::yaml, "ok.yaml");
  REQUIRE_FALSE(r.has_value());  // `x` is an unknown key, but the aliases themselves were read
  CHECK(r.error()[0].key_path == "x");
}

TEST_CASE("an alias inside the value its anchor names is refused, not followed forever") {
  auto e = only_error(parse_study(std::string(kHead) + "fixed: &f {a: *f}\n", StudyFormat::yaml, "cycle.yaml"),
                      "cycle.yaml");
  CHECK(e.what.find("contain itself") != std::string::npos);
}

TEST_CASE("JSON nested 100,000 brackets deep is refused without recursion") {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  auto e = only_error(parse_study(deep, StudyFormat::json, "deep.json"), "deep.json");
  CHECK(e.what.find("nested more than 64 levels") != std::string::npos);
  // Objects, too, and unclosed ones.
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += "{\"a\":";
  only_error(parse_study(objects, StudyFormat::json, "deep2.json"), "deep2.json");
}

TEST_CASE("YAML flow and block nesting 100,000 deep is refused") {
  const std::string flow = "space: " + std::string(100'000, '[') + std::string(100'000, ']') + "\n";
  auto e = only_error(parse_study(flow, StudyFormat::yaml, "flow.yaml"), "flow.yaml");
  CHECK(e.what.find("nested more than 64 levels") != std::string::npos);
  CHECK(e.line == 1);
  std::string block;
  for (int i = 0; i < 200; ++i) block += std::string(i, ' ') + "k:\n";
  only_error(parse_study(block, StudyFormat::yaml, "block.yaml"), "block.yaml");
}

TEST_CASE("nesting up to the limit is not refused by the limit") {
  const int d = dlsweep::orch::kMaxStudyDepth;
  std::vector<dlsweep::orch::ValidationError> errors;
  const std::string at_limit = std::string(d, '[') + std::string(d, ']');
  CHECK(dlsweep::orch::parse_json_tree(at_limit, "ok.json", errors).has_value());
  CHECK(dlsweep::orch::parse_yaml_tree(at_limit, "ok.yaml", errors).has_value());
  CHECK(errors.empty());
  const std::string over = std::string(d + 1, '[') + std::string(d + 1, ']');
  CHECK_FALSE(dlsweep::orch::parse_json_tree(over, "no.json", errors).has_value());
  CHECK_FALSE(dlsweep::orch::parse_yaml_tree(over, "no.yaml", errors).has_value());
  CHECK(errors.size() == 2);
}

TEST_CASE("a JSON file of more than 100,000 values is refused") {
  std::string many = "[0";
  for (int i = 0; i < 100'000; ++i) many += ",0";
  many += "]";
  auto e = only_error(parse_study(many, StudyFormat::json, "many.json"), "many.json");
  CHECK(e.what.find("100000 keys and values") != std::string::npos);
}

TEST_CASE("a study file over 1 MiB is refused, from text and from disk") {
  std::string big = std::string(kHead) + "description: \"" + std::string(dlsweep::orch::kMaxStudyBytes, 'x') + "\"\n";
  for (auto format : {StudyFormat::yaml, StudyFormat::json}) {
    auto e = only_error(parse_study(big, format, "big.study"), "big.study");
    CHECK(e.what.find("at most 1048576 bytes") != std::string::npos);
  }
  const auto path = std::filesystem::temp_directory_path() / ("dlsweep-big-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << big;
  auto e = only_error(load_study(path), path.string());
  CHECK(e.what.find("1 MiB") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("space: null and space: {} are refused; vary seed to repeat one configuration") {
  for (const char* space : {"space:\n", "space: null\n", "space: {}\n"}) {
    INFO(space);
    auto e = only_error(parse_study(std::string(kHead) + space, StudyFormat::yaml, "empty.yaml"), "empty.yaml");
    CHECK(e.key_path == "space");
    CHECK(e.what.find("space is empty") != std::string::npos);
    CHECK(e.fix.find("vary `seed`") != std::string::npos);
  }
  auto j = parse_study(R"({"name": "t", "trial": {"trainer": {}}, "objective": {"metric": "val_acc", "mode": "max"},
                           "space": {}})",
                       StudyFormat::json, "empty.json");
  CHECK(only_error(j, "empty.json").key_path == "space");
  // Leaving `space` out is one trial of the fixed settings, as before.
  CHECK(parse_study(kHead, StudyFormat::yaml, "none.yaml").has_value());
}

TEST_CASE("a YAML number beyond a double's range stays text instead of throwing") {
  auto r = parse_study("name: t\ntrial: {trainer: {}}\nobjective: {metric: val_acc, mode: max, target: 1e999}\n",
                       StudyFormat::yaml, "inf.yaml");
  REQUIRE_FALSE(r.has_value());
  bool found = false;
  for (const auto& e : r.error()) found = found || e.key_path == "objective.target" || e.key_path == "objective";
  CHECK(found);
  // Found by fuzz/study_fuzz.cpp: in JSON, nlohmann throws out_of_range (not parse_error)
  // for 1e999, and it escaped parse_study.
  auto j = only_error(parse_study("1e999", StudyFormat::json, "inf.json"), "inf.json");
  CHECK(j.what.find("number overflow") != std::string::npos);
  only_error(parse_study(R"({"name": "t", "objective": {"target": -1e400}})", StudyFormat::json, "inf.json"),
             "inf.json");
  std::vector<dlsweep::orch::ValidationError> errors;
  auto t = dlsweep::orch::parse_yaml_tree("a: 1e999\nb: " + std::string(400, '9') + "\n", "inf.yaml", errors);
  REQUIRE(t.has_value());
  CHECK(t->root["a"] == "1e999");
  CHECK(t->root["b"].is_string());
}

// Found by fuzz/study_fuzz.cpp: yaml-cpp passes invalid UTF-8 through, and the first
// json dump of such a value (a message, the spec stored in the database) threw
// nlohmann's type_error 316 out of parse_study.
TEST_CASE("a study file that is not valid UTF-8 is refused with the line") {
  for (auto format : {StudyFormat::yaml, StudyFormat::json}) {
    auto e = only_error(parse_study("name: t\nspace: {batch_size: [\xCB\x30" "96]}\n", format, "latin1.study"),
                        "latin1.study");
    CHECK(e.what.find("not valid UTF-8 (byte 0xCB") != std::string::npos);
    CHECK(e.line == 2);
  }
  // Overlong forms, surrogates and a cut sequence are invalid; real UTF-8 is fine.
  for (const char* bad : {"a: \xC0\xAF\n", "a: \xED\xA0\x80\n", "a: \xF4\x90\x80\x80\n", "a: \xE2\x82"}) {
    INFO(bad);
    CHECK(dlsweep::orch::check_study_utf8(bad, "f").has_value());
  }
  CHECK_FALSE(dlsweep::orch::check_study_utf8("description: \"ba\xC3\xB1o \xE2\x82\xAC \xF0\x9F\x98\x80\"\n", "f"));
}

// Found by fuzz/study_fuzz.cpp: "\\\0\0\0..." is valid UTF-8, but yaml-cpp takes the NUL
// bytes for UTF-32 and transcodes, producing a scalar with bytes like 0x80 whose dump threw.
TEST_CASE("text yaml-cpp decodes to invalid UTF-8 is an error, not an exception") {
  const std::string text("\x5c\x00\x00\x00\x00\x00\x00\x04\x5c\x00\x04", 11);
  auto r = parse_study(text, StudyFormat::yaml, "nul.yaml");
  REQUIRE_FALSE(r.has_value());
  for (const auto& e : r.error()) CHECK(e.file == "nul.yaml");
}
