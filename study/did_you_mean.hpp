// did_you_mean.hpp — suggestions for misspelt keys and words in a study file.
//
// A suggestion is the closest candidate by Levenshtein distance, offered only when the
// distance is at most max(2, len(word)/3): close enough to be a typo, far enough from
// unrelated words. Ties go to the earlier candidate, so suggestions are deterministic.
// Never a key of another meaning: a candidate is skipped when the word replaces one of its
// words ('_'-separated, plural 's' ignored) by a real word — one of another candidate key
// or of a short list (min/max, gpu/cpu, node/task, train/val/test, ...). So
// "gpus_per_task" never becomes "cpus_per_task", "min_lr" never "max_lr", while
// "cpu_per_task" and "warmup_epoch" still get "cpus_per_task" and "warmup_epochs".
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dlsweep::orch {

/// Edit distance (insertions, deletions, substitutions) between `a` and `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate `word` was most likely meant to be, if any is close enough.
std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates);

/// The fix for an unknown word: "did you mean 'x'?" or "use one of: a, b, c"
/// (`noun` names the candidates: "allowed keys", "known trainer parameters", ...).
std::string suggest_fix(std::string_view word, std::span<const std::string_view> candidates,
                        std::string_view noun);

}  // namespace dlsweep::orch
