#include "engine/trial_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include <fmt/format.h>

#include "common/protocol.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

fs::path trial_dir_for(const fs::path& runs_dir, const std::string& study, long long number) {
  return runs_dir / study / fmt::format("trial-{:04d}", number);
}

Status prepare_trial_dir(const fs::path& dir, const nlohmann::json& params) {
  std::error_code ec;
  fs::create_directories(dir / protocol::kCheckpointDir, ec);
  if (ec) return fail("cannot create trial directory: " + ec.message(), dir.string(),
                      "check that runs_dir is writable");
  return write_file_atomic(dir / protocol::kParamsFile, params.dump(2) + "\n", Durability::none);
}

Status restore_params_file(const fs::path& dir, const nlohmann::json& params) {
  std::error_code ec;
  fs::create_directories(dir / protocol::kCheckpointDir, ec);
  if (ec) return fail("cannot create trial directory: " + ec.message(), dir.string(),
                      "check that runs_dir is writable");
  return write_file_atomic(dir / protocol::kParamsFile, params.dump(2) + "\n", Durability::file);
}

Status request_stop(const fs::path& dir, const std::string& reason) {
  return write_file_atomic(dir / protocol::kControlFile, protocol::to_json({"stop", reason}) + "\n");
}

std::string asked_stop(const fs::path& dir) {
  std::ifstream control(dir / protocol::kControlFile);
  auto asked = nlohmann::json::parse(control, nullptr, /*allow_exceptions=*/false);
  if (!asked.is_object() || asked.value("action", "") != "stop") return {};
  auto reason = asked.find("reason");
  return reason != asked.end() && reason->is_string() && !reason->get<std::string>().empty() ? reason->get<std::string>()
                                                                                             : "cancelled";
}

bool has_final_record(const fs::path& dir) {
  std::ifstream in(metrics_file(dir));
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("final") == std::string::npos) continue;  // cheap filter before parsing
    auto r = protocol::parse_record(line);
    if (r && r->kind == protocol::RecordKind::final) return true;
  }
  return false;
}

void clear_control(const fs::path& dir) {
  std::error_code ec;
  fs::remove(dir / protocol::kControlFile, ec);
}

fs::path metrics_file(const fs::path& dir) { return dir / protocol::kMetricsFile; }

fs::path rotated_metrics_file(const fs::path& dir, int attempt) {
  return dir / fmt::format("metrics.attempt-{}.jsonl", attempt);
}

Status rotate_metrics(const fs::path& dir, int attempt) {
  std::error_code ec;
  if (!fs::exists(metrics_file(dir), ec)) return {};
  fs::rename(metrics_file(dir), rotated_metrics_file(dir, attempt), ec);
  if (ec) return fail("cannot rotate metrics file: " + ec.message(), metrics_file(dir).string());
  return {};
}

std::string log_tail(const fs::path& file, std::size_t max_lines) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (auto& l : lines) out += (out.empty() ? "" : " | ") + l;
  if (out.size() > 400) out = "..." + out.substr(out.size() - 400);
  return out;
}

}  // namespace dlsweep::orch
