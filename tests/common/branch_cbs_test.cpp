// The critical batch by branching (common/branch_cbs.hpp): the per-point rule on hand-computed
// values — a determined point, one the noise does not decide, a capped one, a maximised
// objective, an LR grid, one seed, a missing reference — and the schedule that follows the
// curve (suffix minimum, merging) with its batch_ramp text. Every expected figure below is
// worked out in the comments from the values given.
#include <catch2/catch.hpp>

#include <cmath>

#include "common/branch_cbs.hpp"

using namespace dlsweep;
using Catch::Detail::Approx;

namespace {

// Seeds of one (batch, LR factor) cell: trial numbers from `first` on.
void add(std::vector<BranchValue>& v, std::int64_t batch, std::vector<double> values, double lr_factor = 1,
         std::int64_t first = 0) {
  std::int64_t seed = 0;
  for (double x : values) v.push_back({batch, lr_factor, seed++, x, first++});
}

const BatchStat& stat(const PointAnswer& a, std::int64_t batch) {
  for (const auto& b : a.batches)
    if (b.batch == batch) return b;
  FAIL("batch " << batch << " not in the answer");
  return a.batches.front();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("branch rule: a determined point", "[common][branch_cbs]") {
  // 64: {1.995, 2.005}: mean 2, sd = sqrt(2 * 0.005^2) = 0.00707, s^2/n = 2.5e-5. tau = 0.01 * 2 = 0.02.
  // 128: {2, 2}: worse 0, se = sqrt(0 + 2.5e-5) = 0.005: 0 + 2 * 0.005 <= 0.02, surely within.
  // 256: {2.095, 2.105}: worse 0.1, se = sqrt(2 * 2.5e-5) = 0.00707: 0.1 - 0.0141 > 0.02, not even possibly.
  std::vector<BranchValue> v;
  add(v, 64, {1.995, 2.005}, 1, 10);
  add(v, 128, {2.0, 2.0}, 1, 20);
  add(v, 256, {2.095, 2.105}, 1, 30);
  const BranchRule rule{{64, 128, 256}, 0.01, false, 2};
  const PointAnswer a = branch_point_answer(2, 1.5, v, rule);
  CHECK(a.point == 2);
  CHECK(a.at == 1.5);
  REQUIRE(a.batches.size() == 3);
  CHECK(stat(a, 64).mean == Approx(2.0));
  CHECK(stat(a, 64).sd == Approx(std::sqrt(2 * 0.005 * 0.005)));
  CHECK(stat(a, 128).se == Approx(0.005));
  CHECK(stat(a, 256).worse == Approx(0.1));
  CHECK(stat(a, 256).se == Approx(std::sqrt(5e-5)));
  CHECK(stat(a, 128).surely);
  CHECK_FALSE(stat(a, 256).possibly);
  CHECK(stat(a, 64).trials == std::vector<std::int64_t>{10, 11});
  REQUIRE(a.lo);
  REQUIRE(a.hi);
  CHECK(*a.lo == 128);
  CHECK(*a.hi == 128);
  CHECK(a.determined);
  CHECK_FALSE(a.capped);
  CHECK(a.min_seeds == 2);
  CHECK(a.why.starts_with("128 ("));
  CHECK(has(a.why, "256"));
  // The JSON carries the answer and the evidence.
  const auto j = a.to_json();
  CHECK(j["batch"] == 128);
  CHECK(j["interval"] == nlohmann::json::array({128, 128}));
  CHECK(j["determined"] == true);
  CHECK(j["batches"].size() == 3);
  // The order of the values does not matter.
  std::vector<BranchValue> r(v.rbegin(), v.rend());
  CHECK(branch_point_answer(2, 1.5, r, rule).lo == a.lo);
}

TEST_CASE("branch rule: within only by noise is undetermined", "[common][branch_cbs]") {
  // 128: {1.98, 2.04}: mean 2.01, worse 0.01, sd = sqrt(2 * 0.03^2), s^2/n = 9e-4;
  // se = sqrt(9e-4 + 2.5e-5) = 0.0304: 0.01 + 0.061 > 0.02 (not surely), 0.01 - 0.061 <= 0.02 (possibly).
  std::vector<BranchValue> v;
  add(v, 64, {1.995, 2.005});
  add(v, 128, {1.98, 2.04});
  add(v, 256, {2.095, 2.105});
  const PointAnswer a = branch_point_answer(1, 1, v, {{64, 128, 256}, 0.01, false, 2});
  CHECK(stat(a, 128).se == Approx(std::sqrt(9e-4 + 2.5e-5)));
  CHECK_FALSE(stat(a, 128).surely);
  CHECK(stat(a, 128).possibly);
  CHECK(*a.lo == 64);
  CHECK(*a.hi == 128);
  CHECK_FALSE(a.determined);
  CHECK_FALSE(a.capped);
  CHECK(a.why.starts_with("[64, 128] (undetermined"));
  CHECK(has(a.why, "noise"));
  CHECK(has(a.why, "more seeds"));
  CHECK(a.to_json()["batch"].is_null());
  // A looser tolerance (5%: tau = 0.1): 128 surely (0.01 + 0.061 <= 0.1); 256 only possibly
  // (0.1 + 2 * 0.00707 > 0.1, 0.1 - 0.0141 <= 0.1): [128, 256], capped at the largest batch tried.
  const PointAnswer loose = branch_point_answer(1, 1, v, {{64, 128, 256}, 0.05, false, 2});
  CHECK(*loose.lo == 128);
  CHECK(*loose.hi == 256);
  CHECK(loose.capped);
  CHECK_FALSE(loose.determined);
}

TEST_CASE("branch rule: every batch within is capped", "[common][branch_cbs]") {
  std::vector<BranchValue> v;
  add(v, 64, {1.995, 2.005});
  add(v, 128, {2.0, 2.0});
  add(v, 256, {2.0, 2.0});  // worse 0, se 0.005: surely
  const PointAnswer a = branch_point_answer(1, 1, v, {{64, 128, 256}, 0.01, false, 2});
  CHECK(*a.lo == 256);
  CHECK(*a.hi == 256);
  CHECK(a.determined);
  CHECK(a.capped);
  CHECK(a.why.starts_with("at least 256"));
  CHECK(has(a.why, "branch larger batches"));
}

TEST_CASE("branch rule: a maximised objective", "[common][branch_cbs]") {
  // Accuracy. 64 and 128: {0.899, 0.901}: mean 0.9, s^2/n = 1e-6 each; tau = 0.009.
  // 256: {0.95, 0.95}: better, worse = 0.9 - 0.95 < 0: surely. 512: {0.8, 0.8}: worse 0.1, se 0.001: not possibly.
  std::vector<BranchValue> v;
  add(v, 64, {0.899, 0.901});
  add(v, 128, {0.899, 0.901});
  add(v, 256, {0.95, 0.95});
  add(v, 512, {0.8, 0.8});
  const BranchRule rule{{64, 128, 256, 512}, 0.01, true, 2};
  const PointAnswer a = branch_point_answer(1, 1, v, rule);
  CHECK(stat(a, 256).worse == Approx(-0.05));
  CHECK(stat(a, 512).worse == Approx(0.1));
  CHECK(stat(a, 128).se == Approx(std::sqrt(2e-6)));
  CHECK(*a.lo == 256);
  CHECK(*a.hi == 256);
  CHECK(a.determined);
  // Read as a loss instead, 256 (0.05 higher) is beyond 1% of 0.9: the critical batch is 128.
  BranchRule as_min = rule;
  as_min.maximize = false;
  CHECK(*branch_point_answer(1, 1, v, as_min).hi == 128);
}

TEST_CASE("branch rule: per batch, the LR factor with the best mean", "[common][branch_cbs]") {
  // 64: x1 {0.99, 1.01} mean 1.0, x2 {1.09, 1.11} mean 1.1: x1 kept.
  // 256: x1 {1.19, 1.21} mean 1.2, x2 {0.995, 1.005} mean 1.0: x2 kept; worse 0,
  // se = sqrt(1e-4 + 2.5e-5) = 0.01118; tau = 0.05 * 1 = 0.05: surely.
  std::vector<BranchValue> v;
  add(v, 64, {0.99, 1.01}, 1, 0);
  add(v, 64, {1.09, 1.11}, 2, 2);
  add(v, 256, {1.19, 1.21}, 1, 4);
  add(v, 256, {0.995, 1.005}, 2, 6);
  const PointAnswer a = branch_point_answer(1, 2, v, {{64, 256}, 0.05, false, 2});
  CHECK(stat(a, 64).lr_factor == 1);
  CHECK(stat(a, 256).lr_factor == 2);
  CHECK(stat(a, 256).mean == Approx(1.0));
  CHECK(stat(a, 256).trials == std::vector<std::int64_t>{6, 7});
  CHECK(stat(a, 256).se == Approx(std::sqrt(1e-4 + 2.5e-5)));
  CHECK(*a.lo == 256);
  CHECK(a.capped);
  // Without the grid (factor 1 only), 256 is worse by 0.2: the critical batch is 64.
  std::erase_if(v, [](const BranchValue& b) { return b.lr_factor != 1; });
  const PointAnswer one = branch_point_answer(1, 2, v, {{64, 256}, 0.05, false, 2});
  CHECK(*one.lo == 64);
  CHECK(*one.hi == 64);
  CHECK(one.determined);
}

TEST_CASE("branch rule: one seed has no noise estimate", "[common][branch_cbs]") {
  std::vector<BranchValue> v;
  add(v, 64, {2.0});
  add(v, 128, {2.0});
  add(v, 256, {2.5});
  const PointAnswer a = branch_point_answer(1, 1, v, {{64, 128, 256}, 0.01, false, 2});
  CHECK(a.min_seeds == 1);
  CHECK_FALSE(a.determined);
  CHECK(*a.lo == 64);  // never surely without a noise estimate
  CHECK_FALSE(stat(a, 128).surely);
  CHECK(stat(a, 256).possibly);  // nor surely out
  CHECK(has(a.why, "more seeds"));
  CHECK(std::isinf(stat(a, 128).se));
  CHECK(a.to_json()["batches"][1]["se"].is_null());  // JSON has no infinity
  // Two seeds on the reference but one on 128, which alone decides: still undetermined.
  std::vector<BranchValue> w;
  add(w, 64, {1.995, 2.005});
  add(w, 128, {3.0});
  const PointAnswer b = branch_point_answer(1, 1, w, {{64, 128}, 0.01, false, 2});
  CHECK_FALSE(b.determined);
  CHECK(b.min_seeds == 1);
}

TEST_CASE("branch rule: a missing reference or batch", "[common][branch_cbs]") {
  std::vector<BranchValue> v;
  add(v, 128, {2.0, 2.0});
  add(v, 256, {2.0, 2.0});
  const PointAnswer a = branch_point_answer(3, 4, v, {{64, 128, 256}, 0.01, false, 2});
  CHECK_FALSE(a.lo);
  CHECK_FALSE(a.hi);
  CHECK_FALSE(a.determined);
  CHECK(a.min_seeds == 0);
  CHECK(has(a.why, "64"));
  CHECK(a.to_json()["interval"].is_null());
  // 128 missing between two measured batches: nothing is known past it.
  std::vector<BranchValue> w;
  add(w, 64, {1.995, 2.005});
  add(w, 256, {2.0, 2.0});
  const PointAnswer b = branch_point_answer(3, 4, w, {{64, 128, 256}, 0.01, false, 2});
  CHECK(*b.lo == 64);
  CHECK(*b.hi == 64);
  CHECK_FALSE(b.determined);
  CHECK(b.min_seeds == 0);
  CHECK(has(b.why, "128"));
  // A value at a batch the rule does not list is left out.
  add(w, 128, {2.0, 2.0});
  add(w, 999, {2.0, 2.0});
  const PointAnswer c = branch_point_answer(3, 4, w, {{64, 128, 256}, 0.01, false, 2});
  CHECK(c.batches.size() == 3);
  CHECK(*c.lo == 256);
}

TEST_CASE("branch schedule: the suffix minimum, merged stages, the ramp text", "[common][branch_cbs]") {
  auto point = [](double at, std::optional<std::int64_t> lo) {
    PointAnswer p;
    p.at = at;
    p.lo = lo;
    p.hi = lo;
    return p;
  };
  // lo over the points: 128, 512, 256, 1024, (none), 1024. The suffix minimum: 128, 256, 256, 1024, 1024;
  // merged: 0 -> 64 (the trunk), 1 -> 128, 2 -> 256, 4 -> 1024.
  const std::vector<PointAnswer> pts{point(1, 128), point(2, 512), point(3, 256), point(4, 1024), point(5, std::nullopt),
                                     point(6, 1024)};
  const auto s = branch_schedule(pts, 64);
  REQUIRE(s.size() == 4);
  CHECK(s[0].at == 0);
  CHECK(s[0].batch == 64);
  CHECK(s[1].at == 1);
  CHECK(s[1].batch == 128);
  CHECK(s[2].at == 2);
  CHECK(s[2].batch == 256);
  CHECK(s[3].at == 4);
  CHECK(s[3].batch == 1024);
  CHECK(ramp_text(s) == "0:64,1:128,2:256,4:1024");
  // A first point at the trunk's batch merges into the start; fractions keep their digits.
  const auto t = branch_schedule({point(0.5, 64), point(1.25, 256)}, 64);
  REQUIRE(t.size() == 2);
  CHECK(ramp_text(t) == "0:64,1.25:256");
  // Nothing measured: the trunk's batch throughout; samples stay whole numbers.
  CHECK(ramp_text(branch_schedule({point(1, std::nullopt)}, 32)) == "0:32");
  CHECK(ramp_text({{0, 32}, {3000000, 128}}) == "0:32,3000000:128");
}

TEST_CASE("branch role: JSON round trip", "[common][branch_cbs]") {
  BranchRole r;
  r.point = 2;
  r.at = 1.5;
  r.batch = 256;
  r.lr_factor = 0.5;
  r.seed = 1;
  r.round = 1;
  const auto back = BranchRole::from_json(r.to_json());
  REQUIRE(back);
  CHECK_FALSE(back->trunk);
  CHECK(back->point == 2);
  CHECK(back->at == 1.5);
  CHECK(back->batch == 256);
  CHECK(back->lr_factor == 0.5);
  CHECK(back->seed == 1);
  CHECK(back->round == 1);
  CHECK(r.to_json()["role"] == "branch");
  r.trunk = true;
  CHECK(BranchRole::from_json(r.to_json())->trunk);
  CHECK_FALSE(BranchRole::from_json(nullptr));
  CHECK_FALSE(BranchRole::from_json({{"role", "member"}}));
}

TEST_CASE("branch rule: the batches above the first surely out are not needed (the upward scan skips them)",
          "[common][branch_cbs]") {
  std::vector<BranchValue> v;
  add(v, 64, {1.0, 1.001});
  add(v, 128, {2.0, 2.001});  // surely out
  const PointAnswer a = branch_point_answer(1, 1, v, {{64, 128, 256, 512}, 0.01, false, 2});
  CHECK(a.determined);
  CHECK(*a.lo == 64);
  CHECK(*a.hi == 64);
  CHECK(a.min_seeds == 2);  // 256 and 512, never branched, change nothing
  CHECK(has(a.why, "determined: 128 is worse"));
}
