// relocation_test.cpp — the pure parts of following a moved study and refusing a copied
// one (relocation.hpp): path arithmetic, the stored spec re-rooted, where the root went by
// where the database is now, and the decision for each case resume meets.
#include <catch2/catch.hpp>

#include "orchestrator/relocation.hpp"
#include "orchestrator/removal.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const Reroot kMove{"/scratch/u/projA", "/scratch/u/projB"};
constexpr double kCreated = 1795600000.25;

// A study submitted in /scratch/u/projA (database, study file and runs all there).
PlacementFacts facts_at_home() {
  PlacementFacts f;
  f.study = "reloc";
  f.created_at = kCreated;
  f.db = "/scratch/u/projA/dlsweep.db";
  f.home_db = "/scratch/u/projA/dlsweep.db";
  f.home_root = "/scratch/u/projA";
  f.root_dir = "/scratch/u/projA/runs/reloc";
  f.source_path = "/scratch/u/projA/study.yaml";
  f.home = {DbState::this_db};
  f.old_dir.exists = true;
  f.old_dir.marker = StudyMarker{"reloc", kCreated, "/scratch/u/projA/dlsweep.db"};
  f.old_dir.marker_db = {DbState::this_db};
  f.old_root_exists = true;
  return f;
}

// The same study after `mv projA projB`, resumed with projB/dlsweep.db.
PlacementFacts facts_moved() {
  PlacementFacts f = facts_at_home();
  f.db = "/scratch/u/projB/dlsweep.db";
  f.home = {DbState::gone};
  f.old_dir = {};
  f.old_root_exists = false;
  f.inferred = infer_move(f.home_db, f.home_root, f.db);
  f.new_dir.exists = true;
  f.new_dir.marker = StudyMarker{"reloc", kCreated, "/scratch/u/projA/dlsweep.db"};
  f.new_dir.marker_db = {DbState::gone};
  return f;
}

}  // namespace

TEST_CASE("reroot_path: a path under OLD, by whole components, goes under NEW", "[relocate]") {
  CHECK(reroot_path("/scratch/u/projA/runs/x/trial-0001", kMove) == fs::path("/scratch/u/projB/runs/x/trial-0001"));
  CHECK(reroot_path("/scratch/u/projA", kMove) == fs::path("/scratch/u/projB"));
  CHECK(reroot_path("/scratch/u/projA/", kMove) == fs::path("/scratch/u/projB"));
  CHECK(reroot_path("/scratch/u/projA/./runs/../study.yaml", kMove) == fs::path("/scratch/u/projB/study.yaml"));
  CHECK_FALSE(reroot_path("/scratch/u/projAB/runs", kMove));  // a sibling whose name starts alike
  CHECK_FALSE(reroot_path("/scratch/u", kMove));
  CHECK_FALSE(reroot_path("/data/fmnist", kMove));
  CHECK_FALSE(reroot_path("runs/x", kMove));  // relative: nothing to say
}

TEST_CASE("reroot_text: OLD as a path inside a word, never as part of another name", "[relocate]") {
  CHECK(reroot_text("/scratch/u/projA/train.py", kMove) == "/scratch/u/projB/train.py");
  CHECK(reroot_text("--data=/scratch/u/projA/data", kMove) == "--data=/scratch/u/projB/data");
  CHECK(reroot_text("/scratch/u/projA", kMove) == "/scratch/u/projB");
  CHECK(reroot_text("a:/scratch/u/projA/bin:/usr/bin", kMove) == "a:/scratch/u/projB/bin:/usr/bin");
  CHECK(reroot_text("/scratch/u/projAB/x", kMove) == "/scratch/u/projAB/x");
  CHECK(reroot_text("/old/scratch/u/projA/x", kMove) == "/old/scratch/u/projA/x");
  CHECK(reroot_text("{study_dir}/train.py", kMove) == "{study_dir}/train.py");
  CHECK(reroot_text("x /scratch/u/projA/a y /scratch/u/projA/b", kMove) == "x /scratch/u/projB/a y /scratch/u/projB/b");
  CHECK(reroot_text("/anything", Reroot{"/", "/x"}) == "/anything");  // "/" is never re-rooted as text
}

TEST_CASE("reroot_spec: runs_dir, the command, env, backend and warm-start paths; never the parameters",
          "[relocate]") {
  json spec = {{"name", "reloc"},
               {"runs_dir", "/scratch/u/projA/runs"},
               {"trial",
                {{"command", {"python3", "/scratch/u/projA/train.py", "{study_dir}/x.py"}},
                 {"env", {{"DATA", "/scratch/u/projA/data"}, {"OTHER", "/data"}}}}},
               {"backend", {{"kind", "slurm"}, {"template", "/scratch/u/projA/site.sh.mustache"}}},
               {"search", {{"warm_start", {{{"study", "a"}, {"db", "/scratch/u/projA/old.db"}}}}}},
               {"fixed", {{"data_dir", "/scratch/u/projA/data"}}}};
  int changed = 0;
  json out = reroot_spec(spec, kMove, &changed);
  CHECK(changed == 5);
  CHECK(out["runs_dir"] == "/scratch/u/projB/runs");
  CHECK(out["trial"]["command"][1] == "/scratch/u/projB/train.py");
  CHECK(out["trial"]["command"][2] == "{study_dir}/x.py");
  CHECK(out["trial"]["env"]["DATA"] == "/scratch/u/projB/data");
  CHECK(out["trial"]["env"]["OTHER"] == "/data");
  CHECK(out["backend"]["template"] == "/scratch/u/projB/site.sh.mustache");
  CHECK(out["search"]["warm_start"][0]["db"] == "/scratch/u/projB/old.db");
  CHECK(out["fixed"]["data_dir"] == "/scratch/u/projA/data");  // the study's data: as sampled
  json relative = {{"runs_dir", "runs"}};
  CHECK(reroot_spec(relative, kMove, &changed) == relative);
  CHECK(changed == 0);
}

TEST_CASE("home_root: the deepest directory holding the database, the study file and the runs", "[relocate]") {
  CHECK(home_root("/p/q/dlsweep.db", "/p/q/study.yaml", "/p/q/runs/s") == fs::path("/p/q"));
  CHECK(home_root("/p/q/db/dlsweep.db", "/p/q/studies/a.yaml", "/p/q/runs/s") == fs::path("/p/q"));
  CHECK(home_root("/home/u/all.db", "/scratch/u/p/a.yaml", "/scratch/u/p/runs/s") == fs::path("/"));
  CHECK(home_root({}, "/p/q/a.yaml", "/p/q/runs/s") == fs::path("/p/q"));
  CHECK(common_root({}) == fs::path("/"));
}

TEST_CASE("infer_move: the database's place below the root tells where the root went", "[relocate]") {
  auto r = infer_move("/scratch/u/projA/dlsweep.db", "/scratch/u/projA", "/scratch/u/projB/dlsweep.db");
  REQUIRE(r);
  CHECK(r->from == fs::path("/scratch/u/projA"));
  CHECK(r->to == fs::path("/scratch/u/projB"));
  r = infer_move("/a/p/db/x.db", "/a/p", "/b/c/q/db/x.db");
  REQUIRE(r);
  CHECK(r->to == fs::path("/b/c/q"));
  CHECK_FALSE(infer_move("/a/p/x.db", "/a/p", "/a/p/x.db"));         // not moved
  CHECK_FALSE(infer_move("/a/p/x.db", "/a/p", "/b/q/y.db"));         // renamed: cannot tell
  CHECK_FALSE(infer_move("/a/p/db/x.db", "/a/p", "/b/q/other/x.db"));
  CHECK_FALSE(infer_move("/home/u/all.db", "/", "/home/v/all.db"));  // root "/": never
  CHECK_FALSE(infer_move("", "", "/b/x.db"));                        // a study older than its home
}

TEST_CASE("parse_relocate: OLD=NEW, both absolute", "[relocate]") {
  auto r = parse_relocate("/a/p=q", "/work");
  REQUIRE(r);
  CHECK(r->from == fs::path("/a/p"));
  CHECK(r->to == fs::path("/work/q"));
  for (const char* bad : {"/a/p", "=/b", "/a=", "/a/p=/a/p/"}) {
    auto e = parse_relocate(bad, "/work");
    REQUIRE_FALSE(e);
    CHECK(e.error().is(ErrorKind::bad_input));
    CHECK(e.error().where == "--relocate");
  }
}

TEST_CASE("parse_study_marker reads what submit writes", "[relocate]") {
  auto m = parse_study_marker(study_marker_text("reloc", kCreated, "/p/dlsweep.db"));
  REQUIRE(m);
  CHECK(m->study == "reloc");
  CHECK(m->created_at == kCreated);
  CHECK(m->database == "/p/dlsweep.db");
  CHECK(marker_names(*m, "reloc", kCreated));
  CHECK_FALSE(marker_names(*m, "reloc", kCreated + 1));
  CHECK_FALSE(marker_names(*m, "other", kCreated));
  CHECK_FALSE(parse_study_marker("not json"));
  CHECK_FALSE(parse_study_marker(R"({"study": "x"})"));
}

TEST_CASE("decide_placement: at home nothing moves", "[relocate]") {
  auto p = decide_placement(facts_at_home());
  CHECK(p.kind == Placement::at_home);
  CHECK_FALSE(p.record_home);
  CHECK_FALSE(p.reroot);
  CHECK(p.note.empty());
}

TEST_CASE("decide_placement: a project moved with its database is followed", "[relocate]") {
  auto f = facts_moved();
  REQUIRE(f.inferred);
  auto p = decide_placement(f);
  REQUIRE(p.kind == Placement::moved);
  CHECK(p.reroot->from == fs::path("/scratch/u/projA"));
  CHECK(p.reroot->to == fs::path("/scratch/u/projB"));
  CHECK(p.record_home);
  auto line = relocation_line(p, "reloc", f.home_db, 4);
  CHECK(line == "study 'reloc' moved: /scratch/u/projA -> /scratch/u/projB (its database was "
                "/scratch/u/projA/dlsweep.db); its runs directory, 4 trial directories and the study file now point "
                "there");
  // The old place still there, but its database gone (a copy whose original was removed): a move.
  f.old_dir.exists = true;
  f.old_root_exists = true;
  CHECK(decide_placement(f).kind == Placement::moved);
  // The old database there again but holding another study of the name: still a move.
  f.home = {DbState::other};
  CHECK(decide_placement(f).kind == Placement::moved);
}

TEST_CASE("decide_placement: a copy whose original still holds the study is refused with both fixes",
          "[relocate]") {
  auto f = facts_moved();
  f.home = {DbState::holds_study};
  f.old_dir.exists = true;
  f.old_root_exists = true;
  auto p = decide_placement(f);
  REQUIRE(p.kind == Placement::refused);
  CHECK(p.refusal.is(ErrorKind::bad_input));
  const auto msg = p.refusal.message();
  CHECK_THAT(msg, Catch::Contains("is a copy") && Catch::Contains("/scratch/u/projA/dlsweep.db") &&
                      Catch::Contains("--relocate /scratch/u/projA=/scratch/u/projB") &&
                      Catch::Contains("submit --replace /scratch/u/projB/study.yaml"));
}

TEST_CASE("decide_placement: a database copied beside the original's files is refused", "[relocate]") {
  auto f = facts_at_home();
  f.db = "/scratch/u/projA/backup.db";
  f.home_db = f.db;  // a legacy-free case: this copy's home says itself
  f.home = {DbState::this_db};
  f.old_dir.marker_db = {DbState::holds_study};  // the marker names projA/dlsweep.db, which holds the study
  auto p = decide_placement(f);
  REQUIRE(p.kind == Placement::refused);
  CHECK_THAT(p.refusal.message(), Catch::Contains("is a copy"));
}

TEST_CASE("decide_placement: --relocate re-roots a copy, checked against what is there", "[relocate]") {
  auto f = facts_moved();
  f.home = {DbState::holds_study};
  f.explicit_move = kMove;
  f.inferred.reset();
  auto p = decide_placement(f);
  REQUIRE(p.kind == Placement::relocated);
  CHECK(p.reroot->to == fs::path("/scratch/u/projB"));
  CHECK_THAT(relocation_line(p, "reloc", f.home_db, 1), Catch::StartsWith("study 'reloc' relocated (--relocate): "
                                                                          "/scratch/u/projA -> /scratch/u/projB; "
                                                                          "its runs directory, 1 trial directory"));
  SECTION("OLD that does not hold the runs directory") {
    f.explicit_move = Reroot{"/elsewhere", "/scratch/u/projB"};
    auto q = decide_placement(f);
    REQUIRE(q.kind == Placement::refused);
    CHECK_THAT(q.refusal.message(), Catch::Contains("is not under /elsewhere"));
  }
  SECTION("NEW without the study's files") {
    f.new_dir = {};
    auto q = decide_placement(f);
    REQUIRE(q.kind == Placement::refused);
    CHECK_THAT(q.refusal.message(), Catch::Contains("/scratch/u/projB/runs/reloc does not exist"));
  }
  SECTION("NEW holding another study's directory") {
    f.new_dir.marker = StudyMarker{"reloc", kCreated + 60, "/x.db"};
    auto q = decide_placement(f);
    REQUIRE(q.kind == Placement::refused);
    CHECK_THAT(q.refusal.message(), Catch::Contains("belongs to study 'reloc' created"));
  }
  SECTION("a copy while the original's batch jobs still run") {
    f.live_batch_trials = 2;
    auto q = decide_placement(f);
    REQUIRE(q.kind == Placement::refused);
    CHECK_THAT(q.refusal.message(), Catch::Contains("2 trials of the original"));
  }
}

TEST_CASE("decide_placement: a move the database cannot see is refused with the --relocate to use", "[relocate]") {
  // The database lives outside the project (home root "/"): the project moved, it did not.
  auto f = facts_at_home();
  f.home_db = "/home/u/all.db";
  f.db = "/home/u/all.db";
  f.home_root = "/";
  f.old_dir = {};
  f.old_root_exists = true;  // "/" is always there: the runs directory alone is gone
  CHECK(decide_placement(f).kind == Placement::at_home);
  // A study older than its home: the root its paths imply is gone with the runs.
  f.home_db.clear();
  f.home_root.clear();
  f.home = {DbState::unknown};
  f.old_root_exists = false;
  f.found_new_root = fs::path("/scratch/u/projB");
  auto p = decide_placement(f);
  REQUIRE(p.kind == Placement::refused);
  CHECK_THAT(p.refusal.message(), Catch::Contains("the project moved") &&
                                      Catch::Contains("--relocate /scratch/u/projA=/scratch/u/projB"));
}

TEST_CASE("decide_placement: a database moved on its own records its new place", "[relocate]") {
  auto f = facts_at_home();
  f.db = "/home/u/dbs/reloc.db";
  f.home = {DbState::gone};
  f.old_dir.marker_db = {DbState::gone};
  auto p = decide_placement(f);
  CHECK(p.kind == Placement::at_home);
  CHECK(p.record_home);
  CHECK_FALSE(p.reroot);
  CHECK_THAT(p.note, Catch::Contains("its database moved from /scratch/u/projA/dlsweep.db to /home/u/dbs/reloc.db"));
}

TEST_CASE("decide_placement: a study recorded before its home gets one where it is", "[relocate]") {
  auto f = facts_at_home();
  f.home_db.clear();
  f.home_root.clear();
  f.home = {DbState::unknown};
  auto p = decide_placement(f);
  CHECK(p.kind == Placement::at_home);
  CHECK(p.record_home);
}
