// `search.warm_start`: the key validated with the others (every error at once, at its key
// path, with a fix), round-tripped through to_json; and earlier trials placed into this
// study's space (study/warm_start.hpp): same parameters or a subset with fixed values,
// values outside the space skipped and counted, objective and parameter mismatches refused.
#include <catch2/catch.hpp>

#include <string>

#include "study/spec.hpp"
#include "study_test_support.hpp"
#include "study/warm_start.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;
using study_test::error_at;
using study_test::messages;

namespace {

StudySpec parse(const std::string& yaml) {
  auto r = parse_study(yaml, StudyFormat::yaml, "s.yaml");
  INFO(messages(r));
  REQUIRE(r.has_value());
  return *r;
}

std::string study(const std::string& search, const std::string& space, const std::string& rest = "") {
  return "name: s\ntrial: {command: [prog]}\nobjective: {metric: loss, mode: min}\nsearch: " + search +
         "\nspace: " + space + "\n" + rest;
}

EarlierTrial earlier(std::int64_t n, nlohmann::json params, double loss) {
  EarlierTrial t;
  t.number = n;
  t.params = std::move(params);
  t.best_value = loss;
  t.figures.add_metric("loss", loss);
  return t;
}

}  // namespace

TEST_CASE("warm_start: read, normalised and round-tripped") {
  const auto s = parse(study("{algorithm: tpe, trials: 5, warm_start: [{study: a, db: a.db}, {study: b, db: /x/b.db}]}",
                             "{x: {uniform: [0, 1]}}"));
  REQUIRE(s.search.warm_start.size() == 2);
  CHECK(s.search.warm_start[0].study == "a");
  CHECK(s.search.warm_start[1].db == "/x/b.db");
  CHECK_FALSE(s.search.options.contains("warm_start"));  // not an option of the sampler
  auto again = parse_study(s.to_json().dump(), StudyFormat::json, "stored");
  INFO(messages(again));
  REQUIRE(again.has_value());
  REQUIRE(again->search.warm_start.size() == 2);
  CHECK(again->search.warm_start[1].study == "b");
  CHECK(parse(study("{algorithm: nsga2, trials: 5, warm_start: [{study: a, db: a.db}]}", "{x: {uniform: [0, 1]}}"))
            .search.warm_start.size() == 1);
  // Without warm_start nothing changes in the stored form.
  CHECK_FALSE(parse(study("{algorithm: tpe, trials: 5}", "{x: {uniform: [0, 1]}}")).to_json()["search"].contains("warm_start"));
}

TEST_CASE("warm_start: every mistake at its key, all at once") {
  auto r = parse_study(study("{algorithm: random, trials: 5, warm_start: [{study: a}, {db: b.db}, {study: 'bad name', db: "
                             "x.db, dbb: 1}, {study: c, db: ''}, {study: d, db: d.db}, {study: d, db: d.db}, 7]}",
                             "{x: {uniform: [0, 1]}}"),
                       StudyFormat::yaml, "s.yaml");
  INFO(messages(r));
  REQUIRE_FALSE(r.has_value());
  CHECK(error_at(r, "search.warm_start[0].db"));         // missing
  CHECK(error_at(r, "search.warm_start[1].study"));      // missing
  CHECK(error_at(r, "search.warm_start[2].study"));      // not a study name
  CHECK(error_at(r, "search.warm_start[2].dbb"));        // unknown key (did you mean db)
  CHECK(error_at(r, "search.warm_start[3].db"));         // empty
  CHECK(error_at(r, "search.warm_start[5]"));            // listed twice
  CHECK(error_at(r, "search.warm_start[6]"));            // not a map
  const auto* algo = error_at(r, "search.warm_start");   // random ignores the history
  REQUIRE(algo);
  CHECK(algo->what.find("random search ignores earlier trials") != std::string::npos);
  CHECK(algo->fix.find("tpe or nsga2") != std::string::npos);

  for (const char* a : {"grid", "qmc"}) {
    auto g = parse_study(study(std::string("{algorithm: ") + a + ", trials: 4, warm_start: [{study: a, db: a.db}]}",
                               "{x: [1, 2]}"),
                         StudyFormat::yaml, "s.yaml");
    INFO(a << ": " << messages(g));
    CHECK(error_at(g, "search.warm_start"));
  }
  CHECK(error_at(parse_study(study("{algorithm: tpe, trials: 4, warm_start: []}", "{x: [1, 2]}"), StudyFormat::yaml, "s.yaml"),
                 "search.warm_start"));
  CHECK(error_at(parse_study(study("{algorithm: tpe, trials: 4, warm_start: {study: a, db: a.db}}", "{x: [1, 2]}"),
                             StudyFormat::yaml, "s.yaml"),
                 "search.warm_start"));
}

TEST_CASE("warm_start: the same parameters place every trial; the history records are COMPLETE and numbered") {
  const auto self = parse(study("{algorithm: tpe, trials: 5}", "{x: {uniform: [0, 1]}, n: {int: [1, 9], step: 2}, opt: [sgd, adam]}"));
  const auto before = parse(study("{algorithm: random, trials: 5}", "{x: {uniform: [0, 1]}, n: {int: [1, 9], step: 2}, opt: [sgd, adam]}"));
  auto placed = place_warm_trials(self, before, {earlier(0, {{"x", 0.5}, {"n", 3}, {"opt", "sgd"}}, 2.0),
                                                 earlier(1, {{"x", 1.0}, {"n", 9}, {"opt", "adam"}}, 1.0)});
  REQUIRE(placed.has_value());
  REQUIRE(placed->trials.size() == 2);
  CHECK(placed->skipped == 0);
  CHECK(placed->skip_note().empty());
  CHECK(placed->trials[1].source_number == 1);
  CHECK(placed->trials[1].value == 1.0);
  const auto rec = warm_record(placed->trials[0], -2);
  CHECK(rec.number == -2);
  CHECK(rec.status == search::TrialStatus::complete);
  CHECK(rec.value == 2.0);
  CHECK(rec.params == nlohmann::json{{"x", 0.5}, {"n", 3}, {"opt", "sgd"}});
}

TEST_CASE("warm_start: a subset with fixed values; this study's fixed values merged in") {
  // This study searches x and lr; the earlier one searched x with lr fixed at 0.1.
  const auto self = parse(study("{algorithm: tpe, trials: 5}", "{x: {uniform: [0, 1]}, lr: {log_uniform: [0.001, 1]}}",
                                "fixed: {epochs: 3}"));
  const auto before = parse(study("{algorithm: random, trials: 5}", "{x: {uniform: [0, 1]}}", "fixed: {lr: 0.1, epochs: 3, tag: old}"));
  auto placed = place_warm_trials(self, before, {earlier(0, {{"x", 0.25}, {"lr", 0.1}, {"epochs", 3}, {"tag", "old"}}, 4.0)});
  REQUIRE(placed.has_value());
  REQUIRE(placed->trials.size() == 1);
  // The earlier study's own fixed values this study does not have (tag) are left out.
  CHECK(placed->trials[0].params == nlohmann::json{{"x", 0.25}, {"lr", 0.1}, {"epochs", 3}});
}

TEST_CASE("warm_start: values outside this study's space are skipped and counted by reason") {
  const auto self = parse(study("{algorithm: tpe, trials: 5}", "{x: {uniform: [0, 1]}, n: {int: [1, 9], step: 2}, opt: [sgd, adam]}",
                                "fixed: {epochs: 3}"));
  const auto before = parse(study("{algorithm: random, trials: 5}", "{x: {uniform: [0, 2]}, n: {int: [1, 10]}, opt: [sgd, adam, lamb]}",
                                  "fixed: {epochs: 3}"));
  auto placed = place_warm_trials(self, before,
                                  {earlier(0, {{"x", 0.5}, {"n", 3}, {"opt", "sgd"}, {"epochs", 3}}, 1.0),
                                   earlier(1, {{"x", 1.5}, {"n", 3}, {"opt", "sgd"}, {"epochs", 3}}, 1.0),   // x out
                                   earlier(2, {{"x", 1.7}, {"n", 3}, {"opt", "sgd"}, {"epochs", 3}}, 1.0),   // x out
                                   earlier(3, {{"x", 0.5}, {"n", 4}, {"opt", "sgd"}, {"epochs", 3}}, 1.0),   // off the step
                                   earlier(4, {{"x", 0.5}, {"n", 3}, {"opt", "lamb"}, {"epochs", 3}}, 1.0),  // unknown choice
                                   earlier(5, {{"x", 0.5}, {"n", 3}, {"opt", "sgd"}, {"epochs", 5}}, 1.0)}); // fixed differs
  REQUIRE(placed.has_value());
  CHECK(placed->trials.size() == 1);
  CHECK(placed->skipped == 5);
  REQUIRE(placed->skip_reasons.size() == 4);
  CHECK(placed->skip_reasons[0].second == 2);
  const auto note = placed->skip_note();
  CHECK(note.find("5 skipped: 2 with x outside [0, 1]") != std::string::npos);
  CHECK(note.find("with n outside 1..9 step 2") != std::string::npos);
  CHECK(note.find("with opt outside") != std::string::npos);
  CHECK(note.find("with epochs 5 (fixed to 3 here)") != std::string::npos);

  // Nothing placeable: an error, not an empty warm start.
  auto none = place_warm_trials(self, before, {earlier(1, {{"x", 1.5}, {"n", 3}, {"opt", "sgd"}, {"epochs", 3}}, 1.0)});
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().front().what.find("none of its 1 COMPLETE trials fits") != std::string::npos);
  auto empty = place_warm_trials(self, before, {});
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().front().what.find("no COMPLETE trial") != std::string::npos);
}

TEST_CASE("warm_start: parameters that cannot be placed and other objectives are errors naming them") {
  const auto self = parse(study("{algorithm: tpe, trials: 5}", "{x: {uniform: [0, 1]}, lr: {log_uniform: [0.001, 1]}}"));
  // lr neither searched nor fixed there; z searched there, unknown here.
  const auto before = parse(study("{algorithm: random, trials: 5}", "{x: {uniform: [0, 1]}, z: [1, 2]}"));
  auto r = place_warm_trials(self, before, {earlier(0, {{"x", 0.5}, {"z", 1}}, 1.0)});
  REQUIRE_FALSE(r.has_value());
  REQUIRE(r.error().size() == 2);
  CHECK(r.error()[0].what.find("parameter 'lr' of this study is neither searched nor fixed there") != std::string::npos);
  CHECK(r.error()[0].fix.find("fix 'lr' here too") != std::string::npos);
  CHECK(r.error()[1].what.find("it searched 'z'") != std::string::npos);

  const auto maximising = parse("name: s\ntrial: {command: [prog]}\nobjective: {metric: loss, mode: max}\n"
                                "search: {algorithm: random, trials: 5}\nspace: {x: {uniform: [0, 1]}, lr: [0.1]}\n");
  auto m = place_warm_trials(self, maximising, {earlier(0, {{"x", 0.5}, {"lr", 0.1}}, 1.0)});
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().front().what.find("it optimises loss (max), this study loss (min)") != std::string::npos);
}

TEST_CASE("warm_start: several objectives and constraints are computed from the earlier trial's figures") {
  const char* objectives = "objective:\n  - {metric: loss, mode: min}\n  - {metric: rank_seconds, mode: min}\n";
  auto with = [&](const std::string& search, const std::string& rest) {
    return "name: s\ntrial: {command: [prog]}\n" + std::string(objectives) + "search: " + search +
           "\nspace: {x: {uniform: [0, 1]}}\n" + rest;
  };
  const auto self = parse(with("{algorithm: nsga2, trials: 8}", "constraints: [{metric: mem, max: 10}]\n"));
  const auto before = parse(with("{algorithm: random, trials: 8}", ""));
  EarlierTrial t = earlier(0, {{"x", 0.5}}, 2.0);
  t.figures.wall_s = 30;
  t.figures.ranks = 2;
  t.figures.add_metric("mem", 12);
  EarlierTrial u = earlier(1, {{"x", 0.25}}, 3.0);  // no wall time: rank_seconds unknown
  u.figures.add_metric("mem", 4);
  auto placed = place_warm_trials(self, before, {t, u});
  REQUIRE(placed.has_value());
  REQUIRE(placed->trials.size() == 1);
  CHECK(placed->skipped == 1);
  CHECK(placed->trials[0].values == std::vector<double>{2.0, 60.0});
  REQUIRE(placed->trials[0].constraints.size() == 1);
  CHECK(placed->trials[0].constraints[0] == Approx(2.0));  // mem 12 > max 10: violated by 2

  // A constraint on a metric the earlier trials never reported cannot be computed.
  EarlierTrial v = earlier(0, {{"x", 0.5}}, 2.0);
  v.figures.wall_s = 30;
  auto refused = place_warm_trials(self, before, {v});
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().front().what.find("none of its trials reported 'mem'") != std::string::npos);
}

TEST_CASE("warm_start: each entry keeps its study-file lines for the errors found when its database is read") {
  // Block and flow entries: the entry's line, its study: and db: keys' lines.
  const auto s = parse("name: s\n"                                  // 1
                       "trial: {command: [prog]}\n"                 // 2
                       "objective: {metric: loss, mode: min}\n"     // 3
                       "search:\n"                                  // 4
                       "  algorithm: tpe\n"                         // 5
                       "  trials: 5\n"                              // 6
                       "  warm_start:\n"                            // 7
                       "    - {study: a, db: a.db}\n"               // 8
                       "    - study: b\n"                           // 9
                       "      db: b.db\n"                           // 10
                       "    - db: c.db\n"                           // 11
                       "      study: c\n"                           // 12
                       "space: {x: {uniform: [0, 1]}}\n");
  REQUIRE(s.search.warm_start.size() == 3);
  CHECK(s.search.warm_start[0].line == 8);
  CHECK(s.search.warm_start[0].study_line == 8);
  CHECK(s.search.warm_start[0].db_line == 8);
  CHECK(s.search.warm_start[1].line == 9);
  CHECK(s.search.warm_start[1].study_line == 9);
  CHECK(s.search.warm_start[1].db_line == 10);
  CHECK(s.search.warm_start[2].line == 11);
  CHECK(s.search.warm_start[2].study_line == 12);
  CHECK(s.search.warm_start[2].db_line == 11);
  // JSON has no lines: 0, and the stored form (to_json) does not carry them.
  auto again = parse_study(s.to_json().dump(), StudyFormat::json, "stored");
  REQUIRE(again.has_value());
  CHECK(again->search.warm_start[1].line == 0);
  CHECK(again->search.warm_start[1].db_line == 0);
  CHECK_FALSE(s.to_json()["search"]["warm_start"][1].contains("line"));
}

TEST_CASE("warm_start: a value of the wrong type is reported at its line with the entry's form as the fix") {
  auto r = parse_study("name: s\n"                                  // 1
                       "trial: {command: [prog]}\n"                 // 2
                       "objective: {metric: loss, mode: min}\n"     // 3
                       "search:\n"                                  // 4
                       "  algorithm: tpe\n"                         // 5
                       "  trials: 5\n"                              // 6
                       "  warm_start:\n"                            // 7
                       "    - early\n"                              // 8
                       "    - study: b\n"                           // 9
                       "      db:\n"                                // 10
                       "    - study: 2024\n"                        // 11
                       "      db: [x.db]\n"                         // 12
                       "space: {x: {uniform: [0, 1]}}\n",
                       StudyFormat::yaml, "s.yaml");
  INFO(messages(r));
  REQUIRE_FALSE(r.has_value());
  const auto* item = error_at(r, "search.warm_start[0]");
  REQUIRE(item);
  CHECK(item->line == 8);
  CHECK(item->fix.find("`- {study: early, db: PATH}`") != std::string::npos);  // not the map fix "write `0:` ..."
  CHECK(item->fix.find("`0:`") == std::string::npos);
  const auto* null_db = error_at(r, "search.warm_start[1].db");
  REQUIRE(null_db);
  CHECK(null_db->line == 10);
  CHECK(null_db->fix.find("write `db: PATH`") != std::string::npos);
  const auto* number = error_at(r, "search.warm_start[2].study");
  REQUIRE(number);
  CHECK(number->line == 11);
  CHECK(number->fix.find(R"(`study: "2024"`)") != std::string::npos);
  const auto* list_db = error_at(r, "search.warm_start[2].db");
  REQUIRE(list_db);
  CHECK(list_db->line == 12);
  CHECK(list_db->fix.find("write `db: PATH`") != std::string::npos);
  CHECK(r.error().size() == 4);

  // A lone entry instead of a list: make it a list of one.
  auto lone = parse_study(study("{algorithm: tpe, trials: 4, warm_start: {study: a, db: a.db}}", "{x: [1, 2]}"),
                          StudyFormat::yaml, "s.yaml");
  const auto* e = error_at(lone, "search.warm_start");
  REQUIRE(e);
  CHECK(e->fix.find("list of one entry: `warm_start: [{study: NAME, db: PATH}]`") != std::string::npos);
  CHECK(e->line == 4);
  // Only a path: the study must be named too.
  auto path = parse_study(study("{algorithm: tpe, trials: 4, warm_start: early.db}", "{x: [1, 2]}"), StudyFormat::yaml,
                          "s.yaml");
  const auto* p = error_at(path, "search.warm_start");
  REQUIRE(p);
  CHECK(p->fix.find("`warm_start: [{study: NAME, db: early.db}]`") != std::string::npos);
}
