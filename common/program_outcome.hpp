// program_outcome.hpp — outcome.json, the trial program's own word on how an attempt ended
// where its exit status cannot say it (part of the trial protocol, protocol.hpp):
//
//   outcome.json  {"attempt": A, "state": "PRUNED"|"COMPLETE", "reason": "..."}, written
//                 atomically by the program (rank 0) before it exits 0.
//     PRUNED    it stopped itself as pruned without dlsweep's ask (dlsweep_optuna: the
//               objective raised TrialPruned on its own rule);
//     COMPLETE  it returned its objective although dlsweep advised a prune (dlsweep_optuna:
//               should_prune() is advice, as in Optuna).
//
// dlsweep removes the file before each launch and reads it only on exit 0 and only for the
// attempt it names (engine/trial_outcome.hpp decides what it changes). Pure: text in, value
// out; the file is read by the engine (engine/trial_files.hpp).
#pragma once

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace dlsweep::protocol {

inline constexpr const char* kOutcomeFile = "outcome.json";

enum class ProgramState { pruned, complete };

struct ProgramOutcome {
  int attempt = 0;
  ProgramState state = ProgramState::complete;
  std::string reason;  ///< may be empty
};

/// "PRUNED" / "COMPLETE": the words the file holds (the trial states' names).
std::string_view to_string(ProgramState s);

/// Parses the file's text. Errors say what is wrong (not JSON, a field missing or of the
/// wrong type, a state other than PRUNED/COMPLETE) with kOutcomeFile as `where` and the
/// expected form as `fix`.
Result<ProgramOutcome> parse_program_outcome(std::string_view text);

/// One line, as the program writes it (for tests and other programs' authors).
std::string to_json(const ProgramOutcome& o);

}  // namespace dlsweep::protocol
