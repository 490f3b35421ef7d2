// token.hpp — the secret that lets a browser read `dlsweep serve` (README "`dlsweep serve`").
//
// Invariants:
//  - A generated token is 32 bytes from the kernel's CSPRNG (getrandom(2)), as 64 lowercase
//    hex characters: safe in a URL query, a cookie value and a shell word without quoting.
//  - A token read from --token-file is refused, with the file named and `chmod 600 FILE` as
//    the fix, when the file can be read by its group or by others; it must be a regular file
//    (symbolic links are not followed) holding 16..256 characters of [A-Za-z0-9._~-] (one
//    trailing newline allowed), so it is just as safe in a URL and a cookie.
//  - tokens_equal takes the same time whatever the first differing byte (only the length of
//    the expected token is visible in its timing).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace dlsweep::serve {

inline constexpr std::size_t kMinTokenChars = 16;
inline constexpr std::size_t kMaxTokenChars = 256;

/// A fresh random token (64 hex characters), or an error when getrandom(2) fails.
Result<std::string> generate_token();

/// True when `given` equals `expected`, compared in constant time (see above). An empty
/// `expected` matches nothing.
bool tokens_equal(std::string_view given, std::string_view expected);

/// True when every character of `token` may appear in a token (URL- and cookie-safe).
bool valid_token_chars(std::string_view token);

/// The token in `path` (see the invariants for what is refused and why).
Result<std::string> read_token_file(const std::filesystem::path& path);

}  // namespace dlsweep::serve
