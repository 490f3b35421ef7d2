// NCCL bootstrap without NCCL (comm/nccl_bootstrap.hpp): rank 0's id reaches every rank over
// the communicator's broadcast; a failure on rank 0 reaches every rank; node layouts of
// nccl-hierarchical.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "trainer/comm/local_communicator.hpp"
#include "trainer/comm/nccl_bootstrap.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer::comm;

namespace {

// N ranks run one after another, rank 0 first: rank 0's broadcast payload is kept and
// handed to the others (what MPI_Bcast does when they run side by side).
struct World {
  std::vector<double> root_payload;
  int broadcasts = 0;
  bool fail_broadcast = false;
};

class FakeRank final : public Communicator {
 public:
  FakeRank(World& w, int rank, int size) : w_(w), rank_(rank), size_(size) {}
  std::string_view name() const override { return "fake"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce_sum(std::span<float>) override { return {}; }
  Status allreduce_sum(std::span<double>) override { return {}; }
  Status broadcast(std::span<float>, int) override { return fail("float broadcast not expected"); }
  Status broadcast(std::span<double> data, int root) override {
    if (w_.fail_broadcast) return fail("peer died", "fake");
    ++w_.broadcasts;
    if (rank_ == root) w_.root_payload.assign(data.begin(), data.end());
    else if (w_.root_payload.size() == data.size()) std::copy(w_.root_payload.begin(), w_.root_payload.end(), data.begin());
    else return fail("size mismatch", "fake");
    return {};
  }
  Status barrier() override { return {}; }
  Status start_allreduce_sum(std::span<float>) override { return {}; }
  Status wait_all() override { return {}; }

 private:
  World& w_;
  int rank_, size_;
};

NcclId pattern() {
  NcclId id;
  // Every byte value, including those that make NaN or denormal bit patterns as doubles.
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::byte>((i * 37 + 0xF0) & 0xFF);
  id[8] = std::byte{0xFF};
  id[15] = std::byte{0x7F};
  return id;
}

}  // namespace

TEST_CASE("nccl bootstrap: rank 0 generates, every rank gets the same 128 bytes", "[comm][nccl]") {
  World w;
  int generated = 0;
  auto gen = [&]() -> Result<NcclId> {
    ++generated;
    return pattern();
  };
  for (int r = 0; r < 4; ++r) {
    FakeRank c(w, r, 4);
    auto id = bootstrap_unique_id(c, gen);
    REQUIRE(id);
    CHECK(*id == pattern());
  }
  CHECK(generated == 1);  // only rank 0
  CHECK(w.broadcasts == 4);
}

TEST_CASE("nccl bootstrap: one rank (local communicator)", "[comm][nccl]") {
  LocalCommunicator lc;
  auto id = bootstrap_unique_id(lc, [] { return Result<NcclId>(pattern()); });
  REQUIRE(id);
  CHECK(*id == pattern());
}

TEST_CASE("nccl bootstrap: rank 0's failure reaches every rank, nobody waits", "[comm][nccl]") {
  World w;
  auto gen = []() -> Result<NcclId> { return fail("ncclGetUniqueId: no network interface", "nccl"); };
  FakeRank r0(w, 0, 2);
  auto e0 = bootstrap_unique_id(r0, gen);
  REQUIRE_FALSE(e0);
  CHECK(e0.error().what.find("no network interface") != std::string::npos);
  FakeRank r1(w, 1, 2);
  auto e1 = bootstrap_unique_id(r1, gen);
  REQUIRE_FALSE(e1);
  CHECK(e1.error().what.find("rank 0 could not create") != std::string::npos);
  CHECK_FALSE(e1.error().fix.empty());
}

TEST_CASE("nccl bootstrap: a failing broadcast is an error, not a hang or a crash", "[comm][nccl]") {
  World w;
  w.fail_broadcast = true;
  FakeRank r1(w, 1, 2);
  auto e = bootstrap_unique_id(r1, [] { return Result<NcclId>(pattern()); });
  REQUIRE_FALSE(e);
  CHECK(e.error().what == "peer died");
}

TEST_CASE("broadcast_bytes: odd sizes copy exactly", "[comm][nccl]") {
  World w;
  std::vector<std::byte> src(13), dst(13, std::byte{0});
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(200 + i);
  FakeRank r0(w, 0, 2), r1(w, 1, 2);
  REQUIRE(broadcast_bytes(r0, src, 0));
  REQUIRE(broadcast_bytes(r1, dst, 0));
  CHECK(dst == src);
}

TEST_CASE("nccl-hierarchical node layout", "[comm][nccl]") {
  // 8 ranks, 4 per node, block distribution.
  auto l = node_layout(6, 8, 2, 4);
  REQUIRE(l);
  CHECK(l->node == 1);
  CHECK(l->nodes == 2);
  CHECK(l->local_rank == 2);
  CHECK_FALSE(l->leader);
  CHECK(l->leader_rank == 4);
  auto lead = node_layout(4, 8, 0, 4);
  REQUIRE(lead);
  CHECK(lead->leader);
  auto single = node_layout(0, 1, 0, 1);
  REQUIRE(single);
  CHECK(single->nodes == 1);
  CHECK(single->leader);

  auto uneven = node_layout(0, 6, 0, 4);
  REQUIRE_FALSE(uneven);
  CHECK(uneven.error().fix.find("ntasks-per-node") != std::string::npos);
  auto cyclic = node_layout(1, 8, 0, 4);  // rank 1 on another node: round-robin placement
  REQUIRE_FALSE(cyclic);
  CHECK(cyclic.error().fix.find("block") != std::string::npos);
  CHECK_FALSE(node_layout(8, 8, 0, 4));
  CHECK_FALSE(node_layout(0, 8, 4, 4));
  CHECK_FALSE(node_layout(0, 0, 0, 1));
}
