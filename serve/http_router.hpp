// http_router.hpp — what `dlsweep serve` does with a request target, as a pure function of
// the method and the target string (no sockets, no database): the unit tests drive it
// directly, the server (http_server.cpp) only carries out its answer.
//
// Invariants:
//  - Only GET and HEAD are served; every other method (known or not) is 405.
//  - Nothing is ever read from the filesystem: the routes are a fixed table of embedded
//    pages and assets plus the two JSON endpoints, so a target cannot name a file.
//  - A target that is not origin-form, is longer than kMaxTargetBytes, has a bad percent
//    escape, a control character, a backslash or a "." / ".." segment (raw or decoded)
//    is refused with 4xx before any lookup: path traversal never reaches a route.
#pragma once

#include <string>
#include <string_view>

namespace dlsweep::serve {

inline constexpr std::size_t kMaxTargetBytes = 2048;

enum class RouteKind {
  index_page,   ///< GET /              the list of studies
  study_page,   ///< GET /study/NAME    the live view of one study
  studies_api,  ///< GET /api/studies   JSON: every study in the database
  study_api,    ///< GET /api/studies/NAME  JSON: one study's report data
  asset,        ///< GET /assets/FILE   an embedded script or stylesheet
  error,        ///< answer `status` with `message`
};

struct Route {
  RouteKind kind = RouteKind::error;
  std::string arg;      ///< the decoded study name, or the asset's file name
  int status = 200;     ///< for error: the 4xx code
  std::string message;  ///< for error: why, for the response body
};

/// Percent-decodes one path segment; false on a malformed escape or a decoded control
/// character (NUL included).
bool percent_decode(std::string_view in, std::string& out);

/// The route of `target` for `method` ("GET", "HEAD", anything else).
Route route(std::string_view method, std::string_view target);

}  // namespace dlsweep::serve
