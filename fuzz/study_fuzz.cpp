// study_fuzz.cpp — libFuzzer target: any text, read as a YAML and as a JSON study file, gives
// a validated StudySpec or a list of ValidationErrors; never a crash, a hang, an exception
// or a leak (study/*.cpp, with the limits of study/limits.hpp).
//
// Property checked beyond "no crash": every error names the file and says what is wrong,
// and a valid spec survives its own normalised form (to_json() parses back as a study),
// which is what the database stores and `dlsweep resume` reads.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "study/spec.hpp"

using dlsweep::orch::parse_study;
using dlsweep::orch::StudyFormat;

namespace {

void check(const std::string& text, StudyFormat format) {
  auto r = parse_study(text, format, "fuzz.study");
  if (!r) {
    for (const auto& e : r.error())
      if (e.file != "fuzz.study" || e.what.empty()) {
        std::fprintf(stderr, "error without file or text: %s\n", e.message().c_str());
        __builtin_trap();
      }
    return;
  }
  const std::string normalised = r->to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  auto again = parse_study(normalised, StudyFormat::json, "normalised.json");
  if (!again) {
    for (const auto& e : again.error()) std::fprintf(stderr, "%s\n", e.message().c_str());
    std::fprintf(stderr, "a valid study's normalised form does not parse back:\n%s\n", normalised.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check(text, StudyFormat::yaml);
  check(text, StudyFormat::json);
  return 0;
}
