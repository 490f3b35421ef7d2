// result.hpp — the one way expected failures travel in dlsweep.
//
// Every function that can fail for reasons outside the program's control (bad input,
// missing files, a busy database, a dead controller) returns Result<T>. An Error says
// three things a user needs: what went wrong, where (file and key path, or the object),
// and how to fix it. Exceptions are reserved for broken invariants (bugs); each main()
// has exactly one catch that turns them into exit code 70.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace dlsweep {

/// What kind of failure an Error is, for callers that must act on it (retry, exit code)
/// without matching message text. Set by the layer that knows; `general` when nobody needs
/// to tell it apart.
enum class ErrorKind {
  general,      ///< nothing more specific is known
  bad_input,    ///< the user's input (study file, params.json, CLI argument) is wrong
  not_found,    ///< a named file, study, trial or job does not exist
  timeout,      ///< no answer in time: the request may or may not have taken effect
  unavailable,  ///< a service (controller, database lock) is down or busy; retrying may help
  resources,    ///< the machine lacks what is asked (compute backend, ISA, memory)
};

/// An expected failure, written for the person who has to fix it.
struct Error {
  std::string what;   ///< what went wrong ("expected a number, got 'abc'")
  std::string where;  ///< file and key path, or the object involved ("study.yaml: space.lr.min")
  std::string fix;    ///< what to do about it; may be empty
  ErrorKind kind = ErrorKind::general;  ///< machine-readable class; never shown instead of `what`

  /// The same error, classified.
  Error with_kind(ErrorKind k) const& {
    Error e = *this;
    e.kind = k;
    return e;
  }
  bool is(ErrorKind k) const { return kind == k; }

  /// "where: what (fix: ...)" — the single form every CLI prints.
  std::string message() const {
    std::string m;
    if (!where.empty()) m += where + ": ";
    m += what;
    if (!fix.empty()) m += " (fix: " + fix + ")";
    return m;
  }
};

template <class T>
using Result = std::expected<T, Error>;

/// Result of an operation that yields nothing but can fail.
using Status = std::expected<void, Error>;

/// Builds the error side of a Result: `return fail("no such file", path, "check --data-dir");`
inline std::unexpected<Error> fail(std::string what, std::string where = {}, std::string fix = {}) {
  return std::unexpected<Error>(Error{std::move(what), std::move(where), std::move(fix)});
}

/// As fail(), with a kind: `return fail_as(ErrorKind::not_found, "no such study", name);`
inline std::unexpected<Error> fail_as(ErrorKind kind, std::string what, std::string where = {}, std::string fix = {}) {
  return std::unexpected<Error>(Error{std::move(what), std::move(where), std::move(fix), kind});
}

/// Prefixes the location of an error coming up from a lower layer.
inline std::unexpected<Error> fail_in(const Error& inner, const std::string& outer_where) {
  Error e = inner;
  e.where = inner.where.empty() ? outer_where : outer_where + ": " + inner.where;
  return std::unexpected<Error>(std::move(e));
}

}  // namespace dlsweep
