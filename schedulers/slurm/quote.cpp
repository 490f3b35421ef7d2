// quote.cpp — sbatch-line quoting, index-word quoting and its decoder; see
// slurm/quote.hpp for the rules and the invariant the tests check.
#include "schedulers/slurm/quote.hpp"

#include <fmt/format.h>

#include "common/shell_quote.hpp"

namespace dlsweep::sched::slurm {

namespace {

bool bare_safe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '/' || c == ',' || c == ':' || c == '=' || c == '+' || c == '@' || c == '%';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

int first_control_char(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return u;
  }
  return -1;
}

bool valid_env_name(std::string_view s) {
  if (s.empty() || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_')) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

Result<std::string> sbatch_quote(std::string_view value, std::string_view what) {
  if (int c = first_control_char(value); c >= 0) {
    return fail(fmt::format("the value contains control character 0x{:02x} (a line break or similar), which "
                            "cannot be written on an #SBATCH line",
                            c),
                std::string(what), "remove the line break / control character from the value");
  }
  bool safe = !value.empty();
  for (char c : value) safe = safe && bare_safe(c);
  if (safe) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

Result<std::string> index_word(std::string_view value, std::string_view what) {
  if (value.find('\0') != std::string_view::npos) {
    return fail("the value contains a NUL byte, which no program argument or environment value can hold",
                std::string(what), "remove the NUL byte");
  }
  if (first_control_char(value) < 0) return shell_quote(value);
  // bash's ANSI-C quoting: every control character as \xHH (always two digits, so a hex
  // digit that follows is never swallowed), backslash and quote escaped.
  std::string out = "$'";
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

Result<std::vector<std::string>> split_index_line(std::string_view line) {
  std::vector<std::string> words;
  std::size_t i = 0;
  const std::size_t n = line.size();
  auto bad = [&](std::string what) {
    return fail(fmt::format("{} at column {}", what, i + 1), "index line", "the index file was edited or is damaged");
  };
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= n) break;
    std::string w;
    while (i < n && line[i] != ' ' && line[i] != '\t') {
      char c = line[i];
      if (c == '\'') {  // '...': everything literal up to the next '
        auto end = line.find('\'', i + 1);
        if (end == std::string_view::npos) return std::unexpected(bad("unterminated '...'").error());
        w.append(line.substr(i + 1, end - i - 1));
        i = end + 1;
      } else if (c == '\\') {  // \' between quoted parts
        if (i + 1 >= n) return std::unexpected(bad("backslash at the end of the line").error());
        w += line[i + 1];
        i += 2;
      } else if (c == '$' && i + 1 < n && line[i + 1] == '\'') {  // $'...'
        i += 2;
        for (;;) {
          if (i >= n) return std::unexpected(bad("unterminated $'...'").error());
          char d = line[i];
          if (d == '\'') {
            ++i;
            break;
          }
          if (d != '\\') {
            w += d;
            ++i;
            continue;
          }
          if (i + 1 >= n) return std::unexpected(bad("unterminated escape").error());
          char e = line[i + 1];
          if (e == 'x') {
            int h1 = i + 2 < n ? hex_value(line[i + 2]) : -1;
            int h2 = i + 3 < n ? hex_value(line[i + 3]) : -1;
            if (h1 < 0 || h2 < 0) return std::unexpected(bad("bad \\x escape").error());
            w += static_cast<char>(h1 * 16 + h2);
            i += 4;
          } else if (e == '\\' || e == '\'') {
            w += e;
            i += 2;
          } else {
            return std::unexpected(bad(fmt::format("unexpected escape \\{}", e)).error());
          }
        }
      } else if (bare_safe(c)) {
        w += c;
        ++i;
      } else {
        return std::unexpected(bad(fmt::format("unexpected character '{}'", c)).error());
      }
    }
    words.push_back(std::move(w));
  }
  return words;
}

}  // namespace dlsweep::sched::slurm
