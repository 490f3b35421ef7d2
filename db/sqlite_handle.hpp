// sqlite_handle.hpp — the small RAII layer over the raw sqlite3 C API that the rest of db/
// uses: prepared statements, transactions, and turning SQLite result codes into Errors.
//
// Invariants:
//  - A Statement owns its sqlite3_stmt and finalizes it exactly once (moves transfer it).
//  - A Transaction that was not committed is rolled back when it goes out of scope, so an
//    early `return fail(...)` never leaves half of a mutation in the database.
//  - Errors name the database file (sqlite3_db_filename) and, where SQLite's code has a
//    known remedy (busy, read-only, disk full), the fix.
// Internal to db/: nothing outside this folder (and its tests) includes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "common/result.hpp"

namespace dlsweep::db {

/// The database file's path as SQLite knows it ("" for in-memory databases).
std::string db_file_name(sqlite3* db);

/// An Error for SQLite result code `rc` raised while `doing` something.
Error sqlite_error(sqlite3* db, int rc, std::string_view doing);

/// Runs SQL text with no parameters and no results (DDL, PRAGMA settings, BEGIN/COMMIT).
Status exec(sqlite3* db, std::string_view sql, std::string_view doing);

/// Now, as REAL unix seconds (the unit of every timestamp column).
double now_unix_seconds();

/// Turns on statement reuse for connection `db`: a Statement of `db` is then not finalized
/// when destroyed but reset, unbound and kept by its SQL text, and the next prepare() of
/// the same text takes it back instead of compiling it again (the orchestrator runs the
/// same few statements for every trial and record). Call release_statements(db) before
/// closing `db`. Thread-safe; a kept statement is used by one Statement at a time.
void keep_statements(sqlite3* db);
/// Finalizes every statement kept for `db` and stops keeping them.
void release_statements(sqlite3* db);

/// One prepared statement. Binding indices are 1-based, column indices 0-based (as in SQLite).
class Statement {
 public:
  /// Prepares exactly the text given (callers pass one statement).
  static Result<Statement> prepare(sqlite3* db, std::string_view sql);

  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_), key_(std::move(o.key_)) { o.stmt_ = nullptr; }
  Statement& operator=(Statement&& o) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& bind(int i, std::int64_t v);
  Statement& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  /// NaN is stored as NULL (SQL has no NaN).
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view v);
  Statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Statement& bind_null(int i);
  template <class T>
  Statement& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  /// Advances: true when a row is available, false when the statement is done.
  Result<bool> step();
  /// Steps to completion, ignoring any rows; then resets so the statement can run again.
  Status run();
  /// Clears bindings and rewinds, for reuse in a loop.
  void reset();

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const;
  std::optional<std::int64_t> opt_int64(int col) const;
  std::optional<double> opt_real(int col) const;

  sqlite3_stmt* get() const { return stmt_; }
  /// Rows changed by the last completed INSERT/UPDATE/DELETE on this connection.
  int changes() const { return sqlite3_changes(db_); }

 private:
  Statement(sqlite3* db, sqlite3_stmt* s) : db_(db), stmt_(s) {}
  void dispose();  ///< back to the kept statements of db_, or finalized
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string key_;  ///< the SQL text it was prepared from (its key among kept statements)
};

/// BEGIN IMMEDIATE ... COMMIT; rolled back on destruction unless committed. IMMEDIATE takes
/// the write lock up front, so a busy database fails at begin() rather than mid-way.
/// Inside a transaction already open on the connection (a write batch, Storage::begin_batch)
/// it is a SAVEPOINT instead: commit() releases it into the enclosing transaction, and
/// destruction without commit() rolls back only its own changes.
class Transaction {
 public:
  static Result<Transaction> begin(sqlite3* db);
  Transaction(Transaction&& o) noexcept : db_(o.db_), nested_(o.nested_) { o.db_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  ~Transaction();
  Status commit();

 private:
  Transaction(sqlite3* db, bool nested) : db_(db), nested_(nested) {}
  sqlite3* db_;  ///< null once committed, rolled back or moved from
  bool nested_;  ///< a savepoint inside an enclosing transaction
};

}  // namespace dlsweep::db
