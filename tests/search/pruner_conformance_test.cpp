// Pruner conformance: every pruner of the registry, same checks — deterministic and
// order-free, nothing before warmup, no verdict without a curve, the best trial so far is
// never stopped, group_by confines the comparison, the axis is honoured, bad options are
// refused with their key. Then each pruner's own rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "search/asha_pruner.hpp"
#include "search/median_pruner.hpp"
#include "search/percentile_pruner.hpp"
#include "search/pruner.hpp"
#include "search/random_sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

struct Case {
  std::string kind;
  json options;
  bool compares;  ///< judges against other trials (not threshold)
};

std::vector<Case> cases() {
  return {
      {"median", {{"startup_trials", 2}}, true},
      {"percentile", {{"percentile", 25}, {"startup_trials", 2}}, true},
      {"threshold", {{"lower", 0.5}}, false},
      {"asha", {{"min_resource", 1}, {"reduction_factor", 2}}, true},
      {"hyperband", {{"min_resource", 1}, {"max_resource", 16}, {"reduction_factor", 2}}, true},
  };
}

std::unique_ptr<Pruner> make(const std::string& kind, json options) {
  auto p = make_pruner(kind, options);
  INFO(kind << " " << options.dump());
  REQUIRE(p.has_value());
  return std::move(*p);
}

// 40 trials: trial i's curve rises to a plateau set by its quality q_i in [0, 1); group
// "bs" 256 for even trials, 4096 for odd ones. Trials 0..29 complete, 30..39 running
// with 1..10 epochs.
History study(std::uint64_t seed = 1) {
  History h;
  SplitMix64 rng(seed);
  for (int i = 0; i < 40; ++i) {
    const double q = rng.next_unit();
    const int epochs = i < 30 ? 16 : 1 + (i - 30);
    std::vector<double> v;
    for (int e = 1; e <= epochs; ++e) v.push_back(q * (1 - std::exp(-e / 3.0)));
    TrialRecord t;
    t.number = i;
    t.params = {{"bs", i % 2 ? 4096 : 256}};
    t.curve = curve(v);
    t.status = i < 30 ? TrialStatus::complete : TrialStatus::running;
    if (i < 30) t.value = v.back();
    h.trials.push_back(std::move(t));
  }
  return h;
}

}  // namespace

TEST_CASE("pruner conformance: deterministic and independent of history order", "[search][pruner]") {
  const History h = study();
  History shuffled = h;
  std::reverse(shuffled.trials.begin(), shuffled.trials.end());
  for (const auto& c : cases()) {
    auto a = make(c.kind, c.options), b = make(c.kind, c.options);
    int pruned = 0;
    for (const auto& t : h.trials) {
      if (t.status != TrialStatus::running) continue;
      // Every prefix of the curve: the engine asks after each report.
      for (std::size_t n = 1; n <= t.curve.size(); ++n) {
        TrialRecord part = t;
        part.curve.resize(n);
        const auto d1 = a->judge(part, h), d2 = b->judge(part, shuffled);
        CHECK(d1.prune == d2.prune);
        CHECK(d1.reason == d2.reason);
        if (d1.prune) CHECK_FALSE(d1.reason.empty());
        pruned += d1.prune;
      }
    }
    INFO(c.kind);
    CHECK(pruned > 0);  // the study has losers for every rule
  }
}

TEST_CASE("pruner conformance: no curve, no verdict; nothing before warmup", "[search][pruner]") {
  const History h = study();
  for (const auto& c : cases()) {
    INFO(c.kind);
    TrialRecord empty;
    empty.number = 99;
    CHECK_FALSE(make(c.kind, c.options)->judge(empty, h).prune);
    json o = c.options;
    o["warmup"] = 100;  // beyond every curve
    auto p = make(c.kind, o);
    for (const auto& t : h.trials) CHECK_FALSE(p->judge(t, h).prune);
  }
}

TEST_CASE("pruner conformance: the best trial so far is never stopped", "[search][pruner]") {
  History h = study();
  TrialRecord best;
  best.number = 100;
  best.params = {{"bs", 256}};
  for (const auto& c : cases()) {
    INFO(c.kind);
    auto p = make(c.kind, c.options);
    for (int e = 1; e <= 16; ++e) {
      best.curve = curve(std::vector<double>(std::size_t(e), 2.0));
      CHECK_FALSE(p->judge(best, h).prune);
    }
  }
}

TEST_CASE("pruner conformance: group_by compares only within the group", "[search][pruner]") {
  // Group 4096 is much better than group 256; a 256 trial of middling quality is pruned
  // against everyone but not against its own group.
  History h;
  for (int i = 0; i < 24; ++i) {
    const bool big = i % 2;
    const double q = big ? 0.9 + 0.001 * i : 0.1 + 0.001 * i;
    TrialRecord t = complete(i, {{"bs", big ? 4096 : 256}}, q);
    t.curve = curve(std::vector<double>(16, q));
    h.trials.push_back(t);
  }
  TrialRecord mid;
  mid.number = 50;
  mid.params = {{"bs", 256}};
  for (const auto& c : cases()) {
    if (!c.compares) continue;
    INFO(c.kind);
    json grouped = c.options;
    grouped["group_by"] = {"bs"};
    auto all = make(c.kind, c.options), own = make(c.kind, grouped);
    bool pruned_all = false, pruned_own = false;
    for (int e = 1; e <= 16; ++e) {
      mid.curve = curve(std::vector<double>(std::size_t(e), 0.5));
      pruned_all = pruned_all || all->judge(mid, h).prune;
      pruned_own = pruned_own || own->judge(mid, h).prune;
    }
    if (c.kind != "hyperband") CHECK(pruned_all);  // hyperband's bracket may hold no better trial
    CHECK_FALSE(pruned_own);
  }
}

TEST_CASE("pruner conformance: the axis decides what 'the same point' is", "[search][pruner]") {
  // Completed trials are fast (10 s per epoch) and have 0.7 by epoch 2. A slow trial
  // (100 s per epoch) with 0.65 is behind by epoch; by wall_s its first report (5 s)
  // comes before anyone else's, so there is nothing to compare with yet.
  History h;
  for (int i = 0; i < 9; ++i) {
    TrialRecord t = complete(i, json::object(), 0.8);
    t.curve = curve({0.6, 0.7, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8}, 100, 10);  // fast trials
    h.trials.push_back(t);
  }
  TrialRecord slow;  // 0.65 at epoch 1 and 2, but each epoch takes 100 s
  slow.number = 20;
  slow.curve = curve({0.65, 0.65}, 100, 100);
  slow.curve[0].wall_s = 5;  // its first report comes early: by wall_s it is ahead there
  for (const std::string kind : {"median", "percentile"}) {
    json o = kind == "median" ? json{{"startup_trials", 2}} : json{{"startup_trials", 2}, {"percentile", 50}};
    o["warmup"] = 0;
    o["by"] = "epoch";
    CHECK(make(kind, o)->judge(slow, h).prune);  // epoch 2: 0.65 < 0.7
    o["by"] = "wall_s";
    TrialRecord early = slow;
    early.curve.resize(1);
    CHECK_FALSE(make(kind, o)->judge(early, h).prune);  // 5 s: nobody had a value yet
  }
}

TEST_CASE("pruner conformance: bad options are refused with their key", "[search][pruner]") {
  for (auto k : pruner_names()) {
    auto r = make_pruner(std::string(k), {{"no_such_option", 1}});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().front().key == "no_such_option");
  }
  auto bad = [](const std::string& kind, json o, const std::string& key) {
    auto r = make_pruner(kind, o);
    INFO(kind << " " << o.dump());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().front().key == key);
  };
  bad("percentile", json::object(), "percentile");
  bad("percentile", {{"percentile", 101}}, "percentile");
  bad("asha", {{"reduction_factor", 1}}, "reduction_factor");
  bad("asha", {{"min_resource", 0}}, "min_resource");
  bad("asha", {{"min_resource", 4}, {"max_resource", 2}}, "max_resource");
  bad("hyperband", {{"min_resource", 1}}, "max_resource");
  bad("threshold", {{"lower", 2}, {"upper", 1}}, "upper");
  bad("median", {{"by", "time"}}, "by");
  bad("median", {{"group_by", "bs"}}, "group_by");
  bad("median", {{"warmup", -1}}, "warmup");
  auto unknown = make_pruner("successive_halving");
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().front().key == "kind");
}

TEST_CASE("median's best_by_then variant agrees with median_rule on random studies", "[search][pruner][median]") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const History h = study(seed);
    auto p = make("median", {{"startup_trials", 3}, {"warmup", 2}, {"compare", "best_by_then"}});
    std::vector<Curve> done;
    for (const auto& t : h.trials)
      if (t.status == TrialStatus::complete) {
        Curve c;
        for (const auto& pt : t.curve) c.points.emplace_back(pt.epoch, pt.value);
        done.push_back(c);
      }
    for (const auto& t : h.trials) {
      Curve mine;
      for (const auto& pt : t.curve) mine.points.emplace_back(pt.epoch, pt.value);
      const auto old = median_rule(MedianRule{3, 2, true}, mine, t.status == TrialStatus::running ? done : std::vector<Curve>{});
      if (t.status == TrialStatus::running) CHECK(p->judge(t, h).prune == old.prune);
    }
  }
}

TEST_CASE("percentile: numpy's linear interpolation; the bar counts from the good end", "[search][pruner]") {
  CHECK(percentile_of({1, 2, 3, 4}, 50) == Approx(2.5));
  CHECK(percentile_of({1, 2, 3, 4}, 25) == Approx(1.75));
  CHECK(percentile_of({5}, 10) == 5);
  History h;
  for (int i = 0; i < 4; ++i) {
    TrialRecord t = complete(i, json::object(), i + 1);
    t.curve = curve({double(i + 1)});
    h.trials.push_back(t);
  }
  TrialRecord t;
  t.number = 9;
  t.curve = curve({3.1});
  auto top25 = make("percentile", {{"percentile", 25}, {"startup_trials", 1}, {"warmup", 0}});
  CHECK(top25->judge(t, h).prune);  // maximise: bar = 75th percentile = 3.25
  t.curve = curve({3.3});
  CHECK_FALSE(top25->judge(t, h).prune);
  h.maximize = false;  // minimise: bar = 25th percentile = 1.75
  t.curve = curve({1.8});
  CHECK(top25->judge(t, h).prune);
  t.curve = curve({1.7});
  CHECK_FALSE(top25->judge(t, h).prune);
}

TEST_CASE("threshold: bounds and non-finite values", "[search][pruner]") {
  auto p = make("threshold", {{"lower", 0.2}, {"upper", 5}, {"warmup", 1}});
  TrialRecord t;
  t.curve = curve({0.1});
  CHECK(p->judge(t, History{}).prune);
  t.curve = curve({0.3, 6});
  CHECK(p->judge(t, History{}).prune);
  t.curve = curve({0.3, 4});
  CHECK_FALSE(p->judge(t, History{}).prune);
  t.curve = curve({0.3, std::numeric_limits<double>::infinity()});
  CHECK(p->judge(t, History{}).prune);
  t.curve = curve({0.3, std::nan("")});
  CHECK(p->judge(t, History{}).prune);
}

TEST_CASE("asha: rungs at min_resource·η^k, top 1/η go on, decided once per rung", "[search][pruner][asha]") {
  AshaPruner asha(PrunerBasics{Axis::epoch, 0}, AshaOptions{1, 3, 0, std::nullopt});
  CHECK(asha.rung(0) == 1);
  CHECK(asha.rung(2) == 9);
  History h;  // 8 trials reached epoch 3 with values 1..8 (maximise)
  for (int i = 0; i < 8; ++i) {
    TrialRecord t = complete(i, json::object(), i + 1);
    t.curve = curve({double(i + 1), double(i + 1), double(i + 1)});
    h.trials.push_back(t);
  }
  TrialRecord t;
  t.number = 20;
  // At rung 0 (epoch 1) with 9 trials, the top 3 go on: 8, 7 and ours only if above 6.
  t.curve = curve({5.5});
  CHECK(asha.judge(t, h).prune);
  t.curve = curve({6.5});
  CHECK_FALSE(asha.judge(t, h).prune);
  t.curve = curve({7.5});
  CHECK_FALSE(asha.judge(t, h).prune);
  // Epoch 2 is no rung: no new decision even though many are better.
  t.curve = curve({7.5, 7.5});
  CHECK_FALSE(asha.judge(t, h).prune);
  // Rung 1 at epoch 3: the top 3 of 9 again.
  t.curve = curve({7.5, 7.5, 7.5});
  CHECK_FALSE(asha.judge(t, h).prune);
  t.curve = curve({7.5, 7.5, 5});
  CHECK_FALSE(asha.judge(t, h).prune);  // best so far is 7.5
  // Fewer than η trials at a rung: only the best goes on.
  History two;
  two.trials = {h.trials[7]};
  t.curve = curve({7.9});
  CHECK(asha.judge(t, two).prune);
  t.curve = curve({8.1});
  CHECK_FALSE(asha.judge(t, two).prune);
}

TEST_CASE("asha: with objective.rank_by final a rung compares the values reported there, not the best so far",
          "[search][pruner][asha][rank_by]") {
  AshaPruner asha(PrunerBasics{Axis::epoch, 0}, AshaOptions{1, 3, 0, std::nullopt});
  History h;  // 8 trials: 9 at epoch 1, then values 1..8 at epoch 3 (maximise)
  for (int i = 0; i < 8; ++i) {
    TrialRecord t = complete(i, json::object(), i + 1);
    t.curve = curve({9.0, 9.0, double(i + 1)});
    h.trials.push_back(t);
  }
  TrialRecord t;
  t.number = 20;
  t.curve = curve({7.5, 7.5, 7.5});
  // Best so far: every other trial brings 9 to rung 1 (epoch 3); 7.5 is not in the top 3 of 9.
  CHECK(asha.judge(t, h).prune);
  // Reported at the rung: they bring 1..8; 7.5 is (8, 7.5, 7 go on).
  h.rank_final = true;
  CHECK_FALSE(asha.judge(t, h).prune);
  t.curve = curve({7.5, 7.5, 5.5});
  const auto d = asha.judge(t, h);
  CHECK(d.prune);
  CHECK_THAT(d.reason, Catch::Contains("its value 5.5"));
}

TEST_CASE("hyperband: brackets by trial number, weighted by budget", "[search][pruner][hyperband]") {
  HyperbandPruner hb(PrunerBasics{Axis::epoch, 0}, 1, 27, 3);
  REQUIRE(hb.brackets() == 4);
  std::vector<int> count(4, 0);
  for (int n = 0; n < 4000; ++n) ++count[hb.bracket_of(n)];
  for (int c : count) CHECK(c > 0);
  // Budgets ⌈4·3^s/(s+1)⌉ for s = 3..0: 27, 12, 5, 4 — bracket 0 (most aggressive) gets the most.
  CHECK(count[0] > count[1]);
  CHECK(count[1] > count[2]);
  CHECK(hb.bracket_of(17) == hb.bracket_of(17));
}
