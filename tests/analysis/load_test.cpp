// load_study: the database's trials, outcomes and eval curves (current attempt) as StudyData.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <unistd.h>

#include "analysis/load.hpp"
#include "db/storage.hpp"
#include "tests/support/temp_dir.hpp"

using namespace dlsweep;

namespace {

protocol::Record rec(std::int64_t seq, std::int64_t step, double wall, std::map<std::string, double> m,
                     protocol::RecordKind kind = protocol::RecordKind::eval) {
  protocol::Record r;
  r.seq = seq;
  r.kind = kind;
  r.step = step;
  r.epoch = step / 10.0;
  r.samples = step * 64;
  r.wall_s = wall;
  r.metrics = std::move(m);
  return r;
}

void complete(db::Storage& s, std::int64_t id) {
  using dlsweep::TrialState;
  REQUIRE(s.transition({id, TrialState::waiting, TrialState::queued, 0, "test", "", {}}));
  REQUIRE(s.transition({id, TrialState::queued, TrialState::running, 0, "test", "", {}}));
  REQUIRE(s.transition({id, TrialState::running, TrialState::complete, 0, "test", "", 0}));
}

}  // namespace

TEST_CASE("load_study: params, ranks from the spec, outcome and the curve with its metrics") {
  test_support::TempDir dir{"dlsweep-analysis-load"};
  auto st = db::Storage::open_readwrite(dir.path() / "x.db");
  REQUIRE(st);
  db::NewStudy ns{"s", R"({"trial": {"ranks": 2}})", "s.yaml", "runs", "val_acc", "max", 0.8};
  auto sid = (*st)->create_study(ns);
  REQUIRE(sid);
  auto t0 = (*st)->create_trial(*sid, 0, {{"batch_size", 64}, {"seed", 1}, {"threads", 2}}, "runs/0");
  auto t1 = (*st)->create_trial(*sid, 1, {{"batch_size", 128}, {"batch_ramp", "smith"}}, "runs/1");
  REQUIRE(t0);
  REQUIRE(t1);
  REQUIRE((*st)->ingest(*t0, 0, {rec(0, 10, 1.5, {{"val_acc", 0.7}, {"grad_noise_scale", 40}, {"time_eval_s", 0.1}}),
                                 rec(1, 20, 2.5, {{"val_acc", 0.85}, {"time_allreduce_exposed_s", 0.2}, {"samples_per_s", 900}}),
                                 rec(2, 20, 2.6, {{"val_acc", 0.85}}, protocol::RecordKind::final)}));
  complete(**st, *t0);
  auto ro = db::Storage::open_readonly(dir.path() / "x.db");
  REQUIRE(ro);
  auto s = analysis::load_study(**ro, "s");
  INFO((s ? "" : s.error().message()));
  REQUIRE(s);
  CHECK(s->metric == "val_acc");
  CHECK(*s->target == 0.8);
  REQUIRE(s->trials.size() == 2);
  const auto& a = s->trials[0];
  CHECK(a.state == "COMPLETE");
  CHECK(a.batch == 64);
  CHECK(a.ranks == 2);  // from the study's trial.ranks
  CHECK(a.threads == 2);
  CHECK_FALSE(a.batch_ramp);
  CHECK(*a.steps_to_target == 20);
  CHECK(*a.time_to_target_s == 2.5);
  CHECK(*a.samples_to_target == 20 * 64);
  REQUIRE(a.curve.size() == 3);
  CHECK(*a.curve[0].value == 0.7);
  CHECK(*a.curve[0].noise_scale == 40);
  CHECK(*a.curve[0].t_eval_s == 0.1);
  CHECK(*a.curve[1].t_allreduce_s == 0.2);
  CHECK_FALSE(a.curve[1].noise_scale);
  CHECK_FALSE(a.curve[1].final);
  CHECK(a.curve[2].final);
  CHECK(s->trials[1].batch_ramp);
  CHECK(s->trials[1].state == "WAITING");
  CHECK(s->trials[1].curve.empty());

  auto none = analysis::load_study(**ro, "nope");
  REQUIRE_FALSE(none);
  CHECK(none.error().is(ErrorKind::not_found));
}

TEST_CASE("load_study: a program without a batch_size parameter is read at the batch_size it reports") {
  test_support::TempDir dir{"dlsweep-analysis-load"};
  auto st = db::Storage::open_readwrite(dir.path() / "x.db");
  REQUIRE(st);
  db::NewStudy ns{"p", R"({"trial": {"command": ["python3", "train.py"]}})", "p.yaml", "runs", "val_acc", "max", 0.8};
  auto sid = (*st)->create_study(ns);
  REQUIRE(sid);
  auto t0 = (*st)->create_trial(*sid, 0, {{"lr", 0.1}}, "runs/0");
  auto t1 = (*st)->create_trial(*sid, 1, {{"lr", 0.2}}, "runs/1");
  REQUIRE(t0);
  REQUIRE(t1);
  REQUIRE((*st)->ingest(*t0, 0, {rec(0, 10, 1.0, {{"val_acc", 0.7}, {"batch_size", 128}}),
                                 rec(1, 20, 2.0, {{"val_acc", 0.85}, {"batch_size", 128}})}));
  REQUIRE((*st)->ingest(*t1, 0, {rec(0, 10, 1.0, {{"val_acc", 0.7}, {"batch_size", 128}}),
                                 rec(1, 20, 2.0, {{"val_acc", 0.85}, {"batch_size", 256}})}));
  complete(**st, *t0);
  complete(**st, *t1);
  auto s = analysis::load_study(**st, "p");
  REQUIRE(s);
  REQUIRE(s->trials.size() == 2);
  CHECK_FALSE(s->trainer);
  CHECK(s->trials[0].batch == 128);
  CHECK_FALSE(s->trials[0].batch_ramp);
  CHECK(s->trials[1].batch == 0);  // the batch changed during training: a ramp, no single batch
  CHECK(s->trials[1].batch_ramp);
}

TEST_CASE("load_study: an unknown study is named with the studies the database holds") {
  // `dlsweep plan typo` said "error: --db: no study named 'typo'" — the --db was right.
  test_support::TempDir dir{"dlsweep-analysis-load"};
  auto st = db::Storage::open_readwrite(dir.path() / "x.db");
  REQUIRE(st);
  auto none = analysis::load_study(**st, "nope");
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message(), Catch::Contains("holds no study yet"));
  REQUIRE((*st)->create_study({"bs-sweep", "{}", "s.yaml", "runs", "val_acc", "max", 0.8}));
  auto typo = analysis::load_study(**st, "bs-swep");
  REQUIRE_FALSE(typo);
  CHECK(typo.error().is(ErrorKind::not_found));
  CHECK_THAT(typo.error().message(), Catch::Contains("study: no study named 'bs-swep'") &&
                                         Catch::Contains("known studies: bs-sweep") && !Catch::Contains("--db"));
}
