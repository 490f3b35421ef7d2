// relocation_run.cpp — the file and database side of relocation.hpp: the facts read from
// disk (which database is which, the markers of the old and the new runs directory), the
// decision applied (the stored paths in one transaction, the marker rewritten), the line
// printed.
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "common/trial_state.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/relocation.hpp"
#include "orchestrator/removal.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

fs::path absolute_normal(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec).lexically_normal();
  if (a.filename().empty() && a.has_parent_path() && a != a.root_path()) a = a.parent_path();
  return a;
}

// What the database file at `path` is: none, the one `resume` opened, or another file. It is
// never opened: a reader of an SQLite file in WAL mode leaves its -wal and -shm files beside
// it, and the original of a copy must not be written to, not even that.
DbState db_state(const fs::path& path, const fs::path& this_db) {
  if (path.empty()) return {DbState::unknown};
  std::error_code ec;
  if (!fs::exists(path, ec)) return {DbState::gone};
  if (fs::equivalent(path, this_db, ec) && !ec) return {DbState::this_db};
  return {DbState::other};
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return a.lexically_normal() == b.lexically_normal() || (fs::equivalent(a, b, ec) && !ec);
}

std::optional<StudyMarker> read_marker(const fs::path& dir) {
  std::ifstream in(dir / kStudyMarkerFile);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_study_marker(text.str());
}

DirState dir_state(const fs::path& dir, const fs::path& this_db, const std::string& study, double created_at) {
  DirState d;
  std::error_code ec;
  d.exists = fs::is_directory(dir, ec);
  if (!d.exists) return d;
  d.marker = read_marker(dir);
  // The marker names this study and a database that exists and is not this one: that
  // database holds the study (the original of a copy); its marker and its file say so.
  if (d.marker && marker_names(*d.marker, study, created_at)) {
    d.marker_db = db_state(d.marker->database, this_db);
    if (d.marker_db.kind == DbState::other) d.marker_db.kind = DbState::holds_study;
  }
  return d;
}

// Where the project may be now, for the fix of a refusal: the working directory, the
// database's folder or one above them, where the runs directory (as it sits below the old
// root) holds this study's marker.
std::optional<fs::path> guess_new_root(const fs::path& old_root, const fs::path& root_dir, const fs::path& this_db,
                                       const std::string& study, double created_at) {
  const fs::path rel = root_dir.lexically_relative(old_root);
  if (rel.empty() || rel.native().starts_with("..")) return std::nullopt;
  std::error_code ec;
  for (fs::path start : {absolute_normal(fs::current_path(ec)), this_db.parent_path()}) {
    for (fs::path cand = start; !cand.empty(); cand = cand.parent_path()) {
      if (cand != old_root)
        if (auto m = read_marker(cand / rel); m && marker_names(*m, study, created_at)) return cand;
      if (cand == cand.root_path()) break;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<PlacementFacts> read_placement_facts(const db::StudyRow& row, const std::vector<db::TrialRow>& trials,
                                            const std::string& db, const std::string& relocate, bool batch_backend) {
  const fs::path this_db = absolute_normal(db);
  PlacementFacts f;
  f.study = row.name;
  f.created_at = row.created_at;
  f.db = this_db;
  f.home_db = row.home_db;
  f.home_root = row.home_root;
  f.root_dir = row.root_dir;
  f.source_path = row.source_path;
  f.home = db_state(f.home_db, this_db);
  std::error_code ec;
  if (!relocate.empty()) {
    auto r = parse_relocate(relocate, fs::current_path(ec));
    if (!r) return std::unexpected(r.error());
    f.explicit_move = *r;
  } else {
    f.inferred = infer_move(f.home_db, f.home_root, this_db);
  }
  f.old_dir = dir_state(f.root_dir, this_db, f.study, f.created_at);
  // The first database still there, and the study's first directory still naming it in its
  // marker: the original of a copy holds the study.
  if (f.home.kind == DbState::other && f.old_dir.marker_db.kind == DbState::holds_study &&
      same_file(f.old_dir.marker->database, f.home_db))
    f.home.kind = DbState::holds_study;
  const fs::path old_root = !f.home_root.empty() ? f.home_root : home_root({}, f.source_path, f.root_dir);
  f.old_root_exists = fs::is_directory(old_root, ec);
  if (const auto& mv = f.explicit_move ? f.explicit_move : f.inferred)
    if (auto to = reroot_path(f.root_dir, *mv)) f.new_dir = dir_state(*to, this_db, f.study, f.created_at);
  if (batch_backend)
    for (const auto& t : trials) f.live_batch_trials += is_active(t.state);
  if (!f.old_dir.exists || f.home.kind == DbState::holds_study)
    f.found_new_root = guess_new_root(old_root, f.root_dir, this_db, f.study, f.created_at);
  return f;
}

Result<Placement> check_study_place(const db::StudyRow& row, const std::vector<db::TrialRow>& trials,
                                    const std::string& db, bool batch_backend) {
  auto f = read_placement_facts(row, trials, db, "", batch_backend);
  if (!f) return std::unexpected(f.error());
  Placement p = decide_placement(*f);
  if (p.kind == Placement::refused) return std::unexpected(p.refusal);
  return p;
}

Result<std::optional<fs::path>> owned_study_dir(const db::StudyRow& row, const std::vector<db::TrialRow>& trials,
                                                const std::string& db) {
  auto f = read_placement_facts(row, trials, db, "", /*batch_backend=*/false);
  if (!f) return std::unexpected(f.error());
  const Placement p = decide_placement(*f);
  if (p.kind != Placement::refused) {
    if (p.reroot)
      if (auto to = reroot_path(row.root_dir, *p.reroot)) return std::optional<fs::path>(*to);
    return std::optional<fs::path>(fs::path(row.root_dir));
  }
  // Not a copy (a foreign marker, files gone): the removal's own checks say what is wrong.
  const bool copy = f->home.kind == DbState::holds_study ||
                    (f->old_dir.marker && marker_names(*f->old_dir.marker, row.name, row.created_at) &&
                     f->old_dir.marker_db.kind == DbState::holds_study);
  if (!copy) return std::optional<fs::path>(fs::path(row.root_dir));
  // A copy: its own files are where the copy's root puts them, if they are there.
  if (f->home.kind == DbState::holds_study && f->inferred && f->new_dir.exists && f->new_dir.marker &&
      marker_names(*f->new_dir.marker, row.name, row.created_at))
    if (auto to = reroot_path(row.root_dir, *f->inferred)) return std::optional<fs::path>(*to);
  return std::optional<fs::path>();
}

Result<Settled> settle_study_place(db::Storage& storage, const db::StudyRow& row, const std::string& db,
                                   const std::string& relocate, bool batch_backend) {
  const fs::path this_db = absolute_normal(db);
  auto trials = storage.list_trials(row.id);
  if (!trials) return std::unexpected(trials.error());
  auto facts = read_placement_facts(row, *trials, db, relocate, batch_backend);
  if (!facts) return std::unexpected(facts.error());
  const PlacementFacts& f = *facts;
  const Placement p = decide_placement(f);
  if (p.kind == Placement::refused) return std::unexpected(p.refusal);
  Settled out;
  out.row = row;
  if (p.reroot) {
    const Reroot& r = *p.reroot;
    db::StudyPaths paths;
    paths.root_dir = reroot_path(row.root_dir, r).value_or(fs::path(row.root_dir)).string();
    paths.source_path = reroot_path(row.source_path, r).value_or(fs::path(row.source_path)).string();
    int changed = 0;
    auto spec = nlohmann::json::parse(row.spec_json, nullptr, /*allow_exceptions=*/false);
    auto moved_spec = reroot_spec(spec, r, &changed);
    paths.spec_json = changed > 0 ? moved_spec.dump() : row.spec_json;
    paths.home_db = this_db.string();
    paths.home_root = home_root(this_db, paths.source_path, paths.root_dir).string();
    std::vector<fs::path> old_dirs;
    for (const auto& t : *trials) {
      auto to = reroot_path(t.trial_dir, r);
      if (!to) continue;
      paths.trial_dirs.emplace_back(t.id, to->string());
      if (is_active(t.state) || t.state == TrialState::waiting) old_dirs.emplace_back(t.trial_dir);
    }
    const std::string line = relocation_line(p, row.name, f.home_db.empty() ? fs::path(row.root_dir) : f.home_db,
                                             paths.trial_dirs.size());
    db::EventRow why;
    why.study_id = row.id;
    why.who = "user";
    why.kind = "relocate";
    why.reason = line;
    if (auto st = storage.relocate_study(row.id, paths, why); !st) return std::unexpected(st.error());
    if (auto st = write_study_marker(paths.root_dir, row.name, row.created_at, this_db.string()); !st)
      print_warning(st.error());
    fmt::print(stderr, "{}\n", line);
    if (f.live_batch_trials > 0)
      fmt::print(stderr,
                 "warning: {} trial{} of the study still run{} as batch jobs submitted from {}: they keep the paths "
                 "they were given there; let them finish or cancel them before moving the project again\n",
                 f.live_batch_trials, f.live_batch_trials == 1 ? "" : "s", f.live_batch_trials == 1 ? "s" : "",
                 r.from.string());
    if (p.kind == Placement::moved) out.old_trial_dirs = std::move(old_dirs);
  } else if (p.record_home) {
    if (auto st = storage.set_study_home(row.id, this_db.string(), home_root(this_db, row.source_path, row.root_dir).string());
        !st)
      return std::unexpected(st.error());
    if (f.old_dir.exists)
      if (auto st = write_study_marker(row.root_dir, row.name, row.created_at, this_db.string()); !st)
        print_warning(st.error());
    if (!p.note.empty()) fmt::print(stderr, "{}\n", p.note);
  }
  auto again = storage.find_study(row.name);
  if (!again) return std::unexpected(again.error());
  if (!*again) return fail(fmt::format("study '{}' vanished while it was being resumed", row.name), db);
  out.row = **again;
  return out;
}

}  // namespace dlsweep::orch
