// quote.hpp — the two quoting languages a study value can meet on its way into a
// Slurm job, and the decoder of the second one.
//
//  - sbatch_quote(): a value on an `#SBATCH --opt=VALUE` line. sbatch (not a shell) splits
//    these lines: whitespace separates arguments, ' and " group, a backslash escapes the
//    next character, an unquoted # starts a comment. The result is always one argument
//    equal to the value. A value with a line break or NUL cannot be expressed and is refused.
//  - index_word(): one word of the index file that the batch script splits with
//    `eval "set -- $line"`. The output is inert for bash: a bare word of safe characters, a
//    '...' word (shell_quote), or a $'...' word when the value holds control characters
//    (line breaks included), so every index record stays on one line. NUL is refused.
//
// Invariant: for every accepted s, bash `eval "set -- $(index_word(s))"; printf %s "$1"`
// prints s, and split_index_line(index_word(s)) == {s}. Tests check both with real bash.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched::slurm {

/// Quotes `value` as one argument of an #SBATCH line. `what` names the value in errors
/// ("partition", "extra_sbatch[2]").
Result<std::string> sbatch_quote(std::string_view value, std::string_view what);

/// Quotes `value` as one word of an index line (see above).
Result<std::string> index_word(std::string_view value, std::string_view what);

/// Splits an index line back into words. Accepts exactly the forms index_word and
/// shell_quote produce (bare words, '...', \', $'...'), separated by single spaces or tabs.
Result<std::vector<std::string>> split_index_line(std::string_view line);

/// True if s is a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*).
bool valid_env_name(std::string_view s);

/// The first control character (< 0x20 or 0x7f) in s, or -1: used to refuse line breaks in
/// values that must stay on one line.
int first_control_char(std::string_view s);

}  // namespace dlsweep::sched::slurm
