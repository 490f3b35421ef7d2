// train_run.hpp — one in-process dlsweep-train run on Fashion-MNIST for the trainer's tests:
// the TrainResult, the model's weights at the end and every record it wrote to metrics.jsonl.
#pragma once

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/models/model.hpp"
#include "trainer/trainer.hpp"

namespace dlsweep::trainer::test {

struct TrainRun {
  Result<TrainResult> result;
  std::vector<float> weights;              ///< the model's parameters after the run
  std::vector<protocol::Record> records;   ///< metrics.jsonl, in order
};

/// The records of a metrics.jsonl file (each line must parse).
inline std::vector<protocol::Record> read_records(const std::filesystem::path& file) {
  std::vector<protocol::Record> out;
  std::istringstream in(read_file(file));
  for (std::string line; std::getline(in, line);) {
    auto r = protocol::parse_record(line);
    REQUIRE(r);
    out.push_back(*r);
  }
  return out;
}

inline std::vector<protocol::Record> of_kind(const std::vector<protocol::Record>& rs, protocol::RecordKind k) {
  std::vector<protocol::Record> out;
  for (const auto& r : rs)
    if (r.kind == k) out.push_back(r);
  return out;
}

/// Trains `c` on one rank, reporting to dir/metrics.jsonl, with checkpoints in `checkpoints`
/// (none when empty).
inline TrainRun train_fmnist(const TrainConfig& c, const std::filesystem::path& dir,
                             const std::filesystem::path& checkpoints = {}) {
  data::DataSpec ds = data_spec(c);
  ds.dir = DLSWEEP_FMNIST_DIR;
  auto data = data::load_data(ds);
  REQUIRE(data);
  auto rep = Reporter::open(dir / "metrics.jsonl");
  REQUIRE(rep);
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  ctx.reporter = &*rep;
  ctx.checkpoint_dir = checkpoints;
  auto t = Trainer::create(c, std::move(*data), ctx);
  REQUIRE(t);
  TrainRun run{(*t)->run(), {}, {}};
  const auto& p = (*t)->model().parameters();
  run.weights.assign(p.values(), p.values() + p.arena_size());
  run.records = read_records(dir / "metrics.jsonl");
  return run;
}

}  // namespace dlsweep::trainer::test
