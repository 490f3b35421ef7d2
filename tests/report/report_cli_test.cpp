// report_cli_test.cpp — `dlsweep report` on the command line: the file it writes, stdout with
// -o -, and the errors (unknown study: exit 2 naming the known ones; unwritable output: exit
// 1, no file left behind).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "../e2e/run_command.hpp"
#include "db/storage.hpp"
#include "report_test_support.hpp"
#include "synthetic_study.hpp"

namespace fs = std::filesystem;
using namespace dlsweep;
using namespace dlsweep::report::testing;

TEST_CASE("dlsweep report writes the page, or says what is wrong") {
  TempDir dir;
  {
    auto s = must(db::Storage::open_readwrite(dir / "r.db"));
    must(write_synthetic_study(*s, "cli", 12));
  }
  auto r = run_dlsweep(dir / "r.db", {"report", "cli"}, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("cli-report.html") && Catch::Contains("12 trials"));
  REQUIRE(fs::exists(dir / "cli-report.html"));
  CHECK_FALSE(fs::exists(dir / "cli-report.html.tmp"));
  std::ifstream f(dir / "cli-report.html");
  const std::string page((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("\"name\":\"cli\"") != std::string::npos);

  auto out = run_dlsweep(dir / "r.db", {"report", "cli", "-o", "-"}, dir.path());
  CHECK(out.exit_code == 0);
  CHECK(out.out == page.substr(0, page.find("\"generated_at\"")) + out.out.substr(page.find("\"generated_at\"")));

  auto unknown = run_dlsweep(dir / "r.db", {"report", "nope"}, dir.path());
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no study named 'nope'") && Catch::Contains("cli"));

  auto bad = run_dlsweep(dir / "r.db", {"report", "cli", "-o", (dir / "missing" / "x.html").string()}, dir.path());
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.err, Catch::Contains("cannot write"));
  CHECK_FALSE(fs::exists(dir / "missing"));

  // -o naming a folder: said so, with the file to name instead (was "cannot rename into
  // place: Is a directory", exit 1, after building the whole report).
  fs::create_directories(dir / "out");
  auto folder = run_dlsweep(dir / "r.db", {"report", "cli", "-o", (dir / "out").string()}, dir.path());
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.err, Catch::Contains("is a directory, not a file") && Catch::Contains("cli-report.html"));
  CHECK(fs::is_empty(dir / "out"));
}
