// The words of plain `dlsweep best` (orchestrator/cmd_best_text.hpp) over the one ranking
// (analysis/ranking.hpp, whose rules tests/analysis/ranking_test.cpp checks): what it names,
// what it counts, params to 4 significant digits, and that it names the trial --explain's
// winner names as its best seed.
#include <catch2/catch.hpp>

#include "analysis/explain.hpp"
#include "analysis/ranking.hpp"
#include "orchestrator/cmd_best_text.hpp"

using namespace dlsweep::analysis;
using dlsweep::orch::best_explanation;
using dlsweep::orch::left_out_text;
using dlsweep::orch::params_brief;

namespace {

TrialData trial(std::int64_t n, const char* state, std::optional<double> best, std::optional<double> ttt = {},
                std::optional<std::int64_t> steps = {}) {
  TrialData t;
  t.number = n;
  t.state = state;
  t.params = {{"batch_size", 64 << n}};
  t.best_value = best;
  t.time_to_target_s = ttt;
  t.steps_to_target = steps;
  return t;
}

StudyData study(std::vector<TrialData> ts, std::optional<double> target = 0.88, const char* mode = "max") {
  StudyData s;
  s.name = "s";
  s.metric = "val_acc";
  s.mode = mode;
  s.target = target;
  s.trials = std::move(ts);
  return s;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  return all;
}

}  // namespace

TEST_CASE("best: a trial that reached the target and then diverged cannot win; the rest are counted") {
  const auto s = study({trial(0, "FAILED", 0.95, 1.0, 10), trial(1, "COMPLETE", 0.90, 5.0, 50),
                        trial(2, "COMPLETE", 0.89, 7.0, 70), trial(3, "PRUNED", 0.5)});
  for (RankBy by : {RankBy::automatic, RankBy::time, RankBy::steps, RankBy::value}) {
    const auto r = rank(s, by);
    REQUIRE(r.winner());
    CHECK(s.trials[*r.winner()].number == 1);
    CHECK(left_out_text(r) == "left out: 1 FAILED, 1 PRUNED (only COMPLETE trials can win)");
    CHECK_THAT(best_explanation(s, r).front(), Catch::StartsWith("trial 1 (batch_size=128)"));
  }
  const auto crashed = study({trial(0, "FAILED", 0.95, 1.0, 10), trial(1, "FAILED", 0.7)});
  const auto r = rank(crashed, RankBy::automatic);
  CHECK_FALSE(r.winner());
  CHECK(best_explanation(crashed, r).empty());
  CHECK_THAT(left_out_text(r), Catch::Contains("2 FAILED"));
  CHECK(left_out_text(rank(study({trial(0, "COMPLETE", 0.9)}), RankBy::value)).empty());
}

TEST_CASE("best picks time-to-target when a target was reached, else the best value, and says so") {
  auto s = study({trial(0, "COMPLETE", 0.90, 30.0, 900), trial(1, "COMPLETE", 0.89, 12.0, 300),
                  trial(2, "COMPLETE", 0.85)});
  s.trials[0].params = {{"batch_size", 128}};
  s.trials[1].params = {{"batch_size", 1024}};
  s.trials[2].params = {{"batch_size", 4096}};
  auto by_time = best_explanation(s, rank(s, RankBy::automatic));
  CHECK(by_time.at(0) == "trial 1 (batch_size=1024) reached val_acc >= 0.88 in 12 s and 300 steps");
  CHECK(by_time.at(1) == "2 of 3 complete trials reached the target");
  CHECK(by_time.at(2) == "runner-up: trial 0 (batch_size=128) in 30 s and 900 steps");
  auto by_value = best_explanation(s, rank(s, RankBy::value));
  CHECK(by_value.at(0) == "trial 0 (batch_size=128) has the highest val_acc: 0.9");
  // By value it says how many reached the target, not that none did.
  CHECK(by_value.at(1) == "2 of 3 complete trials reached the target 0.88 (`--by time` ranks them by time-to-target)");
  CHECK(by_value.at(2) == "runner-up: trial 1 (batch_size=1024) with 0.89");
  s.mode = "min";
  CHECK_THAT(best_explanation(s, rank(s, RankBy::value)).at(0), Catch::StartsWith("trial 2 (batch_size=4096) has the lowest"));
  const auto none = study({trial(0, "COMPLETE", 0.8), trial(1, "COMPLETE", 0.7)});
  CHECK(best_explanation(none, rank(none, RankBy::value)).at(1) == "no complete trial reached the target 0.88");
}

TEST_CASE("best: the seed note gives the configuration's mean; the trial named is --explain's best seed") {
  // base_lr 0.2: seeds at 15 s and 30 s (mean 22.5); base_lr 0.1: 20 s and 22 s (mean 21).
  auto seeded = [](std::int64_t n, double lr, int seed, double ttt) {
    TrialData t = trial(n, "COMPLETE", 0.9, ttt, 100);
    t.params = {{"batch_size", 256}, {"base_lr", lr}, {"seed", seed}};
    return t;
  };
  const auto s = study({seeded(0, 0.2, 1, 15.0), seeded(1, 0.2, 2, 30.0), seeded(2, 0.1, 1, 22.0), seeded(3, 0.1, 2, 20.0)});
  const auto r = rank(s, RankBy::time);
  const auto all = joined(best_explanation(s, r));
  CHECK_THAT(all, Catch::StartsWith("trial 3 (base_lr=0.1, seed=2)"));
  CHECK_THAT(all, Catch::Contains("(its configuration: mean 21 s over 2 seeds, std 1.41 s)"));
  CHECK_THAT(all, Catch::Contains("runner-up: trial 0 (base_lr=0.2, seed=1) in 15 s and 100 steps (its configuration: "
                                  "mean 22.5 s over 2 seeds"));
  const auto e = explain_best(s, RankBy::time);
  REQUIRE(e.winner);
  CHECK(e.winner->trials == std::vector<std::int64_t>{2, 3});
  CHECK(e.winner->best_trial == s.trials[*r.winner()].number);
  CHECK_THAT(all, !Catch::Contains("tie"));
  // Equal mean steps: the sentence says that the mean time decided.
  const auto steps = best_explanation(s, rank(s, RankBy::steps));
  CHECK(steps.back() == "the two tie on the mean steps; the lower mean time to target decides (21 s against 22.5 s)");
}

TEST_CASE("best: by time, the pooled time is named when several trials share it") {
  auto s = study({trial(0, "COMPLETE", 0.90, 10.0, 1000), trial(1, "COMPLETE", 0.90, 9.0, 1000),
                  trial(2, "COMPLETE", 0.90, 9.5, 300)});
  auto r = rank(s, RankBy::time);
  REQUIRE(r.winner());
  CHECK(*r.winner() == 1);  // a user program: its own clock
  CHECK(joined(best_explanation(s, r)).find("pooled") == std::string::npos);
  r.pooled[1] = PooledTime{10.1, 3};
  r.pooled[2] = PooledTime{9.5, 1};
  const auto lines = best_explanation(s, r);
  CHECK_THAT(lines.front(), Catch::Contains("in 9 s (pooled over the 3 trials that train at its speed: 10.1 s)"));
  CHECK_THAT(lines.back(), !Catch::Contains("pooled"));  // a group of one says nothing
}

TEST_CASE("best: params in the explanation have 4 significant digits; one complete trial is 'trial'") {
  auto s = study({trial(0, "COMPLETE", 0.95, 9.0, 90), trial(1, "FAILED", 0.90)});
  s.trials[0].params = {{"base_lr", 0.021039895028383833}, {"batch_size", 64}, {"opt", "sgd"}};
  s.trials[1].params = {{"base_lr", 0.3}, {"batch_size", 128}, {"opt", "sgd"}};
  const auto lines = best_explanation(s, rank(s, RankBy::automatic));
  CHECK_THAT(lines.at(0), Catch::Contains("(base_lr=0.02104, batch_size=64)"));
  CHECK(lines.at(1) == "1 of 1 complete trial reached the target");
  CHECK_THAT(best_explanation(s, rank(s, RankBy::value)).at(1),
             Catch::StartsWith("1 of 1 complete trial reached the target 0.88"));

  CHECK(params_brief(s.trials[0].params) == "base_lr=0.02104, batch_size=64, opt=sgd");
  CHECK(params_brief({{"wd", 1.0e-5}, {"warmup", true}, {"lr", 0.1}}) == "lr=0.1, warmup=true, wd=1e-05");
  nlohmann::json only = {{"opt", true}};
  CHECK(params_brief(s.trials[0].params, &only) == "opt=sgd");
}

TEST_CASE("best: an objective or constraint on a metric no COMPLETE trial reported is named, with what they did report") {
  auto t0 = trial(0, "COMPLETE", 0.9), t1 = trial(1, "FAILED", {});
  t0.figures.add_metric("val_acc", 0.9);
  t0.figures.add_metric("mem_gb", 5);
  t1.figures.add_metric("throughput", 7);  // not COMPLETE: does not count as reported
  auto s = study({t0, t1});
  s.objectives = {{"val_acc", true}, {"throughput", false}, {"time_to_target_s", false}};
  s.constraints = {{"gpu_mem", std::nullopt, 80.0, false}, {"", std::nullopt, std::nullopt, true}, {"mem_gb", {}, 8.0, false}};
  const std::string text = dlsweep::orch::never_reported_text(s);
  INFO(text);
  CHECK(text.starts_with("throughput (objective), gpu_mem (constraint) were never reported by a COMPLETE trial"));
  CHECK(text.find("(they reported: mem_gb, val_acc)") != std::string::npos);
  CHECK(text.find("time_to_target_s") == std::string::npos);  // a derived figure, not a reported metric
  // Every name reported, or no COMPLETE trial to tell: nothing to say.
  s.objectives.resize(1);
  s.constraints.resize(2);
  s.constraints[0].metric = "mem_gb";
  CHECK(dlsweep::orch::never_reported_text(s).empty());
  CHECK(dlsweep::orch::never_reported_text(study({t1})).empty());
}

TEST_CASE("best: which checkpoint holds the winning model, by objective.rank_by", "[orchestrator][best][rank_by]") {
  using dlsweep::orch::CheckpointRecord;
  using dlsweep::orch::ranked_by_text;
  using dlsweep::orch::winner_model_text;
  TrialData t = trial(3, "COMPLETE", 0.95);
  for (int i = 0; i < 3; ++i) {
    EvalPoint p;
    p.step = (i + 1) * 10;
    p.value = std::vector<double>{0.80, 0.95, 0.70}[static_cast<std::size_t>(i)];
    t.curve.push_back(p);
  }
  const std::vector<CheckpointRecord> per_epoch = {{10, 1, "ck/e1.pt"}, {20, 2, "ck/e2.pt"}, {30, 3, "ck/e3.pt"}};
  const std::vector<CheckpointRecord> overwritten = {{10, 1, "ck/last.pt"}, {20, 2, "ck/last.pt"}, {30, 3, "ck/last.pt"}};
  // final: the last checkpoint, whatever the files are called.
  CHECK_THAT(winner_model_text(t, true, per_epoch), Catch::Contains("last checkpoint (ck/e3.pt, step 30"));
  CHECK_THAT(winner_model_text(t, true, overwritten), Catch::Contains("last checkpoint (ck/last.pt, step 30"));
  // best: the best report's own checkpoint while no later record names its file.
  CHECK_THAT(winner_model_text(t, false, per_epoch), Catch::Contains("best report's checkpoint (ck/e2.pt, step 20"));
  const auto gone = winner_model_text(t, false, overwritten);
  CHECK_THAT(gone, Catch::Contains("not the best report's model") && Catch::Contains("step 20") &&
                       Catch::Contains("rank_by: final"));
  CHECK_THAT(winner_model_text(t, false, {{10, 1, "a.pt"}, {30, 3, "b.pt"}}), Catch::Contains("not the best report's model"));
  // The best report is the last: the last checkpoint is its own.
  TrialData last = t;
  last.best_value = 0.70;
  CHECK_THAT(winner_model_text(last, false, overwritten), Catch::Contains("best report's checkpoint (ck/last.pt, step 30"));
  // A best report with no checkpoint at its step at all.
  CHECK_THAT(winner_model_text(t, false, {{10, 1, "ck/e1.pt"}}), Catch::Contains("(step 20) has no checkpoint"));
  CHECK_THAT(winner_model_text(t, false, {}), Catch::Contains("recorded no checkpoint"));
  CHECK_THAT(ranked_by_text(true), Catch::Contains("ranked by final report (objective.rank_by: final)"));
  CHECK_THAT(ranked_by_text(false), Catch::Contains("ranked by best report (objective.rank_by: best, the default)"));
}

TEST_CASE("best: with rank_by final the sentences give each trial's final report", "[orchestrator][best][rank_by]") {
  auto s = study({trial(0, "COMPLETE", 0.95), trial(1, "COMPLETE", 0.85)}, std::nullopt);
  for (auto& [t, last] : {std::pair{&s.trials[0], 0.70}, std::pair{&s.trials[1], 0.85}}) {
    EvalPoint p;
    p.step = 30;
    p.value = last;
    t->curve.push_back(p);
  }
  s.rank_final = true;
  const auto r = rank(s, RankBy::value);
  const auto lines = best_explanation(s, r);
  REQUIRE(lines.size() >= 2);
  CHECK_THAT(lines[0], Catch::StartsWith("trial 1") && Catch::Contains("highest final val_acc: 0.85"));
  CHECK_THAT(lines[1], Catch::Contains("runner-up: trial 0") && Catch::Contains("with 0.7"));
}

TEST_CASE("best: a plain hyperparameter search is told 'best trial', a schedule study 'best schedule' (issue 43)",
          "[orchestrator][best]") {
  using dlsweep::orch::schedule_study;
  StudyData s;
  TrialData t;
  t.params = {{"lr", 0.1}, {"dropout", 0.2}};
  s.trials = {t};
  CHECK_FALSE(schedule_study(s));  // a user program searching lr and dropout
  s.trials[0].params["batch_size"] = 256;
  CHECK(schedule_study(s));  // it searches the batch size
  s.trials[0].params.erase("batch_size");
  s.trials[0].params["batch_ramp"] = "adaptive";
  CHECK(schedule_study(s));
  s.trials[0].params.erase("batch_ramp");
  s.trainer = true;  // dlsweep's trainer: always a schedule
  CHECK(schedule_study(s));
}
