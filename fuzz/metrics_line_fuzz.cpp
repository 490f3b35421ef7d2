// metrics_line_fuzz.cpp — libFuzzer target: the lines a trial program appends to
// metrics.jsonl and the control.json it reads (common/protocol.cpp). Any bytes give a
// Record or an Error; never a crash, UB or an exception.
//
// Property checked beyond "no crash": a record that parses is written back by
// to_json_line() as a line that parses to the same record (what `dlsweep-train` writes
// must be what the orchestrator reads).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "common/protocol.hpp"

namespace proto = dlsweep::protocol;

namespace {

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void check_line(std::string_view line) {
  auto r = proto::parse_record(line);
  if (!r) return;
  const std::string back = proto::to_json_line(*r);
  auto again = proto::parse_record(back);
  bool ok = again && again->seq == r->seq && again->kind == r->kind && again->step == r->step &&
            same(again->epoch, r->epoch) && again->samples == r->samples && same(again->wall_s, r->wall_s) &&
            again->metrics.size() == r->metrics.size();
  if (ok)
    for (const auto& [name, v] : r->metrics) {
      auto it = again->metrics.find(name);
      // Non-finite metrics are written as null and read back as NaN.
      ok = ok && it != again->metrics.end() && (same(it->second, v) || (!std::isfinite(v) && std::isnan(it->second)));
    }
  if (!ok) {
    std::fprintf(stderr, "round trip changed the record:\n%.*s\n%s\n", int(line.size()), line.data(), back.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // As metrics.jsonl: one record per line, as the orchestrator's tail hands them over.
  for (std::string_view rest = text; !rest.empty();) {
    const auto nl = rest.find('\n');
    check_line(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  }
  (void)proto::parse_control(text);
  return 0;
}
