// http_router.cpp — see http_router.hpp.
#include "serve/http_router.hpp"

#include <vector>

namespace dlsweep::serve {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Route refuse(int status, std::string message) {
  Route r;
  r.kind = RouteKind::error;
  r.status = status;
  r.message = std::move(message);
  return r;
}

Route to(RouteKind kind, std::string arg = {}) {
  Route r;
  r.kind = kind;
  r.arg = std::move(arg);
  return r;
}

bool is_dot_segment(std::string_view s) { return s == "." || s == ".."; }

bool valid_asset_name(std::string_view s) {
  if (s.empty() || s.front() == '.') return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hex_value(in[i + 1]);
      const int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
    out.push_back(c);
  }
  return true;
}

Route route(std::string_view method, std::string_view target) {
  if (method != "GET" && method != "HEAD") return refuse(405, "only GET and HEAD are served; this server never writes");
  if (target.size() > kMaxTargetBytes) return refuse(414, "request target too long");
  if (target.empty() || target.front() != '/') return refuse(400, "request target must be a path starting with '/'");
  // The query string and fragment carry nothing the server uses (pages add ?t= to poll).
  std::string_view path = target.substr(0, target.find_first_of("?#"));
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '\\') return refuse(400, "bad character in the request path");
  }
  // Split into segments; decode each; refuse dot segments in either form.
  std::vector<std::string> segs;
  std::size_t pos = 1;
  while (pos <= path.size()) {
    std::size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view raw = path.substr(pos, end - pos);
    std::string dec;
    if (!percent_decode(raw, dec)) return refuse(400, "malformed percent-escape in the request path");
    // A decoded segment may hold '/' (%2F): refuse dot segments inside it too, and '\\'.
    bool dots = is_dot_segment(dec) || dec.find('\\') != std::string::npos;
    for (std::size_t a = 0; !dots && a <= dec.size();) {
      std::size_t b = dec.find('/', a);
      if (b == std::string::npos) b = dec.size();
      dots = is_dot_segment(std::string_view(dec).substr(a, b - a));
      a = b + 1;
    }
    if (dots) return refuse(400, "'.' and '..' path segments are not allowed");
    segs.push_back(std::move(dec));
    pos = end + 1;
  }
  // "/" gives one empty segment; a trailing slash gives a trailing empty one.
  if (segs.size() == 1 && segs[0].empty()) return to(RouteKind::index_page);
  if (!segs.empty() && segs.back().empty()) segs.pop_back();
  for (const auto& s : segs)
    if (s.empty()) return refuse(404, "no such page");
  if (segs.size() == 2 && segs[0] == "study") return to(RouteKind::study_page, segs[1]);
  if (segs.size() == 2 && segs[0] == "api" && segs[1] == "studies") return to(RouteKind::studies_api);
  if (segs.size() == 3 && segs[0] == "api" && segs[1] == "studies") return to(RouteKind::study_api, segs[2]);
  if (segs.size() == 2 && segs[0] == "assets") {
    if (!valid_asset_name(segs[1])) return refuse(404, "no such asset");
    return to(RouteKind::asset, segs[1]);
  }
  return refuse(404, "no such page");
}

}  // namespace dlsweep::serve
