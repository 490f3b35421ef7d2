// report_model_test.cpp — the report model built from databases written through db/: an
// empty study, one trial, the synthetic study with every state, and what the stored study says
// (ranks, a pbt lineage, a damaged spec).
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "common/pbt_link.hpp"
#include "report/report_model.hpp"
#include "report_test_support.hpp"
#include "synthetic_study.hpp"

using namespace dlsweep;
using namespace dlsweep::report;
using namespace dlsweep::report::testing;
using nlohmann::json;

TEST_CASE("a study with no trials gives a valid, empty model") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "empty", 0));
  auto ro = must(db::Storage::open_readonly(dir / "r.db"));
  json m = must(build_report_model(*ro, "empty"));
  CHECK(m["version"] == kModelVersion);
  CHECK(m["study"]["name"] == "empty");
  CHECK(m["study"]["objective_target"] == 0.88);
  CHECK(m["trials"].empty());
  CHECK(m["curves"].empty());
  CHECK(m["history"].empty());
  CHECK(m["pareto"].empty());
  CHECK(m["importance"]["values"].empty());
  CHECK(m["importance"]["note"] != "");
}

TEST_CASE("an unknown study is an error naming the known ones") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "known", 1));
  auto m = build_report_model(*s, "nope");
  REQUIRE_FALSE(m);
  CHECK(m.error().is(ErrorKind::not_found));
  CHECK_THAT(m.error().message(), Catch::Contains("nope") && Catch::Contains("known"));
}

TEST_CASE("the synthetic study's model holds every trial, its curves and what reached the target") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  const SynthStudy syn = must(write_synthetic_study(*s, "synth", 120));
  auto ro = must(db::Storage::open_readonly(dir / "r.db"));
  json m = must(build_report_model(*ro, "synth"));
  REQUIRE(m["trials"].size() == syn.trials.size());
  std::set<std::string> states;
  std::size_t with_curve = 0, complete = 0, reached = 0;
  for (std::size_t i = 0; i < syn.trials.size(); ++i) {
    const auto& t = syn.trials[i];
    const json& mt = m["trials"][i];
    INFO("trial " << t.number);
    CHECK(mt["number"] == t.number);
    CHECK(mt["state"] == std::string(to_string(t.state)));
    states.insert(mt["state"].get<std::string>());
    CHECK(mt["batch_size"] == t.batch);
    CHECK(mt["ranks"] == t.ranks);
    const std::string key = std::to_string(t.number);
    if (t.records > 0) {
      ++with_curve;
      REQUIRE(m["curves"].contains(key));
      CHECK(m["curves"][key]["objective"].size() == static_cast<std::size_t>(t.records));
      CHECK(m["curves"][key]["lr"].size() == static_cast<std::size_t>(t.records));
      CHECK(mt["value"].get<double>() == Approx(t.last_value));
    } else {
      CHECK_FALSE(m["curves"].contains(key));
      CHECK(mt["value"].is_null());
    }
    if (t.first_reached >= 0) {
      ++reached;
      CHECK(mt["steps_to_target"].is_number());
      CHECK(mt["rank_seconds_to_target"].get<double>() == Approx(mt["time_to_target_s"].get<double>() * t.ranks));
    } else {
      CHECK(mt["steps_to_target"].is_null());
    }
    if (t.state == TrialState::complete) ++complete;
    if (t.state == TrialState::failed) CHECK_THAT(mt["message"].get<std::string>(), Catch::Contains("diverged"));
  }
  CHECK(states == std::set<std::string>{"COMPLETE", "RUNNING", "PRUNED", "FAILED", "CANCELLED", "WAITING"});
  CHECK(m["curves"].size() == with_curve);
  CHECK(m["history"].size() == complete);
  CHECK(m["per_batch"].size() == 10);
  std::size_t counted = 0, counted_reached = 0;
  for (const auto& b : m["per_batch"]) {
    counted += b["trials"].get<std::size_t>();
    counted_reached += b["reached"].get<std::size_t>();
  }
  CHECK(counted == syn.trials.size());
  CHECK(counted_reached == reached);
  CHECK(m["lr_trials"].size() == 5);
  CHECK(m["varying_params"] == json({"base_lr", "batch_size", "optimizer", "ranks", "seed"}));
  // batch_size drives the time to target: it must explain a share of the objective's variance.
  CHECK_FALSE(m["importance"]["values"].empty());
  // Ranks 1 and 2 at every batch size: one scaling series per batch with two points.
  REQUIRE(m["scaling"].size() == 10);
  for (const auto& sc : m["scaling"]) CHECK(sc["points"].size() == 2);
  // History: best so far never gets worse (mode max).
  double best = -1;
  for (const auto& h : m["history"]) {
    CHECK(h["best_so_far"].get<double>() >= best);
    best = h["best_so_far"].get<double>();
  }
}

TEST_CASE("curves are thinned to the cap, keeping the first and last point") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "thin", 1));
  ModelOptions o;
  o.max_points_per_curve = 5;
  json m = must(build_report_model(*s, "thin", o));
  const json& c = m["curves"]["0"];
  REQUIRE(c["step"].size() == 5);
  CHECK(c["step"][0] == 660);  // 2 * S(32) / 20 = 2 * 6600 / 20
  CHECK(c["step"][4] == 13200);  // 2 * S(32)
}

TEST_CASE("list_studies_model lists every study with its counts") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "a", 0));
  must(write_synthetic_study(*s, "b", 8));
  json l = must(list_studies_model(*s));
  REQUIRE(l.size() == 2);
  CHECK(l[0]["name"] == "a");
  CHECK(l[1]["counts"]["COMPLETE"] == 5);  // 3 PRUNED, 5 FAILED, 7 WAITING
}

TEST_CASE("the stored study: ranks by the one rule, a pbt lineage's searched params, a damaged spec named") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  // trial.ranks 3; a trial's `ranks` parameter wins.
  db::NewStudy ns{"r", R"({"trial": {"ranks": 3}})", "r.yaml", "runs", "val_acc", "max", std::nullopt};
  const auto sid = must(s->create_study(ns));
  must(s->create_trial(sid, 0, {{"ranks", 2}}, "runs/0"));
  must(s->create_trial(sid, 1, {{"lr", 0.1}}, "runs/1"));
  json m = must(build_report_model(*s, "r"));
  REQUIRE(m["trials"].size() == 2);
  CHECK(m["trials"][0]["ranks"] == 2);
  CHECK(m["trials"][1]["ranks"] == 3);

  // A pbt study: the lineage card's axis, counts and each link's searched params, read from the
  // stored spec (whose space is a list of one-key maps, as to_json writes it).
  ns = {"p", R"({"search": {"algorithm": "pbt", "population": 1, "generations": 1, "interval": {"by": "step", "every": 5}},
                 "space": [{"lr": {"log_uniform": [0.001, 0.1]}}]})", "p.yaml", "runs", "val_acc", "max", std::nullopt};
  const auto pid = must(s->create_study(ns));
  const auto tid = must(s->create_trial(pid, 0, {{"lr", 0.01}, {"stop_at", 5}}, "runs/p0"));
  PbtLink link;
  link.axis = "step";
  link.end = 5;
  db::EventRow e;
  e.study_id = pid;
  e.trial_id = tid;
  e.who = "orchestrator";
  e.kind = kPbtEventKind;
  e.reason = link.to_json().dump();
  must(s->note_event(e));
  m = must(build_report_model(*s, "p"));
  CHECK(m["pbt"]["axis"] == "step");
  CHECK(m["pbt"]["population"] == 1);
  CHECK(m["pbt"]["generations"] == 1);
  REQUIRE(m["pbt"]["links"].size() == 1);
  CHECK(m["pbt"]["links"][0]["params"] == json{{"lr", 0.01}});

  // A stored spec with a key of the wrong type: the report says which study and which key.
  ns = {"broken", R"({"trial": {"ranks": "two"}})", "b.yaml", "runs", "val_acc", "max", std::nullopt};
  must(s->create_study(ns));
  auto bad = build_report_model(*s, "broken");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message(), Catch::Contains("study 'broken'") && Catch::Contains("trial.ranks"));
}

TEST_CASE("a retried trial's curve holds every attempt's points, tagged; a study without a batch size hides its cards") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  db::NewStudy ns;
  ns.name = "retried";
  ns.spec_json = json{{"name", "retried"}, {"trial", {{"command", {"python3", "train.py"}}}}}.dump();
  ns.source_path = "retried.yaml";
  ns.root_dir = "runs/retried";
  ns.objective_metric = "val_acc";
  ns.objective_mode = "max";
  const auto sid = must(s->create_study(ns));
  const auto tid = must(s->create_trial(sid, 0, {{"optimizer", "adam"}, {"lr", 0.01}}, "runs/0"));
  auto recs = [](int first, int last) {
    std::vector<protocol::Record> out;
    for (int e = first; e <= last; ++e) {
      protocol::Record r;
      r.seq = e - 1;
      r.kind = protocol::RecordKind::eval;
      r.step = 50 * e;
      r.epoch = e;
      r.metrics = {{"val_acc", 0.5 + 0.1 * e}};
      out.push_back(std::move(r));
    }
    return out;
  };
  must(s->ingest(tid, 0, recs(1, 2)));  // the first attempt: epochs 1-2, then it failed
  must(s->ingest(tid, 1, recs(3, 4)));  // the retry resumed at epoch 3
  json m = must(build_report_model(*s, "retried"));
  const json& c = m["curves"]["0"];
  CHECK(c["step"] == json({50, 100, 150, 200}));
  CHECK(c["attempt"] == json({0, 0, 1, 1}));
  CHECK(c["objective"].size() == 4);
  CHECK(m["batch_space"]["present"] == false);
  CHECK(m["batch_space"]["hide"] == true);
  CHECK(m["batch_space"]["reason"].get<std::string>().find("batch_size") != std::string::npos);
  // Thinned, each attempt keeps its first and last point.
  ModelOptions o;
  o.max_points_per_curve = 2;
  json thin = must(build_report_model(*s, "retried", o));
  CHECK(thin["curves"]["0"]["step"] == json({50, 100, 150, 200}));
}

TEST_CASE("a study with a batch size keeps its batch-size cards") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "batch", 3));
  json m = must(build_report_model(*s, "batch"));
  CHECK(m["batch_space"]["present"] == true);
  CHECK(m["batch_space"]["hide"] == false);
  CHECK(m["curves"]["0"]["attempt"].size() == m["curves"]["0"]["step"].size());
}

TEST_CASE("batch_over_training: the log records' batch decisions of a trial, with B_simple where measured") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  db::NewStudy ns;
  ns.name = "adaptive";
  ns.spec_json = json{{"name", "adaptive"}, {"trial", {{"command", {"python3", "train.py"}}}}}.dump();
  ns.source_path = "adaptive.yaml";
  ns.root_dir = "runs/adaptive";
  ns.objective_metric = "val_acc";
  ns.objective_mode = "max";
  const auto sid = must(s->create_study(ns));
  const auto adaptive = must(s->create_trial(sid, 0, {{"batch_size", 64}, {"batch_ramp", "adaptive"}}, "runs/0"));
  const auto fixed = must(s->create_trial(sid, 1, {{"batch_size", 64}, {"batch_ramp", "none"}}, "runs/1"));
  std::vector<protocol::Record> recs;
  auto rec = [](int seq, protocol::RecordKind kind, std::int64_t step, json metrics) {
    protocol::Record r;
    r.seq = seq;
    r.kind = kind;
    r.step = step;
    r.epoch = step / 100.0;
    r.metrics = std::move(metrics);
    return r;
  };
  recs.push_back(rec(0, protocol::RecordKind::log, 10, {{"batch_size", 64}, {"lr", 0.1}}));  // kept: no estimate yet
  recs.push_back(rec(1, protocol::RecordKind::log, 20, {{"batch_size", 128}, {"lr", 0.14}, {"grad_noise_scale", 150.0}}));
  recs.push_back(rec(2, protocol::RecordKind::eval, 25, {{"val_acc", 0.8}, {"batch_size", 128}}));
  recs.push_back(rec(3, protocol::RecordKind::log, 30, {{"batch_size", 256}, {"lr", 0.2}, {"grad_noise_scale", 300.0}}));
  must(s->ingest(adaptive, 0, recs));
  must(s->ingest(fixed, 0, {rec(0, protocol::RecordKind::eval, 25, {{"val_acc", 0.7}})}));
  json m = must(build_report_model(*s, "adaptive"));
  const json& bot = m["batch_over_training"];
  CHECK(bot["trials"] == json({0}));  // the fixed trial made no decision
  const json& c = bot["curves"]["0"];
  CHECK(c["step"] == json({10, 20, 30}));
  CHECK(c["batch_size"] == json({64.0, 128.0, 256.0}));
  CHECK(c["grad_noise_scale"] == json({nullptr, 150.0, 300.0}));
  CHECK(c["attempt"] == json({0, 0, 0}));
  // The log records are not curve points: the curve has the eval record only.
  CHECK(m["curves"]["0"]["step"] == json({25}));
}
