// request_auth.hpp — whether a request to `dlsweep serve` carries its token, as pure functions
// of the request's target and headers (no sockets): the unit tests drive them directly, the
// server (http_server.cpp) only carries out the verdict.
//
// A request is let in when it carries the token in any of three ways:
//  - the query parameter `token` (the URL `dlsweep serve` prints: `/?token=...`); the answer
//    then sets the cookie, and a page (GET / or /study/NAME) is redirected to the same URL
//    without the token, so it leaves the address bar and the history;
//  - the cookie that answer set: `dlsweep-serve-PORT=TOKEN` (PORT from the Host header, so
//    servers on different ports of one machine keep their own cookies; HttpOnly,
//    SameSite=Strict, Path=/);
//  - `Authorization: token TOKEN` or `Authorization: Bearer TOKEN` (scripts, curl).
// Everything else is refused (403, nothing else). Each comparison is constant-time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlsweep::serve {

inline constexpr std::string_view kCookiePrefix = "dlsweep-serve";

/// The parts of a request the check reads.
struct AuthRequest {
  std::string_view target;                ///< the request target, query string included
  std::vector<std::string_view> cookies;  ///< every Cookie header's value
  std::string_view authorization;         ///< the Authorization header ("" if none)
};

enum class AuthVerdict {
  refused,          ///< no valid token anywhere: 403
  allowed,          ///< by cookie or Authorization header
  allowed_by_query, ///< by ?token=: set the cookie (and redirect a page to `clean_target`)
};

struct AuthResult {
  AuthVerdict verdict = AuthVerdict::refused;
  std::string clean_target;  ///< for allowed_by_query: the target without the token parameter
};

/// The verdict on `r` for a server whose token is `token` (non-empty).
AuthResult authorize(std::string_view token, const AuthRequest& r);

/// The decoded value of the first `token` query parameter of `target`, if there is one
/// (nullopt for a malformed percent-escape too).
std::optional<std::string> query_token(std::string_view target);

/// `target` without any `token` query parameter ("/?token=x&t=1" -> "/?t=1", "/?token=x" -> "/").
std::string strip_token(std::string_view target);

/// The name=value pairs of a Cookie header ("a=1; b=2"), values unquoted; pairs without '='
/// are skipped.
std::vector<std::pair<std::string_view, std::string_view>> parse_cookies(std::string_view header);

/// The token of an Authorization header ("token X" or "Bearer X", scheme case-insensitive).
std::optional<std::string_view> authorization_token(std::string_view header);

/// The cookie's name for a request with this Host header: "dlsweep-serve-8080" for
/// "localhost:8080", "dlsweep-serve" when the Host names no port.
std::string cookie_name(std::string_view host);

/// The Set-Cookie header value that carries `token` for this Host.
std::string set_cookie(std::string_view host, std::string_view token);

}  // namespace dlsweep::serve
