#include <catch2/catch.hpp>

#include "orchestrator/table_format.hpp"

using namespace dlsweep::orch;
using nlohmann::json;

TEST_CASE("rows render as table, csv and json") {
  Rows r{{"trial", "note", "acc"}, {{0, "plain", 0.5}, {1, "has,comma \"q\"", nullptr}}};
  auto csv = render(r, OutputFormat::csv);
  CHECK(csv == "trial,note,acc\n0,plain,0.5\n1,\"has,comma \"\"q\"\"\",\n");
  auto j = json::parse(render(r, OutputFormat::json));
  REQUIRE(j.size() == 2);
  CHECK(j[1]["note"] == "has,comma \"q\"");
  CHECK(j[1]["acc"].is_null());
  auto table = render(r, OutputFormat::table);
  CHECK(table.find("trial  note") == 0);
  CHECK_FALSE(parse_output_format("xml").has_value());
}

TEST_CASE("tables fit the width: the message column is shortened, CSV keeps it whole") {
  std::string msg(300, 'x');
  Rows r{{"trial", "state", "value", "message"}, {{0, "FAILED", 0.123456789, msg}, {1, "COMPLETE", 12345.678, "ok"}}};
  auto table = render(r, OutputFormat::table, 100);
  std::size_t start = 0;
  while (start < table.size()) {
    auto end = table.find('\n', start);
    CHECK(end - start <= 100);
    start = end + 1;
  }
  CHECK(table.find("xxx...") != std::string::npos);
  CHECK(table.find("0.1235") != std::string::npos);  // 4 significant digits
  CHECK(table.find("1.235e+04") != std::string::npos);
  auto csv = render(r, OutputFormat::csv, 100);
  CHECK(csv.find(msg) != std::string::npos);
  CHECK(csv.find("0.123456789") != std::string::npos);
  CHECK(render(r, OutputFormat::table).find(msg) != std::string::npos);  // 0: no limit
}

TEST_CASE("timestamps are ISO text in tables and unix seconds in CSV") {
  Rows r{{"at", "created_at", "wall_s"}, {{1795000000.25, 1795000000.25, 1795000000.25}}};
  auto table = render(r, OutputFormat::table);
  CHECK(table.find("2026-11-18T") != std::string::npos);
  CHECK(table.find("1.795e+09") != std::string::npos);  // wall_s is no timestamp
  auto csv = render(r, OutputFormat::csv);
  CHECK(csv.find("1795000000.25,1795000000.25") != std::string::npos);
  CHECK(iso_utc(0) == "1970-01-01T00:00:00Z");
}
