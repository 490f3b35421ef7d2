// shell_quote.hpp — turns arbitrary bytes into one POSIX shell word.
//
// Invariant: for every string s, `sh -c "printf %s $(shell_quote(s))"` prints s exactly.
// Values from study files only ever reach a shell through this function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlsweep {

/// Single-quotes s, writing each embedded ' as '\''. Plain safe words are left bare.
std::string shell_quote(std::string_view s);
/// Quotes each word and joins them with spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace dlsweep
