#include "engine/recovery.hpp"

#include <vector>

#include "common/jsonl_tail.hpp"
#include "common/protocol.hpp"
#include "engine/trial_files.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

Result<std::size_t> ingest_file(db::Storage& storage, std::int64_t trial_id, int attempt, const fs::path& file) {
  JsonlTail tail(file);
  auto lines = tail.read_all_lines();
  if (!lines) return std::unexpected(lines.error());
  std::vector<protocol::Record> records;
  for (const auto& l : *lines)
    if (auto r = protocol::parse_record(l)) records.push_back(std::move(*r));
  return storage.ingest(trial_id, attempt, records);
}


}  // namespace

Result<std::size_t> reingest_trial(db::Storage& storage, const db::TrialRow& trial) {
  std::size_t added = 0;
  for (int k = 0; k <= trial.attempt; ++k) {
    fs::path f = k < trial.attempt ? rotated_metrics_file(trial.trial_dir, k) : metrics_file(trial.trial_dir);
    auto n = ingest_file(storage, trial.id, k, f);
    if (!n) return std::unexpected(n.error());
    added += *n;
  }
  return added;
}

}  // namespace dlsweep::orch
