// Define-by-run in the engine (engine_suggest.cpp): the program's suggest.jsonl requests are
// answered in suggested.json — a study-declared name with the trial's value after checking the
// call agrees (a contradiction names both), a discovered name drawn once, stored in the trial's
// params and answered the same when asked again, its distribution fixed by its first asker.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "engine_fixture.hpp"
#include "tests/support/fake_backend.hpp"

using namespace engine_test;

namespace {

void append(const fs::path& file, const std::string& line) {
  std::ofstream out(file, std::ios::app);
  out << line << "\n";
}

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in, nullptr, false);
}

const char* kX = R"({"name":"x","distribution":{"type":"categorical","choices":[5,4,3,2,1]}})";
const char* kXWrong = R"({"name":"x","distribution":{"type":"int","low":1,"high":5}})";
const char* kW8 = R"({"name":"w","distribution":{"type":"int","low":1,"high":8,"step":1,"log":false}})";
const char* kW16 = R"({"name":"w","distribution":{"type":"int","low":1,"high":16,"step":1,"log":false}})";

}  // namespace

TEST_CASE("engine: suggest_* requests are answered from the declaration, the stored value or a stored draw") {
  Fixture f("suggest", "");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    const auto number = std::stoi(job.env.at("DLSWEEP_TRIAL_ID"));
    const auto req = job.workdir / "suggest.jsonl";
    append(req, kX);
    append(req, number == 4 ? kW16 : kW8);  // the last trial asks w with another range
    append(req, kW8);                       // asked again (another rank): the same answer
    if (number == 3) append(req, kXWrong);
    append(req, R"({"name":"z","distribution":{"type":"float","low":0.1,"high":0.7,"step":0.3}})");
    append(req, "not json");
    sched::FakeOutcome o;
    o.run_s = 0.3;  // ticks (0.01 s) answer while it runs
    o.metrics_lines = {eval_line(0, 10, 0.1 * number, true)};
    return o;
  });
  std::string printed;
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  auto r = f.run(backend, io, {}, out);
  std::fclose(out);
  printed.assign(buf, len);
  std::free(buf);
  REQUIRE(r.has_value());
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows);
  REQUIRE(rows->size() == 5);
  for (const auto& t : *rows) {
    INFO("trial " << t.number);
    const auto answers = read_json(fs::path(t.trial_dir) / "suggested.json");
    REQUIRE(answers.is_object());
    if (t.number != 3) {  // trial 3 asked x again as an int range: its entry is that call's error (below)
      CHECK(answers["x"]["value"] == t.params["x"]);  // the declared value
      CHECK(answers["x"]["distribution"]["type"] == "categorical");
    }
    REQUIRE(t.params.contains("w"));                // the discovered one, stored
    CHECK(t.params["w"].get<int>() >= 1);
    CHECK(t.params["w"].get<int>() <= 8);
    CHECK(answers["w"]["value"] == t.params["w"]);
    CHECK(answers["z"]["value"] == t.params["z"]);
    const double z = t.params["z"].get<double>();
    CHECK((std::abs(z - 0.1) < 1e-12 || std::abs(z - 0.4) < 1e-12 || std::abs(z - 0.7) < 1e-12));
  }
  // Trial 3 asked x as an int range: the study declares a list.
  const auto t3 = read_json(fs::path((*rows)[3].trial_dir) / "suggested.json");
  CHECK(t3["x"]["error"].get<std::string>() ==
        "the study file declares space.x: choice [1,2,3,4,5] but the program calls suggest_int('x', 1, 5): make "
        "them agree (or drop the study's entry and let the program's call define the space)");
  CHECK(printed.find("trial 3: the study file declares space.x: choice [1,2,3,4,5]") != std::string::npos);
  CHECK(printed.find("skipped a bad line") != std::string::npos);
  // Trial 4 asked w 1..16 first: an error naming both calls; its later 1..8 call is answered.
  const auto t4 = read_json(fs::path((*rows)[4].trial_dir) / "suggested.json");
  CHECK(t4["w"]["distribution"]["high"] == 8);  // the last request's answer is what the file holds
  CHECK(printed.find("trial 4: the program calls suggest_int('w', 1, 16) but an earlier trial of this study called "
                     "suggest_int('w', 1, 8) for the same name") != std::string::npos);
  // One distribution per discovered name, recorded once.
  auto evs = f.storage->events(f.study_id);
  REQUIRE(evs);
  int suggests = 0;
  for (const auto& e : *evs) suggests += e.kind == "suggest";
  CHECK(suggests == 2);  // w and z
}

TEST_CASE("engine: a retried trial asks afresh and gets its stored values; no earlier answer is left for it") {
  Fixture f("suggest-retry", "  max_retries: 1");
  boost::asio::io_context io;
  std::map<int, std::vector<bool>> stale;  // trial number -> per launch: an answer file was there at launch
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    const auto number = std::stoi(job.env.at("DLSWEEP_TRIAL_ID"));
    const auto attempt = std::stoi(job.env.at("DLSWEEP_ATTEMPT"));
    stale[number].push_back(fs::exists(job.workdir / "suggested.json") || fs::exists(job.workdir / "suggest.jsonl"));
    append(job.workdir / "suggest.jsonl", kW8);
    sched::FakeOutcome o;
    o.run_s = 0.2;
    if (attempt == 0) o.exit_code = 1;  // fails after asking: retried
    else o.metrics_lines = {eval_line(0, 10, 0.1, true)};
    return o;
  });
  std::map<int, nlohmann::json> first;
  auto r = f.run(backend, io);
  REQUIRE(r.has_value());
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows);
  for (const auto& t : *rows) {
    INFO("trial " << t.number);
    CHECK(t.attempt == 1);
    CHECK(t.state == TrialState::complete);
    CHECK(stale[static_cast<int>(t.number)] == std::vector<bool>{false, false});
    const auto answers = read_json(fs::path(t.trial_dir) / "suggested.json");
    CHECK(answers["w"]["value"] == t.params["w"]);  // the retry's answer: the stored value
  }
}
