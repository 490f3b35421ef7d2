// The typed reading of a stored study (common/stored_study.hpp): a full spec as to_json()
// writes it, keys left out, several objectives, constraints, pbt, the ranks rule, and a
// damaged spec giving an error that names the study and the key.
#include <catch2/catch.hpp>

#include "common/stored_study.hpp"

using namespace dlsweep;
using nlohmann::json;

namespace {

StoredStudy must_read(const json& spec) {
  auto s = read_stored_study(spec, "s");
  if (!s) FAIL(s.error().message());
  return *s;
}

Error must_fail(const json& spec) {
  auto s = read_stored_study(spec, "s");
  REQUIRE_FALSE(s.has_value());
  return s.error();
}

}  // namespace

TEST_CASE("stored study: a full spec as StudySpec::to_json writes it", "[common][stored_study]") {
  const json spec = json::parse(R"({
    "name": "full", "description": "", "runs_dir": "dlsweep-runs",
    "backend": {"kind": "local", "max_concurrent": 2},
    "trial": {"trainer": {}, "ranks": 4, "max_retries": 0, "env": {}},
    "objective": {"metric": "val_loss", "mode": "min", "target": 0.25, "stop_at_target": true},
    "search": {"algorithm": "tpe", "seed": 3, "trials": 20},
    "pruner": {"kind": "none", "by": "epoch", "group_by": [], "warmup": 1},
    "space": [{"lr": {"log_uniform": [0.001, 0.1]}}, {"batch_size": {"choice": [32, 64]}}],
    "fixed": {"epochs": 3}})");
  const StoredStudy s = must_read(spec);
  REQUIRE(s.objectives.size() == 1);
  CHECK(s.objectives[0].metric == "val_loss");
  CHECK_FALSE(s.objectives[0].maximize);
  REQUIRE(s.target);
  CHECK(*s.target == 0.25);
  CHECK(s.constraints.empty());
  CHECK(s.algorithm == "tpe");
  CHECK_FALSE(s.pbt);
  CHECK(s.ranks == 4);
  CHECK(s.trainer);
  CHECK(s.searched == std::vector<std::string>{"lr", "batch_size"});  // the file's order, not sorted

  // From the text of studies.spec_json, the same.
  auto t = read_stored_study(spec.dump(), "full");
  REQUIRE(t);
  CHECK(t->ranks == 4);
  CHECK(t->searched == s.searched);
}

TEST_CASE("stored study: keys left out read as their defaults", "[common][stored_study]") {
  for (const json& spec : {json::object(), json{{"name", "s"}}, json{{"trial", {{"command", {"python3", "train.py"}}}}},
                          json{{"objective", nullptr}, {"constraints", nullptr}}}) {
    const StoredStudy s = must_read(spec);
    CHECK(s.objectives.empty());
    CHECK_FALSE(s.target);
    CHECK(s.constraints.empty());
    CHECK(s.algorithm == "grid");
    CHECK_FALSE(s.pbt);
    CHECK(s.ranks == 1);
    CHECK_FALSE(s.trainer);
    CHECK(s.searched.empty());
  }
  // An objective without mode maximises, as a study file's does.
  const StoredStudy s = must_read(json{{"objective", {{"metric", "val_acc"}}}});
  REQUIRE(s.objectives.size() == 1);
  CHECK(s.objectives[0].maximize);
  // A space written as a map (older specs) gives its names too.
  CHECK(must_read(json{{"space", {{"a", {{"choice", {1}}}}, {"b", {{"choice", {2}}}}}}}).searched ==
        std::vector<std::string>{"a", "b"});
}

TEST_CASE("stored study: several objectives and constraints", "[common][stored_study]") {
  const StoredStudy s = must_read(json::parse(R"({
    "objective": [{"metric": "val_acc", "mode": "max", "target": 0.9}, {"metric": "time_to_target_s", "mode": "min"}],
    "constraints": [{"metric": "rank_seconds", "max": 3600}, {"metric": "val_acc", "min": 0.5, "max": 1},
                    {"reached_target": true}]})"));
  REQUIRE(s.objectives.size() == 2);
  CHECK(s.objectives[0].metric == "val_acc");
  CHECK(s.objectives[0].maximize);
  CHECK(s.objectives[1].metric == "time_to_target_s");
  CHECK_FALSE(s.objectives[1].maximize);
  REQUIRE(s.target);
  CHECK(*s.target == 0.9);  // the first objective's
  REQUIRE(s.constraints.size() == 3);
  CHECK(s.constraints[0].metric == "rank_seconds");
  CHECK_FALSE(s.constraints[0].min);
  CHECK(*s.constraints[0].max == 3600);
  CHECK(*s.constraints[1].min == 0.5);
  CHECK(*s.constraints[1].max == 1);
  CHECK_FALSE(s.constraints[1].reached_target);
  CHECK(s.constraints[2].reached_target);
  CHECK(s.constraints[2].metric.empty());
  CHECK(describe(s.constraints[0]) == "rank_seconds <= 3600");
}

TEST_CASE("stored study: pbt", "[common][stored_study]") {
  const StoredStudy s = must_read(json::parse(R"({
    "search": {"algorithm": "pbt", "seed": 2, "population": 4, "generations": 3, "quantile": 0.25,
               "interval": {"by": "step", "every": 100}},
    "space": [{"lr": {"log_uniform": [0.001, 0.1]}}]})"));
  CHECK(s.algorithm == "pbt");
  REQUIRE(s.pbt);
  CHECK(s.pbt->population == 4);
  CHECK(s.pbt->generations == 3);
  CHECK(s.pbt->interval_by == "step");
  CHECK(s.searched == std::vector<std::string>{"lr"});
  // Left out: the axis is epoch, the counts 0.
  const StoredStudy bare = must_read(json{{"search", {{"algorithm", "pbt"}}}});
  REQUIRE(bare.pbt);
  CHECK(bare.pbt->interval_by == "epoch");
  CHECK(bare.pbt->generations == 0);
  // pbt's keys mean nothing to another algorithm.
  CHECK_FALSE(must_read(json{{"search", {{"algorithm", "random"}, {"population", "x"}}}}).pbt);
}

TEST_CASE("stored study: branch", "[common][stored_study]") {
  const StoredStudy s = must_read(json::parse(R"({
    "search": {"algorithm": "branch", "points": [0.5, 1, 2], "by": "samples", "batches": [64, 128, 256],
               "delta": 0.25, "tolerance": 0.02, "seeds": 3, "max_seeds": 8, "lr_factors": [0.5, 1, 2],
               "generations": 4, "scan": "all"},
    "objective": {"metric": "val_loss", "mode": "min"}})"));
  CHECK(s.algorithm == "branch");
  CHECK_FALSE(s.pbt);
  REQUIRE(s.branch);
  CHECK(s.branch->points == std::vector<double>{0.5, 1, 2});
  CHECK(s.branch->by == "samples");
  CHECK(s.branch->batches == std::vector<std::int64_t>{64, 128, 256});
  CHECK(s.branch->delta == 0.25);
  CHECK(s.branch->tolerance == 0.02);
  CHECK(s.branch->seeds == 3);
  CHECK(s.branch->max_seeds == 8);
  CHECK(s.branch->lr_factors == std::vector<double>{0.5, 1, 2});
  CHECK(s.branch->scan == "all");
  // Left out: epoch, tolerance 1%, LR factor 1 only, no scan stored (a study from before it).
  const StoredStudy bare = must_read(json{{"search", {{"algorithm", "branch"}, {"points", {1, 2}}, {"batches", {32, 64}}}}});
  REQUIRE(bare.branch);
  CHECK(bare.branch->by == "epoch");
  CHECK(bare.branch->tolerance == 0.01);
  CHECK(bare.branch->lr_factors == std::vector<double>{1});
  CHECK(bare.branch->scan.empty());
  // Set exactly for a branch study: branch keys mean nothing to another algorithm.
  CHECK_FALSE(must_read(json{{"search", {{"algorithm", "grid"}, {"points", "x"}}}}).branch);
  CHECK_FALSE(must_read(json{{"search", {{"algorithm", "pbt"}}}}).branch);
  // A damaged key is named.
  struct Case {
    json search;
    std::string key;
  };
  for (const auto& [search, key] : std::vector<Case>{
           {{{"points", {2, 1}}}, "search.points"},
           {{{"points", "1,2"}}, "search.points"},
           {{{"batches", {64, 32}}}, "search.batches"},
           {{{"batches", {64.5}}}, "search.batches"},
           {{{"lr_factors", {0}}}, "search.lr_factors"},
           {{{"by", "step"}}, "search.by"},
           {{{"scan", "sideways"}}, "search.scan"},
           {{{"delta", "1"}}, "search.delta"},
           {{{"tolerance", -0.1}}, "search.tolerance"},
           {{{"seeds", 2.5}}, "search.seeds"},
           {{{"max_seeds", "4"}}, "search.max_seeds"}}) {
    json spec{{"search", search}};
    spec["search"]["algorithm"] = "branch";
    const Error e = must_fail(spec);
    CHECK(e.where == "studies.spec_json: " + key);
    CHECK(e.what.find(key) != std::string::npos);
  }
}

TEST_CASE("stored study: the ranks rule", "[common][stored_study]") {
  StoredStudy s;
  CHECK(trial_ranks(s, json::object()) == 1);  // nothing said: 1
  CHECK(trial_ranks(s, nullptr) == 1);
  s.ranks = 4;
  CHECK(trial_ranks(s, json{{"lr", 0.1}}) == 4);  // trial.ranks
  CHECK(trial_ranks(s, json{{"ranks", 2}}) == 2);  // the parameter wins
  CHECK(trial_ranks(s, json{{"ranks", 8}}) == 8);
  // Not a whole number >= 1: not a rank count; trial.ranks stands.
  for (const json& bad : {json(0), json(-2), json(2.5), json("2"), json(nullptr)})
    CHECK(trial_ranks(s, json{{"ranks", bad}}) == 4);
  CHECK(trial_ranks(4, json{{"ranks", std::int64_t{1} << 40}}) == (1 << 20));
  CHECK(trial_ranks(must_read(json{{"trial", {{"ranks", 3}}}}), json{{"lr", 1}}) == 3);
}

TEST_CASE("stored study: a damaged spec names the study and the key", "[common][stored_study]") {
  {
    auto e = read_stored_study(std::string("not json"), "broken");
    REQUIRE_FALSE(e);
    CHECK(e.error().is(ErrorKind::bad_input));
    CHECK(e.error().what == "study 'broken': its stored spec is not a JSON object");
    CHECK(e.error().where == "studies.spec_json");
    CHECK_FALSE(e.error().fix.empty());
  }
  CHECK_FALSE(read_stored_study(json::array(), "s"));

  const Error ranks = must_fail(json{{"trial", {{"ranks", "two"}}}});
  CHECK(ranks.is(ErrorKind::bad_input));
  CHECK(ranks.what == R"(study 's': its stored spec has trial.ranks = "two", expected a whole number >= 1)");
  CHECK(ranks.where == "studies.spec_json: trial.ranks");
  CHECK(ranks.message().find("fix: ") != std::string::npos);

  struct Case {
    json spec;
    std::string key;
  };
  for (const auto& [spec, key] : std::vector<Case>{
           {{{"trial", "x"}}, "trial"},
           {{{"trial", {{"ranks", 0}}}}, "trial.ranks"},
           {{{"trial", {{"ranks", 1.5}}}}, "trial.ranks"},
           {{{"trial", {{"trainer", true}}}}, "trial.trainer"},
           {{{"objective", 3}}, "objective"},
           {{{"objective", {{"metric", 1}}}}, "objective.metric"},
           {{{"objective", {{"mode", "max"}}}}, "objective.metric"},
           {{{"objective", {{"metric", "m"}, {"mode", "up"}}}}, "objective.mode"},
           {{{"objective", {{"metric", "m"}, {"target", "high"}}}}, "objective.target"},
           {{{"objective", json::array({{{"metric", "a"}}, {{"metric", "b"}, {"mode", 1}}})}}, "objective[1].mode"},
           {{{"constraints", {{"metric", "m"}}}}, "constraints"},
           {{{"constraints", json::array({1})}}, "constraints[0]"},
           {{{"constraints", json::array({{{"metric", "m"}, {"max", "9"}}})}}, "constraints[0].max"},
           {{{"constraints", json::array({{{"reached_target", "yes"}}})}}, "constraints[0].reached_target"},
           {{{"search", 1}}, "search"},
           {{{"search", {{"algorithm", 7}}}}, "search.algorithm"},
           {{{"search", {{"algorithm", "pbt"}, {"population", "four"}}}}, "search.population"},
           {{{"search", {{"algorithm", "pbt"}, {"generations", -1}}}}, "search.generations"},
           {{{"search", {{"algorithm", "pbt"}, {"interval", 2}}}}, "search.interval"},
           {{{"search", {{"algorithm", "pbt"}, {"interval", {{"by", 1}}}}}}, "search.interval.by"},
           {{{"space", "lr"}}, "space"},
           {{{"space", json::array({1})}}, "space[0]"},
       }) {
    INFO(spec.dump());
    const Error e = must_fail(spec);
    CHECK(e.where == "studies.spec_json: " + key);
    CHECK(e.what.find("study 's': its stored spec has " + key + " = ") == 0);
  }
}
