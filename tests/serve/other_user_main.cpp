// other_user_main.cpp — main of test_serve_other_user: exits 77 (ctest: SKIPPED, with the
// reason printed) unless it runs as root with useradd, userdel, runuser and curl, which it
// needs to create the other user and act as it; else runs the Catch2 cases.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>

#include "../e2e/run_command.hpp"

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    std::printf("SKIP: not root: another local user cannot be created (useradd) and acted as (runuser), so "
                "the 403 and the socket's refusal for other users were not checked\n");
    return 77;
  }
  for (const char* tool : {"useradd", "userdel", "runuser", "curl"}) {
    if (run_command({"sh", "-c", std::string("command -v ") + tool}).exit_code != 0) {
      std::printf("SKIP: %s is not installed: another user's view of dlsweep serve was not checked\n", tool);
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
