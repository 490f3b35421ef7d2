// The Pareto front `best` names for several objectives: non-dominated COMPLETE seed groups,
// feasible first (an infeasible trial never is on it, even when it dominates), the
// hypervolume as trials came, and what each point trades.
#include <catch2/catch.hpp>

#include "analysis/front.hpp"

using namespace dlsweep;
using namespace dlsweep::analysis;

namespace {

// A COMPLETE trial with val_acc (best over its records) and the derived figures.
TrialData trial(std::int64_t n, double acc, std::optional<double> time_to_target, double wall, std::int64_t seed = 0,
                double lr = 0) {
  TrialData t;
  t.number = n;
  t.state = "COMPLETE";
  t.params = {{"lr", lr == 0 ? double(n) : lr}, {"seed", seed}};
  t.figures.add_metric("val_acc", acc);
  t.figures.time_to_target_s = time_to_target;
  if (time_to_target) t.figures.steps_to_target = *time_to_target * 10;
  t.figures.wall_s = wall;
  t.figures.ranks = 2;
  return t;
}

StudyData two_objective_study() {
  StudyData s;
  s.name = "mo";
  s.metric = "val_acc";
  s.mode = "max";
  s.target = 0.8;
  s.objectives = {{"val_acc", true}, {"time_to_target_s", false}};
  s.trials = {trial(0, 0.90, 100, 200), trial(1, 0.85, 50, 100), trial(2, 0.84, 60, 120),  // 2 dominated by 1
              trial(3, 0.95, 300, 400), trial(4, 0.70, std::nullopt, 50)};                 // 4: never reached
  TrialData failed = trial(5, 0.99, 1, 1);
  failed.state = "FAILED";
  s.trials.push_back(failed);
  return s;
}

std::vector<std::int64_t> numbers(const StudyData& s, const ParetoFront& f) {
  std::vector<std::int64_t> out;
  for (const auto& p : f.points) out.push_back(s.trials[p.trial].number);
  return out;
}

}  // namespace

TEST_CASE("front: the non-dominated COMPLETE trials, best first objective first", "[analysis][front]") {
  const auto s = two_objective_study();
  const auto f = pareto_front(s);
  CHECK(numbers(s, f) == std::vector<std::int64_t>{3, 0, 1});
  CHECK(f.points[0].values == std::vector<double>{0.95, 300});
  CHECK(f.complete == 5);
  CHECK(f.feasible == 5);
  CHECK(f.on_front(1));
  CHECK_FALSE(f.on_front(2));
  CHECK(*f.rank[2] == 1);
  CHECK_FALSE(f.rank[4]);  // no time to target: no value, does not rank
  CHECK_FALSE(f.rank[5]);  // FAILED never ranks
  REQUIRE(f.left_out.size() == 2);
  CHECK(f.left_out[0] == std::pair<std::string, std::size_t>{"FAILED", 1});
  CHECK(f.left_out[1] == std::pair<std::string, std::size_t>{"NO VALUE", 1});
}

TEST_CASE("front: constraints put feasible trials first; the infeasible optimum never wins", "[analysis][front]") {
  auto s = two_objective_study();
  s.constraints = {{"rank_seconds", std::nullopt, 500, false}};  // trial 3: 2 x 400 = 800 s breaks it
  const auto f = pareto_front(s);
  CHECK(numbers(s, f) == std::vector<std::int64_t>{0, 1});
  CHECK(f.feasible == 4);
  CHECK(f.violation[3] == 300);
  CHECK_FALSE(f.on_front(3));
  CHECK(*f.rank[3] > *f.rank[2]);  // ranked after every feasible trial, dominated ones included
  // Nothing feasible: no front at all.
  s.constraints = {{"rank_seconds", std::nullopt, 10, false}};
  CHECK(pareto_front(s).points.empty());
}

TEST_CASE("front: seed groups are one point, by the mean of their seeds", "[analysis][front]") {
  StudyData s = two_objective_study();
  s.trials = {trial(0, 0.90, 100, 200, 1, 0.1), trial(1, 0.80, 80, 200, 2, 0.1), trial(2, 0.86, 95, 200, 0, 0.2)};
  const auto f = pareto_front(s);
  // Group {0,1}: mean (0.85, 90); trial 2: (0.86, 95): neither dominates.
  REQUIRE(f.points.size() == 2);
  CHECK(s.trials[f.points[1].trial].number == 0);
  CHECK(f.points[1].members.size() == 2);
  CHECK(f.points[1].values[0] == Approx(0.85));
  CHECK(f.points[1].values[1] == Approx(90));
}

TEST_CASE("front: hypervolume over trials grows and explain names the trade", "[analysis][front]") {
  const auto s = two_objective_study();
  const auto hv = hypervolume_over_trials(s);
  REQUIRE(hv.size() == 4);  // trials 0..3 (4 has no time to target, 5 failed)
  CHECK(hv[0].first == 0);
  for (std::size_t i = 1; i < hv.size(); ++i) CHECK(hv[i].second >= hv[i - 1].second);
  CHECK(hv[2].second == hv[1].second);  // trial 2 is dominated: adds nothing
  CHECK(hv[3].second > hv[2].second);
  const auto lines = explain_front(s, pareto_front(s));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("trial 3: val_acc 0.95 time_to_target_s 300") == 0);
  CHECK(lines[0].find("against trial 0: better val_acc +0.05; pays time_to_target_s +200") != std::string::npos);
  CHECK(lines[2].find("the best time_to_target_s of the front") != std::string::npos);
}

#include "analysis/ranking.hpp"

TEST_CASE("ranking rule 7: one objective with constraints: feasible first, infeasible never wins", "[analysis][front]") {
  StudyData s;
  s.name = "one";
  s.metric = "val_acc";
  s.mode = "max";
  for (auto [n, acc, wall] : std::vector<std::tuple<int, double, double>>{{0, 0.95, 400}, {1, 0.90, 100}, {2, 0.85, 50}}) {
    TrialData t = trial(n, acc, std::nullopt, wall);
    t.best_value = acc;
    s.trials.push_back(t);
  }
  s.constraints = {{"rank_seconds", std::nullopt, 300, false}};  // trial 0: 800 rank-seconds
  const auto r = rank(s, RankBy::value);
  REQUIRE(r.order.size() == 3);
  CHECK(*r.winner() == 1);  // the unconstrained optimum (trial 0) is infeasible
  CHECK(r.order.back().members.front() == 0);
  CHECK(r.order.back().violation == 500);
  s.constraints = {{"rank_seconds", std::nullopt, 10, false}};
  CHECK_FALSE(rank(s, RankBy::value).winner());
  s.constraints.clear();
  CHECK(*rank(s, RankBy::value).winner() == 0);
}
