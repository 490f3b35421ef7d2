// `best` of a branching study (orchestrator/cmd_best_branch.hpp) on a study built through the
// db/ APIs (create_study, create_trial, transition, ingest, note_event): a trunk in three
// segments and 2 points x 3 batches x 2 seeds of branches, with values chosen so the answer
// is worked out by hand below; the text, the JSON, the schedule study (read back by
// study/'s parser), the user-program refusal, the hook in cmd_best, and a study with no
// finished branch.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/load.hpp"
#include "common/pbt_link.hpp"
#include "db/storage.hpp"
#include "orchestrator/cmd_best_branch.hpp"
#include "orchestrator/commands.hpp"
#include "study/spec.hpp"
#include "tests/support/temp_dir.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;
using nlohmann::json;

namespace {

template <class T>
T must(Result<T> r) {
  INFO((r ? std::string() : r.error().message()));
  REQUIRE(r.has_value());
  return std::move(*r);
}
void must(Status s) {
  INFO((s ? std::string() : s.error().message()));
  REQUIRE(s.has_value());
}

bool has(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

// A dlsweep-train study as study/ stores it, made a branching one: points 1 and 2 (epochs),
// batches 32, 64, 128, each branch half an epoch, 2% tolerance, val_loss minimised.
json branch_spec(bool trainer) {
  const std::string yaml = trainer ? R"(
name: br
backend: {kind: local, max_concurrent: 2}
trial:
  trainer: {model: mlp, hidden: [64], dataset: fashion-mnist, train_subset: 12000, epochs: 3, eval_every: 0.5, threads: 1}
objective: {metric: val_loss, mode: min}
search: {algorithm: grid, seed: 1}
fixed: {base_lr: 0.02, base_batch: 32, lr_rule: linear, momentum: 0.9, noise_scale_every: 10}
)"
                                   : R"(
name: br
backend: {kind: local, max_concurrent: 2}
trial: {command: [sh, -c, "exit 0"]}
objective: {metric: val_loss, mode: min}
search: {algorithm: grid, seed: 1}
fixed: {lr: 0.02}
)";
  auto spec = parse_study(yaml, StudyFormat::yaml, "/tmp/br-study/br.yaml");
  if (!spec) FAIL(spec.error().front().message());
  json j = spec->to_json();
  j["search"] = {{"algorithm", "branch"}, {"seed", 1},      {"points", {1, 2}},  {"by", "epoch"},
                 {"batches", {32, 64, 128}}, {"delta", 0.5}, {"tolerance", 0.02}, {"seeds", 2},
                 {"max_seeds", 3},           {"lr_factors", {1}}, {"end", 3}, {"scan", "upward"},
                 {"trunk_to_end", false}};
  return j;
}

// One trial: its link, its records (epoch, val_loss, grad_noise_scale), its final state.
void add_trial(db::Storage& s, std::int64_t sid, std::int64_t number, const json& role, double start, double end,
               const std::vector<std::tuple<double, double, std::optional<double>>>& evals, TrialState state) {
  const auto tid = must(s.create_trial(sid, number, {{"batch_size", role.value("batch", 32)}}, "runs/" + std::to_string(number)));
  PbtLink link;
  link.number = number;
  link.axis = "epoch";
  link.start = start;
  link.end = end;
  link.branch = role;
  db::EventRow e;
  e.study_id = sid;
  e.trial_id = tid;
  e.who = "orchestrator";
  e.kind = kPbtEventKind;
  e.reason = link.to_json().dump();
  must(s.note_event(e));
  if (state == TrialState::waiting) return;
  must(s.transition({tid, TrialState::waiting, TrialState::queued, 0, "test", "queued", std::nullopt}));
  must(s.transition({tid, TrialState::queued, TrialState::running, 0, "test", "started", std::nullopt}));
  std::vector<protocol::Record> recs;
  for (const auto& [epoch, loss, noise] : evals) {
    protocol::Record r;
    r.seq = static_cast<std::int64_t>(recs.size());
    r.kind = protocol::RecordKind::eval;
    r.epoch = epoch;
    r.samples = std::llround(epoch * 12000);  // train_subset 12000
    r.step = r.samples / 32;
    r.metrics = {{"val_loss", loss}};
    if (noise) r.metrics["grad_noise_scale"] = *noise;
    recs.push_back(std::move(r));
  }
  must(s.ingest(tid, 0, recs));
  if (state == TrialState::running) return;
  must(s.transition({tid, TrialState::running, state, 0, "test", "ended", state == TrialState::complete ? 0 : 1}));
}

json role(bool trunk, std::int64_t point, double at, std::int64_t batch, std::int64_t seed, std::int64_t round = 0) {
  BranchRole r;
  r.trunk = trunk;
  r.point = point;
  r.at = at;
  r.batch = batch;
  r.seed = seed;
  r.round = round;
  return r.to_json();
}

// The study. Trunk (batch 32): [0, 1) reports B_simple 50 at epoch 1, [1, 2) 90 at epoch 2, [2, 3).
// Point 1 (epoch 1, branches to 1.5): 32 {1.00, 1.02} mean 1.01, s^2/n = 1e-4, tau = 0.0202;
//   64 {0.98, 1.06} mean 1.02, worse 0.01, s^2/n = 0.0016, se = sqrt(0.0017) = 0.0412:
//   0.01 + 0.082 > tau (not surely), 0.01 - 0.082 <= tau (possibly);
//   128 {1.30, 1.32}: worse 0.29, se 0.0141: not possibly. -> [32, 64], undetermined.
// Point 2 (epoch 2, branches to 2.5): 32 {0.80, 0.80}, tau = 0.016; 64 {0.80, 0.80} (se 0: surely);
//   128 {0.795, 0.805}: worse 0, se = 0.005, 0 + 0.01 <= tau: surely. -> at least 128 (capped).
//   A third seed of 128 failed at epoch 2.2 (short of 2.5): no value. A fourth waits.
// The schedule: lo = 32, 128 -> 0:32, 2:128 (point 1's stage merges into the start). LR by the
// linear rule from 0.02 at 32: 0.02, 0.08. Samples: [0, 2) 24000 = 750 steps of 32;
// [2, 3) 36000 - 24000 = 12000 = 93.75 -> 94 steps of 128.
std::int64_t write_study(db::Storage& s, const std::string& name, bool trainer, bool branches = true) {
  json spec = branch_spec(trainer);
  spec["name"] = name;
  db::NewStudy ns;
  ns.name = name;
  ns.spec_json = spec.dump();
  ns.source_path = "/tmp/br-study/" + name + ".yaml";
  ns.root_dir = "runs";
  ns.objective_metric = "val_loss";
  ns.objective_mode = "min";
  const auto sid = must(s.create_study(ns));
  const auto done = TrialState::complete;
  add_trial(s, sid, 0, role(true, 0, 0, 32, 0), 0, 1, {{0.5, 2.0, 40.0}, {1.0, 1.5, 50.0}}, done);
  add_trial(s, sid, 1, role(true, 1, 1, 32, 0), 1, 2, {{1.5, 1.2, 70.0}, {2.0, 1.0, 90.0}}, done);
  // The trunk stops at the last point (trunk_to_end: false): the schedule's last stage still
  // runs to `end`, 3, its samples by the trunk's samples per epoch.
  if (!branches) return sid;
  std::int64_t n = 3;
  const std::vector<std::pair<std::int64_t, std::vector<double>>> p1{{32, {1.00, 1.02}}, {64, {0.98, 1.06}}, {128, {1.30, 1.32}}};
  const std::vector<std::pair<std::int64_t, std::vector<double>>> p2{{32, {0.80, 0.80}}, {64, {0.80, 0.80}}, {128, {0.795, 0.805}}};
  for (const auto& [point, at, cells] : {std::tuple{1, 1.0, p1}, std::tuple{2, 2.0, p2}})
    for (const auto& [batch, values] : cells)
      for (std::size_t seed = 0; seed < values.size(); ++seed)
        // Point 1's branches stop a fraction of a step short of their end (the trainer's whole
        // step nearest it): their last report still counts.
        add_trial(s, sid, n++, role(false, point, at, batch, static_cast<std::int64_t>(seed)), at, at + 0.5,
                  {{at + 0.25, values[seed] + 0.1, std::nullopt}, {at + (point == 1 ? 0.4999 : 0.5), values[seed], std::nullopt}},
                  done);
  add_trial(s, sid, n++, role(false, 2, 2, 128, 2, 1), 2, 2.5, {{2.2, 0.1, std::nullopt}}, TrialState::failed);
  add_trial(s, sid, n++, role(false, 2, 2, 128, 3, 1), 2, 2.5, {}, TrialState::waiting);
  return sid;
}

struct Loaded {
  BranchStudy branch;
  analysis::StudyData data;
};

Loaded load(db::Storage& s, const std::string& name) {
  const auto st = must(s.find_study(name));
  REQUIRE(st);
  auto b = must(load_branch(s, *st));
  REQUIRE(b);
  return {std::move(*b), must(analysis::load_study(s, name))};
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("best of a branching study: the curve, the schedule, B_simple", "[orchestrator][branch]") {
  test_support::TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "b.db"));
  write_study(*s, "br", true);
  const auto [b, data] = load(*s, "br");
  CHECK(b.links.size() == 2 + 12 + 2);
  const BranchAnswer a = branch_answer(b, data);
  CHECK(a.finished == 12);  // the failed one never reached its end; the waiting one has no record
  REQUIRE(a.points.size() == 2);
  CHECK(*a.points[0].lo == 32);
  CHECK(*a.points[0].hi == 64);
  CHECK_FALSE(a.points[0].determined);
  CHECK(*a.points[1].lo == 128);
  CHECK(a.points[1].determined);
  CHECK(a.points[1].capped);
  CHECK(a.points[1].batches.back().n == 2);  // the failed third seed is not counted
  CHECK(a.samples == std::vector<std::optional<std::int64_t>>{12000, 24000});
  CHECK(a.b_simple == std::vector<std::optional<double>>{50.0, 90.0});
  CHECK(a.batch_ramp == "0:32,2:128");
  REQUIRE(a.stages.size() == 2);
  CHECK(*a.stages[0].lr == Catch::Detail::Approx(0.02));
  CHECK(*a.stages[1].lr == Catch::Detail::Approx(0.08));
  CHECK(*a.stages[0].samples == 24000);
  CHECK(*a.stages[0].steps == 750);
  CHECK(*a.stages[1].end == 3);
  CHECK(*a.stages[1].samples == 12000);
  CHECK(*a.stages[1].steps == 94);

  const std::string text = branch_text(b, data, a, false);
  CHECK(has(text, "epoch 1 (12000 samples): [32, 64] (undetermined"));
  CHECK(has(text, "more seeds needed"));
  CHECK(has(text, "epoch 2 (24000 samples): at least 128 ("));
  CHECK(has(text, "branch larger batches"));
  CHECK(has(text, "batch_ramp \"0:32,2:128\""));
  CHECK(has(text, "epoch [0, 2): batch 32, LR 0.02, 24000 samples = 750 steps"));
  CHECK(has(text, "epoch [2, 3): batch 128, LR 0.08, 12000 samples = 94 steps"));
  CHECK(has(text, "B_simple on the trunk (grad_noise_scale): epoch 1: 50, epoch 2: 90"));
  CHECK_FALSE(has(text, "surely"));
  // --explain: the evidence per point, with the trials behind each mean (point 1's batch 64: trials 5, 6).
  const std::string explained = branch_text(b, data, a, true);
  CHECK(has(explained, "possibly"));
  CHECK(has(explained, "5 6"));

  const json j = branch_json(b, data, a, false);
  CHECK(j["kind"] == "branch");
  CHECK(j["axis"] == "epoch");
  REQUIRE(j["critical_batch"].size() == 2);
  CHECK(j["critical_batch"][0]["samples"] == 12000);
  CHECK(j["critical_batch"][0]["interval"] == json::array({32, 64}));
  CHECK(j["critical_batch"][0]["determined"] == false);
  CHECK(j["critical_batch"][0]["batch"].is_null());
  CHECK(j["critical_batch"][0]["b_simple"] == 50.0);
  CHECK(j["critical_batch"][1]["batch"] == 128);
  CHECK(j["critical_batch"][1]["capped"] == true);
  CHECK_FALSE(j["critical_batch"][0].contains("batches"));
  CHECK(j["schedule"]["batch_ramp"] == "0:32,2:128");
  CHECK(j["schedule"]["stages"][1]["batch"] == 128);
  CHECK(branch_json(b, data, a, true)["critical_batch"][0]["batches"].size() == 3);

  // The schedule study: one fixed dlsweep-train trial, read back by the study parser.
  const json sched = must(branch_schedule_study(b, a));
  CHECK(sched["name"] == "br-schedule");
  CHECK(sched["search"]["algorithm"] == "grid");
  CHECK(sched["fixed"]["batch_size"] == 32);
  CHECK(sched["fixed"]["batch_ramp"] == "0:32,2:128");
  CHECK(sched["fixed"]["base_lr"] == 0.02);
  const auto back = parse_study(sched.dump(2), StudyFormat::json, (dir / "schedule.json").string());
  if (!back) FAIL(back.error().front().message());
  CHECK(back->search.algorithm == "grid");
  CHECK(back->name == "br-schedule");
}

TEST_CASE("best of a branching study: seeds per batch as a range where extra seeds went to some batches",
          "[orchestrator][branch]") {
  test_support::TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "b.db"));
  const auto sid = write_study(*s, "br", true);
  // The upward scan's extra seed at point 1: the reference and the open batch 64, not 128.
  add_trial(*s, sid, 100, role(false, 1, 1.0, 32, 2, 1), 1, 1.5, {{1.5, 1.01, std::nullopt}}, TrialState::complete);
  add_trial(*s, sid, 101, role(false, 1, 1.0, 64, 2, 1), 1, 1.5, {{1.5, 1.02, std::nullopt}}, TrialState::complete);
  const auto [b, data] = load(*s, "br");
  const BranchAnswer a = branch_answer(b, data);
  const std::string text = branch_text(b, data, a, false);
  INFO(text);
  CHECK(has(text, "; 2-3 seeds per batch\n"));
  CHECK(has(text, "; 2 seeds per batch\n"));  // point 2: every batch at 2 (the failed third has no value)
}

TEST_CASE("best of a branching study through cmd_best: --write-schedule, --group-by, a user program, nothing finished",
          "[orchestrator][branch]") {
  test_support::TempDir dir;
  const std::string db = (dir / "b.db").string();
  {
    auto s = must(db::Storage::open_readwrite(db));
    write_study(*s, "br", true);
    write_study(*s, "prog", false);
    write_study(*s, "young", true, /*branches=*/false);
  }
  BestArgs a;
  a.db = db;
  a.study = "br";
  a.write_schedule = (dir / "schedule.yaml").string();
  CHECK(cmd_best(a) == exit_code::ok);
  const auto back = parse_study(read_text(dir / "schedule.yaml"), StudyFormat::yaml, a.write_schedule);
  if (!back) FAIL(back.error().front().message());
  CHECK(back->name == "br-schedule");
  a.format = "json";
  a.explain = true;
  a.write_schedule.clear();
  CHECK(cmd_best(a) == exit_code::ok);
  a.group_by = "batch_size";
  CHECK(cmd_best(a) == exit_code::usage);

  // A user program's study: the curve, but no study file (the stages are in the error's fix).
  auto s = must(db::Storage::open_readonly(db));
  const auto [prog, data] = load(*s, "prog");
  CHECK_FALSE(prog.trainer);
  const BranchAnswer pa = branch_answer(prog, data);
  CHECK(pa.batch_ramp == "0:32,2:128");
  CHECK_FALSE(pa.stages[0].lr);  // no lr_rule to apply
  auto refused = branch_schedule_study(prog, pa);
  REQUIRE_FALSE(refused);
  CHECK(has(refused.error().what, "its own program"));
  CHECK(has(refused.error().fix, "epoch 2: batch 128"));
  BestArgs p;
  p.db = db;
  p.study = "prog";
  p.write_schedule = (dir / "prog-schedule.yaml").string();
  CHECK(cmd_best(p) == exit_code::usage);
  CHECK_FALSE(std::filesystem::exists(dir / "prog-schedule.yaml"));

  // Only the trunk so far: no branch has finished, said so, not a crash.
  const auto [young, ydata] = load(*s, "young");
  CHECK(branch_answer(young, ydata).finished == 0);
  BestArgs y;
  y.db = db;
  y.study = "young";
  CHECK(cmd_best(y) == exit_code::trials_failed);
}

TEST_CASE("the schedule study of a curve by samples: its ramp in epochs, by the trunk's records", "[orchestrator][branch]") {
  BranchStudy b;
  b.name = "s";
  b.trainer = true;
  b.spec = {{"name", "s"},
            {"fixed", {{"base_lr", 0.1}, {"batch_size", 999}}},
            {"search", {{"algorithm", "branch"}, {"seed", 3}, {"points", {12000, 24000}}}},
            {"space", json::array()}};
  BranchAnswer a;
  a.axis = "samples";
  for (const RampStage& r : {RampStage{0, 32}, RampStage{24000, 128}, RampStage{30000, 256}}) {
    BranchStage st;
    st.stage = r;
    a.stages.push_back(st);
  }
  a.epochs_per_sample = 1.0 / 12000;  // 12000 samples an epoch: 24000 -> 2, 30000 -> 2.5
  const json j = must(branch_schedule_study(b, a));
  CHECK(j["fixed"]["batch_ramp"] == "0:32,2:128,2.5:256");
  CHECK(j["fixed"]["batch_size"] == 32);
  CHECK(j["fixed"]["base_lr"] == 0.1);
  CHECK(j["search"] == json({{"algorithm", "grid"}, {"seed", 3}}));
  CHECK_FALSE(j.contains("space"));
  // No epoch in the trunk's records: refused, with the stages to set by hand.
  a.epochs_per_sample.reset();
  auto refused = branch_schedule_study(b, a);
  REQUIRE_FALSE(refused);
  CHECK(has(refused.error().what, "by samples"));
  CHECK(has(refused.error().fix, "samples 24000: batch 128"));
}
