// `objective:` as a list and `constraints:`: read, normalised, round-tripped; each mistake
// refused at its key path with a fix; one objective unchanged; pruners refused with several.
#include <catch2/catch.hpp>

#include <string>

#include "study/spec.hpp"
#include "study_test_support.hpp"

using namespace dlsweep::orch;
using study_test::error_at;
using study_test::messages;

namespace {

const char* kMulti = R"(name: mo
trial:
  command: [prog]
objective:
  - {metric: val_acc, mode: max, target: 0.88}
  - {metric: time_to_target_s, mode: min}
  - {metric: val_loss, mode: min}
constraints: [{metric: rank_seconds, max: 3600}, {reached_target: true}, {metric: val_loss, min: 0.01, max: 5}]
space: {lr: {log_uniform: [0.001, 1]}}
search: {algorithm: nsga2, trials: 20, population_size: 8}
)";

// The error at `key_path` (empty when none).
std::string with(const std::string& objective, const std::string& rest = "") {
  return "name: t\ntrial: {command: [prog]}\n" + objective + "\nspace: {lr: [0.1, 0.2]}\n" + rest;
}

}  // namespace

TEST_CASE("objectives: a list of objectives and constraints") {
  auto r = parse_study(kMulti, StudyFormat::yaml, "mo.yaml");
  INFO(messages(r));
  REQUIRE(r.has_value());
  REQUIRE(r->objectives.size() == 3);
  CHECK(r->multi_objective());
  CHECK(r->objective.metric == "val_acc");
  CHECK(*r->objective.target == Approx(0.88));
  CHECK(r->objectives[1].metric == "time_to_target_s");
  CHECK(r->objectives[2].mode == "min");
  const auto defs = r->objective_defs();
  CHECK(defs[0].maximize);
  CHECK_FALSE(defs[1].maximize);
  REQUIRE(r->constraints.size() == 3);
  CHECK(r->constraints[0].metric == "rank_seconds");
  CHECK(*r->constraints[0].max == 3600);
  CHECK(r->constraints[1].reached_target);
  CHECK(*r->constraints[2].min == Approx(0.01));
  CHECK(r->search.algorithm == "nsga2");
  // Round trip through the normalised JSON (what the database stores).
  auto again = parse_study(r->to_json().dump(), StudyFormat::json, "stored.json");
  INFO(messages(again));
  REQUIRE(again.has_value());
  CHECK(again->to_json() == r->to_json());
  CHECK(r->to_json()["objective"].is_array());
  CHECK(r->to_json()["constraints"].size() == 3);
}

TEST_CASE("objectives: one objective, as a map or a list of one, is the single-objective study") {
  auto map = parse_study(with("objective: {metric: loss, mode: min}"), StudyFormat::yaml, "a.yaml");
  auto list = parse_study(with("objective: [{metric: loss, mode: min}]"), StudyFormat::yaml, "b.yaml");
  REQUIRE(map.has_value());
  REQUIRE(list.has_value());
  CHECK_FALSE(map->multi_objective());
  CHECK(map->objectives.size() == 1);
  CHECK(map->to_json()["objective"] == nlohmann::json{{"metric", "loss"}, {"mode", "min"}});
  CHECK(list->to_json() == map->to_json());
  CHECK_FALSE(map->to_json().contains("constraints"));
}

TEST_CASE("objectives: mistakes are refused at their key path") {
  struct Bad {
    std::string text, key_path, fix;
  };
  const std::vector<Bad> bad = {
      {with("objective: []"), "objective", "at least one"},
      {with("objective: [{metric: rank_seconds, mode: min}, {metric: loss, mode: min}]"), "objective[0].metric",
       "reported metric"},
      {with("objective: [{metric: loss, mode: min}, {metric: steps_to_target, mode: min}]"), "objective[1].metric",
       "target"},
      {with("objective: [{metric: loss, mode: min}, {metric: acc, mode: max, target: 1}]"), "objective[1].target",
       "first objective"},
      {with("objective: [{metric: loss, mode: min}, {metric: loss, mode: max}]"), "objective[1].metric", "once"},
      {with("objective: [{metric: loss, mode: min}, {metric: acc, mode: best}]"), "objective[1].mode", ""},
      {with("objective: [{metric: loss, mode: min}, {metric: acc}]"), "objective[1].mode", "mode: max"},
      {with("objective: {metric: loss, mode: min}", "constraints: [{reached_target: true}]\n"),
       "constraints[0].reached_target", "target"},
      {with("objective: {metric: loss, mode: min}", "constraints: [{metric: rank_seconds}]\n"), "constraints[0]",
       "max:"},
      {with("objective: {metric: loss, mode: min}", "constraints: [{metric: wall, maxx: 3}]\n"),
       "constraints[0].maxx", ""},
      {with("objective: {metric: loss, mode: min}", "constraints: {metric: rank_seconds, max: 3}\n"), "constraints",
       "constraints: ["},
      {with("objective: {metric: loss, mode: min}", "constraints: [{metric: x, min: 5, max: 1}]\n"),
       "constraints[0].min", "swap"},
      {with("objective: [{metric: loss, mode: min}, {metric: rank_seconds, mode: min}]",
            "pruner: {kind: median}\n"),
       "pruner.kind", "kind: none"},
  };
  for (const auto& b : bad) {
    auto r = parse_study(b.text, StudyFormat::yaml, "bad.yaml");
    INFO(b.text << "\n" << messages(r));
    REQUIRE_FALSE(r.has_value());
    const auto* e = error_at(r, b.key_path);
    REQUIRE(e != nullptr);
    CHECK(e->fix.find(b.fix) != std::string::npos);
  }
}

TEST_CASE("objectives: a first objective with a bad mode is not also blamed for the target it has") {
  // `mode: maximize` is the one mistake: the derived objective and reached_target that count
  // to the (written) target are not refused as well with "needs a target".
  auto r = parse_study(with("objective: [{metric: acc, mode: maximize, target: 0.9}, {metric: time_to_target_s, mode: min}]",
                            "constraints: [{reached_target: true}, {metric: steps_to_target, max: 100}]\n"),
                       StudyFormat::yaml, "bad.yaml");
  INFO(messages(r));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().size() == 1);
  CHECK(error_at(r, "objective[0].mode") != nullptr);
  // An objective that cannot be read at all: its own error only.
  auto broken = parse_study(with("objective: val_acc", "constraints: [{reached_target: true}]\n"), StudyFormat::yaml,
                            "bad.yaml");
  INFO(messages(broken));
  REQUIRE_FALSE(broken.has_value());
  CHECK(broken.error().size() == 1);
  CHECK(error_at(broken, "objective") != nullptr);
  // Without a target written, "needs a target" names the figure, not every derived figure.
  auto none = parse_study(with("objective: [{metric: acc, mode: max}, {metric: time_to_target_s, mode: min}]"),
                          StudyFormat::yaml, "bad.yaml");
  const auto* e = error_at(none, "objective[1].metric");
  REQUIRE(e != nullptr);
  CHECK(e->fix.find("time_to_target_s is counted to it") != std::string::npos);
  CHECK(e->fix.find("rank_seconds") == std::string::npos);
}

TEST_CASE("objectives: a pruner is fine with one objective and constraints") {
  auto r = parse_study(with("objective: {metric: loss, mode: min, target: 0.1}",
                            "constraints: [{metric: rank_seconds, max: 10}]\npruner: {kind: median}\n"),
                       StudyFormat::yaml, "ok.yaml");
  INFO(messages(r));
  REQUIRE(r.has_value());
  CHECK(r->pruner.kind == "median");
  CHECK(r->constraints.size() == 1);
}

TEST_CASE("objectives: every pruner but none is refused with several objectives, at pruner.kind") {
  for (auto name : dlsweep::search::pruner_names()) {
    const std::string kind(name);
    auto r = parse_study(with("objective: [{metric: loss, mode: min}, {metric: rank_seconds, mode: min}]",
                              "pruner: {kind: " + kind + "}\n"),
                         StudyFormat::yaml, "p.yaml");
    INFO(kind << "\n" << messages(r));
    if (kind == "none") {
      CHECK(r.has_value());
      continue;
    }
    REQUIRE_FALSE(r.has_value());
    const auto* e = error_at(r, "pruner.kind");
    REQUIRE(e != nullptr);
    CHECK(e->what.find("Pareto front") != std::string::npos);
  }
}

TEST_CASE("objectives: rank_by says which report ranks a trial; best by default; stored only when final",
          "[study][rank_by]") {
  auto plain = parse_study(with("objective: {metric: acc, mode: max}"), StudyFormat::yaml, "a.yaml");
  REQUIRE(plain.has_value());
  CHECK(plain->objective.rank_by == "best");
  CHECK_FALSE(plain->objective_defs()[0].final);
  CHECK_FALSE(plain->to_json()["objective"].contains("rank_by"));  // existing studies store what they stored

  auto fin = parse_study(with("objective: {metric: acc, mode: max, rank_by: final}"), StudyFormat::yaml, "f.yaml");
  INFO(messages(fin));
  REQUIRE(fin.has_value());
  CHECK(fin->objective.rank_final());
  CHECK(fin->objective_defs()[0].final);
  CHECK(fin->to_json()["objective"]["rank_by"] == "final");
  auto again = parse_study(fin->to_json().dump(), StudyFormat::json, "stored.json");
  INFO(messages(again));
  REQUIRE(again.has_value());
  CHECK(again->objective.rank_final());
  CHECK(again->to_json() == fin->to_json());

  auto best = parse_study(with("objective: {metric: acc, mode: max, rank_by: best}"), StudyFormat::yaml, "b.yaml");
  REQUIRE(best.has_value());
  CHECK_FALSE(best->objective.rank_final());

  // Several objectives: each says its own.
  auto several = parse_study(with("objective: [{metric: acc, mode: max, rank_by: final}, {metric: loss, mode: min}]"),
                             StudyFormat::yaml, "m.yaml");
  INFO(messages(several));
  REQUIRE(several.has_value());
  CHECK(several->objective_defs()[0].final);
  CHECK_FALSE(several->objective_defs()[1].final);
  CHECK(several->to_json()["objective"][0]["rank_by"] == "final");
  CHECK_FALSE(several->to_json()["objective"][1].contains("rank_by"));
}

TEST_CASE("objectives: a bad rank_by is refused at its key and line, with did-you-mean", "[study][rank_by]") {
  auto r = parse_study(with("objective: {metric: acc, mode: max, rank_by: last}"), StudyFormat::yaml, "bad.yaml");
  INFO(messages(r));
  REQUIRE_FALSE(r.has_value());
  const auto* e = error_at(r, "objective.rank_by");
  REQUIRE(e != nullptr);
  CHECK(e->line == 3);
  CHECK(e->message().find("bad.yaml:3") != std::string::npos);
  CHECK((e->what + e->fix).find("final") != std::string::npos);
  auto typo = parse_study(with("objective: {metric: acc, mode: max, rank_by: fnal}"), StudyFormat::yaml, "bad.yaml");
  INFO(messages(typo));
  const auto* t = error_at(typo, "objective.rank_by");
  REQUIRE(t != nullptr);
  CHECK((t->what + t->fix).find("final") != std::string::npos);
  auto key = parse_study(with("objective: {metric: acc, mode: max, rankby: final}"), StudyFormat::yaml, "bad.yaml");
  INFO(messages(key));
  const auto* k = error_at(key, "objective.rankby");
  REQUIRE(k != nullptr);
  CHECK((k->what + k->fix).find("rank_by") != std::string::npos);
  auto item = parse_study(with("objective: [{metric: acc, mode: max}, {metric: loss, mode: min, rank_by: 1}]"),
                          StudyFormat::yaml, "bad.yaml");
  CHECK(error_at(item, "objective[1].rank_by") != nullptr);
}

TEST_CASE("objectives: a pbt study ranks an interval by its final report; rank_by: best is refused",
          "[study][rank_by][pbt]") {
  const std::string pbt = "search: {algorithm: pbt, population: 4, generations: 2, interval: {by: step, every: 2}, "
                          "perturb: {lr: [0.8, 1.25]}}\n";
  auto best = parse_study("name: p\ntrial: {command: [prog]}\nobjective: {metric: acc, mode: max, rank_by: best}\n"
                          "space: {lr: {log_uniform: [0.01, 1]}}\n" + pbt,
                          StudyFormat::yaml, "p.yaml");
  INFO(messages(best));
  const auto* e = error_at(best, "objective.rank_by");
  REQUIRE(e != nullptr);
  CHECK(e->fix.find("rank_by: final") != std::string::npos);
  for (const char* objective : {"objective: {metric: acc, mode: max, rank_by: final}\n",
                                "objective: {metric: acc, mode: max}\n"}) {
    auto ok = parse_study(std::string("name: p\ntrial: {command: [prog]}\n") + objective +
                              "space: {lr: {log_uniform: [0.01, 1]}}\n" + pbt,
                          StudyFormat::yaml, "p.yaml");
    INFO(objective << messages(ok));
    CHECK(error_at(ok, "objective.rank_by") == nullptr);
  }
}
