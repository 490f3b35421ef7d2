// report_branch_test.cpp — the report model's critical-batch card of a branching study
// (report/branch_cbs_model.hpp), from a database written through db/ (branch_study.hpp), checked
// against the answer computed by hand from the branches' final values.
#include <catch2/catch.hpp>

#include <cmath>

#include "report/report_model.hpp"
#include "report_test_support.hpp"
#include "branch_study.hpp"
#include "synthetic_study.hpp"

using namespace dlsweep;
using namespace dlsweep::report;
using namespace dlsweep::report::testing;
using nlohmann::json;

TEST_CASE("a branching study's critical batch: per point, its interval, the schedule and the trunk's B_simple") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_branch_study(*s, "cbs"));
  auto ro = must(db::Storage::open_readonly(dir / "r.db"));
  const json m = must(build_report_model(*ro, "cbs"));
  REQUIRE(m["branch"].is_object());
  const json& b = m["branch"];
  CHECK(b["axis"] == "epoch");
  CHECK(b["metric"] == "val_loss");
  CHECK(b["mode"] == "min");
  CHECK(b["points"] == json({1.0, 2.0}));
  CHECK(b["batches"] == json({32, 64, 128}));
  CHECK(b["trunk_batch"] == 32);
  CHECK(b["delta"] == 0.5);
  CHECK(b["seeds"] == 2);
  CHECK(b["max_seeds"] == 3);
  CHECK(b["scan"] == "upward");
  CHECK(b["trunk"] == json({0, 1, 8}));

  // Every branch, with its value: the final record at its end (not the eval before it at the
  // same position, 7.0, nor the one halfway, 9.0); none for the two that never got there.
  REQUIRE(b["branches"].size() == 14);
  for (const json& r : b["branches"]) {
    INFO(r.dump());
    const auto n = r["trial"].get<std::int64_t>();
    if (n >= 15) {
      CHECK(r["value"].is_null());
      CHECK(r["round"] == 1);
      CHECK(r["state"] == (n == 15 ? "RUNNING" : "FAILED"));
      continue;
    }
    const auto g = r["point"].get<std::size_t>(), seed = r["seed"].get<std::size_t>();
    const std::size_t j = r["batch"] == 32 ? 0 : r["batch"] == 64 ? 1 : 2;
    CHECK(r["value"].get<double>() == kBranchValues[g - 1][seed][j]);
    CHECK(r["end"].get<double>() == r["at"].get<double>() + 0.5);
    CHECK(r["state"] == "COMPLETE");
  }

  // By hand (z = 2, tolerance 1% of the smallest batch's mean, minimised):
  // at 1: m(32) = 1.001, s = 0.0014142 (n 2), tau = 0.01001. 64: m 1.002, worse 0.001,
  //   se = sqrt(2e-6/2 + 2e-6/2) = 0.0014142, worse + 2 se = 0.00383 <= tau: surely within.
  //   128: m 1.101, worse 0.1, worse - 2 se = 0.0972 > tau: not even possibly. [64, 64].
  // at 2: m(32) = 0.801, tau = 0.00801. 64: m 0.802, s 0.0028284, se = sqrt(8e-6/2 + 2e-6/2) =
  //   0.0022361, worse + 2 se = 0.00547 <= tau: surely. 128: m 0.810, s 0.028284, se = 0.020025,
  //   worse 0.009: + 2 se = 0.049 > tau, - 2 se = -0.031 <= tau: possibly. [64, 128], undetermined,
  //   capped (128 is the largest batch tried). The two unfinished third seeds count nothing.
  REQUIRE(b["answers"].size() == 2);
  const json& a1 = b["answers"][0];
  const json& a2 = b["answers"][1];
  CHECK(a1["point"] == 1);
  CHECK(a1["at"] == 1.0);
  CHECK(a1["lo"] == 64);
  CHECK(a1["hi"] == 64);
  CHECK(a1["determined"] == true);
  CHECK(a1["capped"] == false);
  CHECK(a1["min_seeds"] == 2);
  CHECK(a2["point"] == 2);
  CHECK(a2["at"] == 2.0);
  CHECK(a2["lo"] == 64);
  CHECK(a2["hi"] == 128);
  CHECK(a2["determined"] == false);
  CHECK(a2["capped"] == true);
  CHECK(a2["min_seeds"] == 2);
  CHECK_FALSE(a2["why"].get<std::string>().empty());
  REQUIRE(a2["batches"].size() == 3);
  const json& b128 = a2["batches"][2];
  CHECK(b128["batch"] == 128);
  CHECK(b128["n"] == 2);
  CHECK(b128["mean"].get<double>() == Approx(0.810));
  CHECK(b128["sd"].get<double>() == Approx(0.02 * std::sqrt(2.0)));
  CHECK(b128["worse"].get<double>() == Approx(0.009));
  CHECK(b128["se"].get<double>() == Approx(std::sqrt(0.0008 / 2 + 0.000002 / 2)));
  CHECK(b128["surely"] == false);
  CHECK(b128["possibly"] == true);
  CHECK(b128["trials"] == json({11, 14}));
  CHECK(a2["batches"][1]["surely"] == true);
  CHECK(a1["batches"][2]["possibly"] == false);

  // The schedule: 32 from 0, then lo = 64 from the first point on (the second's 64 merged).
  CHECK(b["schedule"] == json({{{"at", 0.0}, {"batch", 32}}, {{"at", 1.0}, {"batch", 64}}}));
  CHECK(b["ramp"] == "0:32,1:64");
  CHECK(a1["schedule_batch"] == 64);
  CHECK(a2["schedule_batch"] == 64);

  // B_simple: the trunk's reports > 0, by position (the 0 at 2.5 was not measured; the branch's 999 is not the trunk's).
  REQUIRE(b["noise"].size() == 5);
  std::vector<double> at, bs;
  std::vector<std::int64_t> trials;
  for (const json& p : b["noise"]) {
    at.push_back(p["at"].get<double>());
    bs.push_back(p["b_simple"].get<double>());
    trials.push_back(p["trial"].get<std::int64_t>());
  }
  CHECK(at == std::vector<double>{0.5, 1.0, 1.5, 2.0, 3.0});
  CHECK(bs == std::vector<double>{40, 60, 90, 120, 200});
  CHECK(trials == std::vector<std::int64_t>{0, 0, 1, 1, 8});
}

TEST_CASE("a study that is not a branching study has no critical-batch card") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "plain", 3));
  const json m = must(build_report_model(*s, "plain"));
  REQUIRE(m.contains("branch"));
  CHECK(m["branch"].is_null());
}

TEST_CASE("a branching study with no branch yet: every point unmeasured, the schedule the trunk's batch") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  db::NewStudy ns{"fresh",
                  json{{"search", {{"algorithm", "branch"}, {"points", {1000, 4000}}, {"by", "samples"}, {"batches", {64, 256}},
                                   {"delta", 500}}}}
                      .dump(),
                  "fresh.yaml", "runs", "val_acc", "max", std::nullopt};
  must(s->create_study(ns));
  const json m = must(build_report_model(*s, "fresh"));
  const json& b = m["branch"];
  REQUIRE(b.is_object());
  CHECK(b["axis"] == "samples");
  CHECK(b["mode"] == "max");
  CHECK(b["branches"].empty());
  CHECK(b["noise"].empty());
  REQUIRE(b["answers"].size() == 2);
  for (const json& a : b["answers"]) {
    CHECK(a["lo"].is_null());
    CHECK(a["hi"].is_null());
    CHECK(a["determined"] == false);
    CHECK(a["schedule_batch"] == 64);
  }
  CHECK(b["schedule"] == json({{{"at", 0.0}, {"batch", 64}}}));
  CHECK(b["ramp"] == "0:64");
}
