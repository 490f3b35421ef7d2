// schema.hpp — dlsweep's database schema (tables, indexes, views) and its migrations.
//
// Invariants:
//  - A dlsweep database carries PRAGMA application_id = kApplicationId and PRAGMA
//    user_version = the schema version it was migrated to. A file with any other
//    application_id and any content is not ours, and is refused, never modified.
//  - migrate() runs every pending step kMigrations[v] (v -> v+1) and the version bump in ONE
//    transaction: a crash or an error leaves the file at its old version, never half-way.
//  - A version newer than kSchemaVersion is refused (written by a newer dlsweep).
// The schema is documented for users in db/SCHEMA.md; keep the two in step.
// Internal to db/.
#pragma once

#include <cstdint>

#include <sqlite3.h>

#include "common/result.hpp"

namespace dlsweep::db {

/// 'dlsw' — marks a file as a dlsweep database (PRAGMA application_id).
inline constexpr std::int32_t kApplicationId = 0x646c7377;

/// What the file looks like before any migration.
struct SchemaProbe {
  int user_version = 0;
  std::int32_t application_id = 0;
  bool has_objects = false;  ///< sqlite_schema lists any table, index, view or trigger
};

/// Reads the header fields and whether the file has any schema objects. A file that is not
/// SQLite at all (or is encrypted/corrupt) yields an Error naming the file and the fix.
Result<SchemaProbe> probe_schema(sqlite3* db);

/// Checks that the probed file is one this dlsweep may open: ours at a version we know, or
/// empty (only when `writable`, since only the writer creates the schema).
Status check_schema(const SchemaProbe& p, bool writable, const std::string& file);

/// Brings an empty or older dlsweep database to kSchemaVersion in one transaction.
Status migrate(sqlite3* db);

}  // namespace dlsweep::db
