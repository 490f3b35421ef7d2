// removal.cpp — the pure parts of removing a study: is this directory provably the
// study's, and the texts printed and logged. See removal.hpp for the rules.
#include "orchestrator/removal.hpp"

#include "common/atomic_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/cancel_request.hpp"
#include "engine/enqueue_request.hpp"
#include "engine/progress.hpp"
#include "schedulers/backend_kinds.hpp"
#include "study/did_you_mean.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A name dlsweep gives an entry of a study directory, without a temp-file suffix.
bool dlsweep_name(std::string_view name) {
  if (name.starts_with("trial-")) return all_digits(name.substr(6));
  return sched::backend_owns_study_entry(name) || name == kCancelRequestFile || name == kEnqueueRequestDir || name == kStudyMarkerFile ||
         name == kOrchestratorLog;
}

// The directory's own name, also for a path written with a trailing '/'.
std::string last_name(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

std::string study_marker_text(const std::string& study, double created_at, const std::string& db) {
  nlohmann::json j = {{"study", study}, {"created_at", created_at}, {"database", db}};
  return j.dump(2) + "\n";
}

bool dlsweep_entry(std::string_view name) {
  // write_file_atomic's temp files: NAME.tmp.PID (left behind only by a crash).
  if (is_atomic_temp_name(name)) name = name.substr(0, name.rfind(".tmp."));
  return dlsweep_name(name);
}

Status check_study_dir(const fs::path& dir, const std::string& study, double created_at,
                       const std::optional<std::string>& marker, const std::vector<std::string>& entries) {
  const std::string where = dir.string();
  const std::string by_hand = "remove it by hand if you no longer need it, or delete the study without --files";
  if (study.empty() || !dir.is_absolute() || last_name(dir) != study || dir.lexically_normal() == dir.root_path())
    return fail_as(ErrorKind::bad_input,
                   fmt::format("not removing it: the study '{}' recorded this directory, which is not "
                               "<runs_dir>/{} as dlsweep makes it",
                               study, study),
                   where, by_hand);
  if (marker) {
    auto j = nlohmann::json::parse(*marker, nullptr, /*allow_exceptions=*/false);
    const bool ours = j.is_object() && j.value("study", std::string()) == study && j.contains("created_at") &&
                      j["created_at"].is_number() && std::abs(j["created_at"].get<double>() - created_at) < 1e-3;
    if (ours) return {};
    std::string owner = "an unreadable marker";
    if (j.is_object() && j.contains("created_at") && j["created_at"].is_number())
      owner = fmt::format("study '{}' created {} in {}", j.value("study", std::string("?")),
                          iso_utc(j["created_at"].get<double>()), j.value("database", std::string("?")));
    return fail_as(ErrorKind::bad_input,
                   fmt::format("not removing it: its {} says it belongs to {}, not to study '{}' created {}",
                               kStudyMarkerFile, owner, study, iso_utc(created_at)),
                   where, by_hand);
  }
  std::vector<std::string> foreign;
  for (const auto& e : entries)
    if (!dlsweep_entry(e)) foreign.push_back(e);
  if (foreign.empty()) return {};
  std::sort(foreign.begin(), foreign.end());
  std::string shown;
  for (std::size_t i = 0; i < foreign.size() && i < 5; ++i) shown += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 5) shown += fmt::format(" and {} more", foreign.size() - 5);
  return fail_as(ErrorKind::bad_input,
                 fmt::format("not removing it: it holds {} that dlsweep did not make ({}) and no {} proving it is "
                             "the study's",
                             foreign.size() == 1 ? "an entry" : "entries", shown, kStudyMarkerFile),
                 where, "move those away, or " + by_hand);
}

std::string describe_rows(const db::StudyRows& rows) {
  std::string out;
  for (const auto& [table, n] : rows.by_table) {
    if (n == 0 && table != "trials") continue;
    std::string noun = table;
    if (table == "studies") noun = n == 1 ? "study" : "studies";
    else if (table == "trials" && n == 1) noun = "trial";
    else if (n == 1 && noun.ends_with('s')) noun.pop_back();
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, noun);
  }
  return out;
}

std::string describe_states(const std::vector<std::pair<std::string, std::int64_t>>& states) {
  std::string out;
  for (const auto& [state, n] : states)
    if (n > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, state);
  return out.empty() ? "no trials" : out;
}

bool confirmed(std::string_view answer) {
  while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.front()))) answer.remove_prefix(1);
  while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.back()))) answer.remove_suffix(1);
  std::string lower(answer);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "y" || lower == "yes";
}

std::string unknown_study_fix(const std::string& name, const std::vector<std::string>& known) {
  if (known.empty()) return "the database holds no study";
  std::vector<std::string_view> candidates(known.begin(), known.end());
  if (auto s = did_you_mean(name, candidates)) return fmt::format("did you mean '{}'?", *s);
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return "known studies: " + list;
}

std::string deletion_log_line(double at, const db::StudyRow& study, const std::string& db, const db::StudyRows& rows,
                              const std::string& files_note, const std::string& command) {
  return fmt::format("{} {}: deleted study '{}' (created {}) from {}: {}; {}", iso_utc(at), command, study.name,
                     iso_utc(study.created_at), db, describe_rows(rows), files_note);
}

}  // namespace dlsweep::orch
