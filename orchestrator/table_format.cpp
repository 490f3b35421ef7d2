#include "orchestrator/table_format.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace dlsweep::orch {

Result<OutputFormat> parse_output_format(const std::string& s) {
  if (s == "table") return OutputFormat::table;
  if (s == "csv") return OutputFormat::csv;
  if (s == "json") return OutputFormat::json;
  return fail("unknown format '" + s + "'", "--format", "use table, csv or json");
}

std::string cell_text(const nlohmann::json& v, bool full_precision) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_float()) return full_precision ? fmt::format("{}", v.get<double>()) : fmt::format("{:.6g}", v.get<double>());
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

}  // namespace

std::string render(const Rows& rows, OutputFormat format) {
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
      for (std::size_t i = 0; i < rows.columns.size(); ++i) width[i] = rows.columns[i].size();
      for (const auto& r : rows.rows) {
        auto& line = cells.emplace_back();
        for (std::size_t i = 0; i < rows.columns.size(); ++i) {
          line.push_back(i < r.size() ? cell_text(r[i], false) : "");
          width[i] = std::max(width[i], line.back().size());
        }
      }
      auto emit = [&](const std::vector<std::string>& line) {
        for (std::size_t i = 0; i < line.size(); ++i) {
          out += line[i];
          if (i + 1 < line.size()) out += std::string(width[i] - line[i].size() + 2, ' ');
        }
        out += "\n";
      };
      emit(rows.columns);
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
