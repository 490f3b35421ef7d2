// The one ranking (analysis/ranking.hpp): every rule of its header, in order — the criterion,
// COMPLETE trials only, seed groups, the values ranked (pooled times, NaN), the order of
// groups and of seeds, and its ties.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "analysis/explain.hpp"
#include "analysis/ranking.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using dlsweep::analysis::testing::study_of;
using dlsweep::analysis::testing::trial;

namespace {

std::vector<std::int64_t> numbers(const StudyData& s, const std::vector<std::size_t>& idx) {
  std::vector<std::int64_t> out;
  for (std::size_t i : idx) out.push_back(s.trials[i].number);
  return out;
}

std::optional<std::int64_t> winner(const StudyData& s, RankBy by) {
  const auto w = rank(s, by).winner();
  return w ? std::optional<std::int64_t>(s.trials[*w].number) : std::nullopt;
}

}  // namespace

TEST_CASE("ranking: --by parses the four words and names the flag otherwise", "[analysis][ranking]") {
  CHECK(*parse_rank_by("auto") == RankBy::automatic);
  CHECK(*parse_rank_by("time") == RankBy::time);
  CHECK(*parse_rank_by("steps") == RankBy::steps);
  CHECK(*parse_rank_by("value") == RankBy::value);
  const auto bad = parse_rank_by("fastest");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message(), Catch::Contains("--by") && Catch::Contains("fastest"));
  CHECK(criterion_name(Criterion::time) == "time-to-target");
  CHECK(criterion_name(Criterion::steps) == "steps-to-target");
  CHECK(criterion_name(Criterion::value) == "best value");
}

TEST_CASE("ranking rule 1: the criterion", "[analysis][ranking]") {
  CHECK(resolve_criterion(RankBy::automatic, true, 1) == Criterion::time);
  CHECK(resolve_criterion(RankBy::automatic, true, 0) == Criterion::value);
  CHECK(resolve_criterion(RankBy::automatic, false, 0) == Criterion::value);
  CHECK(resolve_criterion(RankBy::time, false, 0) == Criterion::value);
  CHECK(resolve_criterion(RankBy::steps, false, 0) == Criterion::value);
  CHECK(resolve_criterion(RankBy::value, true, 3) == Criterion::value);
  // Asked for time or steps with a target nobody reached: no winner (not a silent switch to value).
  CHECK(resolve_criterion(RankBy::time, true, 0) == Criterion::time);
  CHECK(resolve_criterion(RankBy::steps, true, 0) == Criterion::steps);
  const auto none = study_of({trial(0, 64, 0.1, 1, std::nullopt, {}, 0.8), trial(1, 128, 0.1, 1, std::nullopt, {}, 0.7)});
  CHECK_FALSE(winner(none, RankBy::time));
  CHECK_FALSE(winner(none, RankBy::steps));
  CHECK(winner(none, RankBy::automatic) == 0);  // auto ranks them by value
  CHECK(winner(none, RankBy::value) == 0);
  const auto r = rank(none, RankBy::time);
  CHECK(r.criterion == Criterion::time);
  CHECK(r.complete == 2);
  CHECK(r.reached == 0);
}

TEST_CASE("ranking rule 2: only COMPLETE trials win; the others are counted by state", "[analysis][ranking]") {
  // The non-COMPLETE trials are better on every criterion.
  const auto s = study_of({trial(0, 64, 0.1, 1, 10, 1.0, 0.99, "FAILED"), trial(1, 128, 0.1, 1, 10, 1.0, 0.99, "PRUNED"),
                           trial(2, 256, 0.1, 1, 100, 20.0, 0.90), trial(3, 512, 0.1, 1, 10, 1.0, 0.99, "CANCELLED"),
                           trial(4, 1024, 0.1, 1, 10, 1.0, 0.99, "RUNNING"), trial(5, 32, 0.1, 1, 200, 30.0, 0.89),
                           trial(6, 16, 0.1, 1, 10, 1.0, 0.99, "FAILED"), trial(7, 8, 0.1, 1, std::nullopt, {}, 0.5, "WAITING")});
  for (RankBy by : {RankBy::automatic, RankBy::time, RankBy::steps, RankBy::value}) {
    const auto r = rank(s, by);
    REQUIRE(r.winner());
    CHECK(s.trials[*r.winner()].number == 2);
    CHECK(numbers(s, r.trials()) == std::vector<std::int64_t>{2, 5});
    CHECK(r.complete == 2);
    using P = std::pair<std::string, std::size_t>;
    CHECK(r.left_out == std::vector<P>{{"FAILED", 2}, {"PRUNED", 1}, {"CANCELLED", 1}, {"RUNNING", 1}, {"WAITING", 1}});
  }
  const auto crashed = study_of({trial(0, 64, 0.1, 1, 10, 1.0, 0.95, "FAILED"), trial(1, 64, 0.2, 1, {}, {}, 0.7, "FAILED")});
  for (RankBy by : {RankBy::automatic, RankBy::value}) CHECK_FALSE(rank(crashed, by).winner());
}

TEST_CASE("ranking rule 3: a lucky seed does not beat a better mean; a group missing a value does not rank",
          "[analysis][ranking]") {
  // base_lr 0.2: 15 s and 30 s (mean 22.5); base_lr 0.1: 20 s and 22 s (mean 21).
  auto s = study_of({trial(0, 256, 0.2, 1, 100, 15.0, 0.91), trial(1, 256, 0.2, 2, 100, 30.0, 0.97),
                     trial(2, 256, 0.1, 1, 100, 22.0, 0.92), trial(3, 256, 0.1, 2, 100, 20.0, 0.93)});
  auto r = rank(s, RankBy::time);
  REQUIRE(r.order.size() == 2);
  CHECK(numbers(s, r.order[0].members) == std::vector<std::int64_t>{3, 2});  // best seed first
  CHECK(r.order[0].value.mean == Approx(21));
  CHECK(r.order[0].value.n == 2);
  CHECK(numbers(s, r.trials()) == std::vector<std::int64_t>{3, 2, 0, 1});
  // By value: 0.94 (lr 0.2) over 0.925 (lr 0.1); the seed named is the better one.
  CHECK(winner(s, RankBy::value) == 1);
  // A configuration that missed the target on a seed cannot win by time or steps ...
  s.trials[3].steps_to_target.reset();
  s.trials[3].time_to_target_s.reset();
  r = rank(s, RankBy::time);
  CHECK(winner(s, RankBy::time) == 0);
  CHECK(winner(s, RankBy::steps) == 0);
  CHECK(r.order.size() == 1);
  CHECK_FALSE(r.ranks(1));  // groups in trial order: lr 0.2, then lr 0.1
  CHECK(r.ranks(0));
  // ... but still ranks by value, where every seed has one.
  CHECK(rank(s, RankBy::value).order.size() == 2);
  // A group ranks only with every COMPLETE seed: a FAILED seed is not part of it.
  s.trials[3] = trial(3, 256, 0.1, 2, 10, 1.0, 0.99, "FAILED");
  CHECK(winner(s, RankBy::time) == 2);  // lr 0.1 is now one seed at 22 s ... and lr 0.2 averages 22.5
}

TEST_CASE("ranking rule 4: pooled times for the trainer, own times otherwise; NaN and inf are no value",
          "[analysis][ranking]") {
  // Batch 128 reaches the target at step 1000 at 10 ms/step in both trials, but trial 1's
  // own clock read 9 s; batch 512 at step 300 at 31 ms/step (9.3 s).
  auto timed = [](std::int64_t n, std::int64_t batch, std::int64_t steps, double own, double per_step) {
    TrialData t = trial(n, batch, 0.1, 1, steps, own);
    t.params["warmup_epochs"] = n;  // a different schedule each: one speed group per batch
    for (std::int64_t k = 1; k <= 10; ++k) {
      EvalPoint p;
      p.step = steps * k / 10;
      p.wall_s = static_cast<double>(p.step) * per_step;
      p.value = 0.9;
      t.curve.push_back(p);
    }
    return t;
  };
  auto s = study_of({timed(0, 128, 1000, 10.0, 0.01), timed(1, 128, 1000, 9.0, 0.01), timed(2, 128, 1000, 10.0, 0.01),
                     timed(3, 512, 300, 9.3, 0.031)});
  CHECK(winner(s, RankBy::time) == 1);  // a user program: its own clock
  s.trainer = true;
  const auto r = rank(s, RankBy::time);
  CHECK(s.trials[*r.winner()].number == 3);
  REQUIRE(r.pooled[1]);
  CHECK(r.pooled[1]->trials == 3);
  CHECK(r.order.back().values.front() == Approx(10.0));  // the pooled time is ranked ...
  CHECK(r.order[1].own.front() == Approx(9.0));          // ... the own reading kept beside it
  CHECK(winner(s, RankBy::steps) == 3);

  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  auto v = study_of({trial(0, 64, 0.1, 1, 100, 5.0, nan), trial(1, 64, 0.2, 1, 100, inf, 0.8),
                     trial(2, 64, 0.3, 1, 100, 9.0, 0.7)});
  CHECK(winner(v, RankBy::value) == 1);
  CHECK(winner(v, RankBy::time) == 0);
  CHECK(rank(v, RankBy::time).reached == 2);
  CHECK_FALSE(has_value(v.trials[0], Criterion::value));
  CHECK_FALSE(has_value(v.trials[1], Criterion::time));
  CHECK(has_value(v.trials[1], Criterion::steps) == false);  // steps need the target reached in finite time
  // A NaN seed keeps its whole configuration out of the value ranking.
  v.trials[2].params["base_lr"] = 0.1;
  CHECK(winner(v, RankBy::value) == 1);
  CHECK(rank(v, RankBy::value).order.size() == 1);
}

TEST_CASE("ranking rule 5: by value follows the mode; by steps the fewest", "[analysis][ranking]") {
  auto s = study_of({trial(0, 128, 0.1, 1, 900, 30.0, 0.90), trial(1, 1024, 0.1, 1, 300, 12.0, 0.89),
                     trial(2, 4096, 0.1, 1, std::nullopt, {}, 0.85)});
  CHECK(winner(s, RankBy::automatic) == 1);
  CHECK(rank(s, RankBy::automatic).criterion == Criterion::time);
  CHECK(winner(s, RankBy::value) == 0);
  CHECK(winner(s, RankBy::steps) == 1);
  s.mode = "min";
  CHECK(winner(s, RankBy::value) == 2);
  CHECK_FALSE(rank(s, RankBy::value).maximize);
  CHECK(numbers(s, rank(s, RankBy::value).trials()) == std::vector<std::int64_t>{2, 1, 0});
  s.target.reset();
  CHECK(rank(s, RankBy::automatic).criterion == Criterion::value);
}

TEST_CASE("ranking rule 5 ties: the own times, then the better best seed, then trial order", "[analysis][ranking]") {
  // By steps both configurations average 100 steps. Trials 0,1 (lr 0.1) took 11 and 12 s
  // (mean 11.5); trials 2,3 (lr 0.2) 10 and 14 s (mean 12): the better mean own time wins,
  // not the one quick seed (the old `best` named trial 2 here, `--explain` trials 0,1).
  auto s = study_of({trial(0, 256, 0.1, 1, 100, 11.0), trial(1, 256, 0.1, 2, 100, 12.0), trial(2, 256, 0.2, 1, 100, 10.0),
                     trial(3, 256, 0.2, 2, 100, 14.0)});
  CHECK(winner(s, RankBy::steps) == 0);
  CHECK(winner(s, RankBy::time) == 0);
  CHECK(explain_best(s, RankBy::steps).winner->trials == std::vector<std::int64_t>{0, 1});
  // Equal means of both: the group whose best seed is better (10 s against 11 s).
  s.trials[1].time_to_target_s = 13.0;
  CHECK(winner(s, RankBy::time) == 2);
  CHECK(winner(s, RankBy::steps) == 2);
  // Equal in everything: trial order.
  s.trials[0].time_to_target_s = 10.0;
  s.trials[1].time_to_target_s = 14.0;
  CHECK(winner(s, RankBy::time) == 0);
  CHECK(winner(s, RankBy::value) == 0);
  CHECK(numbers(s, rank(s, RankBy::value).trials()) == std::vector<std::int64_t>{0, 1, 2, 3});
}

TEST_CASE("ranking rule 6 ties by value: the trial that finished first, as Optuna's best_trial (issue 43)",
          "[analysis][ranking]") {
  // Four trials tie at 0.96667 (Optuna's example): the first to finish wins, whatever its number.
  auto s = study_of({trial(3, 256, 0.1, 1, std::nullopt, {}, 0.96667), trial(7, 256, 0.2, 1, std::nullopt, {}, 0.96667),
                     trial(10, 256, 0.3, 1, std::nullopt, {}, 0.96667), trial(12, 256, 0.4, 1, std::nullopt, {}, 0.96667)});
  s.target.reset();
  s.trials[0].ended_at = 400.0;
  s.trials[1].ended_at = 300.0;
  s.trials[2].ended_at = 100.0;  // trial 10 finished first
  s.trials[3].ended_at = 200.0;
  CHECK(winner(s, RankBy::value) == 10);
  CHECK(numbers(s, rank(s, RankBy::value).trials()) == std::vector<std::int64_t>{10, 12, 7, 3});
  // A better value still wins whenever it finished; an unknown end time ranks after known ones.
  s.trials[0].best_value = 0.97;
  CHECK(winner(s, RankBy::value) == 3);
  s.trials[0].best_value = 0.96667;
  s.trials[2].ended_at.reset();
  CHECK(winner(s, RankBy::value) == 12);
}

TEST_CASE("ranking rule 6: the seed named is the best of its group; by time ties go to steps, then own time",
          "[analysis][ranking]") {
  auto s = study_of({trial(0, 256, 0.1, 1, 120, 10.0, 0.90), trial(1, 256, 0.1, 2, 100, 10.0, 0.91),
                     trial(2, 256, 0.1, 3, 100, 9.0, 0.90)});
  const auto r = rank(s, RankBy::time);
  REQUIRE(r.order.size() == 1);
  CHECK(numbers(s, r.order[0].members) == std::vector<std::int64_t>{2, 1, 0});
  CHECK(numbers(s, rank(s, RankBy::steps).order[0].members) == std::vector<std::int64_t>{2, 1, 0});
  CHECK(numbers(s, rank(s, RankBy::value).order[0].members) == std::vector<std::int64_t>{1, 0, 2});
  // Explain names the group and the same seed as its best.
  const auto e = explain_best(s, RankBy::time);
  CHECK(e.winner->trials == std::vector<std::int64_t>{0, 1, 2});
  CHECK(e.winner->best_trial == 2);
}

TEST_CASE("ranking: every trial with a value, for the report's LR chart", "[analysis][ranking]") {
  // Seed group lr 0.1 (0.90, 0.80: mean 0.85) against lr 0.2 (0.86); a PRUNED trial at 0.99
  // and a COMPLETE trial without a value; a FAILED one at 0.95.
  auto s = study_of({trial(0, 256, 0.1, 1, {}, {}, 0.90), trial(1, 256, 0.1, 2, {}, {}, 0.80),
                     trial(2, 256, 0.2, 1, {}, {}, 0.86), trial(3, 256, 0.3, 1, {}, {}, 0.99, "PRUNED"),
                     trial(4, 256, 0.4, 1, {}, {}, 0.95, "FAILED"), trial(5, 256, 0.5, 1, {})});
  s.trials[5].best_value.reset();
  CHECK(numbers(s, best_value_order(s)) == std::vector<std::int64_t>{2, 0, 1, 3, 4});
}

namespace {

// A trial whose curve reports `values` in order (best_value: the best of them by `maximize`).
TrialData reporting(std::int64_t number, double lr, std::vector<double> values, bool maximize = true) {
  TrialData t = trial(number, 64, lr, 1, std::nullopt);
  t.curve.clear();
  std::optional<double> best;
  for (std::size_t i = 0; i < values.size(); ++i) {
    EvalPoint p;
    p.step = static_cast<std::int64_t>(i + 1) * 10;
    p.value = values[i];
    p.final = i + 1 == values.size();
    t.curve.push_back(p);
    if (!best || (maximize ? values[i] > *best : values[i] < *best)) best = values[i];
  }
  t.best_value = best;
  return t;
}

}  // namespace

TEST_CASE("ranking rule 4: objective.rank_by final ranks by each trial's final report, best by its best",
          "[analysis][ranking][rank_by]") {
  // Trial 0 peaked (0.95) and fell back to 0.70; trial 1 climbed steadily to 0.85.
  auto s = study_of({reporting(0, 0.1, {0.80, 0.95, 0.70}), reporting(1, 0.2, {0.60, 0.75, 0.85})}, std::nullopt);
  CHECK(winner(s, RankBy::value) == 0);
  CHECK(winner(s, RankBy::automatic) == 0);
  CHECK_FALSE(rank(s, RankBy::value).final);
  s.rank_final = true;
  CHECK(winner(s, RankBy::value) == 1);
  CHECK(winner(s, RankBy::automatic) == 1);
  const auto r = rank(s, RankBy::value);
  CHECK(r.final);
  REQUIRE(r.order.size() == 2);
  CHECK(r.order[0].values == std::vector<double>{0.85});
  CHECK(r.order[1].values == std::vector<double>{0.70});
  CHECK(criterion_name(r.criterion, r.final) == "final value");
  CHECK(numbers(s, best_value_order(s)) == std::vector<std::int64_t>{1, 0});
  CHECK(*s.objective_value(s.trials[0]) == Approx(0.70));
  s.rank_final = false;
  CHECK(numbers(s, best_value_order(s)) == std::vector<std::int64_t>{0, 1});
  CHECK(*s.objective_value(s.trials[0]) == Approx(0.95));

  // Mode min, and seeds: the group mean is over the final reports.
  auto m = study_of({reporting(0, 0.1, {0.5, 0.1, 0.6}, false), reporting(1, 0.2, {0.5, 0.4, 0.3}, false)},
                    std::nullopt);
  m.mode = "min";
  CHECK(winner(m, RankBy::value) == 0);
  m.rank_final = true;
  CHECK(winner(m, RankBy::value) == 1);

  // A COMPLETE trial with no report of the objective has no final value: it cannot win, and
  // --explain says why.
  auto none = study_of({reporting(0, 0.1, {0.9}), reporting(1, 0.2, {})}, std::nullopt);
  none.trials[1].best_value = 0.99;  // a best from an earlier attempt, none in the current one
  none.rank_final = true;
  CHECK(winner(none, RankBy::value) == 0);
  const auto e = explain_best(none, RankBy::value);
  CHECK(e.final);
  REQUIRE(e.winner);
  CHECK(e.winner->best_trial == 0);
  bool excluded = false;
  for (const auto& x : e.excluded) excluded |= x.trial == 1;
  CHECK(excluded);
  bool said = false;
  for (const auto& line : e.lines()) said |= line.find("final val_acc") != std::string::npos;
  CHECK(said);
}
