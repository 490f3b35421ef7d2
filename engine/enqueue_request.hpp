// enqueue_request.hpp — how `dlsweep enqueue` reaches an orchestrator that is driving the
// study. The orchestrator is the database's only writer, so the command leaves a request
// file, <runs_dir>/<study>/enqueue-requests/<time>-<pid>.json ({"params": {...}}), written
// atomically and durably; whoever holds the database lock records it: the engine on its
// next tick (and `resume` when it starts), or the command itself once the orchestrator has
// exited. Recording is idempotent (the file name is the request's id in enqueued_trials),
// and the file is removed only after the recording is committed, so a crash in between
// neither loses a request nor runs it twice. Each file is checked again against the study
// when it is read: a file that is not ours, or not valid for the study, is refused and
// renamed FILE.refused with the reason logged, and never stops the sweep.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "study/spec.hpp"
#include "search/search_space.hpp"

namespace dlsweep::orch {

inline constexpr const char* kEnqueueRequestDir = "enqueue-requests";

struct EnqueueRequest {
  std::filesystem::path file;
  std::string id;          ///< "file:<name>": the request id recorded in enqueued_trials
  search::Params params;   ///< checked against the study when `problem` is empty
  std::string problem;     ///< non-empty: refused, and why
};

/// A fresh request id ("<prefix>:<time ns>-<pid>"), unique per call.
std::string new_request_id(const std::string& prefix);

/// Writes a request file for `params` under study_dir (created if needed); returns its path.
Result<std::filesystem::path> write_enqueue_request(const std::filesystem::path& study_dir,
                                                    const search::Params& params);

/// The request id a request file is recorded under.
std::string request_id_of(const std::filesystem::path& file);

/// The request files waiting under study_dir, oldest first, each read and checked against
/// the study (enqueue_supported, check_enqueued_params). Cheap when there are none.
std::vector<EnqueueRequest> read_enqueue_requests(const std::filesystem::path& study_dir, const StudySpec& spec);

/// Records each request that was not refused (Storage::enqueue_trial, idempotent) and
/// returns the rows that are new. The caller commits its write batch, if it has one, and
/// then retires every request.
Result<std::vector<db::EnqueuedRow>> record_enqueue_requests(db::Storage& storage, std::int64_t study_id,
                                                             const std::vector<EnqueueRequest>& requests);

/// Removes a recorded request's file; a refused one is renamed FILE.refused instead.
void retire_enqueue_request(const EnqueueRequest& r);

}  // namespace dlsweep::orch
