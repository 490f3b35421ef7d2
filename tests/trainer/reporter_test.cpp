#include <catch2/catch.hpp>

#include <sstream>
#include <vector>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"
#include "trainer/reporter.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;

namespace {

std::vector<protocol::Record> read_records(const std::filesystem::path& p) {
  std::vector<protocol::Record> out;
  std::istringstream in(test::read_file(p));
  for (std::string line; std::getline(in, line);) {
    auto r = protocol::parse_record(line);
    REQUIRE(r);
    out.push_back(*r);
  }
  return out;
}

}  // namespace

TEST_CASE("records are whole lines with increasing seq", "[reporter]") {
  test::TempDir tmp;
  auto file = tmp / "metrics.jsonl";
  {
    auto rep = Reporter::open(file);
    REQUIRE(rep);
    REQUIRE(rep->log("hello", 0, 0, 0, 0.1));
    protocol::Record r;
    r.kind = protocol::RecordKind::eval;
    r.step = 10;
    r.epoch = 1;
    r.samples = 640;
    r.wall_s = 2.5;
    r.metrics = {{"val_acc", 0.5}};
    r.seq = 99;  // ignored: the reporter numbers records
    REQUIRE(rep->write(r));
    CHECK(rep->next_seq() == 2);
  }
  auto content = test::read_file(file);
  CHECK(content.back() == '\n');
  auto recs = read_records(file);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].seq == 0);
  CHECK(recs[0].text == "hello");
  CHECK(recs[1].seq == 1);
  CHECK(recs[1].metrics.at("val_acc") == 0.5);
  CHECK(recs[1].samples == 640);
}

TEST_CASE("reopening continues seq and cuts off a torn last line", "[reporter]") {
  test::TempDir tmp;
  auto file = tmp / "metrics.jsonl";
  {
    auto rep = Reporter::open(file);
    REQUIRE(rep);
    REQUIRE(rep->log("a", 0, 0, 0, 0));
    REQUIRE(rep->log("b", 1, 0, 0, 0));
  }
  {
    std::ofstream out(file, std::ios::app);
    out << "{\"seq\":2,\"kind\":\"ev";  // a crash mid-write
  }
  auto rep = Reporter::open(file);
  REQUIRE(rep);
  CHECK(rep->next_seq() == 2);
  REQUIRE(rep->log("c", 2, 0, 0, 0));
  auto recs = read_records(file);
  REQUIRE(recs.size() == 3);
  CHECK(recs[2].seq == 2);
  CHECK(recs[2].text == "c");
}

TEST_CASE("an unwritable metrics file is an error naming it", "[reporter]") {
  test::TempDir tmp;
  auto rep = Reporter::open(tmp / "no-such-dir" / "metrics.jsonl");
  REQUIRE_FALSE(rep);
  CHECK(rep.error().where.find("no-such-dir") != std::string::npos);
}
