// option_reader.hpp — a section of a study file as a plug-in reads its own keys from it
// (a backend's options: schedulers/slurm/study_options.hpp), with every error naming the
// key. study/ implements it over its validated tree (file, line, did-you-mean), so the
// plug-in owns its keys, their types and their messages without knowing study/.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlsweep {

class OptionReader {
 public:
  virtual ~OptionReader() = default;
  /// Whether the section has `key`.
  virtual bool has(std::string_view key) const = 0;
  /// A string; a number is taken as written ("16G", 30).
  virtual std::optional<std::string> text(std::string_view key) = 0;
  /// An integer in [min, max].
  virtual std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max) = 0;
  /// A finite number >= min (> min when `min_exclusive`).
  virtual std::optional<double> number(std::string_view key, double min, bool min_exclusive) = 0;
  virtual std::optional<bool> boolean(std::string_view key) = 0;
  /// One of `words` (did-you-mean otherwise).
  virtual std::optional<std::string> word(std::string_view key, std::span<const std::string_view> words) = 0;
  /// A list of strings; `fix` says what to write when it is not a list.
  virtual std::optional<std::vector<std::string>> strings(std::string_view key, std::string_view fix) = 0;
  /// Records a problem with `key` (a sub-path such as "extra_sbatch[1]" is fine).
  virtual void error(std::string_view key, std::string what, std::string fix) = 0;
};

}  // namespace dlsweep
