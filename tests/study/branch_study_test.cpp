// `search: {algorithm: branch}` in a study file (study/branch.hpp): the plan's design stored
// with the study (scan, trunk_to_end), a study stored before the scan keeping the plan it ran
// under, and the spec round trip.
#include <catch2/catch.hpp>

#include <string>

#include "study/spec.hpp"
#include "study_test_support.hpp"

using namespace dlsweep::orch;
using study_test::messages;

namespace {

std::string branch_study(const std::string& extra = "") {
  return "name: b\ntrial:\n  trainer: {model: mlp, hidden: [32], dataset: fashion-mnist, epochs: 3}\n"
         "objective: {metric: val_loss, mode: min}\n"
         "search: {algorithm: branch, points: [0.5, 1], batches: [32, 64, 128], delta: 0.5" + extra + "}\n"
         "fixed: {base_lr: 0.02, base_batch: 32}\n";
}

}  // namespace

TEST_CASE("branch study: the upward scan and the trunk stopping at the last point, stored with the study",
          "[study][branch]") {
  auto r = parse_study(branch_study(), StudyFormat::yaml, "b.yaml");
  INFO(messages(r));
  REQUIRE(r);
  CHECK(r->search.options["scan"] == "upward");
  CHECK(r->search.options["trunk_to_end"] == false);
  CHECK(r->search.options["generations"] == 3);
  CHECK(r->search.options["end"] == 3);
  // Stored and read back (resume): the same design.
  auto again = parse_study(r->to_json().dump(), StudyFormat::json, "b.yaml");
  INFO(messages(again));
  REQUIRE(again);
  CHECK(again->search.options["scan"] == "upward");
  CHECK(again->search.options["trunk_to_end"] == false);
  // Asked for: kept.
  auto all = parse_study(branch_study(", scan: all, trunk_to_end: true"), StudyFormat::yaml, "b.yaml");
  REQUIRE(all);
  CHECK(all->search.options["scan"] == "all");
  CHECK(all->search.options["trunk_to_end"] == true);
  // A bad value is refused at its key.
  auto bad = parse_study(branch_study(", scan: sideways"), StudyFormat::yaml, "b.yaml");
  REQUIRE_FALSE(bad);
  CHECK(messages(bad).find("scan") != std::string::npos);
}

TEST_CASE("branch study: one stored before the scan existed resumes with the plan it ran under", "[study][branch]") {
  auto r = parse_study(branch_study(), StudyFormat::yaml, "b.yaml");
  REQUIRE(r);
  auto stored = r->to_json();
  // What the spec looked like when stored by a dlsweep without the scan: generations filled in.
  stored["search"].erase("scan");
  stored["search"].erase("trunk_to_end");
  REQUIRE(stored["search"].contains("generations"));
  auto old = parse_study(stored.dump(), StudyFormat::json, "b.yaml");
  INFO(messages(old));
  REQUIRE(old);
  CHECK(old->search.options["scan"] == "all");
  CHECK(old->search.options["trunk_to_end"] == true);
}
