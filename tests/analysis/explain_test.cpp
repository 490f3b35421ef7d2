// best --explain's evidence: the winner by seed-group mean among COMPLETE trials, B_crit and
// the regime, runner-ups within seed noise, speedups, exclusions, the refusal to fit, JSON.
#include <catch2/catch.hpp>

#include "analysis/explain.hpp"
#include "analysis/to_json.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using dlsweep::analysis::testing::study_of;
using dlsweep::analysis::testing::trial;

namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

StudyData sweep() {
  auto failed = trial(6, 1000, 0.4, 1, 150, 5.0, 0.9, "FAILED");
  failed.message = "diverged";
  return study_of({
      trial(0, 100, 0.1, 1, 1100, 110.0),
      trial(1, 1000, 0.1, 1, 200, 20.0), trial(2, 1000, 0.1, 2, 200, 22.0),  // mean 21 s
      trial(3, 1000, 0.2, 1, 200, 15.0), trial(4, 1000, 0.2, 2, 200, 30.0),  // lucky 15 s, mean 22.5 s
      trial(5, 10000, 0.1, 1, 110, 50.0),
      failed,
      trial(7, 20000, 0.1, 1, std::nullopt, {}, 0.85),
  });
}

}  // namespace

TEST_CASE("explain: the better mean wins over the lucky seed; the evidence is computed") {
  auto e = explain_best(sweep(), RankBy::time);
  REQUIRE(e.winner);
  CHECK(e.criterion == Criterion::time);
  CHECK(e.winner->trials == std::vector<std::int64_t>{1, 2});
  CHECK(e.winner->mean == Approx(21));
  CHECK(e.winner->n == 2);
  CHECK(e.complete == 7);
  CHECK(e.reached == 6);
  // S = 100 (1 + 1000/B) exactly at 100, 1000 and 10000.
  REQUIRE(e.fit);
  CHECK(e.fit->b_crit == Approx(1000).epsilon(1e-5));
  CHECK(e.fit->determined);  // exact points: a zero-width interval
  REQUIRE(e.regime);
  CHECK(*e.regime == Regime::diminishing_returns);
  // Seed noise: log(22/20) and log(30/15) within the two groups: the lucky config is within noise.
  REQUIRE(e.seed_log_sd);
  CHECK(*e.seed_log_sd == Approx(std::sqrt((std::pow(std::log(1.1), 2) + std::pow(std::log(2.0), 2)) / 4)));
  CHECK(e.runner_ups_within_noise);
  REQUIRE(e.runner_ups.size() == 1);
  CHECK(e.runner_ups[0].trials == std::vector<std::int64_t>{3, 4});
  CHECK(e.runner_ups[0].delta_rel == Approx(1.5 / 21));
  REQUIRE(e.speedup);
  CHECK(e.speedup->learning_speedup == Approx(5.5));
  CHECK(*e.speedup->time_speedup == Approx(110.0 / 21));
  REQUIRE(e.excluded.size() == 2);
  CHECK(e.excluded[0].trial == 6);
  CHECK(e.excluded[0].reason == "FAILED: failed (diverged)");
  CHECK(e.excluded[1].trial == 7);
  CHECK(e.excluded[1].reason == "COMPLETE but never reached the target (best val_acc 0.85)");
  auto text = joined(e.lines());
  CHECK(text.find("winner: trials 1,2 (base_lr=0.1, batch_size=1000)") != std::string::npos);
  CHECK(text.find("B_crit = 1000") != std::string::npos);
  CHECK(text.find("diminishing returns") != std::string::npos);
  CHECK(text.find("within seed noise") != std::string::npos);
  CHECK(text.find("learning 5.5x") != std::string::npos);
  CHECK(text.find("trial 6: FAILED") != std::string::npos);
}

TEST_CASE("explain: JSON carries the same content") {
  auto j = to_json(explain_best(sweep(), RankBy::time));
  CHECK(j["criterion"] == "time-to-target");
  CHECK(j["winner"]["trials"] == nlohmann::json{1, 2});
  CHECK(j["batch_model"]["b_crit"].get<double>() == Approx(1000).epsilon(1e-5));
  CHECK(j["regime"] == "diminishing_returns");
  CHECK(j["runner_ups"].size() == 1);
  CHECK(j["excluded"].size() == 2);
  CHECK(j["steps_to_target"]["rows"].size() == 4);
  CHECK(j["steps_to_target"]["rows"][3]["reached_target"] == false);
  CHECK(j["lines"].size() > 5);
}

TEST_CASE("explain: fewer than 3 batch sizes reaching the target: no fit, and it says why") {
  auto s = study_of({trial(0, 100, 0.1, 1, 1100, 110.0), trial(1, 1000, 0.1, 1, 200, 20.0),
                     trial(2, 10000, 0.1, 1, std::nullopt)});
  auto e = explain_best(s, RankBy::time);
  CHECK_FALSE(e.fit);
  CHECK_FALSE(e.regime);
  CHECK(joined(e.lines()).find("no batch-size model: cannot fit the batch-size model: 2 batch sizes reached the target, "
                               "at least 3 are needed") != std::string::npos);
  CHECK(joined(e.lines()).find("seed noise unknown") != std::string::npos);
}

TEST_CASE("explain: without a target the criterion is the best value, and nothing is fitted") {
  auto s = study_of({trial(0, 100, 0.1, 1, std::nullopt, {}, 0.8), trial(1, 1000, 0.1, 1, std::nullopt, {}, 0.9)},
                    std::nullopt);
  auto e = explain_best(s, RankBy::time);
  CHECK(e.criterion == Criterion::value);
  REQUIRE(e.winner);
  CHECK(e.winner->trials == std::vector<std::int64_t>{1});
  CHECK(e.fit_refusal.find("no objective target") != std::string::npos);
}

TEST_CASE("explain: no COMPLETE trial, nothing to recommend") {
  auto s = study_of({trial(0, 100, 0.1, 1, 10, 1.0, 0.9, "FAILED")});
  auto e = explain_best(s, RankBy::time);
  CHECK_FALSE(e.winner);
  CHECK(e.lines().front() == "no COMPLETE trial: nothing to recommend");
}

TEST_CASE("explain: a study that varied ranks shows its scaling efficiency, in text and JSON") {
  auto one = trial(0, 256, 0.1, 1, 100, 10.0);
  one.samples_per_s = 1000;
  one.params["ranks"] = 1;
  auto two = trial(1, 256, 0.1, 1, 100, 6.0);
  two.samples_per_s = 1600;  // strong scaling at global batch 256: speedup 1.6, efficiency 80%
  two.ranks = 2;
  two.params["ranks"] = 2;
  auto e = explain_best(study_of({one, two}), RankBy::time);
  REQUIRE(e.scaling.size() == 1);
  CHECK(e.scaling[0].resource == "ranks");
  const auto text = joined(e.lines());
  INFO(text);
  CHECK_THAT(text, Catch::Contains("strong scaling over ranks"));
  CHECK_THAT(text, Catch::Contains("ranks=2: 1600 samples/s, speedup 1.6x, efficiency 80%"));
  auto j = to_json(e);
  REQUIRE(j["scaling"].size() == 1);
  CHECK(j["scaling"][0]["resource"] == "ranks");
}

namespace {

// One COMPLETE trial per batch size with the given steps to target, each carrying B_simple = 100
// at the record that reached the target.
StudyData by_batch(const std::vector<std::pair<std::int64_t, std::int64_t>>& batch_steps) {
  std::vector<TrialData> ts;
  for (auto [b, steps] : batch_steps) {
    auto t = trial(static_cast<std::int64_t>(ts.size()), b, 0.1, 1, steps, static_cast<double>(steps) / 100.0);
    EvalPoint p;
    p.step = steps;
    p.samples = steps * b;
    p.value = 0.9;
    p.noise_scale = 100;
    t.curve.push_back(p);
    ts.push_back(t);
  }
  return study_of(ts);
}

}  // namespace

TEST_CASE("explain: an undetermined B_crit names no regime and says what data would determine it") {
  // Steps still fall about in proportion to the batch at 256: B_crit ~960, interval 235 .. 1.28e5.
  auto e = explain_best(by_batch({{32, 1000}, {64, 560}, {128, 250}, {256, 160}}), RankBy::steps);
  REQUIRE(e.fit);
  REQUIRE(e.winner);
  CHECK_FALSE(e.fit->determined);
  CHECK_FALSE(e.regime);
  const auto text = joined(e.lines());
  INFO(text);
  CHECK_THAT(text, Catch::Contains("B_crit is not determined: its 90% bootstrap interval"));
  CHECK_THAT(text, Catch::Contains(". No regime is named. To determine it: run batch sizes above 256"));
  CHECK_THAT(text, !Catch::Contains("regime of batch"));
  CHECK_THAT(text, !Catch::Contains("perfect scaling"));
  // B_simple is still reported, but not as a ratio to an undetermined B_crit.
  CHECK_THAT(text, Catch::Contains("gradient noise scale B_simple at the target: median 100"));
  CHECK_THAT(text, !Catch::Contains("B_simple / B_crit"));
  auto j = to_json(e);
  CHECK(j["batch_model"]["determined"] == false);
  CHECK_THAT(j["batch_model"]["undetermined_reason"].get<std::string>(), Catch::Contains("more than 10"));
  CHECK_THAT(j["batch_model"]["to_determine"].get<std::string>(), Catch::Contains("above 256"));
  CHECK(j["batch_model"]["regime_bands"].is_null());
  CHECK(j["regime"].is_null());
  CHECK(j["noise_scale"]["ratio_to_b_crit"].is_null());
}

TEST_CASE("explain: the README's critical-batch sweep determines B_crit and names the regime") {
  auto e = explain_best(by_batch({{32, 14070}, {64, 6786}, {128, 3276}, {256, 1829}, {512, 812}, {1024, 615},
                                  {2048, 539}, {4096, 540}}),
                        RankBy::time);
  REQUIRE(e.fit);
  CHECK(e.fit->determined);
  REQUIRE(e.winner);
  REQUIRE(e.regime);
  const auto text = joined(e.lines());
  INFO(text);
  CHECK_THAT(text, Catch::Contains("(90% bootstrap interval 795.8 .. 2555"));
  CHECK_THAT(text, Catch::Contains("regime of batch "));
  CHECK_THAT(text, !Catch::Contains("not determined"));
  CHECK_THAT(text, Catch::Contains("B_simple / B_crit = "));
  auto j = to_json(e);
  CHECK(j["batch_model"]["determined"] == true);
  CHECK(j["batch_model"]["to_determine"].is_null());
  CHECK(j["batch_model"]["regime_bands"].is_object());
}

TEST_CASE("explain: a fitted study whose program reports no noise scale says which metric would give it") {
  auto s = sweep();
  const auto text = joined(explain_best(s, RankBy::time).lines());
  CHECK_THAT(text, Catch::Contains("no trial reported the metric grad_noise_scale"));
}
