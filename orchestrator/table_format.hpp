// table_format.hpp — renders rows (column names + JSON scalars) as an aligned text table,
// CSV (RFC 4180 quoting) or JSON (a list of objects). Used by status, results and query so
// every read command speaks the same three formats.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/plural.hpp"
#include "common/result.hpp"

namespace dlsweep::orch {

enum class OutputFormat { table, csv, json };

Result<OutputFormat> parse_output_format(const std::string& s);

struct Rows {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
};

/// `max_width` (tables only; 0: no limit): the widest text column (a message, preferably)
/// is shortened with "..." until every line fits. CSV and JSON are never shortened.
std::string render(const Rows& rows, OutputFormat fmt, std::size_t max_width = 0);
/// A scalar as it appears in a table or CSV cell: in tables, numbers with 4 significant
/// digits and timestamps (`column` named `at` or `*_at`) as ISO 8601 UTC text; in CSV full
/// precision and the stored number. null is empty.
std::string cell_text(const nlohmann::json& v, bool full_precision, const std::string& column = {});

/// One CSV line (RFC 4180 quoting, full precision, "\n" at the end), as render() writes
/// each row: for writers that stream rows instead of building a Rows.
std::string csv_row(const std::vector<nlohmann::json>& cells);

/// Unix seconds as "2026-11-21T14:03:07Z".
std::string iso_utc(double unix_s);

/// The width tables should fit: on a terminal its width (TIOCGWINSZ), else $COLUMNS when
/// set, else 0 (no limit: a pipe or file gets whole lines).
std::size_t output_width(int fd);

}  // namespace dlsweep::orch
