// engine_fixture.hpp — what the engine tests share: a study (grid over x = 1..5, trial
// command "fake") in a real SQLite file, and running the engine on a given backend.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "db/storage.hpp"
#include "engine/engine.hpp"
#include "study/spec.hpp"

namespace fs = std::filesystem;
using namespace dlsweep;

namespace engine_test {

struct Fixture {
  fs::path dir;
  std::unique_ptr<db::Storage> storage;
  orch::StudySpec spec;
  std::int64_t study_id = 0;
  std::set<TrialState> rerun;  ///< EngineOptions::rerun of the next run()
  bool detach_on_sigterm = false;  ///< EngineOptions::detach_on_sigterm of the next run()
  /// EngineOptions::clock of the next run(): nullptr, real time; a test that waits on the
  /// engine's tick passes a test_support::ManualClock and steps it.
  std::shared_ptr<orch::EngineClock> clock;

  explicit Fixture(const std::string& name, const std::string& extra_yaml) {
    dir = fs::temp_directory_path() / fmt::format("dlsweep-engine-{}-{}", ::getpid(), name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string yaml = fmt::format(R"(
name: {}
backend: {{kind: local, max_concurrent: 2}}
trial:
  command: [fake]
{}
objective: {{metric: acc, mode: max, target: 0.5}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3, 4, 5]}}
runs_dir: {}
)", name, extra_yaml, (dir / "runs").string());
    auto parsed = orch::parse_study(yaml, orch::StudyFormat::yaml, "engine_test.yaml");
    if (!parsed) FAIL(parsed.error().front().message());
    spec = *parsed;
    auto s = db::Storage::open_readwrite(dir / "t.db");
    REQUIRE(s.has_value());
    storage = std::move(*s);
    auto id = storage->create_study({spec.name, spec.to_json().dump(), "engine_test.yaml", (dir / "runs").string(),
                                     "acc", "max", 0.5});
    REQUIRE(id.has_value());
    study_id = *id;
  }

  /// Replaces the spec with a study file's text (YAML, without `runs_dir`: this fixture's is
  /// added). Its `name` must be the fixture's (the study row is created under it).
  void use_study(const std::string& yaml) {
    auto parsed = orch::parse_study(yaml + fmt::format("runs_dir: {}\n", (dir / "runs").string()),
                                    orch::StudyFormat::yaml, "engine_test.yaml");
    if (!parsed) FAIL(parsed.error().front().message());
    spec = *parsed;
  }

  /// Runs the engine as `resume` does: the study's rows restored first; `counts`: what the
  /// restore found.
  Result<orch::SweepOutcome> resume(sched::Backend& backend, boost::asio::io_context& io,
                                    orch::Engine::RestoreCounts& counts) {
    auto trials = storage->list_trials(study_id);
    auto sums = storage->summaries(study_id);
    auto jobs = storage->list_jobs(study_id);
    REQUIRE(trials);
    REQUIRE(sums);
    REQUIRE(jobs);
    return run(backend, io, [&](orch::Engine& e) {
      REQUIRE(e.restore(*trials, *sums, *jobs));
      counts = e.restore_counts();
    });
  }

  /// Runs the engine to its end; its progress output goes to `out` (nullptr: nowhere), as
  /// to a terminal when `tty` (the status line redrawn after every event).
  Result<orch::SweepOutcome> run(sched::Backend& backend, boost::asio::io_context& io,
                                 std::function<void(orch::Engine&)> before = {}, std::FILE* out = nullptr,
                                 bool tty = false) {
    orch::EngineOptions opts;
    opts.runs_dir = dir / "runs";
    opts.tick_s = 0.01;
    opts.handle_signals = false;
    opts.rerun = rerun;
    opts.clock = clock;
    opts.detach_on_sigterm = detach_on_sigterm;
    std::FILE* sink = out ? out : std::fopen("/dev/null", "w");
    orch::Progress progress(sink, tty);
    orch::Engine engine(io, *storage, backend, spec, std::move(*orch::make_search_parts(spec)), study_id, opts, progress);
    if (before) before(engine);
    auto r = engine.run();
    if (!out) std::fclose(sink);
    return r;
  }
};

inline std::string eval_line(int seq, int step, double acc, bool final = false) {
  return fmt::format(R"({{"seq":{},"kind":"{}","step":{},"epoch":{},"samples":{},"wall_s":{},"metrics":{{"acc":{}}}}})",
                     seq, final ? "final" : "eval", step, step / 10.0, step * 32, step * 0.1, acc);
}

}  // namespace engine_test

using namespace engine_test;
