#include <catch2/catch.hpp>

#include <limits>

#include "common/protocol.hpp"

using namespace dlsweep::protocol;

TEST_CASE("a record survives a round trip through its JSON line") {
  Record r;
  r.seq = 7;
  r.kind = RecordKind::eval;
  r.step = 120;
  r.epoch = 2.5;
  r.samples = 15360;
  r.wall_s = 3.25;
  r.metrics = {{"val_acc", 0.875}, {"lr", 0.4}};
  auto back = parse_record(to_json_line(r));
  REQUIRE(back.has_value());
  CHECK(back->seq == 7);
  CHECK(back->kind == RecordKind::eval);
  CHECK(back->step == 120);
  CHECK(back->epoch == 2.5);
  CHECK(back->samples == 15360);
  CHECK(back->wall_s == 3.25);
  CHECK(back->metrics == r.metrics);
}

TEST_CASE("malformed records are rejected with the field named") {
  CHECK_FALSE(parse_record("{\"seq\":1,\"kind\":\"eval\"").has_value());
  auto no_seq = parse_record(R"({"kind":"eval"})");
  REQUIRE_FALSE(no_seq.has_value());
  CHECK(no_seq.error().what.find("seq") != std::string::npos);
  auto bad_kind = parse_record(R"({"seq":0,"kind":"evaluation"})");
  REQUIRE_FALSE(bad_kind.has_value());
  CHECK(bad_kind.error().what.find("evaluation") != std::string::npos);
  auto bad_metric = parse_record(R"({"seq":0,"kind":"eval","metrics":{"acc":"high"}})");
  REQUIRE_FALSE(bad_metric.has_value());
  CHECK(bad_metric.error().what.find("acc") != std::string::npos);
}

// Found by fuzz/metrics_line_fuzz.cpp: converting 1e300 to an int64 step was undefined
// behaviour, and 2^64-1 samples wrapped to -1.
TEST_CASE("integer fields beyond int64 are rejected, floats that fit are truncated") {
  for (const char* line : {R"({"seq":0,"kind":"eval","step":1e300})", R"({"seq":0,"kind":"eval","samples":-1e19})",
                           R"({"seq":0,"kind":"eval","samples":18446744073709551615})",
                           R"({"seq":0,"kind":"eval","step":9223372036854775808.0})",
                           R"({"seq":18446744073709551615,"kind":"eval"})"}) {
    INFO(line);
    auto r = parse_record(line);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().what.find("out of range") != std::string::npos);
    CHECK_FALSE(r.error().fix.empty());
  }
  auto ok = parse_record(R"({"seq":0,"kind":"eval","step":20.0,"samples":1280.7,"epoch":1e300})");
  REQUIRE(ok.has_value());
  CHECK(ok->step == 20);
  CHECK(ok->samples == 1280);
  CHECK(ok->epoch == 1e300);
  CHECK(parse_record(R"({"seq":0,"kind":"eval","step":-9223372036854775808})")->step ==
        std::numeric_limits<std::int64_t>::min());
}

TEST_CASE("control file round trip") {
  auto c = parse_control(to_json(Control{"stop", "pruned"}));
  REQUIRE(c.has_value());
  CHECK(c->action == "stop");
  CHECK(c->reason == "pruned");
  CHECK_FALSE(parse_control("[]").has_value());
}
