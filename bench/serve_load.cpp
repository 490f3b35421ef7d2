// serve_load.cpp — does watching a sweep with `dlsweep serve` slow the sweep down?
//
// Runs the same real sweep (local backend, examples/custom/toy_trial.py trials, each
// reporting `steps/10` records) several times on fresh databases: unobserved, and observed by
// `dlsweep serve` with V viewers (threads, each a browser tab polling one URL of the live view
// once a second on a keep-alive connection: the study JSON, the study list, the page, the
// renderer), in the order U,O then O,U per pair so drift on a shared machine cancels.
// Bookkeeping throughput = records the orchestrator ingested into the database per second
// of sweep wall time (submit start to exit). Prints each run, the observed/unobserved ratio
// of the pooled throughputs (and of each pair), the viewers' request and error counts, and
// how often "database is locked"/busy appears in the orchestrator's or the server's output.
//
//   bench_serve_load [--pairs 3] [--trials 16] [--steps 10000] [--concurrent 2] [--viewers 200]
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "../tests/serve/child_process.hpp"
#include "../tests/serve/load_client.hpp"

namespace fs = std::filesystem;
using namespace dlsweep::serve::testing;
using Clock = std::chrono::steady_clock;

namespace {

struct Run {
  bool observed = false;
  double wall_s = 0;
  long records = 0;
  int exit_code = -1;
  LoadCounts load;
  int locked_orch = 0, locked_server = 0;
  double throughput() const { return wall_s > 0 ? records / wall_s : 0; }
};

int count_locked(const std::string& text) {
  int n = 0;
  for (const char* needle : {"database is locked", "database is busy", "SQLITE_BUSY"})
    for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

std::string study_yaml(int trials, int steps, int concurrent) {
  return fmt::format(
      "name: load\n"
      "backend: {{kind: local, max_concurrent: {}}}\n"
      "trial:\n  command: [/usr/bin/python3, \"{}/examples/custom/toy_trial.py\"]\n"
      "objective: {{metric: loss, mode: min, target: 0.001}}\n"
      "search: {{algorithm: random, trials: {}, seed: 7}}\n"
      "space:\n  lr: {{log_uniform: [0.001, 0.1]}}\n  batch_size: [8, 64, 512]\n"
      "fixed: {{steps: {}}}\n",
      concurrent, DLSWEEP_SOURCE_DIR, trials, steps);
}

long records_in(const fs::path& db) {
  // The read-only query verb, as a user would count them.
  fs::path out = db.parent_path() / "count.out";
  Child q({DLSWEEP_BIN, "--db", db.string(), "query", "SELECT COUNT(*) AS n FROM records", "--format", "csv"}, out,
          db.parent_path() / "count.err");
  q.wait(120);
  std::string text = slurp(out);
  auto nl = text.find('\n');
  return nl == std::string::npos ? -1 : std::atol(text.c_str() + nl + 1);
}

Run one(const fs::path& base, int index, bool observed, int trials, int steps, int concurrent, int viewers) {
  Run r;
  r.observed = observed;
  fs::path dir = base / fmt::format("run-{}-{}", index, observed ? "observed" : "unobserved");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "study.yaml") << study_yaml(trials, steps, concurrent);
  const fs::path db = dir / "sweep.db";
  std::unique_ptr<Child> server;
  std::unique_ptr<Viewers> load;
  const auto t0 = Clock::now();
  Child sweep({DLSWEEP_BIN, "--db", db.string(), "submit", "study.yaml"}, dir / "submit.out", dir / "submit.err", dir);
  if (observed) {
    // The server needs the database with its schema; the orchestrator creates it first
    // thing. Until then `serve` refuses the file (exit 2): start it again.
    unsigned short port = 0;
    std::string token;
    while (port == 0 && sweep.running()) {
      while (!fs::exists(db) && sweep.running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      server = std::make_unique<Child>(std::vector<std::string>{DLSWEEP_BIN, "--db", db.string(), "serve", "--port", "0"},
                                       dir / "serve.out", dir / "serve.err");
      const ServeUrl url = wait_for_url(dir / "serve.out", *server, 60);
      port = url.port;
      token = url.token;
      if (port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (port == 0) fmt::print("  (the sweep ended before the server could start: not observed)\n");
    if (port != 0)
      load = std::make_unique<Viewers>(
          port, std::vector<std::string>{"/api/studies/load", "/api/studies", "/study/load", "/assets/render.js"},
          viewers, 1.0, "Cookie: dlsweep-serve=" + token + "\r\n");  // the token's cookie, as a browser
  }
  r.exit_code = sweep.wait(3600);
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (load) r.load = load->stop();
  if (server) {
    server->signal(SIGTERM);
    server->wait(60);
    r.locked_server = count_locked(slurp(dir / "serve.out") + slurp(dir / "serve.err"));
  }
  r.locked_orch = count_locked(slurp(dir / "submit.out") + slurp(dir / "submit.err"));
  r.records = records_in(db);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_serve_load: a sweep's bookkeeping throughput, unobserved vs watched by dlsweep serve"};
  int pairs = 3, trials = 16, steps = 10000, concurrent = 2, viewers = 200;
  std::string work = (fs::temp_directory_path() / "dlsweep-bench-serve").string();
  app.add_option("--pairs", pairs, "unobserved/observed pairs (default 3)");
  app.add_option("--trials", trials, "trials per sweep (default 16)");
  app.add_option("--steps", steps, "toy_trial.py steps per trial; it reports every 10 (default 10000)");
  app.add_option("--concurrent", concurrent, "trials at once (default 2)");
  app.add_option("--viewers", viewers, "concurrent polling clients while observed (default 200)");
  app.add_option("--work-dir", work, "scratch directory (removed at the end)");
  CLI11_PARSE(app, argc, argv);

  std::vector<Run> runs;
  for (int p = 0; p < pairs; ++p) {
    for (bool observed : p % 2 == 0 ? std::vector<bool>{false, true} : std::vector<bool>{true, false}) {
      Run r = one(work, p, observed, trials, steps, concurrent, viewers);
      fmt::print("pair {} {:10s}: exit {}, {} records in {:.2f} s = {:.1f} records/s; requests {} ok {} errors {}; "
                 "locked: orchestrator {}, server {}\n",
                 p, observed ? "observed" : "unobserved", r.exit_code, r.records, r.wall_s, r.throughput(),
                 r.load.requests, r.load.ok, r.load.errors, r.locked_orch, r.locked_server);
      if (!r.load.first_error.empty()) fmt::print("  first error: {}\n", r.load.first_error);
      std::fflush(stdout);
      runs.push_back(r);
    }
  }
  fs::remove_all(work);

  double rec[2] = {0, 0}, wall[2] = {0, 0};
  std::uint64_t requests = 0, errors = 0;
  int locked = 0, bad_exit = 0;
  std::vector<double> pair_ratios;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    rec[r.observed] += r.records;
    wall[r.observed] += r.wall_s;
    requests += r.load.requests;
    errors += r.load.errors;
    locked += r.locked_orch + r.locked_server;
    bad_exit += r.exit_code != 0;
    if (i % 2 == 1) {
      const Run& o = r.observed ? r : runs[i - 1];
      const Run& u = r.observed ? runs[i - 1] : r;
      pair_ratios.push_back(o.throughput() / u.throughput());
    }
  }
  const double ratio = (rec[1] / wall[1]) / (rec[0] / wall[0]);
  std::sort(pair_ratios.begin(), pair_ratios.end());
  std::string per_pair;
  for (double x : pair_ratios) per_pair += fmt::format(" {:.3f}", x);
  fmt::print("\nbookkeeping throughput observed/unobserved: {:.3f} (pooled over {} pairs; per pair:{})\n", ratio,
             pairs, per_pair);
  fmt::print("viewers: {} requests, {} errors; \"database is locked\"/busy lines: {}; sweeps not exiting 0: {}\n",
             requests, errors, locked, bad_exit);
  fmt::print("command: bench_serve_load --pairs {} --trials {} --steps {} --concurrent {} --viewers {}\n", pairs,
             trials, steps, concurrent, viewers);
  bool unobserved_observed = false;
  for (const Run& r : runs) unobserved_observed |= r.observed && r.load.requests == 0;
  if (unobserved_observed) fmt::print("an observed run had no requests: the ratio means nothing\n");
  return errors == 0 && locked == 0 && bad_exit == 0 && !unobserved_observed ? 0 : 1;
}
