// The live view in headless Chromium during a real sweep: a trial that finishes shows as
// COMPLETE in the open page (the report's trial table, rendered by render.js) within 5 s of
// the trial program finishing, with no console error. live_check.mjs drives the browser and
// releases the trial; this test runs the sweep and the server and judges the figures.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "../e2e/run_command.hpp"
#include "../report/chromium_support.hpp"
#include "child_process.hpp"
#include "db/storage.hpp"
#include "sweep_support.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;
using namespace dlsweep::serve::testing;

namespace {

int running_trials(const fs::path& db) {
  auto s = dlsweep::db::Storage::open_readonly(db);
  if (!s) return -1;
  auto st = (*s)->find_study("live");
  if (!st || !*st) return -1;
  auto counts = (*s)->state_counts((**st).id);
  if (!counts) return -1;
  for (const auto& [name, n] : *counts)
    if (name == "RUNNING") return static_cast<int>(n);
  return 0;
}

}  // namespace

TEST_CASE("serve: a trial finishing in a running sweep shows in the page within 5 s") {
  auto dir = fresh_dir("serve-live");
  auto gates = dir / "gates";
  fs::create_directories(gates);
  std::ofstream(dir / "study.yaml") << gated_study("live", gates, 2, 0.2,
                                                   DLSWEEP_SOURCE_DIR "/tests/serve/data/gated_trial.py");
  const auto db = dir / "sweep.db";
  Child sweep({DLSWEEP_BIN, "--db", db.string(), "submit", "study.yaml"}, dir / "submit.out", dir / "submit.err", dir);
  REQUIRE(sweep.started());
  test_support::wait_until([&] { return running_trials(db) == 2 || !sweep.running(); }, std::chrono::seconds(300));
  REQUIRE(running_trials(db) == 2);

  Child server({DLSWEEP_BIN, "--db", db.string(), "serve", "--port", "0"}, dir / "serve.out", dir / "serve.err");
  const ServeUrl url = wait_for_url(dir / "serve.out", server, 120);
  INFO(slurp(dir / "serve.err"));
  REQUIRE(url.ready);
  REQUIRE(url.token.size() == 64);  // served with its token, as by default

  // The browser gets the tokenized URL, as a user pastes it: the server sets the cookie and
  // redirects to the page without the token; the page's polls carry the cookie.
  const std::string base = "http://127.0.0.1:" + std::to_string(url.port);
  auto r = run_command({dlsweep_report_node(), DLSWEEP_SOURCE_DIR "/tests/serve/live_check.mjs",
                        dlsweep_report_chromium(), base + "/study/live?token=" + url.token,
                        (gates / "gate-0").string(), "0", "300"});
  INFO("live_check stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  INFO(j.dump(2));
  CHECK(j["before"]["state"] == "RUNNING");
  CHECK(j["after"]["state"] == "COMPLETE");
  CHECK(j["seen_ms"].get<double>() <= 5000.0);  // the bound, from the trial's release
  CHECK(j["errors"].empty());
  CHECK(j["after"]["href"] == base + "/study/live");  // the token left the address bar
  CHECK(j["after"]["updates"].get<int>() >= 2);       // the polls got through (cookie, not 403)
  // The sweep was still running when the page showed it: trial 1 holds it open.
  CHECK(sweep.running());
  WARN("live view: trial shown COMPLETE " << j["seen_ms"].get<double>() << " ms after the trial program was released");

  release(gates, 1);
  CHECK(sweep.wait(300) == 0);
  server.signal(SIGTERM);
  CHECK(server.wait(60) == 0);
}
