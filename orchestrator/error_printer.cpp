// error_printer.cpp — see error_printer.hpp.
#include "orchestrator/error_printer.hpp"

#include <fmt/format.h>

#include "common/exit_codes.hpp"

namespace dlsweep::orch {

namespace exit_code = ::dlsweep::exit_codes::cli;

namespace {
std::function<void(const std::string&)>& sink() {
  static std::function<void(const std::string&)> s;
  return s;
}
void put(const std::string& line) {
  if (sink()) sink()(line);
  else fmt::print(stderr, "{}\n", line);
}
}  // namespace

ErrorSink::ErrorSink(std::function<void(const std::string&)> s) : previous_(std::move(sink())) { sink() = std::move(s); }
ErrorSink::~ErrorSink() { sink() = std::move(previous_); }

int exit_code_for(const Error& e) {
  return e.is(ErrorKind::bad_input) || e.is(ErrorKind::not_found) ? exit_code::usage : exit_code::runtime;
}

int print_error(const Error& e, std::string_view consequence) { return print_error(e, exit_code_for(e), consequence); }

int print_error(const Error& e, int code, std::string_view consequence) {
  print_error_line(e.message());
  if (!consequence.empty()) put(std::string(consequence));
  return code;
}

int print_errors(const std::vector<Error>& errors, int code, std::string_view consequence) {
  for (const auto& e : errors) print_error_line(e.message());
  if (!consequence.empty()) put(std::string(consequence));
  return code;
}

Error under(std::string_view prefix, Error e) {
  e.where = e.where.empty() ? std::string(prefix) : std::string(prefix) + ": " + e.where;
  return e;
}

void print_error_line(std::string_view message) { put(fmt::format("error: {}", message)); }

void print_warning(const Error& e) { put("warning: " + e.message()); }

}  // namespace dlsweep::orch
