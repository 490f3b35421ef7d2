// db_path.hpp — the `--db PATH` argument, checked once for every verb before any of them opens
// or locks anything, so that a bad path gets the same message and exit code (2, bad
// arguments) from `submit`, `status`, `results`, `query`, `best`, `resume` and `cancel`.
#pragma once

#include <string>

#include "common/result.hpp"

namespace dlsweep::orch {

/// Ok when `db` can name a database file: not empty, not a directory or other non-file, and
/// in a directory that exists. Whether the file itself exists is each verb's business
/// (`submit` creates it, the readers need it). Errors name `--db`, the path and the fix.
/// `where` names the path's origin in the errors: "--db", or "$DLSWEEP_DB" when the path
/// came from the environment (no --db given).
Status check_db_path(const std::string& db, const std::string& where = "--db");

}  // namespace dlsweep::orch
