// The backend registry (schedulers/registry.hpp): every kind builds a backend that calls
// itself by the kind's name and whose traits agree with the registry's; unknown kinds and
// keys of another kind are named.
#include <catch2/catch.hpp>

#include "schedulers/registry.hpp"
#include "sched_test_support.hpp"

using namespace dlsweep::sched;

TEST_CASE("registry: each kind builds its backend, and the backend agrees with the registry", "[sched][registry]") {
  sched_test::TempDir dir;
  REQUIRE(backend_kind_names() == std::vector<std::string_view>{"local", "slurm"});
  for (const auto& kind : backend_kinds()) {
    INFO(kind.name);
    boost::asio::io_context io;
    BackendConfig c;
    c.kind = std::string(kind.name);
    c.max_concurrent = 3;
    c.study_root = dir.path();
    auto b = make_backend(io, c);
    REQUIRE(b.has_value());
    CHECK((*b)->name() == kind.name);
    CHECK((*b)->jobs_outlive_orchestrator() == kind.jobs_outlive_orchestrator);
    CHECK((*b)->max_concurrent() == 3);
    CHECK(find_backend_kind(kind.name) == &kind);
  }
  // create_dirs: each backend's own entries of the study directory, as its kind names them
  // (what `delete --files` removes as dlsweep's).
  for (const auto& kind : backend_kinds())
    for (auto entry : kind.study_dir_entries) {
      CHECK(std::filesystem::is_directory(dir.path() / entry));
      CHECK(backend_owns_study_entry(entry));
    }
  CHECK(backend_owns_study_entry("slurm"));
  CHECK_FALSE(backend_owns_study_entry("trial-0001"));
}

TEST_CASE("registry: a backend with files of its own needs the study directory", "[sched][registry]") {
  boost::asio::io_context io;
  BackendConfig c;
  c.kind = "slurm";
  auto b = make_backend(io, c);
  REQUIRE_FALSE(b.has_value());
  CHECK(b.error().message().find("study directory") != std::string::npos);
}

TEST_CASE("registry: a dry-run backend creates nothing", "[sched][registry]") {
  sched_test::TempDir dir;
  boost::asio::io_context io;
  BackendConfig c;
  c.kind = "slurm";
  c.study_root = dir.path();
  c.create_dirs = false;
  REQUIRE(make_backend(io, c).has_value());
  CHECK_FALSE(std::filesystem::exists(dir.path() / "slurm"));
}

TEST_CASE("registry: unknown kinds and the owners of keys are named", "[sched][registry]") {
  boost::asio::io_context io;
  BackendConfig c;
  c.kind = "pbs";
  auto b = make_backend(io, c);
  REQUIRE_FALSE(b.has_value());
  CHECK(b.error().message() == "backend.kind: unknown backend kind 'pbs' (fix: use local or slurm)");
  CHECK(find_backend_kind("pbs") == nullptr);
  CHECK(kinds_taking("partition") == std::vector<std::string_view>{"slurm"});
  CHECK(kinds_taking("max_concurrent").empty());  // shared, not a kind's own
  CHECK(find_backend_kind("slurm")->batch_scheduler);
  CHECK_FALSE(find_backend_kind("local")->batch_scheduler);
  CHECK(backend_display_name("slurm") == "Slurm");  // as prose and the site-limit events name it
  CHECK(backend_display_name("pbs") == "pbs");      // an unknown name as given
}
