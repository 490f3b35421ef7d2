#include "common/program_outcome.hpp"

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

namespace dlsweep::protocol {

using json = nlohmann::json;

namespace {
constexpr const char* kExpected =
    R"(write {"attempt": <DLSWEEP_ATTEMPT>, "state": "PRUNED" or "COMPLETE", "reason": "..."} atomically, or no file)";
}

std::string_view to_string(ProgramState s) { return s == ProgramState::pruned ? "PRUNED" : "COMPLETE"; }

Result<ProgramOutcome> parse_program_outcome(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object", kOutcomeFile, kExpected);
  ProgramOutcome o;
  const auto a = j.find("attempt");
  if (a == j.end()) return fail("field 'attempt' is missing", kOutcomeFile, kExpected);
  if (!a->is_number_integer() || a->get<std::int64_t>() < 0 ||
      a->get<std::int64_t>() > std::numeric_limits<int>::max())
    return fail("field 'attempt' is " + a->dump() + ", not an attempt number (0, 1, ...)", kOutcomeFile, kExpected);
  o.attempt = static_cast<int>(a->get<std::int64_t>());
  const auto s = j.find("state");
  if (s == j.end()) return fail("field 'state' is missing", kOutcomeFile, kExpected);
  if (!s->is_string()) return fail("field 'state' is " + s->dump() + ", not a string", kOutcomeFile, kExpected);
  if (s->get<std::string>() == "PRUNED") o.state = ProgramState::pruned;
  else if (s->get<std::string>() == "COMPLETE") o.state = ProgramState::complete;
  else return fail("field 'state' is " + s->dump() + ": only \"PRUNED\" and \"COMPLETE\" are known", kOutcomeFile, kExpected);
  if (const auto r = j.find("reason"); r != j.end() && !r->is_null()) {
    if (!r->is_string()) return fail("field 'reason' is " + r->dump() + ", not a string", kOutcomeFile, kExpected);
    o.reason = r->get<std::string>();
  }
  return o;
}

std::string to_json(const ProgramOutcome& o) {
  return json{{"attempt", o.attempt}, {"state", std::string(to_string(o.state))}, {"reason", o.reason}}.dump();
}

}  // namespace dlsweep::protocol
