// live_main.cpp — main of test_serve_live: exits 77 (ctest: SKIPPED, with the reason printed)
// when headless Chromium or node is missing, else runs the Catch2 cases.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "../report/chromium_support.hpp"

int main(int argc, char** argv) {
  if (dlsweep_report_chromium().empty() || dlsweep_report_node().empty()) {
    std::printf("SKIP: needs chromium (apt-get install chromium; or $DLSWEEP_CHROMIUM) and node "
                "(apt-get install nodejs) on PATH: the live view was not checked in a browser\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
