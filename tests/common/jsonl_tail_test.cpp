#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/jsonl_tail.hpp"

namespace fs = std::filesystem;

static fs::path temp_file(const char* name) {
  auto dir = fs::temp_directory_path() / ("dlsweep-tail-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TEST_CASE("a torn last line is held back until it is complete") {
  auto p = temp_file("torn.jsonl");
  fs::remove(p);
  dlsweep::JsonlTail tail(p);
  auto none = tail.read_new_lines();
  REQUIRE(none.has_value());
  CHECK(none->empty());  // missing file: nothing yet, no error

  { std::ofstream(p, std::ios::app) << "{\"a\":1}\n{\"b\":"; }
  auto first = tail.read_new_lines();
  REQUIRE(first.has_value());
  REQUIRE(first->size() == 1);
  CHECK((*first)[0] == "{\"a\":1}");

  { std::ofstream(p, std::ios::app) << "2}\n\n{\"c\":3}\n"; }
  auto second = tail.read_new_lines();
  REQUIRE(second.has_value());
  REQUIRE(second->size() == 2);
  CHECK((*second)[0] == "{\"b\":2}");
  CHECK((*second)[1] == "{\"c\":3}");
  CHECK(tail.read_new_lines()->empty());
}

TEST_CASE("a truncated file is read again from the start") {
  auto p = temp_file("trunc.jsonl");
  { std::ofstream(p) << "1\n2\n3\n"; }
  dlsweep::JsonlTail tail(p);
  CHECK(tail.read_new_lines()->size() == 3);
  { std::ofstream(p) << "9\n"; }
  auto again = tail.read_new_lines();
  REQUIRE(again->size() == 1);
  CHECK((*again)[0] == "9");
}
