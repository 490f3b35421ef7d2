// study_did_you_mean.cpp — Levenshtein distance and the suggestion rule built on it.
#include "orchestrator/study_did_you_mean.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dlsweep::orch {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the classic DP table; row[j] = distance(a[0..i), b[0..j)).
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (auto c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = std::string(c);
  }
  return best;
}

std::string suggest_fix(std::string_view word, std::span<const std::string_view> candidates,
                        std::string_view noun) {
  if (auto s = did_you_mean(word, candidates)) return fmt::format("did you mean '{}'?", *s);
  return fmt::format("{}: {}", noun, fmt::join(candidates, ", "));
}

}  // namespace dlsweep::orch
