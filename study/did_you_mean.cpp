// did_you_mean.cpp — Levenshtein distance and the suggestion rule built on it.
#include "study/did_you_mean.hpp"

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

namespace {

// A key's words ("gpus_per_task" -> gpus, per, task), each without a plural 's', so that
// "task" and "tasks" are one word.
std::vector<std::string_view> words(std::string_view key) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t end = key.find_first_of("_-", start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view w = key.substr(start, end - start);
    if (w.size() > 2 && w.back() == 's') w.remove_suffix(1);
    if (!w.empty()) out.push_back(w);
    start = end + 1;
  }
  return out;
}

// Words that carry a meaning of their own: a key that differs from another by one of them
// is a different key, not a misspelling of it (min/max, the device, the unit).
constexpr std::string_view kMeaningful[] = {"min", "max", "gpu", "cpu", "node", "task", "mem", "train", "val",
                                            "test", "start", "end", "first", "last", "low", "high", "lower",
                                            "upper", "input", "output", "step", "epoch", "sample", "rank", "thread"};

// True when `word` replaces a whole word of `candidate` by another real word: "gpus_per_task"
// is not a typo of "cpus_per_task" (gpu is a word of its own), "min_lr" not one of "max_lr".
bool other_meaning(std::string_view word, std::string_view candidate, std::span<const std::string_view> candidates) {
  auto w = words(word), c = words(candidate);
  std::vector<std::string_view> only_w, only_c;
  for (auto x : w)
    if (std::find(c.begin(), c.end(), x) == c.end()) only_w.push_back(x);
  for (auto x : c)
    if (std::find(w.begin(), w.end(), x) == w.end()) only_c.push_back(x);
  if (only_w.empty() || only_c.empty()) return false;  // a word added or dropped, or none changed
  auto known = [&](std::string_view x) {
    if (std::find(std::begin(kMeaningful), std::end(kMeaningful), x) != std::end(kMeaningful)) return true;
    for (auto k : candidates) {
      auto kw = words(k);
      if (std::find(kw.begin(), kw.end(), x) != kw.end()) return true;
    }
    return false;
  };
  return std::any_of(only_w.begin(), only_w.end(), known);
}

// True when `word` abbreviates `candidate` word by word: as many words, each a prefix of the
// candidate's (at least 3 letters, or the whole word), e.g. "resample_prob" for
// "resample_probability", "max_concur" for "max_concurrent" -- too far for the edit distance.
bool abbreviates(std::string_view word, std::string_view candidate) {
  auto split = [](std::string_view k) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start <= k.size()) {
      std::size_t end = k.find_first_of("_-", start);
      if (end == std::string_view::npos) end = k.size();
      out.push_back(k.substr(start, end - start));
      start = end + 1;
    }
    return out;
  };
  const auto w = split(word), c = split(candidate);
  if (w.size() != c.size() || word == candidate) return false;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!c[i].starts_with(w[i]) || (w[i].size() < 3 && w[i] != c[i])) return false;
  return true;
}

}  // namespace

std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (auto c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_distance && !other_meaning(word, c, candidates)) best_distance = d, best = std::string(c);
  }
  if (best) return best;
  for (auto c : candidates)
    if (abbreviates(word, c)) {
      if (best) return std::nullopt;  // two keys it may abbreviate: name neither
      best = std::string(c);
    }
  return best;
}

std::string suggest_fix(std::string_view word, std::span<const std::string_view> candidates,
                        std::string_view noun) {
  if (auto s = did_you_mean(word, candidates)) return fmt::format("did you mean '{}'?", *s);
  return fmt::format("{}: {}", noun, fmt::join(candidates, ", "));
}

}  // namespace dlsweep::orch
