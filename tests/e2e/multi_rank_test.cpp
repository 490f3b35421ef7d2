// `ranks: 2` in a study: dlsweep's local backend starts each embedded-trainer trial as two
// MPI ranks under mpirun, and the sweep's results are those of the one-rank sweep at the
// same global batch (data parallelism changes the speed, not the trajectory).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;

namespace {

std::string study(const std::string& name, int ranks) {
  return fmt::format(R"(
name: {}
backend: {{kind: local, max_concurrent: 1}}
trial:
  trainer: {{model: mlp, hidden: [128], epochs: 2, train_subset: 4096, test_subset: 1000, threads: 1}}
  ranks: {}
objective: {{metric: val_loss, mode: min}}
space:
  batch_size: [128, 512]
fixed: {{base_batch: 128, base_lr: 0.05, seed: 5, noise_scale_every: 0}}
)", name, ranks);
}

bool on_path(const char* tool) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  std::size_t start = 0;
  while (start <= p.size()) {
    auto end = p.find(':', start);
    if (fs::exists(fs::path(p.substr(start, end == std::string::npos ? std::string::npos : end - start)) / tool))
      return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

}  // namespace

TEST_CASE("a study with ranks: 2 runs each trial as two MPI ranks and matches the one-rank sweep") {
  if (!on_path("mpirun")) {
    WARN("mpirun is not installed (apt-get install openmpi-bin): multi-rank trials not tested");
    return;
  }
  auto dir = fresh_dir("multi-rank");
  std::ofstream(dir / "one.yaml") << study("e2e-ranks-1", 1);
  std::ofstream(dir / "two.yaml") << study("e2e-ranks-2", 2);
  auto db = dir / "sweep.db";
  for (const char* f : {"one.yaml", "two.yaml"}) {
    auto r = run_dlsweep(db, {"submit", f}, dir);
    INFO(f << ": " << r.err);
    REQUIRE(r.exit_code == 0);
  }
  // The trainer's first record says how it ran.
  auto how = run_dlsweep(db, {"query",
                              "SELECT s.name, SUM(r.text LIKE '%on 2 rank(s) (mpi comm)%') AS two_rank_starts "
                              "FROM records r JOIN trials t ON t.id = r.trial_id JOIN studies s ON s.id = t.study_id "
                              "GROUP BY s.name ORDER BY s.name",
                              "--format", "csv"},
                         dir);
  CHECK(how.out == "name,two_rank_starts\ne2e-ranks-1,0\ne2e-ranks-2,2\n");
  auto values = [&](const std::string& name) {
    auto res = run_dlsweep(db, {"results", name, "--format", "json"}, dir);
    REQUIRE(res.exit_code == 0);
    std::map<int, double> out;
    for (const auto& t : nlohmann::json::parse(res.out)) {
      CHECK(t["state"] == "COMPLETE");
      out[t["params"]["batch_size"].get<int>()] = t["value"].get<double>();
    }
    return out;
  };
  auto one = values("e2e-ranks-1"), two = values("e2e-ranks-2");
  REQUIRE(one.size() == 2);
  REQUIRE(two.size() == 2);
  for (auto [batch, loss] : one) {
    INFO("batch " << batch << ": 1 rank " << loss << ", 2 ranks " << two.at(batch));
    CHECK(std::abs(two.at(batch) / loss - 1) < 1e-4);
  }
}
