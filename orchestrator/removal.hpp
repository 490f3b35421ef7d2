// removal.hpp — removing a study: what `dlsweep delete STUDY [--files]` and
// `dlsweep submit --replace` share.
//
// Safety rules (each checked before anything is deleted; a refusal deletes nothing):
//  - the caller holds the study's lock (lock_study): no orchestrator drives the study;
//  - the study has no live trial (QUEUED or RUNNING): its processes or jobs might still
//    write; `dlsweep cancel` stops them first;
//  - with files, the directory removed is exactly the study's stored root_dir
//    (<runs_dir>/<study>), and only when it is provably the study's: its marker file
//    (written by `submit`) names this study and its creation time, or, for studies older
//    than the marker, it holds nothing but what dlsweep makes there (trial-NNNN, slurm,
//    cancel-request, enqueue-requests, orchestrator.log). A symbolic link, or a directory
//    with anything else in it, is refused.
//  - the rows go in one transaction (Storage::delete_study). The directory is first moved
//    aside (one rename), and moved back if the transaction fails; only then removed.
// Each removal is logged: stderr, and one line appended to <runs_dir>/dlsweep-deletions.log
// (the database has no log of its own outside a study: `events` rows belong to a study).
//
// The pure parts (checks, texts) are in removal.cpp; the file and database steps in
// removal_run.cpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::orch {

/// The marker `submit` writes in <runs_dir>/<study>/: which study (name, created_at) of
/// which database the directory belongs to.
inline constexpr const char* kStudyMarkerFile = ".dlsweep-study.json";
/// Beside the study directories: one line per removal (removal_run.cpp).
inline constexpr const char* kDeletionLogFile = "dlsweep-deletions.log";

// --- pure (removal.cpp)

/// The marker's text: {"study": name, "created_at": unix s, "database": path}.
std::string study_marker_text(const std::string& study, double created_at, const std::string& db);

/// True for a name dlsweep itself makes in a study directory: trial-<digits>, slurm,
/// cancel-request, enqueue-requests, orchestrator.log, the marker, and the temp files of
/// their atomic writes.
bool dlsweep_entry(std::string_view name);

/// May `dir`, the stored root_dir of study `study` (created at `created_at`), be removed?
/// `marker`: the marker file's text (nullopt: none); `entries`: the names in `dir`. Errors
/// are bad_input and say why not and what to do.
Status check_study_dir(const std::filesystem::path& dir, const std::string& study, double created_at,
                       const std::optional<std::string>& marker, const std::vector<std::string>& entries);

/// "1 study, 4 trials, 4 params, 12 records, 36 metrics, 16 events" (tables without rows of
/// the study are left out, except trials).
std::string describe_rows(const db::StudyRows& rows);

/// "3 COMPLETE, 1 FAILED" (states in the given order), or "no trials".
std::string describe_states(const std::vector<std::pair<std::string, std::int64_t>>& states);

/// A confirmation: "y" or "yes" in any case, blanks around it ignored. Anything else is no.
bool confirmed(std::string_view answer);

/// The fix for a study name the database does not hold: "did you mean 'x'?", else the known
/// names, else how to make one.
std::string unknown_study_fix(const std::string& name, const std::vector<std::string>& known);

/// One line of the deletion log (no newline): when, what, from which database, what went.
std::string deletion_log_line(double at, const db::StudyRow& study, const std::string& db, const db::StudyRows& rows,
                              const std::string& files_note, const std::string& command);

// --- file and database steps (removal_run.cpp)

/// What removing a study would remove, read and checked (see the safety rules).
struct RemovalPlan {
  db::StudyRow study;
  db::StudyRows rows;                                        ///< counted before anything is deleted
  std::vector<std::pair<std::string, std::int64_t>> states;  ///< trials by state
  bool files = false;       ///< the directory is to go too
  bool dir_exists = false;  ///< ... and it is there (else there is nothing to remove)
};

/// Reads and checks; errors are bad_input (a refusal: live trials, a directory that is not
/// provably the study's) or general (the database or disk failed).
Result<RemovalPlan> plan_removal(const db::Storage& storage, const db::StudyRow& study, bool files);

struct Removed {
  db::StudyRows rows;      ///< what was deleted from the database
  std::string files_note;  ///< "removed DIR", "kept DIR", "DIR was already gone", ...
  std::string log_note;    ///< where the removal was logged, or why it was not
};

/// Carries the plan out (under the database lock the caller holds): directory moved aside,
/// rows deleted in one transaction (the directory moved back if that fails), directory
/// removed, the removal logged. `command` names what asked for it (for the log).
Result<Removed> remove_study(db::Storage& storage, const RemovalPlan& plan, const std::string& db,
                             const std::string& command);

/// Writes the marker into `root` (created if needed), atomically.
Status write_study_marker(const std::filesystem::path& root, const std::string& study, double created_at,
                          const std::string& db);

}  // namespace dlsweep::orch
