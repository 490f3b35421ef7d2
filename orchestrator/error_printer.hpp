// error_printer.hpp — the one place a verb's error reaches the terminal (as ninja's single
// Status printer owns its terminal): every `dlsweep` verb reports an Error through it, so
// the layout and the exit code follow from the error, not from each call site.
//
// Layout: "error: WHERE: WHAT (fix: FIX)" on one line (Error::message()), then, where the
// verb says what did not happen, that on its own line ("nothing was recorded."). Exit code
// by kind (common/exit_codes.hpp): the user's input (bad_input) or a name that does not
// exist (not_found) is 2 (usage); anything else (database, disk, scheduler) is 1 (runtime),
// unless the verb knows better and says so.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::orch {

/// While one exists, the printer's lines go to `sink` instead of stderr: during a sweep,
/// the progress (the terminal and the study's orchestrator log).
class ErrorSink {
 public:
  explicit ErrorSink(std::function<void(const std::string&)> sink);
  ~ErrorSink();
  ErrorSink(const ErrorSink&) = delete;
  ErrorSink& operator=(const ErrorSink&) = delete;

 private:
  std::function<void(const std::string&)> previous_;
};

/// The exit code an error of this kind means: usage (2) for bad_input and not_found,
/// runtime (1) otherwise.
int exit_code_for(const Error& e);

/// Prints `e` (and `consequence`, when given, on its own line); returns exit_code_for(e).
int print_error(const Error& e, std::string_view consequence = {});
/// The same with the exit code the verb chooses.
int print_error(const Error& e, int code, std::string_view consequence = {});
/// Every error of a list (a study file's), then `consequence` once; returns `code`.
int print_errors(const std::vector<Error>& errors, int code, std::string_view consequence = {});
/// `e` placed under `prefix` (a file, an option): "PREFIX: WHERE: WHAT (fix: FIX)".
Error under(std::string_view prefix, Error e);

/// "warning: ..." (the verb goes on).
void print_warning(const Error& e);
/// One "error: MESSAGE" line: for lists of errors of other types (a study file's
/// ValidationErrors), through the templates below.
void print_error_line(std::string_view message);

/// A stored study this dlsweep cannot read (each error, "stored study: "-prefixed); returns
/// the runtime exit code: the database, not the user's input, is at fault.
template <class Errors>
int print_stored_study_errors(const Errors& errors) {
  for (const auto& e : errors) print_error_line("stored study: " + e.message());
  return 1;  // exit_codes::cli::runtime
}

}  // namespace dlsweep::orch
