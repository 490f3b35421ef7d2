// section_reader.hpp — a section of the study file (a Field of StudyReader) as the
// common/option_reader.hpp a plug-in reads its own keys through: the backend's keys of
// `backend:`. Errors land in the study's reader, at the section's path + key, with its
// line numbers and did-you-mean.
#pragma once

#include "common/option_reader.hpp"
#include "study/reader.hpp"

namespace dlsweep::orch {

class SectionReader final : public OptionReader {
 public:
  SectionReader(StudyReader& reader, Field section) : r_(reader), section_(std::move(section)) {}

  bool has(std::string_view key) const override { return static_cast<bool>(StudyReader::field(section_, key)); }
  std::optional<std::string> text(std::string_view key) override;
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) override;
  std::optional<double> number(std::string_view key, double min, bool min_exclusive) override;
  std::optional<bool> boolean(std::string_view key) override;
  std::optional<std::string> word(std::string_view key, std::span<const std::string_view> words) override;
  std::optional<std::vector<std::string>> strings(std::string_view key, std::string_view fix) override;
  void error(std::string_view key, std::string what, std::string fix) override;

 private:
  StudyReader& r_;
  Field section_;
};

}  // namespace dlsweep::orch
