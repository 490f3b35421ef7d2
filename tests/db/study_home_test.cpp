// study_home_test.cpp — where a study lives (schema version 5): its home recorded at
// creation and by set_study_home; relocate_study rewrites every stored path of one study in
// one transaction with its event, and nothing of another study.
#include <catch2/catch.hpp>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
using nlohmann::json;

TEST_CASE("a study's home is stored and read back", "[study_home]") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "h.db"));
  auto ns = study_named("h");
  ns.home_db = "/p/h.db";
  ns.home_root = "/p";
  auto id = must(s->create_study(ns));
  auto row = must(s->find_study("h"));
  REQUIRE(row);
  CHECK(row->home_db == "/p/h.db");
  CHECK(row->home_root == "/p");
  must(s->set_study_home(id, "/q/h.db", "/q"));
  row = must(s->find_study("h"));
  CHECK(row->home_db == "/q/h.db");
  CHECK(row->home_root == "/q");
  CHECK_FALSE(s->set_study_home(id + 100, "/x", "/x").has_value());
}

TEST_CASE("relocate_study rewrites the study's paths and its trials' directories in one transaction",
          "[study_home]") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "r.db"));
  auto a = must(s->create_study(study_named("a")));
  auto b = must(s->create_study(study_named("b")));
  auto a0 = must(s->create_trial(a, 0, json{{"x", 1}}, "/old/runs/a/trial-0000"));
  auto a1 = must(s->create_trial(a, 1, json{{"x", 2}}, "/old/runs/a/trial-0001"));
  auto b0 = must(s->create_trial(b, 0, json{{"x", 1}}, "/old/runs/b/trial-0000"));

  StudyPaths p{R"({"name":"a","runs_dir":"/new/runs"})", "/new/a.yaml", "/new/runs/a", "/new/r.db", "/new",
               {{a0, "/new/runs/a/trial-0000"}, {a1, "/new/runs/a/trial-0001"}}};
  EventRow why;
  why.who = "user";
  why.kind = "relocate";
  why.reason = "moved /old -> /new";
  must(s->relocate_study(a, p, why));
  auto row = must(s->find_study("a"));
  REQUIRE(row);
  CHECK(row->root_dir == "/new/runs/a");
  CHECK(row->source_path == "/new/a.yaml");
  CHECK(row->spec_json == p.spec_json);
  CHECK(row->home_db == "/new/r.db");
  CHECK(row->home_root == "/new");
  auto trials = must(s->list_trials(a));
  REQUIRE(trials.size() == 2);
  CHECK(trials[0].trial_dir == "/new/runs/a/trial-0000");
  CHECK(trials[1].trial_dir == "/new/runs/a/trial-0001");
  CHECK(must(s->get_trial(b0)).trial_dir == "/old/runs/b/trial-0000");  // another study's: untouched
  auto events = must(s->events(a));
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().kind == "relocate");
  CHECK(events.back().reason == "moved /old -> /new");

  // A trial of another study in the list: an error, and nothing of the relocation is kept.
  StudyPaths bad = p;
  bad.root_dir = "/elsewhere/runs/a";
  bad.trial_dirs = {{a0, "/elsewhere/runs/a/trial-0000"}, {b0, "/elsewhere/runs/b/trial-0000"}};
  CHECK_FALSE(s->relocate_study(a, bad, why).has_value());
  CHECK(must(s->find_study("a"))->root_dir == "/new/runs/a");
  CHECK(must(s->get_trial(a0)).trial_dir == "/new/runs/a/trial-0000");
  CHECK(must(s->get_trial(b0)).trial_dir == "/old/runs/b/trial-0000");
}
