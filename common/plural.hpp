// plural.hpp — English plurals of counts in messages: "1 trial", "3 trials".
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace dlsweep {

/// "s" unless n is 1: fmt::format("{} stray job{}", n, plural_s(n)).
inline const char* plural_s(long long n) { return n == 1 ? "" : "s"; }

/// "1 trial", "3 trials".
inline std::string trials_word(std::int64_t n) { return fmt::format("{} trial{}", n, plural_s(n)); }

}  // namespace dlsweep
