// trial_files.hpp — the orchestrator's side of the files in a trial directory.
//
// Layout: <runs_dir>/<study>/trial-<number>/{params.json, metrics.jsonl, control.json,
// checkpoints/, stdout.log, stderr.log}. When a trial is retried, the finished attempt's
// metrics.jsonl is renamed to metrics.attempt-<N>.jsonl first, so each file holds exactly
// one attempt and re-reading every file on resume ingests each record under its own
// attempt. Every file the orchestrator writes is written atomically (temp, rename), and
// synced (fsync) except params.json on first launch (see prepare_trial_dir).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/atomic_file.hpp"  // write_file_atomic
#include "common/result.hpp"

namespace dlsweep::orch {

/// The trial dir of trial `number`, under runs_dir/study.
std::filesystem::path trial_dir_for(const std::filesystem::path& runs_dir, const std::string& study,
                                    long long number);


/// Creates the trial dir (and checkpoints/) and writes params.json atomically. Not synced
/// (an fsync per trial was half of the orchestrator's time per trial): the database row,
/// committed before the launch, is where params live; a process kill loses neither, and
/// `resume` rewrites params.json from the database, durably, before it relaunches a trial
/// (restore_params_file), so not even a crash of the OS leaves a relaunch a torn file.
Status prepare_trial_dir(const std::filesystem::path& dir, const nlohmann::json& params);
/// resume: params.json rewritten from the database's params, synced.
Status restore_params_file(const std::filesystem::path& dir, const nlohmann::json& params);

/// PBT: copies the checkpoints/ of trial dir `from` into `to`'s checkpoints/ (files replaced,
/// modification times kept, so the newest checkpoint stays the newest). Returns how many files
/// were copied (0 when `from` has none).
Result<std::size_t> copy_checkpoints(const std::filesystem::path& from, const std::filesystem::path& to);

/// Asks the trial to stop: writes control.json {"action":"stop","reason":...}.
Status request_stop(const std::filesystem::path& dir, const std::string& reason);

/// The reason of the stop control.json asks for ("" when it asks none): what the previous
/// orchestrator asked of a trial before it died.
std::string asked_stop(const std::filesystem::path& dir);

/// True when metrics.jsonl holds a `final` record: the attempt finished its work (resume
/// never runs it again).
bool has_final_record(const std::filesystem::path& dir);

/// Removes a stale control.json before a relaunch.
void clear_control(const std::filesystem::path& dir);

/// outcome.json (common/program_outcome.hpp): removed before each launch, so that an attempt
/// never ends with an earlier one's word; read when an attempt exits 0 — its text, at most
/// 64 KiB (a longer file is damaged anyway), nullopt when there is none.
void clear_program_outcome(const std::filesystem::path& dir);
std::optional<std::string> read_program_outcome(const std::filesystem::path& dir);

/// metrics.jsonl, or metrics.attempt-<N>.jsonl for an attempt already rotated away.
std::filesystem::path metrics_file(const std::filesystem::path& dir);
std::filesystem::path rotated_metrics_file(const std::filesystem::path& dir, int attempt);

/// The last `max_lines` non-empty lines of a log file joined by " | ", at most ~400
/// characters (the end kept); "" when the file is absent or empty. For failure messages.
std::string log_tail(const std::filesystem::path& file, std::size_t max_lines);

/// What `file` holds past byte `offset` (where a reader of whole lines stopped) when that is
/// a last line without its newline: the record a program wrote but never ended with '\n'
/// (a torn line to a reader, never read). At most ~120 characters, the start kept; "" when
/// nothing but whitespace follows `offset`, or the file cannot be read.
std::string unterminated_tail(const std::filesystem::path& file, std::uint64_t offset);

/// decided.json (protocol.hpp kDecidedFile): the records up to `seq` of `attempt` are decided on.
Status write_decided(const std::filesystem::path& dir, int attempt, std::int64_t seq);
/// suggested.json (protocol.hpp kSuggestedFile): the answers to the program's suggest_* requests.
Status write_suggested(const std::filesystem::path& dir, const nlohmann::json& answers);

/// Renames metrics.jsonl to metrics.attempt-<attempt>.jsonl (no-op if absent).
Status rotate_metrics(const std::filesystem::path& dir, int attempt);

}  // namespace dlsweep::orch
