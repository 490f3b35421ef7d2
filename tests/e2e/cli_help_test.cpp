// `dlsweep` with no arguments prints the help (the first thing a new user types).
#include <catch2/catch.hpp>

#include "run_command.hpp"

TEST_CASE("dlsweep with no arguments prints the help and exits 0") {
  auto r = run_command({DLSWEEP_BIN});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("submit") != std::string::npos);
  CHECK(r.out.find("results") != std::string::npos);
  CHECK(r.err.find("A subcommand is required") == std::string::npos);
  // A wrong subcommand is still a usage error.
  auto bad = run_command({DLSWEEP_BIN, "sumbit"});
  CHECK(bad.exit_code != 0);
}
