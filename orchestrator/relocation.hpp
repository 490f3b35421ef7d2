// relocation.hpp — where a study lives, and what `resume` does when it finds the study
// somewhere else: a moved project is followed, a copied one is kept out of the original's
// files.
//
// A study's home (studies.home_db, studies.home_root, schema version 5): the database file
// it was submitted to, and its root — the deepest directory holding that database, the
// study file and the runs directory (home_root()). Every stored path of the study (its
// runs directory, each trial's directory, the study file, hence `{study_dir}` in the
// command, and the backend's files, which live under the runs directory) is re-rooted as
// one: a path under OLD becomes the same path under NEW (reroot_path); any other path
// stays as it is. In the stored spec, the runs_dir, the command's words, the trial's env
// values, the backend's strings (Slurm's template) and warm-start databases are re-rooted
// the same way (reroot_spec); parameter values are the study's data and stay.
//
// `resume` decides (decide_placement, pure, over Facts the caller reads from disk):
//  - explicit `--relocate OLD=NEW`: the study's runs directory must be under OLD and its
//    re-rooted place must exist and not belong to another study: then every path moves;
//  - the database is not the one the study was submitted to: the project moved or was
//    copied. Where the database now is tells where the root went (infer_move: the same
//    path below the root). If the first database still exists and the study's first runs
//    directory still names it and this study in its marker, this is a COPY: refused, with the two ways on
//    (--relocate into the copy, or `submit --replace` there). Otherwise it is a MOVE: the
//    paths follow, said in one line. A database moved on its own (its study's files still
//    where they were, the marker naming no other living database) records its new place.
//  - the database is the study's: its runs directory's marker (.dlsweep-study.json) must
//    not name another database that holds this study (a copied database next to the
//    original's files: refused as a copy); a runs directory gone together with the root
//    is a move dlsweep cannot see (the database lives elsewhere): refused with the
//    --relocate to use, guessed from where the marker is found.
// Nothing of this writes: cmd_resume applies the outcome (relocation_run.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::orch {

/// OLD -> NEW: both absolute, lexically normal, without a trailing separator.
struct Reroot {
  std::filesystem::path from, to;
};

/// `p` itself or a path below `from` (whole components) -> the same below `to`; nullopt for
/// any other path (and for a relative one).
std::optional<std::filesystem::path> reroot_path(const std::filesystem::path& p, const Reroot& r);

/// Every occurrence of `from` as a path in `text` (at its start or after a character that
/// cannot be part of a path: '=', ':', ',', a blank, a quote; followed by '/' or the end or
/// such a character) replaced by `to`. "--data=/old/d" -> "--data=/new/d"; "/older" stays.
std::string reroot_text(std::string_view text, const Reroot& r);

/// The stored spec (studies.spec_json as JSON) with its paths re-rooted (see the header);
/// `changed` counts the strings that changed.
nlohmann::json reroot_spec(const nlohmann::json& spec, const Reroot& r, int* changed = nullptr);

/// The deepest directory holding every one of `paths` (absolute); "/" when they share
/// nothing more.
std::filesystem::path common_root(const std::vector<std::filesystem::path>& paths);

/// A study's root: common_root of the database's folder, the study file's folder and the
/// runs directory (the parent of <runs_dir>/<study>).
std::filesystem::path home_root(const std::filesystem::path& db, const std::filesystem::path& source_path,
                                const std::filesystem::path& root_dir);

/// The database was home_db (below home_root) and is now `db`: when `db` ends with the
/// same path below the root, the root moved to what precedes it. nullopt when the paths
/// do not say (or say it did not move).
std::optional<Reroot> infer_move(const std::filesystem::path& home_db, const std::filesystem::path& home_root,
                                 const std::filesystem::path& db);

/// `--relocate OLD=NEW`: both made absolute against `cwd`. Errors are bad_input.
Result<Reroot> parse_relocate(std::string_view arg, const std::filesystem::path& cwd);

/// The marker `submit` writes in <runs_dir>/<study>/ (removal.hpp), read back.
struct StudyMarker {
  std::string study;
  double created_at = 0;
  std::string database;
};
std::optional<StudyMarker> parse_study_marker(std::string_view text);

/// What the caller reads from disk for decide_placement.
struct DbState {
  enum Kind {
    unknown,     ///< no path to look at (a study older than schema version 5; no marker)
    this_db,     ///< the very file `resume` opened
    gone,        ///< no such file
    other,       ///< another database file, not known to hold this study
    holds_study  ///< another database holding this study: it exists, and the study's first
                 ///< runs directory still names it and this study (name, creation time) in
                 ///< its marker (never opened: see relocation_run.cpp)
  } kind = unknown;
};

struct DirState {
  bool exists = false;
  std::optional<StudyMarker> marker;  ///< its .dlsweep-study.json, when readable
  DbState marker_db;                  ///< the database the marker names
};

struct PlacementFacts {
  std::string study;
  double created_at = 0;
  std::filesystem::path db;  ///< the database `resume` opened, absolute
  std::filesystem::path home_db, home_root, root_dir, source_path;  ///< as stored
  DbState home;                       ///< home_db's state
  DirState old_dir;                   ///< the stored root_dir
  bool old_root_exists = false;       ///< home_root (or, for an older study, the root its paths imply) exists
  std::optional<Reroot> explicit_move;  ///< --relocate
  std::optional<Reroot> inferred;       ///< infer_move()'s answer
  DirState new_dir;                   ///< the re-rooted root_dir (of explicit_move, else inferred)
  /// A guess at NEW for the fix of a refusal: a directory where the re-rooted runs
  /// directory holds this study's marker (the caller looks in the working directory and the
  /// database's folder).
  std::optional<std::filesystem::path> found_new_root;
  std::size_t live_batch_trials = 0;  ///< QUEUED/RUNNING trials whose jobs outlive the orchestrator
};

struct Placement {
  enum Kind {
    at_home,     ///< nothing to do (record_home: write home_db/home_root)
    moved,       ///< re-root by `reroot` (the database followed the project)
    relocated,   ///< re-root by --relocate
    refused      ///< `refusal` says why and what to do
  } kind = at_home;
  std::optional<Reroot> reroot;
  bool record_home = false;
  std::string note;  ///< one line for the terminal ("" for none)
  Error refusal;
};

/// True when `m` names this study (name and creation time).
bool marker_names(const StudyMarker& m, const std::string& study, double created_at);

Placement decide_placement(const PlacementFacts& f);

/// "study 'x' moved: OLD -> NEW (...)": the line `resume` prints after re-rooting.
std::string relocation_line(const Placement& p, const std::string& study, const std::filesystem::path& old_db,
                            std::size_t trial_dirs);

// --- reading the facts and applying the outcome (relocation_run.cpp)

/// What settle_study_place did.
struct Settled {
  db::StudyRow row;  ///< the study's row as it is now (re-read after a relocation)
  /// A move: the trial directories as they were (processes of the dead orchestrator may
  /// still name them); empty otherwise.
  std::vector<std::filesystem::path> old_trial_dirs;
};

/// Decides where the study of `row` lives, opened from `db` (as the user named it), with
/// `relocate` ("" or --relocate's OLD=NEW); a move or a relocation rewrites its stored
/// paths (one transaction, a 'relocate' event), rewrites the marker in the new runs
/// directory and prints one line; a study without a recorded home gets one. A refusal is
/// an error (bad_input) that changed nothing. The caller holds the study's lock.
Result<Settled> settle_study_place(db::Storage& storage, const db::StudyRow& row, const std::string& db,
                                   const std::string& relocate, bool batch_backend);

/// The same decision, read only, for the verbs that write into a study's files without
/// re-rooting them (`cancel`, `enqueue`): a copy's refusal; after a move, `reroot` says
/// where the study's files are now (the next `resume` rewrites the stored paths).
Result<Placement> check_study_place(const db::StudyRow& row, const std::vector<db::TrialRow>& trials,
                                    const std::string& db, bool batch_backend);

/// For `delete --files` and `submit --replace`: the study directory this database may
/// remove — the stored one at home, the re-rooted one after a move, a copy's own (never the
/// original's). nullopt: it owns none (the files are the original's; they stay).
Result<std::optional<std::filesystem::path>> owned_study_dir(const db::StudyRow& row,
                                                             const std::vector<db::TrialRow>& trials,
                                                             const std::string& db);

/// The facts decide_placement needs, read from disk (no writes).
Result<PlacementFacts> read_placement_facts(const db::StudyRow& row, const std::vector<db::TrialRow>& trials,
                                            const std::string& db, const std::string& relocate, bool batch_backend);

}  // namespace dlsweep::orch
