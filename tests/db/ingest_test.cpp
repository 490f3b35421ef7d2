// ingest_test.cpp — metrics.jsonl -> JsonlTail -> parse_record -> Storage::ingest, end to
// end: re-reading a file is a no-op, a torn last line waits until it is complete, NaN is
// stored as NULL, and attempts are kept apart.
#include <catch2/catch.hpp>

#include <fstream>
#include <limits>

#include "common/jsonl_tail.hpp"
#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
namespace fs = std::filesystem;

namespace {

// Reads what the tail has to offer, parses it and ingests it: what the orchestrator does.
std::size_t pump(Storage& s, JsonlTail& tail, std::int64_t trial, int attempt) {
  auto lines = must(tail.read_new_lines());
  std::vector<protocol::Record> records;
  for (const auto& l : lines) records.push_back(must(protocol::parse_record(l)));
  return must(s.ingest(trial, attempt, records));
}

std::int64_t count(const Storage& s, const std::string& table) {
  return scalar(s, "SELECT count(*) FROM " + table).get<std::int64_t>();
}

struct Fixture {
  TempDir dir;
  std::unique_ptr<Storage> s = must(Storage::open_readwrite(dir / "sweep.db"));
  std::int64_t study = must(s->create_study(study_named("x")));
  std::int64_t trial = must(s->create_trial(study, 0, nlohmann::json::object(), (dir / "t0").string()));
  fs::path metrics = dir / "metrics.jsonl";
};

}  // namespace

TEST_CASE("re-ingesting the same metrics.jsonl changes nothing") {
  Fixture f;
  {
    std::ofstream out(f.metrics);
    for (int i = 0; i < 5; ++i) {
      auto r = eval_record(i, 100 * (i + 1), 10.0 * (i + 1), {{"val_acc", 0.5 + 0.1 * i}, {"loss", 2.0 - 0.3 * i}});
      out << protocol::to_json_line(r) << "\n";
    }
    protocol::Record ck = eval_record(5, 500, 51.0, {}, protocol::RecordKind::checkpoint);
    ck.text = "checkpoints/step-500.ckpt";
    out << protocol::to_json_line(ck) << "\n";
  }
  JsonlTail first(f.metrics);
  CHECK(pump(*f.s, first, f.trial, 0) == 6);
  CHECK(count(*f.s, "records") == 6);
  CHECK(count(*f.s, "metrics") == 10);

  JsonlTail second(f.metrics);  // e.g. after `dlsweep resume`: reads the file from the start
  CHECK(pump(*f.s, second, f.trial, 0) == 0);
  CHECK(count(*f.s, "records") == 6);
  CHECK(count(*f.s, "metrics") == 10);

  auto curve = must(f.s->query(
      "SELECT step, value FROM metrics WHERE trial_id = " + std::to_string(f.trial) +
      " AND name = 'val_acc' ORDER BY attempt, seq"));
  REQUIRE(curve.rows.size() == 5);
  CHECK(curve.rows[2][0] == 300);
  CHECK(curve.rows[2][1].get<double>() == Approx(0.7));
  CHECK(scalar(*f.s, "SELECT text FROM records WHERE kind = 'checkpoint'") == "checkpoints/step-500.ckpt");

  SECTION("the same seq under another attempt is a new record") {
    JsonlTail again(f.metrics);
    CHECK(pump(*f.s, again, f.trial, 1) == 6);
    CHECK(count(*f.s, "records") == 12);
  }
}

TEST_CASE("a torn last line is ingested only once it is complete") {
  Fixture f;
  std::string l0 = protocol::to_json_line(eval_record(0, 10, 1.0, {{"val_acc", 0.1}}));
  std::string l1 = protocol::to_json_line(eval_record(1, 20, 2.0, {{"val_acc", 0.2}}));
  std::string l2 = protocol::to_json_line(eval_record(2, 30, 3.0, {{"val_acc", 0.3}}));
  JsonlTail tail(f.metrics);
  { std::ofstream(f.metrics, std::ios::app) << l0 << "\n" << l1.substr(0, l1.size() / 2); }
  CHECK(pump(*f.s, tail, f.trial, 0) == 1);
  CHECK(count(*f.s, "records") == 1);
  CHECK(pump(*f.s, tail, f.trial, 0) == 0);  // still torn

  { std::ofstream(f.metrics, std::ios::app) << l1.substr(l1.size() / 2) << "\n" << l2 << "\n"; }
  CHECK(pump(*f.s, tail, f.trial, 0) == 2);
  CHECK(count(*f.s, "records") == 3);
  CHECK(scalar(*f.s, "SELECT group_concat(seq) FROM (SELECT seq FROM records ORDER BY seq)") == "0,1,2");
  CHECK(scalar(*f.s, "SELECT value FROM metrics WHERE seq = 1").get<double>() == Approx(0.2));

  // A reader that starts over after a crash sees the complete file and adds nothing.
  JsonlTail fresh(f.metrics);
  CHECK(pump(*f.s, fresh, f.trial, 0) == 0);
}

TEST_CASE("NaN metrics are stored as NULL and unknown trials are refused") {
  Fixture f;
  auto r = eval_record(0, 10, 1.0, {{"loss", std::numeric_limits<double>::quiet_NaN()}, {"val_acc", 0.3}});
  CHECK(must(f.s->ingest(f.trial, 0, {r})) == 1);
  CHECK(scalar(*f.s, "SELECT value IS NULL FROM metrics WHERE name = 'loss'") == 1);
  CHECK(scalar(*f.s, "SELECT count(*) FROM metrics") == 2);
  // Through the protocol too: a JSON null metric is NaN in a Record, NULL in the database.
  auto parsed = must(protocol::parse_record(R"({"seq":1,"kind":"eval","step":20,"metrics":{"loss":null}})"));
  CHECK(must(f.s->ingest(f.trial, 0, {parsed})) == 1);
  CHECK(scalar(*f.s, "SELECT count(*) FROM metrics WHERE value IS NULL") == 2);

  CHECK(must(f.s->ingest(f.trial, 0, {})) == 0);
  auto bad = f.s->ingest(f.trial + 3, 0, {r});
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message(), Catch::Contains("no trial with id"));
  CHECK(count(*f.s, "records") == 2);
}
