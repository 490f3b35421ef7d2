#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>

#include "common/shell_quote.hpp"

using dlsweep::shell_quote;

// Runs `printf %s WORD` through /bin/sh and returns what it printed.
static std::string through_shell(const std::string& value) {
  std::string cmd = "printf %s " + shell_quote(value);
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 256> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

TEST_CASE("shell_quote turns hostile strings into one inert word") {
  for (std::string s : {"plain", "with space", "it's", "$(touch /tmp/pwned)", "`id`", "a;b", "line\nbreak",
                        "\"dq\"", "back\\slash", "*", "", "--flag=1", "'", "''"}) {
    INFO(s);
    CHECK(through_shell(s) == s);
  }
}

TEST_CASE("safe words stay bare") {
  CHECK(shell_quote("dlsweep-train") == "dlsweep-train");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("") == "''");
}
