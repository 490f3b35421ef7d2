#!/usr/bin/env bash
# suites_check.sh — the ctest entries that share test_e2e (tests/e2e/CMakeLists.txt) run every
# case of it exactly once: each case the binary runs by default is selected by exactly one
# suite's filter, and no filter selects a case the default run leaves out (a hidden one).
# A case added in a new file, or with new tags, lands in the catch-all suite and is counted.
#   suites_check.sh TEST_E2E FILTER...   (each FILTER as the suite passes it, after --filenames-as-tags)
set -euo pipefail
exe=$1
shift
# Catch2 v2 exits with the number of cases it listed: the status says nothing here.
names() { { "$exe" "$@" || true; } | sed '/^$/d' | sort; }
all=$(names --list-test-names-only)
[[ -n $all ]] || { echo "suites_check: $exe lists no test cases" >&2; exit 1; }
picked=""
for filter in "$@"; do
  mine=$(names --filenames-as-tags --list-test-names-only "$filter")
  [[ -n $mine ]] || { echo "suites_check: filter '$filter' selects nothing" >&2; exit 1; }
  picked+="$mine"$'\n'
done
picked=$(printf '%s' "$picked" | sed '/^$/d' | sort)
twice=$(printf '%s\n' "$picked" | uniq -d)
missing=$(comm -23 <(printf '%s\n' "$all") <(printf '%s\n' "$picked" | uniq))
extra=$(comm -13 <(printf '%s\n' "$all") <(printf '%s\n' "$picked" | uniq))
rc=0
[[ -z $twice ]] || { echo "suites_check: in more than one suite:"; echo "$twice"; rc=1; }
[[ -z $missing ]] || { echo "suites_check: in no suite:"; echo "$missing"; rc=1; }
[[ -z $extra ]] || { echo "suites_check: not in the default run (hidden), yet selected:"; echo "$extra"; rc=1; }
n=$(printf '%s\n' "$all" | wc -l)
[[ $rc -ne 0 ]] || echo "suites_check: $n test cases, each in exactly one of $# suites"
exit $rc
