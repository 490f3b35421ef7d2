// report_chromium_test.cpp — `dlsweep report` pages opened in headless Chromium: 0, 1 and
// 500 synthetic trials (written through db/, every state) and a real study run by the
// trainer on Fashion-MNIST. Each page: 0 console errors/exceptions/log errors, no network
// request, no URL in the HTML, every chart with the expected number of datasets and points
// (read through Chart.js's API), a re-render (what serve does) that keeps the same charts,
// and a screenshot in build/tests/report/screenshots/ to look at (with the page beside it;
// DLSWEEP_SHOT_CARDS=DIR adds one PNG per chart card).
#include <catch2/catch.hpp>

#include <limits>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/load.hpp"
#include "analysis/target_table.hpp"
#include "branch_study.hpp"
#include "chromium_support.hpp"
#include "db/storage.hpp"
#include "program_study.hpp"
#include "report/report_model.hpp"
#include "synthetic_study.hpp"
#include "tests/e2e/multi_objective_fixture.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace dlsweep;
using namespace dlsweep::report::testing;

namespace {

fs::path shot_dir() {
  fs::path d = DLSWEEP_REPORT_SHOT_DIR;
  fs::create_directories(d);
  return d;
}

// Writes the report with the real CLI and checks it in Chromium; returns the probe's JSON.
json report_in_chromium(const fs::path& db, const std::string& study, const fs::path& dir, const std::string& shot) {
  const fs::path html = dir / (study + ".html");
  auto r = run_dlsweep(db, {"report", study, "-o", html.string()}, dir);
  INFO("dlsweep report: " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(html);
  const std::string page((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  // The page is kept beside its screenshot (build dir), for a person to open.
  fs::copy_file(html, shot_dir() / fs::path(shot).replace_extension(".html"), fs::copy_options::overwrite_existing);
  json probe = check_in_chromium(html, shot_dir() / shot);
  INFO("probe: " << probe.dump());
  CHECK(probe["errors"] == json::array());
  CHECK(probe["requests"] == json::array());
  CHECK(probe["html_has_url"] == false);
  CHECK(probe["external"] == json::array());
  CHECK(probe["rendered"] == "1");
  // Rendering again (serve's update) draws the same charts and leaves no chart behind.
  CHECK(probe["rerender"]["rendered"] == "2");
  CHECK(probe["rerender"]["counts"] == probe["charts"]);
  CHECK(probe["rerender"]["live"] == probe["rerender"]["canvases"]);
  CHECK(fs::file_size(shot_dir() / shot) > 10000);
  return probe;
}

std::vector<std::size_t> sizes(const json& probe, const std::string& chart) {
  INFO("chart " << chart << " in " << probe["charts"].dump());
  REQUIRE(probe["charts"].contains(chart));
  return probe["charts"][chart].get<std::vector<std::size_t>>();
}

std::size_t total(const std::vector<std::size_t>& v) {
  std::size_t n = 0;
  for (auto x : v) n += x;
  return n;
}

}  // namespace

TEST_CASE("reports of 0, 1 and 500 synthetic trials, every state, in Chromium") {
  const fs::path dir = fresh_dir("report-chromium");
  const fs::path db = dir / "synthetic.db";
  std::map<std::string, SynthStudy> studies;
  {
    auto s = db::Storage::open_readwrite(db);
    REQUIRE(s);
    for (auto [name, n] : {std::pair<const char*, int>{"zero", 0}, {"one", 1}, {"five-hundred", 500}, {"no-target", 40}}) {
      auto st = write_synthetic_study(**s, name, n, std::string(name) != "no-target");
      INFO((st ? "" : st.error().message()));
      REQUIRE(st);
      studies[name] = *st;
    }
  }

  SECTION("0 trials: every chart says why it is empty") {
    json p = report_in_chromium(db, "zero", dir, "synthetic-0.png");
    CHECK(p["charts"].empty());
    CHECK(p["table_rows"].is_null());
    CHECK(p["grouped_fits"].empty());
    for (const char* id : {"convergence", "steps-to-target", "time-to-target", "noise-scale", "throughput-batch", "lr",
                           "parallel", "pareto", "history", "importance", "trials"})
      CHECK(p["empty"].contains(id));
  }

  SECTION("no objective target: the to-target charts say so, the others draw") {
    json p = report_in_chromium(db, "no-target", dir, "synthetic-no-target.png");
    for (const char* id : {"steps-to-target", "time-to-target", "pareto"}) CHECK(p["empty"].contains(id));
    std::size_t with_curve = 0;
    for (const auto& t : studies["no-target"].trials) with_curve += t.records > 0;
    CHECK(sizes(p, "convergence-step").size() == with_curve);
    CHECK(p["table_rows"] == 40);
  }

  SECTION("1 trial") {
    json p = report_in_chromium(db, "one", dir, "synthetic-1.png");
    for (const char* id : {"convergence-step", "convergence-samples", "convergence-wall"})
      CHECK(sizes(p, id) == std::vector<std::size_t>{20});
    CHECK(sizes(p, "noise-scale") == std::vector<std::size_t>{20});
    CHECK(sizes(p, "lr") == std::vector<std::size_t>{20});
    CHECK(sizes(p, "history") == std::vector<std::size_t>{1, 1});
    CHECK(sizes(p, "throughput-batch") == std::vector<std::size_t>{1});
    CHECK(p["empty"].contains("parallel"));    // nothing varies
    CHECK(p["empty"].contains("importance"));
    CHECK(p["table_rows"] == 1);
  }

  SECTION("500 trials with running, pruned, failed, cancelled and waiting ones") {
    const SynthStudy& syn = studies["five-hundred"];
    json p = report_in_chromium(db, "five-hundred", dir, "synthetic-500.png");
    std::vector<std::size_t> curve_sizes;
    std::size_t reached = 0, complete = 0, complete_r1 = 0, complete_r2 = 0, with_value = 0;
    std::set<double> reached_batches;
    std::set<std::string> states;
    for (const auto& t : syn.trials) {
      states.insert(std::string(to_string(t.state)));
      if (t.records > 0) curve_sizes.push_back(static_cast<std::size_t>(t.records)), ++with_value;
      if (t.first_reached >= 0) ++reached, reached_batches.insert(t.batch);
      if (t.state == TrialState::complete) ++complete, ++(t.ranks == 1 ? complete_r1 : complete_r2);
    }
    REQUIRE(states.size() == 6);
    for (const char* id : {"convergence-step", "convergence-samples", "convergence-wall", "noise-scale"})
      CHECK(sizes(p, id) == curve_sizes);
    // The fitted points are analysis/'s (best seed group of COMPLETE trials per batch), then
    // every trial that reached the target, then the fitted curve (61 points).
    auto ro = db::Storage::open_readonly(db);
    REQUIRE(ro);
    auto data = analysis::load_study(**ro, "five-hundred");
    REQUIRE(data);
    const std::size_t fitted_points = analysis::target_table(*data).reaching_rows().size();
    CHECK(fitted_points == 10);
    CHECK(sizes(p, "steps-to-target") == std::vector<std::size_t>{fitted_points, reached, 61});
    CHECK(sizes(p, "samples-to-target") == std::vector<std::size_t>{fitted_points, reached, 61});
    CHECK(sizes(p, "time-to-target") == std::vector<std::size_t>{reached_batches.size(), reached});
    CHECK(total(sizes(p, "pareto")) == reached);
    CHECK(sizes(p, "history") == std::vector<std::size_t>{complete, complete});
    CHECK(sizes(p, "throughput-batch") == std::vector<std::size_t>{complete_r1, complete_r2});
    // 10 batch sizes, each run on 1 and 2 ranks: a throughput and an efficiency line each.
    CHECK(sizes(p, "throughput-ranks") == std::vector<std::size_t>(20, 2));
    // analysis/'s strong-scaling table over ranks, one row per (configuration, rank count).
    REQUIRE(p["scaling_tables"].contains("ranks-strong"));
    CHECK(p["scaling_tables"]["ranks-strong"].get<int>() >= 2);
    CHECK(sizes(p, "lr") == std::vector<std::size_t>(5, 20));  // the 5 best trials are COMPLETE
    // One line per trial with a value, across 5 varying parameters and the objective.
    CHECK(sizes(p, "parallel") == std::vector<std::size_t>(with_value, 6));
    CHECK_FALSE(sizes(p, "importance").empty());
    // The synthetic B_crit (1024) is determined: three regime bands and the B_crit line.
    CHECK(p["marks"]["steps-to-target"] == json{{"bands", 3}, {"vlines", 1}, {"hlines", 0}});
    CHECK(p["marks"]["time-to-target"]["bands"] == 3);
    CHECK(p["table_rows"] == 500);
    // The critical batch per optimizer (report/grouped_fit.js): a row per value with its B_crit,
    // and a chart with the measured points and the fitted S(B) (61 points) of each.
    REQUIRE(p["grouped_fits"].contains("optimizer"));
    CHECK(p["grouped_fits"]["optimizer"].size() == 3);
    for (const auto& row : p["grouped_fits"]["optimizer"]) CHECK(row[1] != "cannot fit");
    const auto per_value = sizes(p, "grouped-fit-optimizer");
    REQUIRE(per_value.size() == 6);
    for (std::size_t k = 0; k < per_value.size(); ++k) CHECK(per_value[k] == (k % 2 ? 61u : 10u));
    // Unticking COMPLETE hides exactly the COMPLETE trials' lines; ticking it shows them again.
    std::size_t complete_curves = 0;
    double lowest = 1;
    for (const auto& t : syn.trials) {
      complete_curves += t.state == TrialState::complete && t.records > 0;
      if (t.records > 0) lowest = std::min(lowest, t.last_value);
    }
    CHECK(p["interaction"]["hidden_complete"] == complete_curves);
    CHECK(p["interaction"]["hidden_after_restore"] == 0);
    // Sorting by the objective puts the lowest value first (shown with 4 significant digits).
    CHECK(std::stod(p["interaction"]["sorted_first_value"].get<std::string>()) == Approx(lowest).epsilon(1e-3));
    CHECK(p["interaction"]["first_number_after_restore"] == "0");
    CHECK(p["table_dom_rows"] == 500);
  }
  fs::remove_all(dir);
}

TEST_CASE("a user program's report claims only what its data carry, in Chromium") {
  // 8 trials at 4 batch sizes, each with its own lr, reporting neither grad_noise_scale nor
  // timings: B_crit is not determined (interval ~235 .. 1.3e5).
  const fs::path dir = fresh_dir("report-program");
  const fs::path db = dir / "program.db";
  {
    auto s = db::Storage::open_readwrite(db);
    REQUIRE(s);
    auto st = write_program_study(**s, "program", undetermined_sweep());
    INFO((st ? "" : st.error().message()));
    REQUIRE(st);
  }
  json p = report_in_chromium(db, "program", dir, "program-study.png");
  std::string notes;
  for (const auto& n : p["notes"]) notes += n.get<std::string>() + "\n";
  INFO(notes);
  // The fit is drawn, but no regime is shaded and no B_crit line claims a value; the note says why.
  CHECK(sizes(p, "steps-to-target").size() == 3);
  CHECK(p["marks"]["steps-to-target"] == json{{"bands", 0}, {"vlines", 0}, {"hlines", 0}});
  CHECK(p["marks"]["time-to-target"]["bands"] == 0);
  CHECK_THAT(notes, Catch::Contains("B_crit is NOT determined") && Catch::Contains("run batch sizes above 256"));
  // No B_simple chart: the card names the metric to report.
  CHECK_FALSE(p["charts"].contains("noise-scale"));
  REQUIRE(p["empty"].contains("noise-scale"));
  CHECK_THAT(p["empty"]["noise-scale"].get<std::string>(), Catch::Contains("reporting grad_noise_scale"));
  // Importance: batch_size (2 trials per value) has a bar, lr (1 per value) does not, and the note says why.
  CHECK(sizes(p, "importance") == std::vector<std::size_t>{1});
  CHECK_THAT(notes, Catch::Contains("lr: 8 trials in 8 groups"));
  fs::remove_all(dir);
}

TEST_CASE("a study whose trials diverged says so, not that nothing was reported, in Chromium") {
  // Two trials reported val_acc only as NaN (null) and ended FAILED "diverged".
  const fs::path dir = fresh_dir("report-diverged");
  const fs::path db = dir / "diverged.db";
  {
    auto s = db::Storage::open_readwrite(db);
    REQUIRE(s);
    db::NewStudy ns{"diverged", json{{"name", "diverged"}}.dump(), "d.yaml", "runs/diverged", "val_acc", "max", 0.88};
    auto sid = (*s)->create_study(ns);
    REQUIRE(sid);
    for (int i = 0; i < 2; ++i) {
      auto tid = (*s)->create_trial(*sid, i, {{"lr", 0.1 * (i + 1)}}, "runs/" + std::to_string(i));
      REQUIRE(tid);
      REQUIRE((*s)->transition({*tid, TrialState::waiting, TrialState::running, 0, "test", "started"}));
      protocol::Record r;
      r.kind = protocol::RecordKind::final;
      r.step = 100;
      r.metrics = {{"val_acc", std::numeric_limits<double>::quiet_NaN()}};
      REQUIRE((*s)->ingest(*tid, 0, {r}));
      REQUIRE((*s)->transition({*tid, TrialState::running, TrialState::failed, 0, "test",
                                "diverged (objective val_acc NaN/inf at its end)", 0}));
    }
  }
  json p = report_in_chromium(db, "diverged", dir, "diverged-study.png");
  REQUIRE(p["empty"].contains("convergence"));
  const std::string why = p["empty"]["convergence"].get<std::string>();
  CHECK_THAT(why, Catch::Contains("2 diverged"));
  CHECK_THAT(why, !Catch::Contains("no trial has reported"));
  fs::remove_all(dir);
}

TEST_CASE("the report of a real study run by the trainer on Fashion-MNIST, in Chromium") {
  if (std::string(DLSWEEP_TRAIN_BIN).empty()) {
    WARN("SKIPPED: an orchestrator-only build (DLSWEEP_TRAINER=OFF) has no dlsweep-train");
    return;
  }
  const fs::path dir = fresh_dir("report-real");
  std::ofstream(dir / "study.yaml") << R"(
name: report-real
backend: {kind: local, max_concurrent: 2}
trial:
  trainer: {model: mlp, hidden: [64], epochs: 2, eval_every: 0.25, train_subset: 6000, test_subset: 1000,
            threads: 1, noise_scale_every: 5}
objective: {metric: val_acc, mode: max, target: 0.7}
space:
  batch_size: [32, 128, 512]
  base_lr: [0.05, 0.2]
fixed: {base_batch: 128, lr_rule: sqrt, warmup_epochs: 0.5, decay: cosine, seed: 3}
)";
  const fs::path db = dir / "real.db";
  auto run = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO("submit: " << run.out << run.err);
  REQUIRE(run.exit_code == 0);
  // What the database says, read independently of the report model.
  auto s = db::Storage::open_readonly(db);
  REQUIRE(s);
  auto st = (*s)->find_study("report-real");
  REQUIRE(st);
  REQUIRE(*st);
  auto sums = (*s)->summaries((**st).id);
  REQUIRE(sums);
  REQUIRE(sums->size() == 6);
  std::size_t reached = 0, complete = 0;
  std::set<double> reached_batches;
  for (const auto& t : *sums) {
    if (t.state == "COMPLETE") ++complete;
    if (t.steps_to_target) ++reached, reached_batches.insert(t.params["batch_size"].get<double>());
  }
  json p = report_in_chromium(db, "report-real", dir, "real-study.png");
  CHECK(sizes(p, "convergence-step").size() == 6);
  for (auto n : sizes(p, "convergence-step")) CHECK(n >= 8);  // 2 epochs, an eval every quarter
  CHECK(sizes(p, "history") == std::vector<std::size_t>{complete, complete});
  CHECK(sizes(p, "lr").size() == 5);
  CHECK(sizes(p, "noise-scale").size() == 6);
  CHECK(sizes(p, "parallel") == std::vector<std::size_t>(6, 3));  // base_lr, batch_size, val_acc
  if (reached > 0) CHECK(sizes(p, "time-to-target") == std::vector<std::size_t>{reached_batches.size(), reached});
  // With 3 batch sizes reaching the target the model is fitted (a curve of 61 points); with
  // fewer the chart shows the measured points alone.
  auto data = analysis::load_study(**s, "report-real");
  REQUIRE(data);
  const std::size_t fitted_points = analysis::target_table(*data).reaching_rows().size();
  if (reached > 0) {
    auto stt = sizes(p, "steps-to-target");
    CHECK(stt[0] == fitted_points);
    CHECK(stt[1] == reached);
    CHECK(stt.size() == (fitted_points >= 3 ? 3u : 2u));
  }
  CHECK(p["table_rows"] == 6);
  fs::remove_all(dir);
}

TEST_CASE("a study with two objectives and constraints draws its Pareto front and hypervolume, in Chromium") {
  // The multi-objective fixture's grid: x = 0.3 and 0.5 are the feasible front (accuracy vs time
  // to target), 0.7 and 0.9 break the time budget, 0.1 never reaches the target (no value).
  const fs::path dir = mo_fixture::setup(
      "report-pareto", mo_fixture::study("mo", "search: {algorithm: grid}\nspace: {x: [0.1, 0.3, 0.5, 0.7, 0.9]}",
                                         "constraints: [{metric: rank_seconds, max: 80}, {reached_target: true}]\n"));
  const fs::path db = dir / "dlsweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  json p = report_in_chromium(db, "mo", dir, "pareto-study.png");
  std::string notes;
  for (const auto& n : p["notes"]) notes += n.get<std::string>() + "\n";
  INFO(notes);
  // The plane: the front (2 points) and the infeasible trials (2); no feasible dominated one.
  CHECK(sizes(p, "pareto-front") == std::vector<std::size_t>{2, 2});
  // Hypervolume after each feasible COMPLETE trial (x = 0.3, 0.5).
  CHECK(sizes(p, "hypervolume") == std::vector<std::size_t>{2});
  CHECK_THAT(notes, Catch::Contains("val_acc (max), time_to_target_s (min)"));
  // Every chart per objective (issue 43): a slice and a history chart for each, one chart
  // apiece with every trial that has both values (the 4 that reached the target); parallel
  // coordinates with an axis per objective (x, val_acc, time_to_target_s).
  for (const char* metric : {"val_acc", "time_to_target_s"}) {
    INFO(metric);
    CHECK(sizes(p, std::string("slice-x@") + metric) == std::vector<std::size_t>{4});
    CHECK(sizes(p, std::string("history@") + metric) == std::vector<std::size_t>{4, 4});
  }
  CHECK_FALSE(p["charts"].contains("slice-x"));
  const auto par = sizes(p, "parallel");
  CHECK(par.size() >= 4);
  for (auto n : par) CHECK(n == 3);
  fs::remove_all(dir);
}

TEST_CASE("a population-based training study draws its lineage and the winner's schedule, in Chromium") {
  // 4 members x 2 intervals of a protocol-speaking trial whose accuracy grows with x: after
  // interval 1 the worst member exploits the best (k = 1) and explores x by 0.8 or 1.25.
  const fs::path dir = fresh_dir("report-pbt");
  std::ofstream(dir / "trial.py") << R"(import json, os
d = os.environ["DLSWEEP_TRIAL_DIR"]
x = float(json.load(open(os.path.join(d, "params.json")))["x"])
end = float(os.environ["DLSWEEP_STOP_AT"].split(":")[1])
acc = 0.5 + 0.4 * x * end / 2
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "eval", "step": int(end * 10), "epoch": end, "samples": int(end * 640),
                          "wall_s": end, "metrics": {"val_acc": acc}}) + "\n")
    out.write(json.dumps({"seq": 1, "kind": "final", "step": int(end * 10), "epoch": end, "samples": int(end * 640),
                          "wall_s": end, "metrics": {"val_acc": acc}}) + "\n")
)";
  std::ofstream(dir / "study.yaml") << R"(name: pbt-report
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: val_acc, mode: max}
search: {algorithm: pbt, seed: 2, population: 4, generations: 2, quantile: 0.25, interval: {by: epoch, every: 1},
         perturb: {x: [0.8, 1.25]}}
space: {x: {uniform: [0.1, 1.0]}}
)";
  const fs::path db = dir / "dlsweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  json p = report_in_chromium(db, "pbt-report", dir, "pbt-study.png");
  std::string notes;
  for (const auto& n : p["notes"]) notes += n.get<std::string>() + "\n";
  INFO(notes);
  // One line per trial of interval 2 (to the trial it continued or exploited), then the 8 trials.
  CHECK(sizes(p, "pbt-lineage") == std::vector<std::size_t>{2, 2, 2, 2, 8});
  CHECK_THAT(notes, Catch::Contains("4 members, 2 intervals"));
  // The report's winner is `best`'s: the best trial of the last interval.
  auto best = run_dlsweep(db, {"best", "pbt-report", "--format", "json"}, dir);
  REQUIRE(best.exit_code == 0);
  auto s = db::Storage::open_readonly(db);
  REQUIRE(s);
  auto m = report::build_report_model(**s, "pbt-report", {});
  REQUIRE(m);
  CHECK(m->at("pbt").at("winner") == json::parse(best.out).at("trial"));
  CHECK(m->at("pbt").at("chain").size() == 2);
  CHECK(m->at("best").at("trial") == json::parse(best.out).at("trial"));
  fs::remove_all(dir);
}

TEST_CASE("a branching study draws its critical batch over training as an SVG chart, in Chromium") {
  // branch_study.hpp: 2 points x 3 batches x 2 seeds; at 1 the critical batch is 64 (determined),
  // at 2 it is [64, 128], undetermined and capped; the trunk reported B_simple 5 times.
  const fs::path dir = fresh_dir("report-branch");
  const fs::path db = dir / "dlsweep.db";
  {
    auto s = db::Storage::open_readwrite(db);
    REQUIRE(s);
    auto st = write_branch_study(**s, "branch-report");
    INFO((st ? "" : st.error().message()));
    REQUIRE(st);
  }
  json p = report_in_chromium(db, "branch-report", dir, "branch-study.png");
  const json cards = p["cards"];
  CHECK(std::find(cards.begin(), cards.end(), json("card-critical-batch-branch")) != cards.end());
  INFO("svgs: " << p["svgs"].dump());
  REQUIRE(p["svgs"].contains("critical-batch-branch"));
  const json& g = p["svgs"]["critical-batch-branch"];
  CHECK(g["role"] == "img");
  CHECK_THAT(g["title"].get<std::string>(), Catch::Contains("Critical batch"));
  CHECK_THAT(g["desc"].get<std::string>(), Catch::Contains("64 (determined)") && Catch::Contains("[64, \u2265 128] (undetermined)") &&
                                               Catch::Contains("batch_ramp 0:32,1:64"));
  CHECK(g["width"].get<double>() > 300);
  CHECK(g["height"].get<double>() > 100);
  const json& marks = g["marks"];
  CHECK(marks["point"] == 2);
  CHECK(marks["filled"] == 1);
  CHECK(marks["hollow"] == 1);
  CHECK(marks["capped"] == 1);
  CHECK(marks["noise"] == 1);
  CHECK(marks["noise-point"] == 5);
  CHECK(marks["schedule"] == 1);
  // The table under it, and no text that reads null, undefined or NaN.
  const std::string text = p["text"].get<std::string>();
  CHECK_THAT(text, Catch::Contains("Critical batch over training (branching)") && Catch::Contains("yes") &&
                       Catch::Contains("undetermined"));
  CHECK_THAT(text, Catch::Contains("in waves from the smallest up, stopping at the first batch surely"));  // scan: upward
  for (const char* bad : {"null", "undefined", "NaN"}) CHECK(text.find(bad) == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a study without a batch size (Optuna-style: conditional params, pruning, a retry) gets its own cards, in Chromium") {
  // An MLP-like objective ported from Optuna: n_layers 1..2 with n_units_l1 only when there are
  // 2 layers, an optimizer, a log-uniform lr; one report per epoch (4 epochs), the median
  // pruner. Trial 1's first attempt reports epochs 1 and 2 and dies (exit 1: retried); its
  // retry resumes at epoch 3. Trial 9 is hopeless: pruned at its first report (it waits for
  // control.json). Every other trial beats the ones before it, so the pruner leaves it be.
  const fs::path dir = fresh_dir("report-any-study");
  std::ofstream(dir / "trial.py") << R"(import json, math, os, sys, time
d = os.environ["DLSWEEP_TRIAL_DIR"]
n = int(os.environ["DLSWEEP_TRIAL_ID"])
attempt = int(os.environ.get("DLSWEEP_ATTEMPT", "0"))
p = json.load(open(os.path.join(d, "params.json")))
base = 0.6 + 0.02 * n + 0.002 * p["n_layers"] + 0.001 * math.log10(p["lr"] / 1e-5) + (0.002 if p["optimizer"] == "adam" else 0)
def report(seq, epoch, acc):
    with open(os.path.join(d, "metrics.jsonl"), "a") as out:
        out.write(json.dumps({"seq": seq, "kind": "eval", "step": epoch * 50, "epoch": epoch, "wall_s": 0.1 * epoch,
                              "metrics": {"val_acc": acc}}) + "\n")
if n == 9:
    report(0, 1, 0.05)
    for _ in range(600):
        if os.path.exists(os.path.join(d, "control.json")):
            sys.exit(75)
        time.sleep(0.05)
    sys.exit(0)
first = 3 if (n == 1 and attempt > 0) else 1
for e in range(first, 5):
    report(e - 1, e, base + 0.03 * e)
    if n == 1 and attempt == 0 and e == 2:
        sys.exit(1)
)";
  std::ofstream(dir / "study.yaml") << R"(name: any-study
backend: {kind: local, max_concurrent: 1}
trial:
  command: [python3, "{study_dir}/trial.py"]
  max_retries: 1
objective: {metric: val_acc, mode: max}
search: {algorithm: random, trials: 10, seed: 3}
pruner: {kind: median, startup_trials: 2, warmup: 0}
space:
  n_layers: {int: [1, 2]}
  n_units_l0: {int: [4, 128], log: true}
  n_units_l1: {int: [4, 128], log: true, when: {n_layers: [2]}}
  optimizer: {choice: [adam, sgd, rmsprop]}
  lr: {log_uniform: [1.0e-5, 1.0e-1]}
)";
  const fs::path db = dir / "dlsweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // What the database says, read independently of the report.
  auto s = db::Storage::open_readonly(db);
  REQUIRE(s);
  auto st = (*s)->find_study("any-study");
  REQUIRE(st);
  REQUIRE(*st);
  auto sums = (*s)->summaries((**st).id);
  REQUIRE(sums);
  REQUIRE(sums->size() == 10);
  std::map<std::int64_t, const db::TrialSummary*> by_number;
  std::size_t complete = 0, with_l1 = 0;
  for (const auto& t : *sums) {
    by_number[t.number] = &t;
    if (t.state == "COMPLETE" && t.value) ++complete, with_l1 += t.params.contains("n_units_l1");
  }
  REQUIRE(by_number[1]->attempt == 1);  // retried once
  REQUIRE(by_number[9]->state == "PRUNED");
  REQUIRE(with_l1 > 0);
  REQUIRE(with_l1 < complete);  // the conditional parameter: some trials lack it

  json p = report_in_chromium(db, "any-study", dir, "any-study.png");
  // The cards this study has, and not the batch-size ones; one line says which and why.
  const auto cards = p["cards"].get<std::vector<std::string>>();
  for (const char* id : {"card-convergence", "card-slice", "card-parallel", "card-history", "card-trials"})
    CHECK(std::find(cards.begin(), cards.end(), id) != cards.end());
  for (const char* id : {"card-to-target", "card-time-to-target", "card-noise-scale", "card-throughput", "card-pareto", "card-lr"})
    CHECK(std::find(cards.begin(), cards.end(), id) == cards.end());
  for (const auto& [id, c] : p["charts"].items()) CHECK(id.find("grouped-fit") == std::string::npos);
  REQUIRE(p["hidden_cards"].is_object());
  const auto hidden = p["hidden_cards"]["ids"].get<std::vector<std::string>>();
  for (const char* id : {"to-target", "time-to-target", "noise-scale", "throughput", "pareto", "lr"})
    CHECK(std::find(hidden.begin(), hidden.end(), id) != hidden.end());
  CHECK_THAT(p["hidden_cards"]["text"].get<std::string>(), Catch::Contains("no trial has a batch_size"));
  // One legend entry per trial, in number order.
  CHECK(p["legend_trials"] == json({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // The intermediate values: every trial a line; the retried trial has both attempts' points
  // (epochs 1-2 of attempt 0, 3-4 of attempt 1); the trial pruned at its first report is one
  // point with a visible marker.
  REQUIRE(p["lines"].contains("convergence-step"));
  std::map<std::int64_t, json> line;
  for (const auto& d : p["lines"]["convergence-step"]) line[d["trial"].get<std::int64_t>()] = d;
  CHECK(line.size() == 10);
  CHECK(line[1]["points"] == 4);
  CHECK(line[1]["attempts"] == json({0, 1}));
  CHECK(line[0]["points"] == 4);
  CHECK(line[0]["attempts"] == json({0}));
  CHECK(line[9]["points"] == 1);
  CHECK(line[9]["radius"].get<double>() >= 3);
  CHECK(p["empty"].is_object());
  CHECK_FALSE(p["empty"].contains("convergence"));
  // Slice: one chart per parameter, a point per COMPLETE trial that has the parameter.
  for (const char* name : {"n_layers", "n_units_l0", "optimizer", "lr"})
    CHECK(sizes(p, std::string("slice-") + name) == std::vector<std::size_t>{complete});
  CHECK(sizes(p, "slice-n_units_l1") == std::vector<std::size_t>{with_l1});
  CHECK(sizes(p, "parallel").size() == 10);  // every trial has a value (the PRUNED ones too)
  CHECK(sizes(p, "history") == std::vector<std::size_t>{complete, complete});
  CHECK(p["charts"].contains("importance"));
  CHECK(p["table_rows"] == 10);
  // No "null", "undefined" or "NaN" anywhere on the page.
  const std::string text = p["text"].get<std::string>();
  INFO(text);
  CHECK(text.size() > 1000);
  for (const char* word : {"null", "undefined", "NaN"}) CHECK(text.find(word) == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a batch_ramp adaptive trial's batch and B_simple over training: the 'batch over training' card, in Chromium") {
  if (std::string(DLSWEEP_TRAIN_BIN).empty()) {
    WARN("SKIPPED: an orchestrator-only build (DLSWEEP_TRAINER=OFF) has no dlsweep-train");
    return;
  }
  // One adaptive trial and one fixed: only the adaptive one has decisions (its log records).
  const fs::path dir = fresh_dir("report-adaptive");
  std::ofstream(dir / "study.yaml") << R"(name: adaptive-report
backend: {kind: local, max_concurrent: 1}
trial:
  trainer: {model: mlp, hidden: [256, 128], dataset: fashion-mnist, epochs: 3, eval_every: 0.5,
            train_subset: 12000, test_subset: 1000, threads: 1}
objective: {metric: val_acc, mode: max, target: 0.75}
search: {algorithm: grid}
space:
  batch_ramp: [adaptive, none]
fixed: {batch_size: 50, base_batch: 50, base_lr: 0.05, noise_scale_every: 3, adaptive_every: 7,
        adaptive_max_batch: 800, adaptive_step_time: [0.004, 0.00001], seed: 3}
runs_dir: runs
)";
  const fs::path db = dir / "dlsweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // The decisions in the database, read independently: log records of trial 0 with a batch_size,
  // and how many of them carry a noise estimate; the batch chosen last.
  auto s = db::Storage::open_readonly(db);
  REQUIRE(s);
  auto st = (*s)->find_study("adaptive-report");
  REQUIRE(st);
  REQUIRE(*st);
  std::size_t decisions = 0, with_noise = 0, fixed_logs = 0;
  REQUIRE((*s)->for_each_curve_point((**st).id, [&](const db::CurvePoint& p) -> Status {
    if (p.kind != "log") return {};
    if (p.number == 1 && p.name == "batch_size") ++fixed_logs;
    if (p.number == 0 && p.name == "batch_size") ++decisions;
    if (p.number == 0 && p.name == "grad_noise_scale" && p.value && *p.value > 0) ++with_noise;
    return {};
  }));
  REQUIRE(decisions >= 5);
  CHECK(fixed_logs == 0);
  json p = report_in_chromium(db, "adaptive-report", dir, "adaptive-study.png");
  const auto cards = p["cards"].get<std::vector<std::string>>();
  CHECK(std::find(cards.begin(), cards.end(), "card-batch-over-training") != cards.end());
  // One line (trial 0, the adaptive one) with a point per decision; B_simple where measured.
  CHECK(sizes(p, "batch-over-training") == std::vector<std::size_t>{decisions});
  CHECK(sizes(p, "noise-over-training") == std::vector<std::size_t>{with_noise});
  REQUIRE(p["lines"].contains("batch-over-training"));
  CHECK(p["lines"]["batch-over-training"][0]["trial"] == 0);
  // The batch-size study keeps its batch-size cards.
  for (const char* id : {"card-to-target", "card-noise-scale", "card-throughput"})
    CHECK(std::find(cards.begin(), cards.end(), id) != cards.end());
  CHECK(p["hidden_cards"].is_null());
  const std::string text = p["text"].get<std::string>();
  for (const char* word : {"null", "undefined", "NaN"}) CHECK(text.find(word) == std::string::npos);
  fs::remove_all(dir);
}
