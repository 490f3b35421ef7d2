// statement_test.cpp — kept statements (db/sqlite_handle.hpp): a statement of a connection
// that keeps them is reused by its SQL text, comes back reset and unbound, is never shared
// by two live Statements, and release_statements() finalizes every one of them (sqlite3_close,
// unlike close_v2, fails while any statement is unfinalized).
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include "db/sqlite_handle.hpp"

using namespace dlsweep::db;

TEST_CASE("kept statements: reused by text, reset and unbound, all finalized on release", "[db][statement]") {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
  keep_statements(db);
  sqlite3_stmt* first = nullptr;
  {
    auto st = Statement::prepare(db, "SELECT ?1");
    REQUIRE(st);
    first = st->get();
    st->bind(1, std::int64_t{41});
    REQUIRE(*st->step());
    CHECK(st->int64(0) == 41);
    // Destroyed mid-result: kept, not finalized.
  }
  {
    auto again = Statement::prepare(db, "SELECT ?1");
    REQUIRE(again);
    CHECK(again->get() == first);  // reused, not compiled again
    REQUIRE(*again->step());
    CHECK(again->is_null(0));  // its old binding is gone
    auto other = Statement::prepare(db, "SELECT ?1");
    REQUIRE(other);
    CHECK(other->get() != first);  // the kept one is in use: a second live one is new
    auto moved = std::move(*other);
    CHECK(moved.get() != nullptr);
  }
  release_statements(db);
  CHECK(sqlite3_close(db) == SQLITE_OK);
}

TEST_CASE("kept statements: a connection that does not keep them finalizes at once", "[db][statement]") {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
  { REQUIRE(Statement::prepare(db, "SELECT 1")); }
  CHECK(sqlite3_close(db) == SQLITE_OK);
}
