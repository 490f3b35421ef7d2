// read_support.hpp — what the read-only verbs share: opening the database read-only (the
// orchestrator may be writing it at the same time: in WAL mode on a local disk, or
// publishing snapshots of it on a shared filesystem; db::Storage::open_readonly takes care
// of both, README "Where the database lives"), finding a study by name
// (with the known names when there is none), and printing an error with its exit code.
#pragma once

#include <map>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/load.hpp"
#include "common/exit_codes.hpp"
#include "common/result.hpp"
#include "orchestrator/error_printer.hpp"
#include "db/storage.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

struct Opened {
  std::unique_ptr<db::Storage> storage;
  OutputFormat format = OutputFormat::table;
};

/// The database read-only, and the output format parsed.
Result<Opened> open_for_reading(const std::string& db, const std::string& format);

/// The study named `name`; the error lists the known names.
Result<db::StudyRow> find_study(const db::Storage& storage, const std::string& name);

/// The study's data for analysis/ (analysis::load_study over a read-only database).
Result<analysis::StudyData> load_study_data(const std::string& db, const std::string& study);

/// Why `--format parquet` is refused (`results`, `export`): no Debian-packaged library.
Error parquet_unavailable();

/// Each trial's user_attrs.json (dlsweep_optuna's set_user_attr keeps them there), read from
/// the trial's stored directory: trial number -> the object. A missing file (or directory) is
/// no attributes; a file that is not a JSON object is left out with a warning on stderr that
/// names it. For `results` and `export` (orchestrator/results_frame.hpp).
Result<std::map<std::int64_t, nlohmann::json>> read_user_attrs(const db::Storage& storage, std::int64_t study_id);


/// Prints each of a study file's errors ("error: ...") and the one closing line every verb
/// that refuses a study file ends with, "N errors in FILE; nothing was <done>."; returns
/// the CLI's usage exit code. `errors`: anything with message() (Error, ValidationError).
template <class Errors>
int report_file_errors(const Errors& errors, const std::string& file, std::string_view nothing_done) {
  for (const auto& e : errors) print_error_line(e.message());
  fmt::print(stderr, "{} error{} in {}; nothing was {}.\n", errors.size(), errors.size() == 1 ? "" : "s", file,
             nothing_done);
  return ::dlsweep::exit_codes::cli::usage;
}

/// A number or null, for table cells.
inline nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
inline nlohmann::json opt(const std::optional<std::int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace dlsweep::orch
