#include "common/protocol.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace dlsweep::protocol {

using nlohmann::json;

std::string_view to_string(RecordKind k) {
  switch (k) {
    case RecordKind::eval: return "eval";
    case RecordKind::checkpoint: return "checkpoint";
    case RecordKind::final: return "final";
    case RecordKind::log: return "log";
  }
  return "log";
}

std::optional<RecordKind> parse_record_kind(std::string_view s) {
  for (RecordKind k : {RecordKind::eval, RecordKind::checkpoint, RecordKind::final, RecordKind::log})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

namespace {

// Reads an optional numeric field; absent means `dflt`, present-but-not-a-number is an error.
// An integer field also takes a float that a 64-bit integer can hold (Python writes 20.0),
// truncated; anything beyond int64 (1e300, 2^64-1) is an error: converting it would be
// undefined behaviour or a silent wrap to a negative count.
template <class T>
Result<T> number_field(const json& j, const char* key, T dflt) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return dflt;
  if (!it->is_number()) return fail(std::string("field '") + key + "' must be a number", "metrics record");
  if constexpr (std::is_integral_v<T>) {
    constexpr double kLimit = 9223372036854775808.0;  // 2^63
    bool fits = it->is_number_integer() && !it->is_number_unsigned();
    if (it->is_number_unsigned()) fits = it->get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<T>::max());
    if (it->is_number_float()) {
      const double v = it->get<double>();
      fits = std::isfinite(v) && v > -kLimit && v < kLimit;
    }
    if (!fits)
      return fail(std::string("field '") + key + "' is out of range (" + it->dump() + ")", "metrics record",
                  "write a whole number below 2^63");
  }
  return it->get<T>();
}

}  // namespace

Result<Record> parse_record(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("line is not valid JSON", "metrics record", "write one JSON object per line");
  if (!j.is_object()) return fail("line is not a JSON object", "metrics record");
  Record r;
  auto seq = j.find("seq");
  if (seq == j.end() || !seq->is_number_integer())
    return fail("field 'seq' (integer) is missing", "metrics record", "number records 0,1,2,... per attempt");
  if (seq->is_number_unsigned() && seq->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    return fail("field 'seq' is out of range (" + seq->dump() + ")", "metrics record",
                "number records 0,1,2,... per attempt");
  r.seq = seq->get<std::int64_t>();
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string())
    return fail("field 'kind' is missing", "metrics record", "use one of eval, checkpoint, final, log");
  auto k = parse_record_kind(kind->get<std::string>());
  if (!k) return fail("unknown kind '" + kind->get<std::string>() + "'", "metrics record",
                      "use one of eval, checkpoint, final, log");
  r.kind = *k;
  auto step = number_field<std::int64_t>(j, "step", 0);
  if (!step) return std::unexpected(step.error());
  r.step = *step;
  auto epoch = number_field<double>(j, "epoch", 0.0);
  if (!epoch) return std::unexpected(epoch.error());
  r.epoch = *epoch;
  auto samples = number_field<std::int64_t>(j, "samples", 0);
  if (!samples) return std::unexpected(samples.error());
  r.samples = *samples;
  auto wall = number_field<double>(j, "wall_s", 0.0);
  if (!wall) return std::unexpected(wall.error());
  r.wall_s = *wall;
  if (auto m = j.find("metrics"); m != j.end() && !m->is_null()) {
    if (!m->is_object()) return fail("field 'metrics' must be an object", "metrics record");
    for (auto& [name, v] : m->items()) {
      if (v.is_number()) r.metrics[name] = v.get<double>();
      else if (v.is_boolean()) r.metrics[name] = v.get<bool>() ? 1.0 : 0.0;
      else if (v.is_null()) r.metrics[name] = std::numeric_limits<double>::quiet_NaN();
      else return fail("metric '" + name + "' must be a number", "metrics record");
    }
  }
  if (auto t = j.find("text"); t != j.end() && t->is_string()) r.text = t->get<std::string>();
  return r;
}

std::string to_json_line(const Record& r) {
  json j;
  j["seq"] = r.seq;
  j["kind"] = std::string(to_string(r.kind));
  j["step"] = r.step;
  j["epoch"] = r.epoch;
  j["samples"] = r.samples;
  j["wall_s"] = r.wall_s;
  json m = json::object();
  for (auto& [k, v] : r.metrics) m[k] = std::isfinite(v) ? json(v) : json(nullptr);
  j["metrics"] = std::move(m);
  if (!r.text.empty()) j["text"] = r.text;
  // Replace invalid UTF-8 (odd file names in a log text) instead of throwing.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string to_json(const Control& c) {
  json j{{"action", c.action}, {"reason", c.reason}};
  return j.dump();
}

Result<Control> parse_control(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("control file is not a JSON object", kControlFile);
  Control c;
  if (auto a = j.find("action"); a != j.end() && a->is_string()) c.action = a->get<std::string>();
  else return fail("field 'action' is missing", kControlFile);
  if (auto r = j.find("reason"); r != j.end() && r->is_string()) c.reason = r->get<std::string>();
  return c;
}

}  // namespace dlsweep::protocol
