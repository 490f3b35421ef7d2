// enqueue_request.cpp — the request files of `dlsweep enqueue` (see enqueue_request.hpp).
#include "engine/enqueue_request.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "study/enqueue_values.hpp"
#include "study/growth.hpp"
#include "engine/trial_files.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxRequestBytes = 1 << 20;  // a request is a few parameters

std::string stamp() {
  static std::atomic<unsigned> counter{0};
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return fmt::format("{:020}-{}-{}", ns, ::getpid(), counter++);
}

std::string read_request(const fs::path& file, std::string& problem) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) {
    problem = "cannot read it: " + ec.message();
    return {};
  }
  if (size > kMaxRequestBytes) {
    problem = fmt::format("it is {} bytes; a request is a few parameters", size);
    return {};
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string new_request_id(const std::string& prefix) { return prefix + ":" + stamp(); }

std::string request_id_of(const fs::path& file) { return "file:" + file.stem().string(); }

Result<fs::path> write_enqueue_request(const fs::path& study_dir, const search::Params& params) {
  const fs::path dir = study_dir / kEnqueueRequestDir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("cannot create the request directory: " + ec.message(), dir.string(),
                      "check that the study's runs_dir is writable");
  const fs::path file = dir / (stamp() + ".json");
  nlohmann::json j = {{"params", params}};
  if (auto st = write_file_atomic(file, j.dump() + "\n", Durability::file); !st) return std::unexpected(st.error());
  return file;
}

std::vector<EnqueueRequest> read_enqueue_requests(const fs::path& study_dir, const StudySpec& spec) {
  std::vector<EnqueueRequest> out;
  const fs::path dir = study_dir / kEnqueueRequestDir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    // Only whole requests: write_file_atomic's temporary files end in .tmp.<pid>.
    if (p.extension() != ".json" || !it->is_regular_file(ec)) continue;
    EnqueueRequest r{p, request_id_of(p), search::Params::object(), {}};
    std::string text = read_request(p, r.problem);
    if (r.problem.empty()) {
      auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("params")) r.problem = "not an enqueue request ({\"params\": {...}})";
      else r.params = j["params"];
    }
    if (r.problem.empty())
      if (auto st = enqueue_supported(spec, spec.name); !st) r.problem = st.error().message();
    if (r.problem.empty()) {
      auto errors = check_enqueued_params(spec.space, r.params);
      for (const auto& e : errors) r.problem += (r.problem.empty() ? "" : "; ") + e.message();
    }
    out.push_back(std::move(r));
  }
  // The names start with the time of the request: oldest first.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.file.filename() < b.file.filename(); });
  return out;
}

Result<std::vector<db::EnqueuedRow>> record_enqueue_requests(db::Storage& storage, std::int64_t study_id,
                                                             const std::vector<EnqueueRequest>& requests) {
  std::vector<db::EnqueuedRow> added;
  for (const auto& r : requests) {
    if (!r.problem.empty()) continue;
    auto row = storage.enqueue_trial(study_id, r.id, r.params, "user");
    if (!row) return std::unexpected(row.error());
    if (*row) added.push_back(std::move(**row));
  }
  return added;
}

void retire_enqueue_request(const EnqueueRequest& r) {
  std::error_code ec;
  if (r.problem.empty()) {
    fs::remove(r.file, ec);
    return;
  }
  fs::path refused = r.file;
  refused += ".refused";
  fs::rename(r.file, refused, ec);
  if (ec) fs::remove(r.file, ec);
}

}  // namespace dlsweep::orch
