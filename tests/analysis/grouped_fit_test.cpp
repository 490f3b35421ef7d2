// The batch-size model per value of a parameter (analysis/grouped_fit.hpp,
// docs/math.md#the-batch-size-model-per-group): groups are fitted separately, a group that
// cannot be fitted says so, intervals are there, and two groups with clearly different
// B_crit come out in the right order.
#include <catch2/catch.hpp>

#include <cmath>

#include "analysis/grouped_fit.hpp"
#include "analysis/to_json.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using namespace dlsweep::analysis::testing;

namespace {

// Steps to target from S(B) = s_min (1 + b_crit / B), with a fixed +-3% wobble.
std::int64_t model_steps(double s_min, double b_crit, std::int64_t batch, int k) {
  const double wobble = 1.0 + 0.03 * ((k % 3) - 1);
  return static_cast<std::int64_t>(std::llround(s_min * (1 + b_crit / static_cast<double>(batch)) * wobble));
}

TrialData with_optimizer(TrialData t, const std::string& optimizer) {
  t.params["optimizer"] = optimizer;
  return t;
}

// Two optimizers over batch 64..16384: sgd with B_crit 500, lars with B_crit 4000.
StudyData two_optimizers() {
  std::vector<TrialData> ts;
  std::int64_t n = 0;
  int k = 0;
  for (std::int64_t b = 64; b <= 16384; b *= 2, ++k) {
    ts.push_back(with_optimizer(trial(n++, b, 0.1, 1, model_steps(200, 500, b, k)), "sgd"));
    ts.push_back(with_optimizer(trial(n++, b, 0.1, 1, model_steps(150, 4000, b, k + 1)), "lars"));
  }
  return study_of(std::move(ts));
}

const GroupFit& group(const GroupedFit& g, const std::string& label) {
  for (const auto& x : g.groups)
    if (x.label == label) return x;
  FAIL("no group " << label);
  return g.groups.front();
}

}  // namespace

TEST_CASE("grouped fit: each value is fitted on its own trials, with an interval") {
  const StudyData s = two_optimizers();
  auto g = fit_by_group(s, "optimizer");
  REQUIRE(g);
  REQUIRE(g->groups.size() == 2);
  CHECK(g->groups[0].label == "sgd");  // order of first appearance
  CHECK(g->groups[1].label == "lars");
  for (const auto& x : g->groups) {
    CHECK(x.trials == 9);
    CHECK(x.complete == 9);
    CHECK(x.batch_sizes == 9);
    CHECK(x.points.size() == 9);
    REQUIRE(x.fit);
    CHECK(x.cannot_fit.empty());
    CHECK(x.fit->resamples > 0);
    CHECK(x.fit->b_crit_lo <= x.fit->b_crit);
    CHECK(x.fit->b_crit <= x.fit->b_crit_hi);
    CHECK(x.fit->b_crit_lo < x.fit->b_crit_hi);
  }
  // Each fit sees its own group only: close to the B_crit its steps were made with.
  CHECK(group(*g, "sgd").fit->b_crit == Approx(500).epsilon(0.25));
  CHECK(group(*g, "lars").fit->b_crit == Approx(4000).epsilon(0.25));
}

TEST_CASE("grouped fit: clearly different B_crit come out in the right order, intervals apart") {
  auto g = fit_by_group(two_optimizers(), "optimizer");
  REQUIRE(g);
  const auto& sgd = *group(*g, "sgd").fit;
  const auto& lars = *group(*g, "lars").fit;
  CHECK(sgd.b_crit < lars.b_crit);
  CHECK(sgd.b_crit_hi < lars.b_crit_lo);
  CHECK(sgd.determined);
  CHECK(lars.determined);
  const auto lines = g->lines();
  REQUIRE(lines.size() == 4);  // heading, two groups, one comparison
  CHECK(lines[3].find("optimizer=lars vs optimizer=sgd") != std::string::npos);
  CHECK(lines[3].find("do not overlap") != std::string::npos);
}

TEST_CASE("grouped fit: a group with one batch size says it cannot be fitted") {
  StudyData s = two_optimizers();
  s.trials.push_back(with_optimizer(trial(100, 1024, 0.01, 1, 400), "lamb"));
  s.trials.push_back(with_optimizer(trial(101, 1024, 0.02, 1, 380), "lamb"));
  auto g = fit_by_group(s, "optimizer");
  REQUIRE(g);
  const auto& lamb = group(*g, "lamb");
  CHECK_FALSE(lamb.fit);
  CHECK(lamb.cannot_fit.find("cannot fit") != std::string::npos);
  CHECK(lamb.cannot_fit.find("1 batch size") != std::string::npos);
  CHECK(lamb.trials == 2);
  CHECK(lamb.batch_sizes == 1);
  REQUIRE(lamb.points.size() == 1);
  CHECK(lamb.points[0].steps == 380);  // the batch size's best
  const auto j = to_json(*g);
  bool found = false;
  for (const auto& x : j["groups"]) {
    if (x["label"] != "lamb") continue;
    found = true;
    CHECK(x["b_crit"].is_null());
    CHECK(x["b_crit_lo"].is_null());
    CHECK(x["fit"].is_null());
    CHECK(x["cannot_fit"].get<std::string>().find("cannot fit") != std::string::npos);
    CHECK(x["fitted_batch_sizes"] == 1);
  }
  CHECK(found);
  bool line = false;
  for (const auto& l : g->lines()) line = line || l.find("optimizer=lamb: cannot fit") != std::string::npos;
  CHECK(line);
}

TEST_CASE("grouped fit: the largest batch within 1.5x the epochs of the group's smallest batch") {
  // samples = steps x batch: 64 -> 64000, 128 -> 70400 (1.1x), 256 -> 89600 (1.4x),
  // 512 -> 102400 (1.6x, over the budget), 1024 -> 92160 (1.44x, within it again).
  std::vector<TrialData> ts = {trial(0, 64, 0.1, 1, 1000), trial(1, 128, 0.1, 1, 550), trial(2, 256, 0.1, 1, 350),
                               trial(3, 512, 0.1, 1, 200), trial(4, 1024, 0.1, 1, 90), trial(5, 2048, 0.1, 1, std::nullopt)};
  for (auto& t : ts) t.params["lr_rule"] = "sqrt";
  auto g = fit_by_group(study_of(ts), "lr_rule");
  REQUIRE(g);
  REQUIRE(g->groups.size() == 1);
  const auto& x = g->groups[0];
  CHECK(x.reference_batch == 64);
  CHECK(x.largest_batch_within_budget == 1024);
  CHECK(*x.largest_batch_epochs_ratio == Approx(1.44));
  const auto j = to_json(*g)["groups"][0];
  CHECK(j["epochs_reference_batch"] == 64);
  CHECK(j["largest_batch_within_1_5x_epochs"] == 1024);
}

TEST_CASE("grouped fit: trials without the parameter form a group of their own") {
  StudyData s = two_optimizers();
  s.trials.push_back(trial(200, 256, 0.1, 1, 300));  // no optimizer param
  auto g = fit_by_group(s, "optimizer");
  REQUIRE(g);
  REQUIRE(g->groups.size() == 3);
  CHECK(g->groups[2].label == "(unset)");
  CHECK(g->groups[2].value.is_null());
  CHECK_FALSE(g->groups[2].fit);
}

TEST_CASE("grouped fit: an unknown parameter names the study's parameters") {
  auto g = fit_by_group(two_optimizers(), "optimiser");
  REQUIRE_FALSE(g);
  CHECK(g.error().what.find("'optimiser'") != std::string::npos);
  CHECK(g.error().fix.find("base_lr, batch_size, optimizer, seed") != std::string::npos);
  auto b = fit_by_group(two_optimizers(), "batch_size");
  REQUIRE_FALSE(b);
  CHECK(b.error().what.find("batch_size") != std::string::npos);
}

TEST_CASE("grouped fit: without a target no group is fitted") {
  StudyData s = two_optimizers();
  s.target.reset();
  auto g = fit_by_group(s, "optimizer");
  REQUIRE(g);
  for (const auto& x : g->groups) {
    CHECK_FALSE(x.fit);
    CHECK(x.cannot_fit.find("no objective target") != std::string::npos);
  }
}

TEST_CASE("categorical parameters: strings and booleans with 2..8 values, never batch_size or seed") {
  StudyData s = two_optimizers();
  for (auto& t : s.trials) t.params["nesterov"] = t.number % 2 == 0;
  const auto names = categorical_parameters(s);
  CHECK(names == std::vector<std::string>{"nesterov", "optimizer"});
}
