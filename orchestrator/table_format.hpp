// table_format.hpp — renders rows (column names + JSON scalars) as an aligned text table,
// CSV (RFC 4180 quoting) or JSON (a list of objects). Used by status, results and query so
// every read command speaks the same three formats.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace dlsweep::orch {

enum class OutputFormat { table, csv, json };

Result<OutputFormat> parse_output_format(const std::string& s);

struct Rows {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
};

std::string render(const Rows& rows, OutputFormat fmt);
/// A scalar as it appears in a table or CSV cell (numbers with up to 6 significant digits
/// in tables, full precision in CSV; null as empty).
std::string cell_text(const nlohmann::json& v, bool full_precision);

}  // namespace dlsweep::orch
