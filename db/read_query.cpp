// read_query.cpp — the read side: per-trial summaries (the trial_summary view), counts by
// state, and the `dlsweep query` passthrough for arbitrary read-only SQL.
//
// Invariants of query():
//  - Exactly one statement runs; trailing statements are refused, never silently dropped.
//  - Nothing that writes or reconfigures the connection runs, on any handle: statements
//    for which sqlite3_stmt_readonly() is false are refused, and an authorizer refuses what
//    sqlite3_stmt_readonly() lets through (ATTACH/DETACH, BEGIN/COMMIT/SAVEPOINT, PRAGMAs
//    that set a value or have side effects). The orchestrator is the only writer.
#include <algorithm>
#include <iterator>
#include <cctype>
#include <string_view>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {
namespace {

constexpr const char* kReadOnlyFix = "use SELECT; the orchestrator is the only writer";

// PRAGMAs that only report. Some of them also set a value when given one (user_version = 5);
// those are allowed only in their reporting form (see pragma_allowed).
constexpr std::string_view kReportingPragmas[] = {
    "application_id", "auto_vacuum",  "cache_size",       "collation_list",    "compile_options",
    "data_version",   "database_list", "encoding",        "foreign_key_check", "foreign_key_list",
    "foreign_keys",   "freelist_count", "function_list",  "index_info",        "index_list",
    "index_xinfo",    "integrity_check", "module_list",       "page_count",
    "page_size",      "pragma_list",   "query_only",      "quick_check",       "schema_version",
    "synchronous",    "table_info",    "table_list",      "table_xinfo",       "user_version"};

// PRAGMAs whose argument names an object to inspect rather than a value to set.
constexpr std::string_view kInspectWithArgument[] = {
    "foreign_key_check", "foreign_key_list", "index_info", "index_list",  "index_xinfo",
    "integrity_check",   "quick_check",      "table_info", "table_list",  "table_xinfo"};

template <std::size_t N>
bool contains(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

struct AuthContext {
  std::string refusal;  ///< why the statement was refused; empty if allowed
};

int authorize(void* user, int action, const char* a3, const char* a4, const char*, const char*) {
  auto* ctx = static_cast<AuthContext*>(user);
  auto deny = [&](std::string why) {
    if (ctx->refusal.empty()) ctx->refusal = std::move(why);
    return SQLITE_DENY;
  };
  switch (action) {
    case SQLITE_ATTACH: return deny("ATTACH is not allowed");
    case SQLITE_DETACH: return deny("DETACH is not allowed");
    case SQLITE_TRANSACTION: return deny("transaction control (BEGIN/COMMIT/ROLLBACK) is not allowed");
    case SQLITE_SAVEPOINT: return deny("SAVEPOINT/RELEASE is not allowed");
    case SQLITE_PRAGMA: {
      std::string name = a3 ? a3 : "";
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      if (!contains(kReportingPragmas, name)) return deny("PRAGMA " + name + " is not allowed");
      if (a4 && !contains(kInspectWithArgument, name)) return deny("PRAGMA " + name + " = ... would change a setting");
      return SQLITE_OK;
    }
    default: return SQLITE_OK;
  }
}

// True if `rest` holds only whitespace, semicolons and comments (what SQLite prepares to nothing).
bool only_trailing_noise(sqlite3* db, const char* rest) {
  while (rest && *rest) {
    sqlite3_stmt* s = nullptr;
    const char* next = nullptr;
    int rc = sqlite3_prepare_v2(db, rest, -1, &s, &next);
    const bool empty = rc == SQLITE_OK && s == nullptr;
    sqlite3_finalize(s);
    if (!empty) return false;
    if (next == rest) break;
    rest = next;
  }
  return true;
}

nlohmann::json column_value(sqlite3_stmt* s, int col) {
  switch (sqlite3_column_type(s, col)) {
    case SQLITE_INTEGER: return static_cast<std::int64_t>(sqlite3_column_int64(s, col));
    case SQLITE_FLOAT: return sqlite3_column_double(s, col);
    case SQLITE_TEXT: {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
      return std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, col)));
    }
    case SQLITE_BLOB: return "<blob " + std::to_string(sqlite3_column_bytes(s, col)) + " bytes>";
    default: return nullptr;
  }
}

}  // namespace

Result<QueryResult> Storage::query(const std::string& sql) const {
  refresh();  // snapshot mode: a newer published snapshot first
  const std::string where = file_.string();
  auto refuse = [&](const std::string& why) {
    return fail("dlsweep query is read-only: " + why, where, kReadOnlyFix);
  };
  AuthContext ctx;
  sqlite3_set_authorizer(db_, authorize, &ctx);
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size() + 1), &raw, &tail);
  sqlite3_set_authorizer(db_, nullptr, nullptr);
  if (rc != SQLITE_OK || raw == nullptr) {
    sqlite3_finalize(raw);
    if (!ctx.refusal.empty()) return refuse(ctx.refusal);
    if (rc == SQLITE_OK) return fail("the query is empty", where, "pass one SELECT statement");
    return fail("the query does not compile: " + std::string(sqlite3_errmsg(db_)), where,
                "check the SQL; `SELECT name, sql FROM sqlite_master` lists the tables and views");
  }
  // Owned from here on; finalized on every return path.
  struct Finalize {
    sqlite3_stmt* s;
    ~Finalize() { sqlite3_finalize(s); }
  } own{raw};
  if (!only_trailing_noise(db_, tail))
    return fail("dlsweep query runs one statement at a time", where, "split the query; drop the text after the first ';'");
  if (!sqlite3_stmt_readonly(raw)) {
    const auto start = std::min(sql.find_first_not_of(" \t\r\n"), sql.size());
    const auto end = std::min({sql.find_first_of("\n;", start), sql.size(), start + 60});
    std::string text = sql.substr(start, end - start);
    return refuse("`" + text + "` would modify the database");
  }
  QueryResult out;
  const int ncol = sqlite3_column_count(raw);
  for (int c = 0; c < ncol; ++c) {
    const char* name = sqlite3_column_name(raw, c);
    out.columns.emplace_back(name ? name : "");
  }
  for (;;) {
    rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return std::unexpected(sqlite_error(db_, rc, "running the query"));
    std::vector<nlohmann::json> row;
    row.reserve(static_cast<std::size_t>(ncol));
    for (int c = 0; c < ncol; ++c) row.push_back(column_value(raw, c));
    out.rows.push_back(std::move(row));
  }
  // Each snapshot is a new connection, whose data_version starts afresh: keep the value
  // moving (it is only ever compared for equality) so a poller sees the new snapshot.
  if (reopens_ > 0 && out.columns.size() == 1 && out.columns[0] == "data_version" && out.rows.size() == 1 &&
      out.rows[0][0].is_number_integer())
    out.rows[0][0] = out.rows[0][0].get<std::int64_t>() + (reopens_ << 32);
  return out;
}

Result<std::vector<TrialSummary>> Storage::summaries(std::int64_t study_id) const {
  auto st = Statement::prepare(db_,
      "SELECT trial_id, number, state, attempt, params, value, best_value, steps_to_target, "
      "time_to_target_s, samples_to_target, samples_per_s, wall_s, message "
      "FROM trial_summary WHERE study_id = ?1 ORDER BY number");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<TrialSummary> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    TrialSummary s;
    s.trial_id = st->int64(0);
    s.number = st->int64(1);
    s.state = st->text(2);
    s.attempt = static_cast<int>(st->int64(3));
    s.params = nlohmann::json::parse(st->text(4), nullptr, /*allow_exceptions=*/false);
    if (s.params.is_discarded() || !s.params.is_object()) s.params = nlohmann::json::object();
    s.value = st->opt_real(5);
    s.best_value = st->opt_real(6);
    s.steps_to_target = st->opt_int64(7);
    s.time_to_target_s = st->opt_real(8);
    s.samples_to_target = st->opt_int64(9);
    s.samples_per_s = st->opt_real(10);
    s.wall_s = st->opt_real(11);
    s.message = st->text(12);
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::int64_t>>> Storage::state_counts(std::int64_t study_id) const {
  auto st = Statement::prepare(db_, "SELECT state, count(*) FROM trials WHERE study_id = ?1 GROUP BY state");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<std::pair<std::string, std::int64_t>> found;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    found.emplace_back(st->text(0), st->int64(1));
  }
  // Report in the state machine's order (WAITING .. CANCELLED), not alphabetically.
  auto rank = [](const std::string& s) {
    auto t = parse_trial_state(s);
    return t ? static_cast<int>(*t) : 1000;
  };
  std::stable_sort(found.begin(), found.end(), [&](auto& a, auto& b) { return rank(a.first) < rank(b.first); });
  return found;
}

Result<std::map<std::int64_t, std::vector<std::pair<double, double>>>> Storage::metric_curves(
    std::int64_t study_id, const std::string& metric, const std::string& state, bool by_step) const {
  auto st = Statement::prepare(db_, std::string("SELECT m.trial_id, ") + (by_step ? "m.step" : "m.epoch") +
      ", m.value FROM metrics m "
      "JOIN trials t ON t.id = m.trial_id AND t.attempt = m.attempt "
      "WHERE t.study_id = ?1 AND t.state = ?3 AND m.name = ?2 AND m.kind IN ('eval', 'final') "
      "AND m.value IS NOT NULL ORDER BY m.trial_id, m.seq");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  st->bind(2, metric);
  st->bind(3, state);
  std::map<std::int64_t, std::vector<std::pair<double, double>>> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out[st->int64(0)].emplace_back(st->real(1), st->real(2));
  }
  return out;
}

Result<std::map<std::int64_t, std::vector<Storage::MetricPoint>>> Storage::metric_points(std::int64_t study_id,
                                                                                       const std::string& metric) const {
  auto st = Statement::prepare(db_,
      "SELECT m.trial_id, m.step, m.epoch, m.samples, m.wall_s, m.value FROM metrics m "
      "JOIN trials t ON t.id = m.trial_id AND t.attempt = m.attempt "
      "WHERE t.study_id = ?1 AND m.name = ?2 AND m.kind IN ('eval', 'final') "
      "AND m.value IS NOT NULL ORDER BY m.trial_id, m.seq");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  st->bind(2, metric);
  std::map<std::int64_t, std::vector<MetricPoint>> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out[st->int64(0)].push_back({st->int64(1), st->real(2), st->int64(3), st->real(4), st->real(5)});
  }
  return out;
}

}  // namespace dlsweep::db
