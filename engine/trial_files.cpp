#include "engine/trial_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <deque>
#include <fstream>

#include <fmt/format.h>

#include "common/program_outcome.hpp"
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

Result<std::size_t> copy_checkpoints(const fs::path& from, const fs::path& to) {
  const fs::path src = from / protocol::kCheckpointDir, dst = to / protocol::kCheckpointDir;
  std::error_code ec;
  if (!fs::is_directory(src, ec)) return std::size_t{0};
  std::size_t n = 0;
  auto cannot = [&](const fs::path& p) {
    return fail(fmt::format("cannot copy the parent's checkpoint {}: {}", p.string(), ec.message()), dst.string(),
                "check that runs_dir is writable and has room");
  };
  fs::create_directories(dst, ec);
  if (ec) return cannot(dst);
  for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path target = dst / fs::relative(it->path(), src);
    if (it->is_directory(ec)) {
      fs::create_directories(target, ec);
      if (ec) return cannot(target);
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
    if (ec) return cannot(it->path());
    fs::last_write_time(target, fs::last_write_time(it->path(), ec), ec);
    ++n;
  }
  // Directories get their times last (copying into them changed them).
  for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_directory(ec)) {
      std::error_code ignore;
      fs::last_write_time(dst / fs::relative(it->path(), src), fs::last_write_time(it->path(), ignore), ignore);
    }
  if (ec) return cannot(src);
  return n;
}

Status write_decided(const fs::path& dir, int attempt, std::int64_t seq) {
  return write_file_atomic(dir / protocol::kDecidedFile, fmt::format("{{\"attempt\": {}, \"seq\": {}}}\n", attempt, seq));
}

Status write_suggested(const fs::path& dir, const nlohmann::json& answers) {
  return write_file_atomic(dir / protocol::kSuggestedFile, answers.dump() + "\n");
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

void clear_program_outcome(const fs::path& dir) {
  std::error_code ec;
  fs::remove(dir / protocol::kOutcomeFile, ec);
}

std::optional<std::string> read_program_outcome(const fs::path& dir) {
  std::ifstream in(dir / protocol::kOutcomeFile, std::ios::binary);
  if (!in) return std::nullopt;
  constexpr std::size_t kMax = 64 * 1024;
  std::string text(kMax, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
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
  // Only the file's last 64 KiB are read: a log of gigabytes, or one line of them (a tensor
  // printed to stderr), costs the orchestrator no more than that.
  constexpr std::uint64_t kTailBytes = 64 * 1024;
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec || size == 0) return "";
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  const std::uint64_t from = size > kTailBytes ? size - kTailBytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(static_cast<std::size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  std::deque<std::string> lines;
  std::size_t start = 0;
  bool first = true;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    // A line cut by the 64 KiB window keeps its end, marked as such.
    if (first && from > 0) line = "..." + line;
    first = false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) {
      lines.push_back(std::move(line));
      if (lines.size() > max_lines) lines.pop_front();
    }
    start = nl + 1;
  }
  std::string out;
  for (auto& l : lines) out += (out.empty() ? "" : " | ") + l;
  if (out.size() > 400) out = "..." + out.substr(out.size() - 400);
  return out;
}

std::string unterminated_tail(const fs::path& file, std::uint64_t offset) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || size <= offset) return "";
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(offset));
  std::string rest(static_cast<std::size_t>(std::min<std::uint64_t>(size - offset, 4096)), '\0');
  in.read(rest.data(), static_cast<std::streamsize>(rest.size()));
  rest.resize(static_cast<std::size_t>(in.gcount()));
  if (rest.find('\n') != std::string::npos) return "";  // whole lines a reader has not read yet
  const auto first = rest.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  rest = rest.substr(first);
  if (rest.size() > 120) rest = rest.substr(0, 120) + "...";
  return rest;
}

}  // namespace dlsweep::orch
