#include "engine/failure_policy.hpp"

#include <fmt/format.h>

#include "common/exit_codes.hpp"

namespace dlsweep::orch {

namespace trial_exit = exit_codes::trial;

FailureVerdict classify_failure(sched::JobEventKind kind, int exit_code, int signal, bool cannot_start) {
  using K = sched::JobEventKind;
  if (cannot_start) return {false, "the program could not be started (missing or not executable)"};
  if (kind == K::lost) return {true, "lost"};
  if (kind == K::cancelled) return {true, "cancelled by the backend"};
  if (signal != 0) return {true, fmt::format("killed by signal {}", signal)};
  switch (exit_code) {
    case trial_exit::bad_input: return {false, "exit 2: rejected its parameters, input or command line (a missing script, too)"};
    case trial_exit::diverged: return {false, "diverged (exit 3: loss became NaN/inf)"};
    case trial_exit::not_executable: return {false, "program or script not executable (exit 126)"};
    case trial_exit::not_found: return {false, "program or script not found (exit 127)"};
    case trial_exit::stopped: return {true, "stopped unasked (exit 75)"};
    case trial_exit::setup_failed:
      return {false, "a backend.setup line failed before the trial started (exit 78; stderr.log names it)"};
    default: return {true, fmt::format("exit code {}", exit_code)};
  }
}

std::optional<std::string> missing_objective(const std::string& metric, const std::set<std::string>& reported) {
  if (reported.contains(metric)) return std::nullopt;
  if (reported.empty()) return fmt::format("objective {} was never reported (it reported no metric)", metric);
  std::string names;
  for (const auto& n : reported) names += (names.empty() ? "" : ", ") + n;
  return fmt::format("objective {} was never reported (it reported: {})", metric, names);
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
/// Where a path written in a message begins, looking back from `at`: after a space, a quote,
/// a bracket, '=' or ':' (`error: /x/...`, `file="/x/..."`, `(/x/...)`).
bool ends_path(char c) {
  return c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '`' || c == '(' || c == '[' || c == '{' ||
         c == '<' || c == '=' || c == ':' || c == ',';
}

/// The length of the number at the start of `s` (`17`, `0.25`, `1e-3`, `0x7f3a`), 0 if none.
std::size_t number_at(std::string_view s) {
  if (s.empty() || !is_digit(s[0])) return 0;
  std::size_t i = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && is_hex(s[2])) {
    i = 2;
    while (i < s.size() && is_hex(s[i])) ++i;
    return i;
  }
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i + 1 < s.size() && s[i] == '.' && is_digit(s[i + 1])) {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    if (j < s.size() && is_digit(s[j])) {
      while (j < s.size() && is_digit(s[j])) ++j;
      i = j;
    }
  }
  return i;
}

}  // namespace

std::string failure_message_shape(std::string_view line) {
  // Trial directories first (their numbers would otherwise be taken for any number): the
  // path up to and including trial-NNNN is the trial's own.
  std::string text;
  text.reserve(line.size());
  constexpr std::string_view kTrial = "trial-";
  std::size_t from = 0;
  while (from < line.size()) {
    const std::size_t at = line.find(kTrial, from);
    if (at == std::string_view::npos) break;
    std::size_t end = at + kTrial.size();
    const std::size_t digits = end;
    while (end < line.size() && is_digit(line[end])) ++end;
    const bool dir_end = end == line.size() || line[end] == '/' || ends_path(line[end]) || line[end] == '.' ||
                         line[end] == ')' || line[end] == ']';
    if (end == digits || !dir_end || (at > 0 && !ends_path(line[at - 1]) && line[at - 1] != '/')) {
      text.append(line.substr(from, end - from));
      from = end;
      continue;
    }
    std::size_t start = at;  // back to where the path begins
    while (start > from && !ends_path(line[start - 1])) --start;
    text.append(line.substr(from, start - from));
    text += "<trial>";
    from = end;
  }
  text.append(line.substr(from));

  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    // A number on its own, or ending a word (`rank3`, `cuda:0`, `trial-7`).
    if (const std::size_t n = number_at(std::string_view(text).substr(i)); n > 0) {
      out += 'N';
      i += n;
      continue;
    }
    out += text[i++];
  }
  return out;
}

std::string failure_signature(const std::string& failure, std::string_view last_stderr_line) {
  return failure + '\n' + failure_message_shape(last_stderr_line);
}

std::string fail_fast_fix(const std::string& why, const std::string& db, const std::string& study,
                          const std::string& study_file) {
  const std::string dlsweep = db.empty() ? "dlsweep" : fmt::format("dlsweep --db {}", db);
  const std::string file = study_file.empty() ? "STUDY_FILE" : study_file;
  const bool cannot_start = why.find("could not be started") != std::string::npos ||
                            why.find("(exit 127)") != std::string::npos || why.find("(exit 126)") != std::string::npos ||
                            why.find("can't open file") != std::string::npos;
  if (cannot_start)
    return fmt::format("the study's trial.command cannot start the program: correct it in {0}, then `{1} submit {0} "
                       "--replace` (resume would run the recorded command again)",
                       file, dlsweep);
  return fmt::format("fix the program, then `{0} resume {1} --rerun failed,cancelled` runs the failed trials again and "
                     "the rest; if the study file is at fault, correct it and `{0} submit {2} --replace` (resume runs "
                     "the study as recorded)",
                     dlsweep, study, file);
}

}  // namespace dlsweep::orch
