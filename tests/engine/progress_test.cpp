// Progress: the sweep's terminal output never stops the sweep (a failed write drops the
// rest and the log keeps everything), and a stopping sweep shows no ETA.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "engine/progress.hpp"

using namespace dlsweep::orch;
using dlsweep::trials_word;
namespace fs = std::filesystem;

TEST_CASE("progress: a terminal that fails every write never throws; the log holds the story") {
  fs::path log = fs::temp_directory_path() / fmt::format("dlsweep-progress-{}.log", ::getpid());
  fs::remove(log);
  std::FILE* full = std::fopen("/dev/full", "w");  // every write fails with ENOSPC, as EPIPE would
  REQUIRE(full != nullptr);
  std::setvbuf(full, nullptr, _IONBF, 0);
  {
    Progress p(full, /*tty=*/true);
    p.set_log(log.string());
    SweepSnapshot s;
    s.total = 4;
    REQUIRE_NOTHROW(p.event("trial 0 complete: acc = 0.9", s));
    CHECK(p.output_lost());
    REQUIRE_NOTHROW(p.tick(s));
    REQUIRE_NOTHROW(p.finish(s, "study x finished"));
    REQUIRE_NOTHROW(p.say("4 complete, 0 pruned"));
  }
  std::fclose(full);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK_THAT(ss.str(), Catch::Contains("trial 0 complete: acc = 0.9"));
  CHECK_THAT(ss.str(), Catch::Contains("the terminal's output was lost"));
  CHECK_THAT(ss.str(), Catch::Contains("study x finished"));
  CHECK_THAT(ss.str(), Catch::Contains("4 complete, 0 pruned"));
  fs::remove(log);
}

TEST_CASE("progress: no ETA once the sweep is stopping, nor in the final line; trials_word") {
  SweepSnapshot s;
  s.total = 10;
  s.complete = 2;
  s.elapsed_s = 20;
  CHECK_THAT(Progress::status_line(s), Catch::Contains("ETA"));
  CHECK_THAT(Progress::status_line(s, /*eta=*/false), !Catch::Contains("ETA"));
  s.stopping = true;
  CHECK_THAT(Progress::status_line(s), !Catch::Contains("ETA"));
  CHECK(trials_word(1) == "1 trial");
}

TEST_CASE("progress: a resumed sweep's ETA is from the trials this run finished") {
  // Resumed with 6 of 8 done before: 10 s for the 1 it finished itself, 1 left -> 10 s. It
  // said "ETA 00:00" at the start of a resume and 00:02 here (20 s over all 7 done).
  SweepSnapshot s;
  s.total = 8;
  s.complete = 6;
  s.done_before = 6;
  s.elapsed_s = 1;
  CHECK_THAT(Progress::status_line(s), !Catch::Contains("ETA"));  // nothing finished in this run yet
  s.complete = 7;
  s.elapsed_s = 10;
  CHECK_THAT(Progress::status_line(s), Catch::Contains("ETA 00:10"));
  CHECK(trials_word(0) == "0 trials");
  CHECK(trials_word(12) == "12 trials");
}
