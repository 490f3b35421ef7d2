// removal_test.cpp — the pure parts of removing a study (removal.hpp): which
// directory may be removed (its marker, or nothing in it but what dlsweep makes), and the
// texts shown, asked and logged.
#include <catch2/catch.hpp>

#include "orchestrator/removal.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;

namespace {

const std::filesystem::path kDir = "/runs/bs-sweep";
constexpr double kCreated = 1795600000.25;

std::string message(const Status& s) { return s ? std::string() : s.error().message(); }

}  // namespace

TEST_CASE("dlsweep_entry: only the names dlsweep makes in a study directory", "[delete]") {
  for (const char* name : {"trial-0000", "trial-12345", "slurm", "cancel-request", "cancel-request.tmp.4242",
                           "enqueue-requests", "orchestrator.log", ".dlsweep-study.json", ".dlsweep-study.json.tmp.7"})
    CHECK(dlsweep_entry(name));
  for (const char* name : {"trial-", "trial-12a", "trial-0000.bak", "notes.txt", "data", "cancel-request.tmp.x",
                           ".tmp.12", "model.pt", "SLURM"})
    CHECK_FALSE(dlsweep_entry(name));
}

TEST_CASE("check_study_dir: the marker of this study proves the directory is the study's", "[delete]") {
  const auto marker = study_marker_text("bs-sweep", kCreated, "/home/u/sweep.db");
  CHECK(check_study_dir(kDir, "bs-sweep", kCreated, marker, {"trial-0000", "my-notes.txt"}));
  CHECK(check_study_dir("/runs/bs-sweep/", "bs-sweep", kCreated, marker, {}));

  // Another study's marker (another database's study of the same name, or a later one).
  auto other = check_study_dir(kDir, "bs-sweep", kCreated + 60, marker, {"trial-0000"});
  REQUIRE_FALSE(other);
  CHECK(other.error().is(ErrorKind::bad_input));
  CHECK_THAT(message(other), Catch::Contains("/home/u/sweep.db") && Catch::Contains("not removing it"));
  auto renamed = check_study_dir(kDir, "bs-sweep", kCreated, study_marker_text("lr-sweep", kCreated, "x.db"), {});
  CHECK_THAT(message(renamed), Catch::Contains("study 'lr-sweep'"));
  CHECK_FALSE(check_study_dir(kDir, "bs-sweep", kCreated, std::string("not json"), {}));
  CHECK_FALSE(check_study_dir(kDir, "bs-sweep", kCreated, std::string(""), {}));
}

TEST_CASE("check_study_dir: without a marker, only a directory of dlsweep's own entries", "[delete]") {
  CHECK(check_study_dir(kDir, "bs-sweep", kCreated, std::nullopt, {}));
  CHECK(check_study_dir(kDir, "bs-sweep", kCreated, std::nullopt, {"trial-0000", "trial-0001", "slurm", "orchestrator.log"}));
  auto foreign = check_study_dir(kDir, "bs-sweep", kCreated, std::nullopt,
                                 {"trial-0000", "b", "a", "c", "d", "e", "f", "g"});
  REQUIRE_FALSE(foreign);
  CHECK(foreign.error().is(ErrorKind::bad_input));
  // Named (sorted, five at most) so that the user can move them away.
  CHECK_THAT(message(foreign), Catch::Contains("(a, b, c, d, e and 2 more)") && Catch::Contains("--files"));
}

TEST_CASE("check_study_dir: never a directory that is not <runs_dir>/<study>", "[delete]") {
  const auto marker = study_marker_text("bs-sweep", kCreated, "sweep.db");
  CHECK_FALSE(check_study_dir("/runs/other", "bs-sweep", kCreated, marker, {}));   // not named after the study
  CHECK_FALSE(check_study_dir("runs/bs-sweep", "bs-sweep", kCreated, marker, {}));  // relative: depends on the cwd
  CHECK_FALSE(check_study_dir("/", "bs-sweep", kCreated, marker, {}));
  CHECK_FALSE(check_study_dir("/runs/bs-sweep/..", "bs-sweep", kCreated, marker, {}));
  CHECK_FALSE(check_study_dir("/runs/", "", kCreated, marker, {}));
}

TEST_CASE("describe_rows and describe_states: what goes, in words", "[delete]") {
  db::StudyRows rows;
  rows.by_table = {{"studies", 1}, {"trials", 1}, {"params", 2}, {"metrics", 0}, {"records", 1}, {"events", 5}};
  CHECK(describe_rows(rows) == "1 study, 1 trial, 2 params, 1 record, 5 events");
  rows.by_table = {{"studies", 1}, {"trials", 0}, {"events", 1}};
  CHECK(describe_rows(rows) == "1 study, 0 trials, 1 event");
  CHECK(describe_states({{"COMPLETE", 3}, {"FAILED", 1}}) == "3 COMPLETE, 1 FAILED");
  CHECK(describe_states({}) == "no trials");
}

TEST_CASE("confirmed: y or yes, nothing else", "[delete]") {
  for (const char* yes : {"y", "Y", "yes", "YES", " yes\n", "y\r\n"}) CHECK(confirmed(yes));
  for (const char* no : {"", "\n", "n", "no", "yess", "ye", "y y", "sure"}) CHECK_FALSE(confirmed(no));
}

TEST_CASE("unknown_study_fix: a close name, else the known ones", "[delete]") {
  CHECK(unknown_study_fix("bs-swep", {"lr-sweep", "bs-sweep"}) == "did you mean 'bs-sweep'?");
  CHECK(unknown_study_fix("quickstart", {"lr-sweep", "bs-sweep"}) == "known studies: lr-sweep, bs-sweep");
  CHECK(unknown_study_fix("x", {}) == "the database holds no study");
}

TEST_CASE("deletion_log_line: when, what, from where, what happened to the files", "[delete]") {
  db::StudyRow study;
  study.name = "bs-sweep";
  study.created_at = 0;
  db::StudyRows rows;
  rows.by_table = {{"studies", 1}, {"trials", 2}};
  CHECK(deletion_log_line(86400, study, "/home/u/sweep.db", rows, "removed /runs/bs-sweep", "dlsweep delete --files") ==
        "1970-01-02T00:00:00Z dlsweep delete --files: deleted study 'bs-sweep' (created 1970-01-01T00:00:00Z) from "
        "/home/u/sweep.db: 1 study, 2 trials; removed /runs/bs-sweep");
}
