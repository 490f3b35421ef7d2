// `--db` naming something that cannot be a database gets one message and one exit code (2,
// bad arguments) from every verb, before anything is created, opened or locked.
#include <catch2/catch.hpp>

#include <fstream>

#include "run_command.hpp"

namespace fs = std::filesystem;

TEST_CASE("a bad --db gets the same clear error and exit code 2 from every verb") {
  auto dir = fresh_dir("dbpath");
  std::ofstream(dir / "study.yaml") << "name: x\nspace: {seed: [1, 2]}\n";
  const std::vector<std::vector<std::string>> verbs = {
      {"submit", (dir / "study.yaml").string()}, {"status"}, {"status", "x"}, {"results", "x"},
      {"query", "SELECT 1"}, {"best", "x"}, {"resume", "x"}, {"cancel", "x"},
      {"enqueue", "x", "--set", "seed=1"}, {"resume", "x", "--add-trials", "1"},
      {"delete", "x", "--files", "--yes"}, {"submit", "--replace", (dir / "study.yaml").string()}};
  struct Case {
    fs::path db;
    std::string says, fix;
  };
  const std::vector<Case> cases = {
      {dir / "missing" / "sub" / "d.db", "does not exist", "mkdir -p"},
      {dir, "is a directory", "--db " + (dir / "dlsweep.db").string()},
  };
  for (const auto& c : cases)
    for (const auto& args : verbs) {
      INFO(args[0] << " --db " << c.db);
      auto r = run_dlsweep(c.db, args, dir);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("--db") != std::string::npos);
      CHECK(r.err.find(c.says) != std::string::npos);
      CHECK(r.err.find(c.fix) != std::string::npos);
      CHECK(r.err.find("lock file") == std::string::npos);
    }
  CHECK_FALSE(fs::exists(dir / "missing"));  // nothing was created on the way
  CHECK_FALSE(fs::exists(dir.string() + ".lock"));
}
