// What the samplers get of several objectives: the curve's figures folded from records,
// and the objective vector and constraint values a finished trial carries into the History.
#include <catch2/catch.hpp>

#include "engine/job_builder.hpp"
#include "engine/trial_curve.hpp"
#include "engine/trial_objectives.hpp"
#include "study/spec.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;

namespace {

protocol::Record eval(std::int64_t step, double wall, std::map<std::string, double> metrics) {
  protocol::Record r;
  r.kind = protocol::RecordKind::eval;
  r.step = step;
  r.epoch = double(step) / 10;
  r.samples = step * 32;
  r.wall_s = wall;
  r.metrics = std::move(metrics);
  return r;
}

StudySpec two_objectives() {
  auto r = parse_study(R"(name: mo
trial: {command: [prog], ranks: 2}
objective:
  - {metric: acc, mode: max, target: 0.8}
  - {metric: time_to_target_s, mode: min}
  - {metric: loss, mode: min}
constraints: [{metric: rank_seconds, max: 100}, {reached_target: true}]
space: {lr: [0.1, 0.2]}
)",
                       StudyFormat::yaml, "mo.yaml");
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("trial objectives: figures from the records, vector and constraints into the history") {
  const StudySpec spec = two_objectives();
  search::History h;
  set_directions(h, spec);
  CHECK(h.directions == std::vector<bool>{true, false, false});
  CHECK(h.constrained);

  TrialCurve c;
  const CurveAxis axis{"acc", true, 0.8};
  c.add(eval(10, 5, {{"acc", 0.5}, {"loss", 2.0}}), axis);
  c.add(eval(20, 12, {{"acc", 0.85}, {"loss", 1.0}}), axis);
  c.add(eval(30, 20, {{"acc", 0.83}, {"loss", 1.5}}), axis);
  CHECK(*c.figures.time_to_target_s == 12);
  CHECK(*c.figures.steps_to_target == 20);
  CHECK(*c.figures.wall_s == 20);

  TrialFigures f = c.figures;
  f.ranks = trial_ranks(spec, nlohmann::json{{"lr", 0.1}});
  CHECK(f.ranks == 2);
  search::TrialRecord rec;
  fill_objectives(rec, spec, f);
  CHECK(rec.values == std::vector<double>{0.85, 12, 1.0});
  REQUIRE(rec.constraints.size() == 2);
  CHECK(rec.constraints[0] == 40 - 100);  // rank_seconds 2 x 20
  CHECK(rec.constraints[1] == 0);

  // A trial that never reached the target: no time to target, so no vector; infeasible.
  TrialCurve slow;
  slow.add(eval(10, 80, {{"acc", 0.5}, {"loss", 2.0}}), axis);
  search::TrialRecord rec2;
  TrialFigures f2 = slow.figures;
  f2.ranks = 2;
  fill_objectives(rec2, spec, f2);
  CHECK(rec2.values.empty());
  CHECK(rec2.constraints == std::vector<double>{60, 1});
  CHECK(extra_metrics(spec) == std::vector<std::string>{"loss"});
}

TEST_CASE("trial objectives: one objective leaves the history as it was") {
  auto r = parse_study("name: one\ntrial: {command: [prog]}\nobjective: {metric: acc, mode: max}\nspace: {lr: [0.1]}\n",
                       StudyFormat::yaml, "one.yaml");
  REQUIRE(r.has_value());
  search::History h;
  set_directions(h, *r);
  CHECK(h.directions.empty());
  CHECK_FALSE(h.constrained);
  search::TrialRecord rec;
  TrialFigures f;
  f.add_metric("acc", 0.9);
  fill_objectives(rec, *r, f);
  CHECK(rec.values.empty());
  CHECK(rec.constraints.empty());
  CHECK(extra_metrics(*r).empty());
}

TEST_CASE("trial objectives: the first-evaluation check waits on a record of constraints alone (issue 43)") {
  auto r = parse_study(R"(name: c
trial: {command: [prog]}
objective: {metric: acc, mode: max}
constraints: [{metric: c1, max: 0}, {metric: rank_seconds, max: 100}]
space: {lr: [0.1, 0.2]}
)",
                       StudyFormat::yaml, "c.yaml");
  REQUIRE(r.has_value());
  CHECK(first_eval_check(*r, {{"acc", 0.5}}) == FirstEval::has_objective);
  CHECK(first_eval_check(*r, {{"acc", 0.5}, {"c1", 1}}) == FirstEval::has_objective);
  CHECK(first_eval_check(*r, {{"c1", -1}}) == FirstEval::undecided);         // Optuna's report(step=0, c1=...)
  CHECK(first_eval_check(*r, {{"accuracy", 0.5}}) == FirstEval::missing);    // a misnamed objective
  CHECK(first_eval_check(*r, {{"rank_seconds", 3}}) == FirstEval::missing);  // a derived figure is no report of ours
  // Several objectives: the others count as the constraints do.
  const auto mo = two_objectives();
  CHECK(first_eval_check(mo, {{"loss", 0.3}}) == FirstEval::undecided);
  CHECK(first_eval_check(mo, {{"val_loss", 0.3}}) == FirstEval::missing);
}
