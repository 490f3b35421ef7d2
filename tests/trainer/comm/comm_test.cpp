// Conformance of Communicator implementations (only `local` exists so far): collectives on a
// 1-rank world are the identity.
#include <catch2/catch.hpp>

#include <vector>

#include "trainer/comm/comm_registry.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/grad_sync.hpp"

using namespace dlsweep::trainer;
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
  // The non-blocking form: started, progressed, completed; still the identity.
  REQUIRE(c.start_allreduce_sum(std::span<float>(f)));
  c.progress();
  REQUIRE(c.wait_all());
  CHECK(f == std::vector<float>{1.5f, -2.0f});
  REQUIRE(c.broadcast(std::span<double>(d), 0));
}

TEST_CASE("the registry picks local without a launcher and rejects unknown kinds", "[comm]") {
  if (comm::launched_with_ranks()) {
    WARN("running under a multi-rank launcher: registry defaults not checked");
    return;
  }
  auto c = comm::make_communicator("auto");
  REQUIRE(c);
  CHECK((*c)->name() == "local");
  CHECK(comm::launcher_rank() == 0);
  auto bad = comm::make_communicator("nccl");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "comm");
}

TEST_CASE("gradient buckets: contiguous spans from the last tensor, all reduced by finish", "[comm]") {
  models::ParameterSet ps;
  ps.add("a", 256, 256, false);  // 65536 floats (padded stride 272: 69632)
  ps.add("b", 1, 256, true);
  ps.add("c", 256, 256, false);
  ps.add("d", 1, 10, true);
  ps.finalize();
  LocalCommunicator lc;
  // 0.25 MiB = 65536 floats: d+c close one bucket, b+a the other.
  dlsweep::trainer::GradSync sync(lc, ps, 0.25);
  CHECK(sync.buckets() == 2);
  for (std::int64_t i = 0; i < ps.arena_size(); ++i) ps.grads()[i] = 0.5f;
  sync.begin(true);
  const std::size_t last[] = {3, 2};
  sync.ready(last);  // the first bucket starts here; the second at finish()
  auto waited = sync.finish();
  REQUIRE(waited);
  CHECK(*waited >= 0);
  CHECK(sync.local_norm_sq() == Approx(0.25 * static_cast<double>(ps.arena_size())));
}

TEST_CASE("comm kinds: nccl and nccl-hierarchical parse; asking for them says what is missing", "[comm][nccl]") {
  CHECK(comm::parse_comm_kind("auto").value() == comm::CommKind::automatic);
  CHECK(comm::parse_comm_kind("local").value() == comm::CommKind::local);
  CHECK(comm::parse_comm_kind("mpi").value() == comm::CommKind::mpi);
  CHECK(comm::parse_comm_kind("nccl").value() == comm::CommKind::nccl);
  CHECK(comm::parse_comm_kind("nccl-hierarchical").value() == comm::CommKind::nccl_hierarchical);
  auto bad = comm::parse_comm_kind("gloo");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().fix.find("nccl-hierarchical") != std::string::npos);
  CHECK_FALSE(comm::parse_comm_kind("NCCL"));
  for (const char* kind : {"nccl", "nccl-hierarchical"}) {
    if (comm::nccl_built() && comm::launched_with_ranks()) continue;
    auto c = comm::make_communicator(kind);
    if (c) {  // a GPU is present: the NCCL communicator of one rank
      CHECK((*c)->size() >= 1);
      continue;
    }
    INFO(c.error().what);
    CHECK(c.error().is(dlsweep::ErrorKind::resources));
    if (!comm::nccl_built()) {
      CHECK(c.error().where == "comm");
      CHECK(c.error().fix.find("-DDLSWEEP_CUDA=ON") != std::string::npos);
    } else {  // nccl and nccl-hierarchical in a CUDA build without a GPU: refused before MPI starts
      CHECK(c.error().what.find("CUDA device") != std::string::npos);
      CHECK(c.error().what.find("not implemented") == std::string::npos);
    }
  }
}
