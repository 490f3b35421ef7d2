// trial_files: the stderr tail the orchestrator quotes reads only the file's end, whatever
// its size or the length of its lines.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/trial_files.hpp"

namespace fs = std::filesystem;

TEST_CASE("log_tail: the last lines of a log, and the end of a line longer than the window") {
  const auto dir = fs::temp_directory_path() / ("dlsweep-logtail-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto f = dir / "stderr.txt";
  {
    std::ofstream out(f);
    for (int i = 0; i < 100000; ++i) out << "line " << i << "\n";
    out << "\nRuntimeError: boom\n";
  }
  CHECK(dlsweep::orch::log_tail(f, 2) == "line 99999 | RuntimeError: boom");
  {
    std::ofstream out(f);
    out << "start\n" << std::string(10 << 20, 'x') << "END\n";  // one 10 MB line
  }
  const std::string t = dlsweep::orch::log_tail(f, 3);
  CHECK(t.size() <= 403);
  CHECK(t.rfind("xEND") == t.size() - 4);
  CHECK(t.find("start") == std::string::npos);  // outside the window
  CHECK(dlsweep::orch::log_tail(dir / "absent.txt", 3).empty());
  fs::remove_all(dir);
}
