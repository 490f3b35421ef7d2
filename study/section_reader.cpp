// section_reader.cpp — see section_reader.hpp.
#include "study/section_reader.hpp"

namespace dlsweep::orch {

std::optional<std::string> SectionReader::text(std::string_view key) {
  Field f = StudyReader::field(section_, key);
  if (!f) return std::nullopt;
  if (f->is_number()) return r_.scalar_text(f);
  return r_.string(f);
}

std::optional<std::int64_t> SectionReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  Field f = StudyReader::field(section_, key);
  return f ? r_.integer(f, min, max) : std::nullopt;
}

std::optional<double> SectionReader::number(std::string_view key, double min, bool min_exclusive) {
  Field f = StudyReader::field(section_, key);
  return f ? r_.number(f, min, min_exclusive) : std::nullopt;
}

std::optional<bool> SectionReader::boolean(std::string_view key) {
  Field f = StudyReader::field(section_, key);
  return f ? r_.boolean(f) : std::nullopt;
}

std::optional<std::string> SectionReader::word(std::string_view key, std::span<const std::string_view> words) {
  Field f = StudyReader::field(section_, key);
  return f ? r_.word(f, words) : std::nullopt;
}

std::optional<std::vector<std::string>> SectionReader::strings(std::string_view key, std::string_view fix) {
  Field f = StudyReader::field(section_, key);
  if (!f || !r_.list(f, fix)) return std::nullopt;
  // Each item that is a string is kept; each that is not is an error at its index.
  std::vector<std::string> out;
  for (std::size_t j = 0; j < f->size(); ++j)
    if (auto v = r_.string(StudyReader::item(f, j))) out.push_back(*v);
  return out;
}

void SectionReader::error(std::string_view key, std::string what, std::string fix) {
  r_.error(key.empty() ? section_.path : section_.path + "." + std::string(key), std::move(what), std::move(fix));
}

}  // namespace dlsweep::orch
