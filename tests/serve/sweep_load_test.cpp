// `dlsweep serve` during a real sweep (real binaries, local backend, real trial programs):
// 200 concurrent requests, repeatedly, while the orchestrator ingests: 0 errors, and no
// "database is locked" (or busy) in the server's or the orchestrator's output; the sweep
// ends normally with every trial COMPLETE. (The throughput comparison with an unobserved
// sweep is a benchmark: bench/serve_load.cpp.)
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>

#include "../e2e/run_command.hpp"
#include "child_process.hpp"
#include "db/storage.hpp"
#include "load_client.hpp"
#include "sweep_support.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;
using namespace dlsweep::serve::testing;

namespace {

int count_state(const fs::path& db, const std::string& study, const std::string& state) {
  auto s = dlsweep::db::Storage::open_readonly(db);
  if (!s) return -1;
  auto st = (*s)->find_study(study);
  if (!st || !*st) return -1;
  auto counts = (*s)->state_counts((**st).id);
  if (!counts) return -1;
  for (const auto& [name, n] : *counts)
    if (name == state) return static_cast<int>(n);
  return 0;
}

bool mentions_lock(const std::string& text) {
  return text.find("database is locked") != std::string::npos || text.find("SQLITE_BUSY") != std::string::npos ||
         text.find("database is busy") != std::string::npos;
}

}  // namespace

TEST_CASE("serve: 200 concurrent requests during a real sweep — no errors, no lock contention") {
  constexpr int kTrials = 4;
  auto dir = fresh_dir("serve-load");
  auto gates = dir / "gates";
  fs::create_directories(gates);
  std::ofstream(dir / "study.yaml") << gated_study("served", gates, kTrials, 0.02,
                                                   DLSWEEP_SOURCE_DIR "/tests/serve/data/gated_trial.py");
  const auto db = dir / "sweep.db";
  Child sweep({DLSWEEP_BIN, "--db", db.string(), "submit", "study.yaml"}, dir / "submit.out", dir / "submit.err", dir);
  REQUIRE(sweep.started());
  // Every trial running and reporting: the orchestrator is ingesting all the time from here on.
  REQUIRE(test_support::wait_until([&] { return count_state(db, "served", "RUNNING") == kTrials || !sweep.running(); },
                                   std::chrono::seconds(300)));
  REQUIRE(sweep.running());

  Child server({DLSWEEP_BIN, "--db", db.string(), "serve", "--port", "0"}, dir / "serve.out", dir / "serve.err");
  const ServeUrl url = wait_for_url(dir / "serve.out", server, 120);
  INFO(slurp(dir / "serve.err"));
  REQUIRE(url.ready);
  const unsigned short port = url.port;
  // The browser's cookie after it opened the printed URL (the token is on by default).
  const std::string cookie = "Cookie: dlsweep-serve=" + url.token + "\r\n";
  CHECK(burst(port, {"/api/studies"}, 10).errors == 10);  // and without it: 403, every one

  const std::vector<std::string> targets = {"/api/studies/served", "/api/studies", "/study/served", "/",
                                            "/assets/render.js", "/assets/live.js"};
  LoadCounts total;
  for (int round = 0; round < 5; ++round) {
    auto c = burst(port, targets, 200, cookie);
    INFO("round " << round << ": " << c.first_error);
    CHECK(c.requests == 200);
    CHECK(c.errors == 0);
    total.requests += c.requests;
    total.errors += c.errors;
  }
  CHECK(sweep.running());  // the load ran during the sweep, not after it
  CHECK(count_state(db, "served", "RUNNING") == kTrials);

  for (int x = 0; x < kTrials; ++x) release(gates, x);
  CHECK(sweep.wait(300) == 0);
  CHECK(count_state(db, "served", "COMPLETE") == kTrials);
  // One more burst on the finished study, then a clean stop.
  CHECK(burst(port, targets, 200, cookie).errors == 0);
  server.signal(SIGTERM);
  CHECK(server.wait(60) == 0);

  const std::string orch = slurp(dir / "submit.out") + slurp(dir / "submit.err");
  const std::string srv = slurp(dir / "serve.out") + slurp(dir / "serve.err");
  INFO("orchestrator:\n" << orch << "\nserver:\n" << srv);
  CHECK_FALSE(mentions_lock(orch));
  CHECK_FALSE(mentions_lock(srv));
  CHECK(srv.find("database read failed") == std::string::npos);
  CHECK(total.requests == 1000);
}
