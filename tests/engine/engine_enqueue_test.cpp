// The engine and `dlsweep enqueue`: waiting requests become the first trials (their fixed
// values, the rest sampled), they count against the trial budget, requests beyond it wait
// in the database, and a request file left while the engine runs is recorded on its next
// tick (the test steps the engine's clock to it: test_support::ManualClock) and runs before
// the next sampled trial; a bad file is refused, never fatal.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "db/storage.hpp"
#include "engine/engine.hpp"
#include "engine/enqueue_request.hpp"
#include "study/spec.hpp"
#include "tests/support/fake_backend.hpp"
#include "tests/support/manual_clock.hpp"

namespace fs = std::filesystem;
using namespace dlsweep;
using nlohmann::json;

namespace {

struct RandomStudy {
  fs::path dir;
  std::unique_ptr<db::Storage> storage;
  orch::StudySpec spec;
  std::int64_t study_id = 0;

  RandomStudy(const std::string& name, int trials) {
    dir = fs::temp_directory_path() / fmt::format("dlsweep-engine-enq-{}-{}", ::getpid(), name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto parsed = orch::parse_study(fmt::format(R"(
name: {}
backend: {{kind: local, max_concurrent: 1}}
trial: {{command: [fake]}}
objective: {{metric: acc, mode: max}}
search: {{algorithm: random, trials: {}, seed: 5}}
space:
  batch_size: {{int: [64, 4096], step: 64}}
  lr_rule: [linear, sqrt, none]
  optimizer: [sgd, lars]
  trust: {{log_uniform: [1.0e-4, 1.0e-2], when: {{optimizer: [lars]}}}}
runs_dir: {}
)", name, trials, (dir / "runs").string()), orch::StudyFormat::yaml, "enq.yaml");
    if (!parsed) FAIL(parsed.error().front().message());
    spec = *parsed;
    storage = std::move(*db::Storage::open_readwrite(dir / "t.db"));
    study_id = *storage->create_study({spec.name, spec.to_json().dump(), "enq.yaml", (dir / "runs" / name).string(),
                                       "acc", "max", std::nullopt});
  }
  ~RandomStudy() { fs::remove_all(dir); }

  Result<orch::SweepOutcome> run(sched::Backend& backend, boost::asio::io_context& io,
                                 std::shared_ptr<orch::EngineClock> clock = nullptr) {
    orch::EngineOptions opts;
    opts.runs_dir = dir / "runs";
    opts.tick_s = 0.01;
    opts.clock = std::move(clock);
    opts.handle_signals = false;
    std::FILE* sink = std::fopen("/dev/null", "w");
    orch::Progress progress(sink, false);
    orch::Engine engine(io, *storage, backend, spec, std::move(*orch::make_search_parts(spec)), study_id, opts, progress);
    auto r = engine.run();
    std::fclose(sink);
    return r;
  }

  std::vector<db::TrialRow> trials() { return *storage->list_trials(study_id); }
};

sched::FakeOutcome done() {
  sched::FakeOutcome o;
  o.run_s = 0.01;
  o.metrics_lines = {R"({"seq":0,"kind":"final","step":1,"metrics":{"acc":0.5}})"};
  return o;
}

}  // namespace

TEST_CASE("engine enqueue: waiting requests run first, in order, and use the budget") {
  RandomStudy s("first", 3);
  REQUIRE(s.storage->enqueue_trial(s.study_id, "a", json{{"batch_size", 4096}, {"lr_rule", "sqrt"}}, "user"));
  REQUIRE(s.storage->enqueue_trial(s.study_id, "b", json{{"optimizer", "lars"}}, "user"));
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 1, [](const sched::JobSpec&) { return done(); });
  auto out = s.run(backend, io);
  REQUIRE(out.has_value());
  auto trials = s.trials();
  REQUIRE(trials.size() == 3);  // the budget: the two enqueued trials count
  CHECK(trials[0].params["batch_size"] == 4096);
  CHECK(trials[0].params["lr_rule"] == "sqrt");
  CHECK(trials[0].params.contains("optimizer"));  // sampled
  CHECK(trials[1].params["optimizer"] == "lars");
  CHECK(trials[1].params.contains("trust"));      // switched on by the enqueued value: drawn
  // params.json holds what the database holds (write-ahead, as for any trial).
  for (const auto& t : trials) {
    std::ifstream in(fs::path(t.trial_dir) / "params.json");
    CHECK(json::parse(in) == t.params);
  }
  auto requests = *s.storage->list_enqueued(s.study_id);
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].trial_id == trials[0].id);
  CHECK(requests[1].trial_id == trials[1].id);
}

TEST_CASE("engine enqueue: requests beyond the budget wait in the database") {
  RandomStudy s("full", 1);
  REQUIRE(s.storage->enqueue_trial(s.study_id, "a", json{{"batch_size", 64}}, "user"));
  REQUIRE(s.storage->enqueue_trial(s.study_id, "b", json{{"batch_size", 128}}, "user"));
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 1, [](const sched::JobSpec&) { return done(); });
  REQUIRE(s.run(backend, io).has_value());
  auto trials = s.trials();
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].params["batch_size"] == 64);
  auto requests = *s.storage->list_enqueued(s.study_id);
  CHECK(requests[0].trial_id.has_value());
  CHECK_FALSE(requests[1].trial_id.has_value());
  CHECK((*s.storage->find_study("full"))->state == "FINISHED");
}

TEST_CASE("engine enqueue: a request file left while the sweep runs is taken on the next tick") {
  RandomStudy s("live", 3);
  const fs::path study_dir = s.dir / "runs" / "live";
  boost::asio::io_context io;
  auto clock = std::make_shared<test_support::ManualClock>(io);
  int submitted = 0;
  fs::path good, bad;
  bool there_until_tick = false;
  sched::FakeBackend backend(io, 1, [&](const sched::JobSpec&) {
    if (submitted++ == 0)
      // After the turn that submitted trial 0 (and ran the first tick): what `dlsweep
      // enqueue` does while trial 0 runs, a good request and a file that is not valid for
      // the study (a value out of range); then the engine's clock steps to its next tick.
      boost::asio::post(io, [&] {
        good = *orch::write_enqueue_request(study_dir, json{{"lr_rule", "none"}, {"batch_size", 192}});
        bad = *orch::write_enqueue_request(study_dir, json{{"batch_size", 5}});
        std::ofstream(study_dir / orch::kEnqueueRequestDir / "junk.json") << "{not json";
        boost::asio::post(io, [&] {
          there_until_tick = fs::exists(good);  // nothing takes it between ticks
          clock->advance(std::chrono::milliseconds(10));
        });
      });
    auto o = done();
    o.run_s = 0.2;  // the job outlasts the turns above: the files appear while trial 0 runs
    return o;
  });
  auto out = s.run(backend, io, clock);
  REQUIRE(out.has_value());
  CHECK(there_until_tick);
  CHECK(clock->fired() >= 1);
  auto trials = s.trials();
  REQUIRE(trials.size() == 3);
  CHECK(trials[1].params["batch_size"] == 192);  // before trial 1 would have been sampled
  CHECK(trials[1].params["lr_rule"] == "none");
  CHECK_FALSE(fs::exists(good));
  fs::path refused = bad;
  refused += ".refused";
  CHECK(fs::exists(refused));
  CHECK(fs::exists(study_dir / orch::kEnqueueRequestDir / "junk.json.refused"));
  auto requests = *s.storage->list_enqueued(s.study_id);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].request == orch::request_id_of(good));
  CHECK(requests[0].trial_id == trials[1].id);
}
