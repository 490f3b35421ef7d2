// Quoting for #SBATCH lines and index words, checked against the real consumers: bash for
// index words (eval "set -- ...", exactly as the batch script does) and our own decoder.
#include <catch2/catch.hpp>

#include "schedulers/slurm/command.hpp"
#include "schedulers/slurm/quote.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched::slurm;

namespace {

const std::vector<std::string> kNasty = {
    "plain", "", "with space", "it's", "\"double\"", "$(touch /tmp/dlsweep-pwned-quote)", "`id`", "a;b&&c|d",
    "line\nbreak", "tab\there", "back\\slash", std::string("\x01\x1f\x7f", 3), "#hash", "uni\xc3\xa9", "'",
    "$'x'", "\\x41", "trailing\\", "*?[a]", "~root", "$HOME", "a'b\nc\\d\"e$f`g",
};

}  // namespace

TEST_CASE("index words survive bash's eval \"set -- ...\" byte for byte", "[slurm][quote]") {
  std::string line;
  for (const auto& s : kNasty) {
    auto w = index_word(s, "test");
    REQUIRE(w.has_value());
    CHECK(w->find('\n') == std::string::npos);  // one record per line
    line += (line.empty() ? "" : " ") + *w;
  }
  // What the batch script does, printing each word NUL-terminated.
  auto r = run_command({"bash", "-c", "eval \"set -- $1\"; printf '%s\\0' \"$@\"", "bash", line}, {}, 10);
  REQUIRE(r.has_value());
  REQUIRE(r->exit_code == 0);
  std::vector<std::string> got;
  std::string cur;
  for (char c : r->out) {
    if (c == '\0') {
      got.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  CHECK(got == kNasty);
  CHECK_FALSE(std::filesystem::exists("/tmp/dlsweep-pwned-quote"));

  auto back = split_index_line(line);
  REQUIRE(back.has_value());
  CHECK(*back == kNasty);
}

TEST_CASE("index words refuse NUL - the decoder refuses what we never write", "[slurm][quote]") {
  CHECK_FALSE(index_word(std::string("a\0b", 3), "argv[1]").has_value());
  CHECK_THAT(index_word(std::string("a\0b", 3), "argv[1]").error().message(), Catch::Contains("argv[1]"));
  CHECK_FALSE(split_index_line("a $(b)").has_value());
  CHECK_FALSE(split_index_line("'unterminated").has_value());
  CHECK_FALSE(split_index_line("$'bad\\q'").has_value());
  CHECK_FALSE(split_index_line("\"double\"").has_value());
}

TEST_CASE("sbatch quoting: one argument equal to the value, line breaks refused", "[slurm][quote]") {
  CHECK(sbatch_quote("debug", "partition").value() == "debug");
  CHECK(sbatch_quote("a b", "x").value() == "\"a b\"");
  CHECK(sbatch_quote("say \"hi\" \\o/ #1", "x").value() == "\"say \\\"hi\\\" \\\\o/ #1\"");
  CHECK(sbatch_quote("", "x").value() == "\"\"");
  auto bad = sbatch_quote("a\nb", "slurm.partition");
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message(), Catch::Contains("slurm.partition"));
  CHECK_FALSE(sbatch_quote("a\rb", "x").has_value());
  CHECK_FALSE(sbatch_quote(std::string("a\0b", 3), "x").has_value());
}

TEST_CASE("environment variable names", "[slurm][quote]") {
  CHECK(valid_env_name("DLSWEEP_TRIAL_DIR"));
  CHECK(valid_env_name("_x1"));
  CHECK_FALSE(valid_env_name(""));
  CHECK_FALSE(valid_env_name("1X"));
  CHECK_FALSE(valid_env_name("A=B"));
  CHECK_FALSE(valid_env_name("A B"));
  CHECK_FALSE(valid_env_name("$(x)"));
}
