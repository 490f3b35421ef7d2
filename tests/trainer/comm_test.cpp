// Conformance of Communicator implementations (only `local` exists so far): collectives on a
// 1-rank world are the identity.
#include <catch2/catch.hpp>

#include <vector>

#include "trainer/comm/local_communicator.hpp"

using namespace dlsweep::trainer::comm;

TEST_CASE("local communicator: one rank, collectives are the identity", "[comm]") {
  LocalCommunicator c;
  CHECK(c.rank() == 0);
  CHECK(c.size() == 1);
  std::vector<float> f = {1.5f, -2.0f};
  std::vector<double> d = {3.0};
  REQUIRE(c.allreduce_sum(std::span<float>(f)));
  REQUIRE(c.allreduce_sum(std::span<double>(d)));
  REQUIRE(c.broadcast(std::span<float>(f), 0));
  REQUIRE(c.barrier());
  CHECK(f == std::vector<float>{1.5f, -2.0f});
  CHECK(d == std::vector<double>{3.0});
  REQUIRE_FALSE(c.broadcast(std::span<float>(f), 1));
}
