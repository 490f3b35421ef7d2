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

TEST_CASE("a line too long to be a record is skipped as it streams past, named with its offset and size") {
  using dlsweep::JsonlTail;
  auto p = temp_file("runaway.jsonl");
  fs::remove(p);
  JsonlTail tail(p);
  const std::size_t big = 3 * JsonlTail::kMaxLineBytes + 12345;
  const std::string before = "{\"a\":1}";
  {
    std::ofstream out(p, std::ios::binary);
    out << before << "\n" << std::string(big / 2, 'x');  // the runaway line, torn
  }
  auto first = tail.read_new_lines();
  REQUIRE(first.has_value());
  REQUIRE(first->size() == 1);
  CHECK((*first)[0] == before);
  CHECK(tail.take_oversized().empty());  // not complete yet: named once it ends
  {
    std::ofstream out(p, std::ios::binary | std::ios::app);
    out << std::string(big - big / 2, 'x') << "\n{\"b\":2}\n";
  }
  auto second = tail.read_new_lines();
  REQUIRE(second.has_value());
  REQUIRE(second->size() == 1);
  CHECK((*second)[0] == "{\"b\":2}");
  const auto skipped = tail.take_oversized();
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].offset == before.size() + 1);
  CHECK(skipped[0].bytes == big);
  CHECK(tail.take_oversized().empty());
  CHECK(tail.offset() == fs::file_size(p));
  // A line of exactly the limit is a line.
  { std::ofstream(p, std::ios::binary | std::ios::app) << std::string(JsonlTail::kMaxLineBytes, 'y') << "\n"; }
  auto third = tail.read_new_lines();
  REQUIRE(third.has_value());
  REQUIRE(third->size() == 1);
  CHECK((*third)[0].size() == JsonlTail::kMaxLineBytes);
}

TEST_CASE("one call returns a bounded batch; more() and read_all_lines() give the rest") {
  using dlsweep::JsonlTail;
  auto p = temp_file("many.jsonl");
  fs::remove(p);
  const std::string line(1000, 'z');
  const std::size_t n = JsonlTail::kMaxBatchBytes / line.size() + 500;
  {
    std::ofstream out(p, std::ios::binary);
    for (std::size_t i = 0; i < n; ++i) out << line << "\n";
  }
  JsonlTail tail(p);
  auto first = tail.read_new_lines();
  REQUIRE(first.has_value());
  CHECK(first->size() < n);
  CHECK(first->size() * line.size() <= JsonlTail::kMaxBatchBytes + line.size());
  CHECK(tail.more());
  auto rest = tail.read_all_lines();
  REQUIRE(rest.has_value());
  CHECK(first->size() + rest->size() == n);
  CHECK_FALSE(tail.more());
}
