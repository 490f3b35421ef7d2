#include "orchestrator/table_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

namespace dlsweep::orch {

Result<OutputFormat> parse_output_format(const std::string& s) {
  if (s == "table") return OutputFormat::table;
  if (s == "csv") return OutputFormat::csv;
  if (s == "json") return OutputFormat::json;
  return fail("unknown format '" + s + "'", "--format", "use table, csv or json");
}

std::string iso_utc(double unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::size_t output_width(int fd) {
  if (::isatty(fd) == 1) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  }
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    long n = std::strtol(c, nullptr, 10);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  return 0;
}

namespace {

bool is_timestamp_column(const std::string& c) {
  return c == "at" || (c.size() > 3 && c.ends_with("_at"));
}

}  // namespace

std::string cell_text(const nlohmann::json& v, bool full_precision, const std::string& column) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (!full_precision && v.is_number() && is_timestamp_column(column)) return iso_utc(v.get<double>());
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_float()) return full_precision ? fmt::format("{}", v.get<double>()) : fmt::format("{:.4g}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

namespace {

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// "a long message" -> "a long me..." in `width` characters (bytes; a cut never splits a
/// UTF-8 sequence).
std::string shorten(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  if (width <= 3) return s.substr(0, width);
  std::size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

// Narrows text columns until the line (columns + 2 spaces between) fits `max_width`: first
// a `message` column, then the widest other text column, never below 8 characters. Numbers
// are never cut (a cut number is a wrong number): such a table stays wider.
void fit_widths(const std::vector<std::string>& columns, const std::vector<bool>& text, std::vector<std::size_t>& width,
                std::size_t max_width) {
  constexpr std::size_t kMin = 8;
  auto total = [&] {
    std::size_t t = 0;
    for (auto w : width) t += w;
    return t + (width.empty() ? 0 : 2 * (width.size() - 1));
  };
  while (total() > max_width) {
    std::size_t excess = total() - max_width, pick = width.size();
    for (std::size_t i = 0; i < width.size(); ++i)
      if (columns[i] == "message" && width[i] > kMin) pick = i;
    if (pick == width.size())
      for (std::size_t i = 0; i < width.size(); ++i)
        if (text[i] && width[i] > kMin && (pick == width.size() || width[i] > width[pick])) pick = i;
    if (pick == width.size()) return;  // nothing left to narrow: the line stays long
    width[pick] -= std::min(excess, width[pick] - kMin);
  }
}

}  // namespace

std::string csv_row(const std::vector<nlohmann::json>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += csv_escape(cell_text(cells[i], true));
  }
  out += '\n';
  return out;
}

std::string render(const Rows& rows, OutputFormat format, std::size_t max_width) {
  std::string out;
  switch (format) {
    case OutputFormat::json: {
      // ordered_json keeps the column order in each object.
      out = "[";
      for (std::size_t k = 0; k < rows.rows.size(); ++k) {
        nlohmann::ordered_json obj;
        for (std::size_t i = 0; i < rows.columns.size() && i < rows.rows[k].size(); ++i)
          obj[rows.columns[i]] = rows.rows[k][i];
        out += (k ? ",\n " : "\n ") + obj.dump();
      }
      out += rows.rows.empty() ? "]\n" : "\n]\n";
      return out;
    }
    case OutputFormat::csv: {
      for (std::size_t i = 0; i < rows.columns.size(); ++i) out += (i ? "," : "") + csv_escape(rows.columns[i]);
      out += "\n";
      for (const auto& r : rows.rows) {
        for (std::size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + csv_escape(cell_text(r[i], true));
        out += "\n";
      }
      return out;
    }
    case OutputFormat::table: {
      std::vector<std::size_t> width(rows.columns.size());
      std::vector<std::vector<std::string>> cells;
      std::vector<bool> text(rows.columns.size(), false);
      for (std::size_t i = 0; i < rows.columns.size(); ++i) width[i] = rows.columns[i].size();
      for (const auto& r : rows.rows) {
        auto& line = cells.emplace_back();
        for (std::size_t i = 0; i < rows.columns.size(); ++i) {
          line.push_back(i < r.size() ? cell_text(r[i], false, rows.columns[i]) : "");
          if (i < r.size() && r[i].is_string()) text[i] = true;
          std::replace(line.back().begin(), line.back().end(), '\n', ' ');  // one row, one line
          width[i] = std::max(width[i], line.back().size());
        }
      }
      if (max_width > 0) fit_widths(rows.columns, text, width, max_width);
      for (auto& line : cells)
        for (std::size_t i = 0; i < line.size(); ++i)
          if (line[i].size() > width[i]) line[i] = shorten(line[i], width[i]);
      auto emit = [&](const std::vector<std::string>& line) {
        std::string text;
        for (std::size_t i = 0; i < line.size(); ++i) {
          text += line[i];
          if (i + 1 < line.size()) text += std::string(width[i] - line[i].size() + 2, ' ');
        }
        while (!text.empty() && text.back() == ' ') text.pop_back();
        out += text + "\n";
      };
      std::vector<std::string> header = rows.columns;
      for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i].size() > width[i]) header[i] = shorten(header[i], width[i]);
      emit(header);
      std::vector<std::string> rule;
      for (auto w : width) rule.push_back(std::string(w, '-'));
      emit(rule);
      for (const auto& line : cells) emit(line);
      if (rows.rows.empty()) out += "(no rows)\n";
      return out;
    }
  }
  return out;
}

}  // namespace dlsweep::orch
