// request_auth.cpp — see request_auth.hpp.
#include "serve/request_auth.hpp"

#include <cctype>

#include "serve/http_router.hpp"
#include "serve/token.hpp"

namespace dlsweep::serve {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Calls f(name, value, raw_pair) for each '&'-separated pair of the query (before any '#').
template <class F>
void each_query_pair(std::string_view target, F&& f) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return;
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  std::size_t pos = 0;
  while (pos <= query.size()) {
    std::size_t end = query.find('&', pos);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(pos, end - pos);
    const auto eq = pair.find('=');
    f(pair.substr(0, eq), eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), pair);
    pos = end + 1;
  }
}

}  // namespace

std::optional<std::string> query_token(std::string_view target) {
  std::optional<std::string> found;
  bool done = false;
  each_query_pair(target, [&](std::string_view name, std::string_view value, std::string_view) {
    if (done || name != "token") return;
    done = true;
    std::string decoded;
    if (percent_decode(value, decoded)) found = std::move(decoded);
  });
  return found;
}

std::string strip_token(std::string_view target) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string kept;
  each_query_pair(target, [&](std::string_view name, std::string_view, std::string_view pair) {
    if (name == "token" || pair.empty()) return;
    kept += kept.empty() ? "" : "&";
    kept += pair;
  });
  std::string out(target.substr(0, q));
  if (!kept.empty()) out += "?" + kept;
  return out;
}

std::vector<std::pair<std::string_view, std::string_view>> parse_cookies(std::string_view header) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  std::size_t pos = 0;
  while (pos <= header.size()) {
    std::size_t end = header.find(';', pos);
    if (end == std::string_view::npos) end = header.size();
    const std::string_view pair = trim(header.substr(pos, end - pos));
    pos = end + 1;
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view value = trim(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    out.emplace_back(trim(pair.substr(0, eq)), value);
  }
  return out;
}

std::optional<std::string_view> authorization_token(std::string_view header) {
  header = trim(header);
  const auto space = header.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view scheme = header.substr(0, space);
  if (!iequals(scheme, "token") && !iequals(scheme, "bearer")) return std::nullopt;
  return trim(header.substr(space + 1));
}

std::string cookie_name(std::string_view host) {
  std::string name(kCookiePrefix);
  const auto colon = host.rfind(':');
  const auto bracket = host.rfind(']');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket)) return name;
  const std::string_view port = host.substr(colon + 1);
  if (port.empty() || port.size() > 5) return name;
  for (char c : port)
    if (c < '0' || c > '9') return name;
  return name + "-" + std::string(port);
}

std::string set_cookie(std::string_view host, std::string_view token) {
  return cookie_name(host) + "=" + std::string(token) + "; Path=/; HttpOnly; SameSite=Strict";
}

AuthResult authorize(std::string_view token, const AuthRequest& r) {
  AuthResult res;
  // Every carrier is compared (no early exit on a match), each in constant time.
  bool by_header = false, by_cookie = false;
  if (auto t = authorization_token(r.authorization)) by_header = tokens_equal(*t, token);
  for (std::string_view header : r.cookies)
    for (const auto& [name, value] : parse_cookies(header))
      if (name.substr(0, kCookiePrefix.size()) == kCookiePrefix) by_cookie |= tokens_equal(value, token);
  bool by_query = false;
  if (auto q = query_token(r.target)) by_query = tokens_equal(*q, token);
  if (by_query) {
    res.verdict = AuthVerdict::allowed_by_query;
    res.clean_target = strip_token(r.target);
  } else if (by_header || by_cookie) {
    res.verdict = AuthVerdict::allowed;
  }
  return res;
}

}  // namespace dlsweep::serve
