// sqlite_handle.cpp — see sqlite_handle.hpp. Binding errors (a wrong index) are bugs in
// db/, so they throw std::logic_error; everything SQLite can report at run time (busy,
// constraint, I/O) comes back as an Error.
#include "db/sqlite_handle.hpp"

#include "common/stop_signal.hpp"

#include <chrono>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace dlsweep::db {

std::string db_file_name(sqlite3* db) {
  const char* f = db ? sqlite3_db_filename(db, "main") : nullptr;
  return f ? std::string(f) : std::string();
}

Error sqlite_error(sqlite3* db, int rc, std::string_view doing) {
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string what = "SQLite error while " + std::string(doing) + ": " + msg;
  std::string fix;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      fix = stop_signal_seen() != 0
                ? "another process held the database's write lock when this one was asked to stop, so it did not "
                  "wait: what it could not write, `dlsweep resume` takes up from the trials' files"
                : "another process holds the database's write lock for more than 5 s; only one "
                  "orchestrator may write a database (is another `dlsweep submit` or `resume` running?)";
      break;
    case SQLITE_READONLY:
      fix = "check that the database file and its directory are writable";
      break;
    case SQLITE_FULL:
      fix = "the disk is full; free space and retry";
      break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      fix = "the file is damaged or not a dlsweep database; restore it or use another --db";
      break;
    default:
      break;
  }
  return Error{std::move(what), db_file_name(db), std::move(fix)};
}

Status exec(sqlite3* db, std::string_view sql, std::string_view doing) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);  // sqlite3_errmsg(db) still holds the same message
  if (rc != SQLITE_OK) return std::unexpected(sqlite_error(db, rc, doing));
  return {};
}

double now_unix_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// --- Statement

// --- Kept statements: per connection, by SQL text, a few idle ones each.

namespace {

constexpr std::size_t kKeptPerText = 4;

struct Kept {
  std::mutex mu;
  std::unordered_map<sqlite3*, std::unordered_map<std::string, std::vector<sqlite3_stmt*>>> by_db;
};

Kept& kept() {
  static Kept k;
  return k;
}

}  // namespace

void keep_statements(sqlite3* db) {
  std::lock_guard lock(kept().mu);
  kept().by_db.try_emplace(db);
}

void release_statements(sqlite3* db) {
  std::unordered_map<std::string, std::vector<sqlite3_stmt*>> idle;
  {
    std::lock_guard lock(kept().mu);
    auto it = kept().by_db.find(db);
    if (it == kept().by_db.end()) return;
    idle = std::move(it->second);
    kept().by_db.erase(it);
  }
  for (auto& [sql, stmts] : idle)
    for (auto* s : stmts) sqlite3_finalize(s);
}

void Statement::dispose() {
  if (!stmt_) return;
  {
    std::lock_guard lock(kept().mu);
    auto it = kept().by_db.find(db_);
    if (it != kept().by_db.end()) {
      auto& idle = it->second[key_];
      if (idle.size() < kKeptPerText) {
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
        idle.push_back(stmt_);
        stmt_ = nullptr;
        return;
      }
    }
  }
  sqlite3_finalize(stmt_);
  stmt_ = nullptr;
}

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  {
    std::lock_guard lock(kept().mu);
    auto it = kept().by_db.find(db);
    if (it != kept().by_db.end()) {
      auto idle = it->second.find(std::string(sql));
      if (idle != it->second.end() && !idle->second.empty()) {
        sqlite3_stmt* s = idle->second.back();
        idle->second.pop_back();
        Statement st(db, s);
        st.key_ = sql;
        return st;
      }
    }
  }
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return std::unexpected(sqlite_error(db, rc, "preparing SQL"));
  }
  Statement st(db, s);
  st.key_ = sql;
  return st;
}

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    dispose();
    db_ = o.db_;
    stmt_ = o.stmt_;
    key_ = std::move(o.key_);
    o.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { dispose(); }

namespace {
void check_bind(int rc, int i) {
  if (rc != SQLITE_OK)
    throw std::logic_error("db: binding parameter " + std::to_string(i) + " failed: " + sqlite3_errstr(rc));
}
}  // namespace

Statement& Statement::bind(int i, std::int64_t v) {
  check_bind(sqlite3_bind_int64(stmt_, i, v), i);
  return *this;
}

Statement& Statement::bind(int i, double v) {
  if (std::isnan(v)) return bind_null(i);
  check_bind(sqlite3_bind_double(stmt_, i, v), i);
  return *this;
}

Statement& Statement::bind(int i, std::string_view v) {
  check_bind(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8), i);
  return *this;
}

Statement& Statement::bind_null(int i) {
  check_bind(sqlite3_bind_null(stmt_, i), i);
  return *this;
}

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error e = sqlite_error(db_, rc, "running SQL");
  sqlite3_reset(stmt_);
  return std::unexpected(std::move(e));
}

Status Statement::run() {
  for (;;) {
    auto r = step();
    if (!r) return std::unexpected(r.error());
    if (!*r) break;
  }
  sqlite3_reset(stmt_);
  return {};
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<std::int64_t> Statement::opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return int64(col);
}

std::optional<double> Statement::opt_real(int col) const {
  if (is_null(col)) return std::nullopt;
  return real(col);
}

// --- Transaction

Result<Transaction> Transaction::begin(sqlite3* db) {
  if (sqlite3_db_readonly(db, "main") == 1)
    return fail("cannot write: this database handle is read-only", db_file_name(db),
                "only the orchestrator (`dlsweep submit` / `resume`) writes the database");
  if (sqlite3_get_autocommit(db) == 0) {
    if (auto s = exec(db, "SAVEPOINT dlsweep_op", "starting a write within a batch"); !s)
      return std::unexpected(s.error());
    return Transaction(db, true);
  }
  if (auto s = exec(db, "BEGIN IMMEDIATE", "starting a write transaction"); !s)
    return std::unexpected(s.error());
  return Transaction(db, false);
}

Transaction::~Transaction() {
  if (!db_) return;
  if (!nested_) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return;
  }
  // Undo this savepoint's changes only; the enclosing batch goes on. (If an error made
  // SQLite roll the whole transaction back already, these fail harmlessly and the batch's
  // commit reports that it is gone.)
  if (sqlite3_get_autocommit(db_) == 0) {
    sqlite3_exec(db_, "ROLLBACK TO dlsweep_op", nullptr, nullptr, nullptr);
    sqlite3_exec(db_, "RELEASE dlsweep_op", nullptr, nullptr, nullptr);
  }
}

Status Transaction::commit() {
  sqlite3* db = db_;
  if (!db) throw std::logic_error("db: commit() on a finished transaction");
  auto s = nested_ ? exec(db, "RELEASE dlsweep_op", "ending a write within a batch")
                   : exec(db, "COMMIT", "committing a transaction");
  // A failed COMMIT (e.g. busy) leaves the transaction open; the destructor rolls it back.
  if (s) db_ = nullptr;
  return s;
}

}  // namespace dlsweep::db
