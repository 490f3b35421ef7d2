// warm_start_load.hpp — `search.warm_start`'s I/O: each earlier study's database opened
// read-only, its COMPLETE trials read with their figures and placed into this study
// (study/warm_start.hpp's rules), numbered before trial 0; and the stored rows back into
// the sampler's history.
//
// submit loads them before the study is recorded (an error records nothing) and copies
// them into this study's database (`warm_start_trials`); resume reads them from there, so a
// resumed study never depends on the earlier file, which may have changed or gone: the
// history a fresh sampler sees after kill -9 is the one the old sampler saw.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "search/history.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

struct WarmStartLoad {
  std::vector<db::WarmStartRow> rows;  ///< numbered -N .. -1, in warm_start order
  std::vector<std::string> notes;      ///< one line per source: loaded, skipped and why
  /// All notes as one line (the 'warm_start' event's reason).
  std::string summary() const;
};

/// Loads every source of spec.search.warm_start. Every problem is reported (not only the
/// first), each with `where` = "<study file>:<line>: search.warm_start[i].db" (or `.study`,
/// or the entry itself for what its trials do not fit; no line when the spec has none, e.g.
/// a JSON study file) — the entry's key as the study validator names it. `own_db`: this study's
/// database ("" unknown): a source in it that names this study is refused. `own`: that
/// database's open handle to read a source in it through, or null (then it is opened
/// read-only like any other; what submit does, before --replace may delete anything).
std::expected<WarmStartLoad, std::vector<Error>> load_warm_start(const StudySpec& spec, const std::string& own_db,
                                                                  const db::Storage* own);

/// The stored rows as COMPLETE history records, with their (negative) numbers.
std::vector<search::TrialRecord> warm_history(const std::vector<db::WarmStartRow>& rows);

}  // namespace dlsweep::orch
