// summary_test.cpp — the trial_summary view through Storage::summaries(): last and best
// objective values, steps/samples/time to target for max and min objectives, NULL when the
// target is never reached or the study has none, and the earliest attempt/seq winning.
#include <catch2/catch.hpp>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
using protocol::RecordKind;

namespace {

struct Study {
  Storage& s;
  std::int64_t id;
  std::int64_t next = 0;

  std::int64_t trial(const nlohmann::json& params = nlohmann::json::object()) {
    auto n = next++;
    return must(s.create_trial(id, n, params, "trial-" + std::to_string(n)));
  }
};

const TrialSummary& by_id(const std::vector<TrialSummary>& all, std::int64_t id) {
  for (const auto& t : all)
    if (t.trial_id == id) return t;
  FAIL("trial " << id << " not in the summaries");
  return all.front();
}

}  // namespace

TEST_CASE("summaries for a max objective with a target") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  Study st{*s, must(s->create_study(study_named("acc", "max", 0.9, "val_acc")))};

  // Reaches 0.9 at seq 2 (step 300), dips below again, then ends with a final record.
  auto reaches = st.trial({{"batch_size", 4096}});
  must(s->ingest(reaches, 0, {
      eval_record(0, 100, 10.0, {{"val_acc", 0.50}, {"samples_per_s", 900.0}}),
      eval_record(1, 200, 20.0, {{"val_acc", 0.85}, {"samples_per_s", 1000.0}}),
      eval_record(2, 300, 30.5, {{"val_acc", 0.91}, {"samples_per_s", 1100.0}}),
      eval_record(3, 400, 40.0, {{"val_acc", 0.95}}),
      // A checkpoint record's metrics never count for the objective.
      eval_record(4, 450, 45.0, {{"val_acc", 0.99}}, RecordKind::checkpoint),
      eval_record(5, 500, 50.0, {{"val_acc", 0.88}}, RecordKind::final),
      // A later log record neither sets the objective nor the reported wall time.
      eval_record(6, 500, 99.0, {{"val_acc", 1.0}}, RecordKind::log),
  }));
  // Never reaches the target.
  auto misses = st.trial({{"batch_size", 65536}});
  must(s->ingest(misses, 0, {eval_record(0, 100, 5.0, {{"val_acc", 0.6}}),
                             eval_record(1, 200, 9.0, {{"val_acc", 0.89}})}));
  // Reaches it exactly (>=) in its first attempt and again in a retry: the first wins.
  auto retried = st.trial();
  must(s->ingest(retried, 0, {eval_record(0, 100, 11.0, {{"val_acc", 0.7}}),
                              eval_record(1, 200, 22.0, {{"val_acc", 0.9}})}));
  must(s->ingest(retried, 1, {eval_record(0, 100, 3.0, {{"val_acc", 0.95}}),
                              eval_record(1, 250, 8.0, {{"val_acc", 0.97}})}));
  // The trial row is on attempt 1 (retried): its value is attempt 1's.
  must(s->transition({retried, TrialState::waiting, TrialState::failed, 0, "test", "failed"}));
  must(s->transition({retried, TrialState::failed, TrialState::waiting, 1, "test", "retry"}));
  // Has reported nothing yet.
  auto silent = st.trial();

  auto all = must(s->summaries(st.id));
  REQUIRE(all.size() == 4);
  CHECK(all[0].number == 0);
  CHECK(all[3].number == 3);

  const auto& a = by_id(all, reaches);
  CHECK(a.state == "WAITING");
  CHECK(a.params == nlohmann::json{{"batch_size", 4096}});
  CHECK(a.value == Approx(0.88));       // last eval/final value
  CHECK(a.best_value == Approx(0.95));  // max over eval/final (the checkpoint's 0.99 is ignored)
  CHECK(a.steps_to_target == 300);
  CHECK(a.samples_to_target == 300 * 256);
  CHECK(a.time_to_target_s == Approx(30.5));
  CHECK(a.samples_per_s == Approx(1100.0));  // last reported
  CHECK(a.wall_s == Approx(50.0));           // last non-log record

  const auto& b = by_id(all, misses);
  CHECK(b.value == Approx(0.89));
  CHECK(b.best_value == Approx(0.89));
  CHECK_FALSE(b.steps_to_target.has_value());
  CHECK_FALSE(b.samples_to_target.has_value());
  CHECK_FALSE(b.time_to_target_s.has_value());
  CHECK_FALSE(b.samples_per_s.has_value());

  const auto& c = by_id(all, retried);
  CHECK(c.value == Approx(0.97));  // latest attempt's last record
  CHECK(c.best_value == Approx(0.97));
  CHECK(c.steps_to_target == 200);
  CHECK(c.time_to_target_s == Approx(22.0));
  CHECK(c.wall_s == Approx(8.0));

  const auto& d = by_id(all, silent);
  CHECK_FALSE(d.value.has_value());
  CHECK_FALSE(d.best_value.has_value());
  CHECK_FALSE(d.steps_to_target.has_value());
  CHECK_FALSE(d.wall_s.has_value());
  CHECK(d.params == nlohmann::json::object());

  // The views answer the same questions in plain SQL.
  auto ttt = must(s->query("SELECT trial_id, steps_to_target FROM time_to_target "
                           "WHERE steps_to_target IS NOT NULL ORDER BY steps_to_target"));
  REQUIRE(ttt.rows.size() == 2);
  CHECK(ttt.rows[0][0] == retried);
  CHECK(ttt.rows[1][0] == reaches);
  CHECK(scalar(*s, "SELECT value FROM metric_latest WHERE trial_id = " + std::to_string(reaches) +
                       " AND name = 'val_acc'") == 1.0);  // latest of any kind, the log included
  // Latest means the highest attempt first, even when an earlier attempt had a higher seq.
  must(s->ingest(retried, 0, {eval_record(7, 900, 90.0, {{"val_acc", 0.1}})}));
  CHECK(scalar(*s, "SELECT value FROM metric_latest WHERE trial_id = " + std::to_string(retried) +
                       " AND name = 'val_acc'") == 0.97);
  CHECK(scalar(*s, "SELECT count(*) FROM metric_latest") == 4);  // (trial, name) pairs
  CHECK(must(s->summaries(st.id))[2].value == Approx(0.97));
}

TEST_CASE("summaries for a min objective, and with no target") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  Study low{*s, must(s->create_study(study_named("loss", "min", 0.3, "val_loss")))};
  auto t = low.trial();
  must(s->ingest(t, 0, {eval_record(0, 10, 1.0, {{"val_loss", 1.0}}),
                        eval_record(1, 20, 2.0, {{"val_loss", 0.5}}),
                        eval_record(2, 30, 3.0, {{"val_loss", 0.29}}),
                        eval_record(3, 40, 4.0, {{"val_loss", 0.35}})}));
  auto never = low.trial();
  must(s->ingest(never, 0, {eval_record(0, 10, 1.0, {{"val_loss", 0.31}})}));

  auto all = must(s->summaries(low.id));
  REQUIRE(all.size() == 2);
  CHECK(all[0].value == Approx(0.35));
  CHECK(all[0].best_value == Approx(0.29));  // min
  CHECK(all[0].steps_to_target == 30);
  CHECK(all[0].time_to_target_s == Approx(3.0));
  CHECK_FALSE(all[1].steps_to_target.has_value());
  CHECK(all[1].best_value == Approx(0.31));

  // Without a target, time-to-target is NULL however good the values are.
  Study free{*s, must(s->create_study(study_named("free", "max", std::nullopt, "val_acc")))};
  auto u = free.trial();
  must(s->ingest(u, 0, {eval_record(0, 10, 1.0, {{"val_acc", 0.99}})}));
  auto open = must(s->summaries(free.id));
  REQUIRE(open.size() == 1);
  CHECK(open[0].best_value == Approx(0.99));
  CHECK_FALSE(open[0].steps_to_target.has_value());
  CHECK_FALSE(open[0].time_to_target_s.has_value());
  // Studies do not leak into each other.
  CHECK(must(s->summaries(low.id)).size() == 2);
  CHECK(must(s->summaries(free.id + 10)).empty());
}

TEST_CASE("metric_curves: (epoch or step, value) of eval/final records of the current attempt, per state") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  Study st{*s, must(s->create_study(study_named("curves", "max", 0.9, "val_acc")))};
  auto done = st.trial();
  must(s->ingest(done, 0, {eval_record(0, 100, 1.0, {{"val_acc", 0.5}}),
                           eval_record(1, 150, 1.5, {{"val_acc", 0.9}}, RecordKind::checkpoint),  // not counted
                           eval_record(2, 200, 2.0, {{"train_loss", 0.3}}),                         // other metric
                           eval_record(3, 300, 3.0, {{"val_acc", 0.7}}, RecordKind::final)}));
  auto retried = st.trial();
  must(s->ingest(retried, 0, {eval_record(0, 100, 1.0, {{"val_acc", 0.99}})}));  // an earlier attempt
  must(s->ingest(retried, 1, {eval_record(0, 100, 1.0, {{"val_acc", 0.4}})}));
  auto running = st.trial();
  must(s->ingest(running, 0, {eval_record(0, 100, 1.0, {{"val_acc", 0.6}})}));
  using TS = TrialState;
  for (auto id : {done, retried, running}) {
    must(s->transition({id, TS::waiting, TS::queued, 0, "test", ""}));
    must(s->transition({id, TS::queued, TS::running, 0, "test", ""}));
  }
  must(s->transition({done, TS::running, TS::complete, 0, "test", ""}));
  must(s->transition({retried, TS::running, TS::failed, 0, "test", ""}));
  must(s->transition({retried, TS::failed, TS::waiting, 1, "test", "retry"}));
  must(s->transition({retried, TS::waiting, TS::queued, 1, "test", ""}));
  must(s->transition({retried, TS::queued, TS::running, 1, "test", ""}));
  must(s->transition({retried, TS::running, TS::complete, 1, "test", ""}));

  auto by_epoch = must(s->metric_curves(st.id, "val_acc", "COMPLETE"));
  REQUIRE(by_epoch.size() == 2);
  CHECK(by_epoch.at(done) == std::vector<std::pair<double, double>>{{1.0, 0.5}, {3.0, 0.7}});
  CHECK(by_epoch.at(retried) == std::vector<std::pair<double, double>>{{1.0, 0.4}});
  auto by_step = must(s->metric_curves(st.id, "val_acc", "COMPLETE", /*by_step=*/true));
  CHECK(by_step.at(done) == std::vector<std::pair<double, double>>{{100.0, 0.5}, {300.0, 0.7}});
  CHECK(must(s->metric_curves(st.id, "val_acc", "RUNNING")).at(running).size() == 1);
}

TEST_CASE("summaries: a rerun that has not reported yet has no value, not the previous attempt's") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  Study st{*s, must(s->create_study(study_named("rerun", "max", 0.9, "val_acc")))};
  auto t = st.trial();
  must(s->ingest(t, 0, {eval_record(0, 100, 10.0, {{"val_acc", 0.7725}}),
                        eval_record(1, 200, 20.0, {{"val_acc", 0.7646}}, RecordKind::final)}));
  CHECK(must(s->summaries(st.id))[0].value == Approx(0.7646));
  must(s->transition({t, TrialState::waiting, TrialState::cancelled, 0, "test", "cancelled"}));
  must(s->transition({t, TrialState::cancelled, TrialState::waiting, 1, "test", "rerun"}));
  auto a = must(s->summaries(st.id))[0];
  CHECK(a.attempt == 1);
  CHECK_FALSE(a.value.has_value());
  must(s->ingest(t, 1, {eval_record(0, 100, 10.0, {{"val_acc", 0.5}})}));
  CHECK(must(s->summaries(st.id))[0].value == Approx(0.5));
}
