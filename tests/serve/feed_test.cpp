// StudyFeed over a real SQLite file: the documents, and the cache that keeps any number of
// pollers down to one build per change per period.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../db/db_test_support.hpp"
#include "common/site_limit_note.hpp"
#include "serve/study_feed.hpp"

using namespace dlsweep;
using namespace dlsweep::db::testing;
using nlohmann::json;

namespace {

struct Fixture {
  TempDir dir;
  std::unique_ptr<db::Storage> writer = must(db::Storage::open_readwrite(dir / "sweep.db"));
  std::int64_t study = must(writer->create_study(study_named("alpha")));
  double now = 100.0;

  serve::StudyFeed feed(double min_rebuild_s = 1.0) {
    return serve::StudyFeed(must(db::Storage::open_readonly(dir / "sweep.db")), serve::report_document,
                            min_rebuild_s, [this] { return now; });
  }
  std::int64_t add_trial(std::int64_t number, TrialState to) {
    auto id = must(writer->create_trial(study, number, json{{"batch_size", 64 << number}}, "t"));
    TrialState cur = TrialState::waiting;
    for (auto next : {TrialState::queued, TrialState::running, to}) {
      if (cur == to) break;
      must(writer->transition({id, cur, next, 0, "test", "", std::nullopt}));
      cur = next;
    }
    return id;
  }
};

json parse(const serve::Document& d) { return json::parse(*d); }

}  // namespace

TEST_CASE("feed: studies lists every study with counts by state") {
  Fixture f;
  must(f.writer->create_study(study_named("beta", "min", std::nullopt, "loss")));
  f.add_trial(0, TrialState::complete);
  f.add_trial(1, TrialState::running);
  auto feed = f.feed();
  auto j = parse(must(feed.studies()));
  REQUIRE(j.size() == 2);
  CHECK(j[0]["name"] == "alpha");
  CHECK(j[0]["trials"] == 2);
  CHECK(j[0]["counts"]["COMPLETE"] == 1);
  CHECK(j[0]["counts"]["RUNNING"] == 1);
  CHECK(j[0]["objective"]["target"] == 0.9);
  CHECK(j[1]["name"] == "beta");
  CHECK(j[1]["trials"] == 0);
  CHECK(j[1]["objective"]["target"].is_null());
}

TEST_CASE("feed: a running study held back by a site limit says so, as `dlsweep status` does") {
  Fixture f;
  f.add_trial(0, TrialState::running);
  f.add_trial(1, TrialState::queued);
  f.add_trial(2, TrialState::waiting);
  {
    auto j = parse(must(f.feed().studies()));
    CHECK_FALSE(j[0].contains("site_limit"));
  }
  db::EventRow e;
  e.study_id = f.study;
  e.who = site_limit_who("Slurm");
  e.kind = kSiteLimitEventKind;
  e.reason = "the site allows 2 jobs per user (QOSMaxSubmitJobPerUserLimit)";
  must(f.writer->note_event(e));
  auto j = parse(must(f.feed().studies()));
  CHECK(j[0]["site_limit"] == "the site allows 2 jobs per user (QOSMaxSubmitJobPerUserLimit): 2 in Slurm, 1 waiting");
  // Once the study has ended, a limit is no news.
  must(f.writer->set_study_state(f.study, "STOPPED", "interrupted"));
  f.now += 10;
  j = parse(must(f.feed().studies()));
  CHECK_FALSE(j[0].contains("site_limit"));
}

TEST_CASE("feed: a study's document is the report model, with its trials and objective curves") {
  Fixture f;
  auto t0 = f.add_trial(0, TrialState::running);
  must(f.writer->ingest(t0, 0, {eval_record(0, 100, 1.0, {{"val_acc", 0.5}}), eval_record(1, 200, 2.0, {{"val_acc", 0.95}})}));
  auto feed = f.feed();
  auto doc = must(feed.study("alpha"));
  REQUIRE(doc.has_value());
  auto j = parse(*doc);
  CHECK(j["version"] == 1);
  CHECK(j["study"]["name"] == "alpha");
  REQUIRE(j["trials"].size() == 1);
  CHECK(j["trials"][0]["state"] == "RUNNING");
  CHECK(j["trials"][0]["steps_to_target"] == 200);
  CHECK(j["curves"]["0"]["step"] == json::array({100, 200}));
  CHECK(j["curves"]["0"]["objective"] == json::array({0.5, 0.95}));
  CHECK_FALSE(must(feed.study("nope")).has_value());
}

TEST_CASE("feed: documents are rebuilt only when the database changed, at most once per period") {
  Fixture f;
  auto t0 = f.add_trial(0, TrialState::running);
  auto feed = f.feed(/*min_rebuild_s=*/1.0);
  auto first = must(feed.study("alpha"));
  CHECK(feed.builds() == 1);
  for (int i = 0; i < 50; ++i) CHECK(must(feed.study("alpha")) == first);  // same shared document
  CHECK(feed.builds() == 1);

  // A commit by the orchestrator: within the period the cached document is still served...
  must(f.writer->transition({t0, TrialState::running, TrialState::complete, 0, "test", "", 0}));
  f.now += 0.5;
  CHECK(parse(*must(feed.study("alpha")))["trials"][0]["state"] == "RUNNING");
  CHECK(feed.builds() == 1);
  // ...and after it, the new state.
  f.now += 0.6;
  CHECK(parse(*must(feed.study("alpha")))["trials"][0]["state"] == "COMPLETE");
  CHECK(feed.builds() == 2);
  // Unchanged database: no rebuild however much time passes.
  f.now += 100;
  must(feed.study("alpha"));
  CHECK(feed.builds() == 2);
}

TEST_CASE("feed: unknown study names do not grow the cache or count as builds") {
  Fixture f;
  auto feed = f.feed();
  for (int i = 0; i < 100; ++i) CHECK_FALSE(must(feed.study("no-such-" + std::to_string(i))).has_value());
  CHECK(feed.builds() == 0);
}

TEST_CASE("feed: the connection is read-only") {
  Fixture f;
  auto ro = must(db::Storage::open_readonly(f.dir / "sweep.db"));
  CHECK(ro->read_only());
  CHECK_FALSE(ro->query("DELETE FROM studies").has_value());
  CHECK(must(f.writer->list_studies()).size() == 1);
}

TEST_CASE("feed: a document that takes long to build is rebuilt at most once per 20 build times") {
  Fixture f;
  auto t0 = f.add_trial(0, TrialState::running);
  // A builder that takes 0.5 s of the (fake) clock: the period becomes 20 x 0.5 = 10 s.
  serve::StudyFeed feed(must(db::Storage::open_readonly(f.dir / "sweep.db")),
                        [&f](const db::Storage& s, const db::StudyRow& row) {
                          f.now += 0.5;
                          return serve::report_document(s, row);
                        },
                        /*min_rebuild_s=*/1.0, [&f] { return f.now; });
  must(feed.study("alpha"));
  CHECK(feed.builds() == 1);
  must(f.writer->transition({t0, TrialState::running, TrialState::complete, 0, "test", "", 0}));
  f.now += 5;  // past min_rebuild_s, within 20 build times
  CHECK(parse(*must(feed.study("alpha")))["trials"][0]["state"] == "RUNNING");
  CHECK(feed.builds() == 1);
  f.now += 5.1;
  CHECK(parse(*must(feed.study("alpha")))["trials"][0]["state"] == "COMPLETE");
  CHECK(feed.builds() == 2);
}
