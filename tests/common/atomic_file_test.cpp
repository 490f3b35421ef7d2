// common/atomic_file: a file is replaced whole or not at all, in one call (write_file_atomic)
// or written in pieces (AtomicFileWriter, what `dlsweep export --output` streams through).
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.hpp"
#include "common/atomic_file.hpp"

namespace fs = std::filesystem;
using dlsweep::AtomicFileWriter;

namespace {

using test_support::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("atomic file: write_file_atomic replaces the file and leaves no temporary", "[common][atomic]") {
  TempDir dir;
  const fs::path f = dir.path() / "a.json";
  REQUIRE(dlsweep::write_file_atomic(f, "old\n").has_value());
  REQUIRE(dlsweep::write_file_atomic(f, "new\n").has_value());
  CHECK(slurp(f) == "new\n");
  CHECK(dir.entries() == 1);
  auto bad = dlsweep::write_file_atomic(dir.path() / "no-such-dir" / "a.json", "x");
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message(), Catch::Contains("cannot create"));
}

TEST_CASE("atomic file: a writer shows nothing until commit, and a writer dropped uncommitted changes nothing",
          "[common][atomic]") {
  TempDir dir;
  const fs::path f = dir.path() / "export.csv";
  REQUIRE(dlsweep::write_file_atomic(f, "old\n").has_value());
  {
    auto w = AtomicFileWriter::open(f);
    REQUIRE(w.has_value());
    REQUIRE(w->write("a,b\n").has_value());
    CHECK(slurp(f) == "old\n");  // a reader sees the old file while the new one is written
    CHECK(dir.entries() == 2);
    for (const auto& e : fs::directory_iterator(dir.path()))  // the other one: a name removal knows
      if (e.path() != f) CHECK(dlsweep::is_atomic_temp_name(e.path().filename().string()));
  }  // dropped (a failed export): its temporary goes, the old file stays
  CHECK(slurp(f) == "old\n");
  CHECK(dir.entries() == 1);

  auto w = AtomicFileWriter::open(f);
  REQUIRE(w.has_value());
  AtomicFileWriter moved = std::move(*w);  // the Sink holds it by value
  for (int i = 0; i < 1000; ++i) REQUIRE(moved.write("1,2\n").has_value());
  REQUIRE(moved.commit().has_value());
  CHECK(slurp(f).size() == 4000);
  CHECK(dir.entries() == 1);
  CHECK_FALSE(moved.write("more").has_value());  // committed: nothing more goes in
}
