// Population-based training through the engine and the fake backend: generation g starts only
// when generation g-1 has ended; each trial's parent checkpoints are in its checkpoints/
// before its job exists; every exploit/explore is a `pbt` event; DLSWEEP_STOP_AT and the
// control.json fallback end a trial at its interval's end as COMPLETE; dlsweep-train gets
// batch_ramp/lr_schedule/stop_epoch from the lineage; resample_probability records its
// fresh values; a PbtLink round-trips through JSON and its texts.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "db/storage.hpp"
#include "engine/engine.hpp"
#include "engine/pbt_lineage.hpp"
#include "tests/support/fake_backend.hpp"
#include "schedulers/slurm/backend.hpp"
#include "tests/schedulers/slurm/simulated_slurm_driver.hpp"
#include "study/spec.hpp"

namespace fs = std::filesystem;
using namespace dlsweep;
using nlohmann::json;

namespace {

struct PbtFixture {
  fs::path dir;
  std::unique_ptr<db::Storage> storage;
  orch::StudySpec spec;
  std::int64_t study_id = 0;

  PbtFixture(const std::string& name, const std::string& body) {
    dir = fs::temp_directory_path() / fmt::format("dlsweep-engine-pbt-{}-{}", ::getpid(), name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string yaml = fmt::format("name: {}\nbackend: {{kind: local, max_concurrent: 4}}\n{}\nruns_dir: {}\n",
                                         name, body, (dir / "runs").string());
    auto parsed = orch::parse_study(yaml, orch::StudyFormat::yaml, "pbt_test.yaml");
    if (!parsed) FAIL(parsed.error().front().message());
    spec = *parsed;
    auto s = db::Storage::open_readwrite(dir / "t.db");
    REQUIRE(s.has_value());
    storage = std::move(*s);
    auto id = storage->create_study({spec.name, spec.to_json().dump(), "pbt_test.yaml", (dir / "runs").string(),
                                     spec.objective.metric, spec.objective.mode, std::nullopt});
    REQUIRE(id.has_value());
    study_id = *id;
  }

  Result<orch::SweepOutcome> run(sched::Backend& backend, boost::asio::io_context& io,
                                 std::function<void(orch::Engine&)> before = {}, std::set<TrialState> rerun = {}) {
    orch::EngineOptions opts;
    opts.rerun = std::move(rerun);
    opts.runs_dir = dir / "runs";
    opts.train_binary = "/nonexistent/dlsweep-train";
    opts.tick_s = 0.01;
    opts.handle_signals = false;
    std::FILE* sink = std::fopen("/dev/null", "w");
    orch::Progress progress(sink, false);
    orch::Engine engine(io, *storage, backend, spec, std::move(*orch::make_search_parts(spec)), study_id, opts, progress);
    if (before) before(engine);
    auto r = engine.run();
    std::fclose(sink);
    return r;
  }

  /// The `pbt` links recorded, by trial number.
  orch::PbtLinks links() const {
    orch::PbtLinks out;
    auto trials = storage->list_trials(study_id);
    auto events = storage->events(study_id);
    REQUIRE(trials.has_value());
    REQUIRE(events.has_value());
    std::map<std::int64_t, std::int64_t> number;
    for (const auto& t : *trials) number[t.id] = t.number;
    for (const auto& e : *events)
      if (e.kind == orch::kPbtEventKind && e.trial_id)
        out[number.at(*e.trial_id)] = *orch::PbtLink::from_json(number.at(*e.trial_id), json::parse(e.reason));
    return out;
  }
};

std::string line(int seq, const std::string& metric, double epoch, double value) {
  return fmt::format(R"({{"seq":{},"kind":"eval","step":{},"epoch":{},"samples":{},"wall_s":{},"metrics":{{"{}":{}}}}})",
                     seq, int(epoch * 10), epoch, int(epoch * 320), epoch, metric, value);
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

}  // namespace

TEST_CASE("engine pbt: generations wait, checkpoints are copied, exploits are events, intervals end COMPLETE",
          "[engine][pbt]") {
  PbtFixture f("user", R"(trial: {command: [fake]}
objective: {metric: acc, mode: max}
search: {algorithm: pbt, population: 4, generations: 3, seed: 5, interval: {by: epoch, every: 1}, perturb: {x: [0.5, 2]}}
space: {x: {uniform: [0.1, 10]}})");
  boost::asio::io_context io;
  std::map<std::int64_t, std::set<std::string>> seen_checkpoints;  // at submit, by trial number
  std::map<std::int64_t, std::string> stop_at;
  std::set<std::int64_t> ended;  // trials whose job has been asked what to do, by generation order
  bool waited = true;
  sched::FakeBackend backend(io, 4, [&](const sched::JobSpec& job) {
    const std::int64_t n = std::stoll(job.env.at("DLSWEEP_TRIAL_ID"));
    const std::int64_t member = n % 4, generation = n / 4;
    // Generation g is submitted only once every trial of g-1 has been submitted and has ended
    // (its metrics ingested: the previous generation's records are all in the database).
    for (std::int64_t p = (generation - 1) * 4; generation > 0 && p < generation * 4; ++p) {
      auto s = f.storage->summaries(f.study_id);
      for (const auto& t : *s)
        if (t.number == p && t.state != "COMPLETE") waited = false;
    }
    for (const auto& e : fs::directory_iterator(job.workdir / "checkpoints"))
      seen_checkpoints[n].insert(e.path().filename().string());
    stop_at[n] = job.env.count(orch::kEnvStopAt) ? job.env.at(orch::kEnvStopAt) : "";
    // The trial's own checkpoint, written as it runs.
    std::ofstream(job.workdir / "checkpoints" / fmt::format("ckpt-{}", n)) << n;
    sched::FakeOutcome o;
    // acc grows with the member: member 3 is best, member 0 worst. The trial reports its
    // interval's end and would run on for a long time (reports past the end) unless asked to
    // stop: only the engine's control.json fallback ends it.
    const double acc = 0.1 * double(member + 1) + 0.01 * double(generation);
    const double end = double(generation + 1);
    o.metrics_lines = {line(0, "acc", end - 0.5, acc), line(1, "acc", end, acc)};
    for (int i = 2; i < 2000; ++i) o.metrics_lines.push_back(line(i, "acc", end + 0.001 * i, acc));
    o.run_s = 200;  // 0.2 s for the first two lines
    o.exit_code = 0;
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 12);
  CHECK(backend.submitted().size() == 12);
  CHECK(waited);
  auto trials = f.storage->list_trials(f.study_id);
  REQUIRE(trials->size() == 12);
  for (const auto& t : *trials) {
    CHECK(t.state == TrialState::complete);
    CHECK(t.message == "stopped at its interval's end");
    // params.json holds the hyperparameters only: no lineage.
    CHECK(read_json(fs::path(t.trial_dir) / "params.json") == json{{"x", t.params.at("x")}});
  }
  const auto links = f.links();
  REQUIRE(links.size() == 12);
  for (std::int64_t n = 0; n < 12; ++n) {
    const auto& l = links.at(n);
    INFO("trial " << n);
    CHECK(l.member == n % 4);
    CHECK(l.generation == n / 4);
    CHECK(stop_at.at(n) == fmt::format("epoch:{}", n / 4 + 1));
    if (n < 4) {
      CHECK_FALSE(l.parent);
      CHECK(seen_checkpoints[n].empty());
      continue;
    }
    REQUIRE(l.parent);
    // The parent's checkpoint (and what it had inherited) was there before the job started.
    CHECK(seen_checkpoints[n].count(fmt::format("ckpt-{}", *l.parent)) == 1);
    CHECK(seen_checkpoints[n].count(fmt::format("ckpt-{}", n)) == 0);
    if (n % 4 == 0) {  // member 0 ranks last: it exploits member 3, the best
      REQUIRE(l.exploit_from);
      CHECK(*l.exploit_from == n - 1);
      CHECK(*l.parent == n - 1);
      const double factor = l.factors.at("x").get<double>();
      CHECK((factor == 0.5 || factor == 2.0));
      const double donor_x = (*trials)[std::size_t(n - 1)].params.at("x").get<double>();
      CHECK((*trials)[std::size_t(n)].params.at("x").get<double>() == Approx(std::min(donor_x * factor, 10.0)).epsilon(1e-9));
    } else {
      CHECK_FALSE(l.exploit_from);
      CHECK(*l.parent == n - 4);
      CHECK((*trials)[std::size_t(n)].params == (*trials)[std::size_t(n - 4)].params);
    }
  }
}

TEST_CASE("engine pbt: dlsweep-train gets batch_ramp, lr_schedule and stop_epoch from the lineage", "[engine][pbt]") {
  PbtFixture f("trainer", R"(trial:
  trainer: {model: mlp, hidden: [8], dataset: fashion-mnist, epochs: 3}
objective: {metric: val_acc, mode: max}
search: {algorithm: pbt, population: 2, seed: 3, interval: {by: epoch, every: 1}, perturb: {base_lr: [0.5], batch_size: [2]}}
space: {base_lr: {log_uniform: [0.01, 1]}, batch_size: [64, 128, 256]})");
  CHECK(f.spec.search.options.at("generations") == 3);
  boost::asio::io_context io;
  std::map<std::int64_t, std::string> stop_at;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    const std::int64_t n = std::stoll(job.env.at("DLSWEEP_TRIAL_ID"));
    stop_at[n] = job.env.count(orch::kEnvStopAt) ? job.env.at(orch::kEnvStopAt) : "none";
    sched::FakeOutcome o;
    const double end = double(n / 2 + 1);
    o.metrics_lines = {line(0, "val_acc", end, n % 2 == 0 ? 0.2 : 0.8)};  // member 1 is best
    o.run_s = 0.01;
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 6);
  CHECK(stop_at == std::map<std::int64_t, std::string>{{0, "epoch:1"}, {1, "epoch:1"}, {2, "epoch:2"}, {3, "epoch:2"},
                                                       {4, "none"}, {5, "none"}});
  auto trials = f.storage->list_trials(f.study_id);
  REQUIRE(trials->size() == 6);
  auto p = [&](std::int64_t n) { return read_json(fs::path((*trials)[std::size_t(n)].trial_dir) / "params.json"); };
  auto lr = [&](std::int64_t n) { return fmt::format("{}", p(n).at("base_lr").get<double>()); };
  // The database keeps each interval's batch_size (what the sampler copies); params.json has
  // the one dlsweep-train wants, where its batch_ramp starts.
  auto bs = [&](std::int64_t n) { return std::to_string((*trials)[std::size_t(n)].params.at("batch_size").get<std::int64_t>()); };
  for (std::int64_t n = 0; n < 6; ++n)  // every member but trial 0 descends from trial 1
    CHECK(std::to_string(p(n).at("batch_size").get<std::int64_t>()) == bs(n == 0 ? 0 : 1));
  CHECK(p(0).at("stop_epoch") == 1.0);
  CHECK(p(0).at("lr_schedule") == "0:" + lr(0));
  CHECK(p(0).at("epochs") == 3);
  // Member 0 ranks last each time: generation 1 copies member 1 (trial 1) with base_lr x0.5
  // and batch_size x2 (the neighbouring choice); generation 2 copies trial 3.
  CHECK(p(2).at("stop_epoch") == 2.0);
  CHECK(p(2).at("lr_schedule") == fmt::format("0:{},1:{}", lr(1), lr(2)));
  CHECK(p(2).at("batch_ramp") == fmt::format("0:{},1:{}", bs(1), bs(2)));
  CHECK(p(2).at("base_lr").get<double>() == Approx(p(1).at("base_lr").get<double>() * 0.5));
  CHECK_FALSE(p(4).contains("stop_epoch"));  // the last generation runs to `epochs`
  CHECK(p(4).at("lr_schedule") == fmt::format("0:{},1:{},2:{}", lr(1), lr(3), lr(4)));
  CHECK(p(5).at("lr_schedule") == fmt::format("0:{},1:{},2:{}", lr(1), lr(3), lr(5)));
  CHECK(p(5).at("batch_ramp") == fmt::format("0:{},1:{},2:{}", bs(1), bs(3), bs(5)));
}

TEST_CASE("engine pbt on Slurm: each generation is a new job array; checkpoints are copied on the shared runs dir",
          "[engine][pbt][slurm]") {
  PbtFixture f("slurm", R"(trial:
  command: [/bin/true]
  env: {FAKE_RUN_S: "0.01", FAKE_EXIT: "0"}
objective: {metric: acc, mode: max}
search: {algorithm: pbt, population: 3, generations: 3, seed: 2, interval: {by: epoch, every: 1}, perturb: {x: [0.5, 2]}}
space: {x: {uniform: [0.1, 10]}})");
  // What the programs would write (the simulated controller runs nothing): every trial's
  // evaluation at its interval's end, generation 0's checkpoints.
  const fs::path runs = f.dir / "runs" / "slurm";
  for (int n = 0; n < 9; ++n) {
    const fs::path d = runs / fmt::format("trial-{:04d}", n);
    fs::create_directories(d / "checkpoints");
    std::ofstream(d / "metrics.jsonl") << line(0, "acc", double(n / 3 + 1), 0.1 * double(n % 3 + 1)) << "\n";
    if (n < 3) std::ofstream(d / "checkpoints" / fmt::format("ckpt-{}", n)) << n;
  }
  boost::asio::io_context io;
  sched::SlurmOptions o;
  o.script_dir = f.dir / "slurm";
  o.max_concurrent = 3;
  o.poll_min_s = 0.02;
  o.poll_max_s = 0.08;
  auto ctl = std::make_shared<slurm_test::FakeController>();
  auto backend = sched::SlurmBackend::create(io, o, std::make_unique<slurm_test::SimulatedDriver>(ctl));
  REQUIRE(backend.has_value());
  auto out = f.run(**backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 9);
  {
    std::lock_guard l(ctl->m);
    CHECK(ctl->submits.size() == 3);  // one array per generation: a member's next interval is a new job
  }
  // Each index file lists one generation's trials, with its interval's end in the environment.
  std::map<std::string, std::string> stop_at;  // DLSWEEP_TRIAL_ID -> DLSWEEP_STOP_AT
  for (const auto& e : fs::directory_iterator(o.script_dir)) {
    if (e.path().extension() != ".index") continue;
    std::ifstream in(e.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::size_t at = text.find("DLSWEEP_TRIAL_ID="); at != std::string::npos; at = text.find("DLSWEEP_TRIAL_ID=", at + 1)) {
      const std::string id = text.substr(at + 17, text.find_first_of(" \n", at) - at - 17);
      const auto s = text.rfind("DLSWEEP_STOP_AT=", text.find('\n', at));
      stop_at[id] = s != std::string::npos && s > text.rfind('\n', at) ? text.substr(s + 16, text.find_first_of(" \n", s) - s - 16) : "";
    }
  }
  CHECK(stop_at == std::map<std::string, std::string>{{"0", "epoch:1"}, {"1", "epoch:1"}, {"2", "epoch:1"},
                                                      {"3", "epoch:2"}, {"4", "epoch:2"}, {"5", "epoch:2"},
                                                      {"6", "epoch:3"}, {"7", "epoch:3"}, {"8", "epoch:3"}});
  const auto links = f.links();
  REQUIRE(links.size() == 9);
  for (int n = 3; n < 9; ++n) {
    // Its ancestor of generation 0 left a checkpoint; the engine copied it down the lineage.
    std::int64_t root = n;
    while (links.at(root).parent) root = *links.at(root).parent;
    INFO("trial " << n << ", root " << root);
    CHECK(fs::exists(runs / fmt::format("trial-{:04d}", n) / "checkpoints" / fmt::format("ckpt-{}", root)));
  }
}

TEST_CASE("engine pbt: resume reads the lineage back from its events and goes on with the next generation",
          "[engine][pbt]") {
  PbtFixture f("resume", R"(trial: {command: [fake]}
objective: {metric: acc, mode: max}
search: {algorithm: pbt, population: 2, generations: 3, seed: 4, interval: {by: epoch, every: 1}, perturb: {x: [0.5, 2]}}
space: {x: {uniform: [0.1, 10]}})");
  orch::Engine* engine = nullptr;
  std::map<std::int64_t, std::string> stop_at;
  auto script = [&](boost::asio::io_context& io, bool interrupt_at_generation_1) {
    return [&, interrupt_at_generation_1](const sched::JobSpec& job) {
      const std::int64_t n = std::stoll(job.env.at("DLSWEEP_TRIAL_ID"));
      stop_at[n] = job.env.count(orch::kEnvStopAt) ? job.env.at(orch::kEnvStopAt) : "";
      if (interrupt_at_generation_1 && n == 3) boost::asio::post(io, [&] { engine->interrupt("test"); });
      sched::FakeOutcome o;
      o.metrics_lines = {line(0, "acc", double(n / 2 + 1), 0.1 * double(n % 2 + 1))};
      o.run_s = 0.01;
      return o;
    };
  };
  {
    boost::asio::io_context io;
    sched::FakeBackend backend(io, 2, script(io, true));
    auto out = f.run(backend, io, [&](orch::Engine& e) { engine = &e; });
    REQUIRE(out.has_value());
    CHECK(out->interrupted);
    CHECK(out->snapshot.complete == 2);
    CHECK(out->snapshot.cancelled == 2);
  }
  stop_at.clear();
  {
    boost::asio::io_context io;
    sched::FakeBackend backend(io, 2, script(io, false));
    auto trials = f.storage->list_trials(f.study_id);
    auto sums = f.storage->summaries(f.study_id);
    auto jobs = f.storage->list_jobs(f.study_id);
    auto out = f.run(backend, io, [&](orch::Engine& e) { REQUIRE(e.restore(*trials, *sums, *jobs)); },
                     {TrialState::cancelled});
    REQUIRE(out.has_value());
    CHECK(out->snapshot.complete == 6);
  }
  // The re-run generation-1 trials got their interval's end from the restored links.
  CHECK(stop_at == std::map<std::int64_t, std::string>{{2, "epoch:2"}, {3, "epoch:2"}, {4, "epoch:3"}, {5, "epoch:3"}});
  const auto links = f.links();
  CHECK(links.size() == 6);  // one event per trial, none written twice
  auto events = f.storage->events(f.study_id);
  CHECK(std::count_if(events->begin(), events->end(), [](const auto& e) { return e.kind == orch::kPbtEventKind; }) == 6);
  // Member 0 ranks last in generation 1 and exploits member 1 (trial 3).
  REQUIRE(links.at(4).exploit_from);
  CHECK(*links.at(4).exploit_from == 3);
}

TEST_CASE("engine pbt: with resample_probability 1 the explore step resamples, and the `pbt` event says so",
          "[engine][pbt]") {
  PbtFixture f("resample", R"(trial: {command: [fake]}
objective: {metric: acc, mode: max}
search: {algorithm: pbt, population: 2, generations: 2, seed: 6, resample_probability: 1, interval: {by: epoch, every: 1}, perturb: {x: [0.5, 2]}}
space: {x: {uniform: [0.1, 10]}})");
  CHECK(f.spec.search.options.at("resample_probability") == 1);
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    const std::int64_t n = std::stoll(job.env.at("DLSWEEP_TRIAL_ID"));
    sched::FakeOutcome o;
    o.metrics_lines = {line(0, "acc", double(n / 2 + 1), 0.1 * double(n % 2 + 1))};  // member 1 is best
    o.run_s = 0.01;
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 4);
  auto trials = f.storage->list_trials(f.study_id);
  const auto links = f.links();
  REQUIRE(links.size() == 4);
  // Member 0 ranks last and exploits trial 1; x is a fresh draw from [0.1, 10), not a factor.
  const auto& l = links.at(2);
  REQUIRE(l.exploit_from);
  CHECK(*l.exploit_from == 1);
  CHECK(l.factors.empty());
  REQUIRE(l.resampled.contains("x"));
  const double x = l.resampled.at("x").get<double>();
  CHECK((*trials)[2].params.at("x").get<double>() == x);
  CHECK(x >= 0.1);
  CHECK(x < 10);
  CHECK(l.brief() == fmt::format("m0 g1 <- 1 (exploit m1: x resampled to {:g})", x));
  CHECK_FALSE(links.at(3).exploit_from);
  CHECK(links.at(3).resampled.empty());
}

TEST_CASE("pbt link: factors and resampled values round-trip through JSON and read in its texts", "[engine][pbt]") {
  const json j = {{"member", 3}, {"generation", 2}, {"axis", "epoch"}, {"start", 4.0}, {"end", 6.0}, {"parent", 9},
                  {"rank", 7},
                  {"exploit", {{"from", 9}, {"from_member", 1}, {"factors", {{"base_lr", 0.8}}},
                               {"resampled", {{"batch_size", 512}}}}}};
  const auto l = orch::PbtLink::from_json(14, j);
  REQUIRE(l);
  CHECK(l->factors == json{{"base_lr", 0.8}});
  CHECK(l->resampled == json{{"batch_size", 512}});
  CHECK(l->to_json() == j);
  CHECK(orch::PbtLink::from_json(14, l->to_json())->to_json() == j);
  CHECK(l->describe() == "member 3, generation 2, epoch [4, 6): its previous trial ranked 8; exploits trial 9 (member 1) "
                         "and explores base_lr x0.8, batch_size resampled to 512");
  CHECK(l->brief() == "m3 g2 <- 9 (exploit m1: base_lr x0.8, batch_size resampled to 512)");
  // A link without `resampled` (resample_probability 0, or written before it existed) reads
  // and writes back as it was.
  json old = j;
  old["exploit"].erase("resampled");
  const auto o = orch::PbtLink::from_json(14, old);
  REQUIRE(o);
  CHECK(o->resampled.empty());
  CHECK(o->to_json() == old);
  CHECK(o->brief() == "m3 g2 <- 9 (exploit m1: base_lr x0.8)");
  // Only resampled keys: the explore text still names them.
  json only = j;
  only["exploit"]["factors"] = json::object();
  CHECK(orch::PbtLink::from_json(14, only)->brief() == "m3 g2 <- 9 (exploit m1: batch_size resampled to 512)");
  CHECK(dlsweep::pbt_explore_text(json::object(), json::object()).empty());
}
