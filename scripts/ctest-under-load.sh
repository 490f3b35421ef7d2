#!/usr/bin/env bash
# ctest-under-load.sh [RUNS] [BUILD_DIR] — the check of issue 42: the whole suite under
# `ctest -j2` RUNS times in a row (default 3) while `stress --cpu 1` keeps one more core busy,
# as on a slower or shared machine. Stops at the first failing run. Prints each suite's
# duration per run and, at the end, the slowest run of each suite against its ctest TIMEOUT,
# so a suite that nears its timeout shows before CI fails on it. Needs Debian's stress
# (scripts/install-deps.sh installs it) and a built BUILD_DIR (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
dir=${2:-build}
command -v stress > /dev/null || { echo "ctest-under-load: stress missing (apt-get install stress)" >&2; exit 2; }
[[ -f $dir/CTestTestfile.cmake ]] || { echo "ctest-under-load: $dir is not a configured build (scripts/build.sh)" >&2; exit 2; }
stress --cpu 1 > /dev/null 2>&1 &
load=$!
trap 'kill $load 2> /dev/null || true' EXIT
logs=()
for i in $(seq 1 "$runs"); do
  log=$dir/ctest-under-load.$i.log
  logs+=("$log")
  t0=$SECONDS
  rc=0
  ctest --test-dir "$dir" --output-on-failure -j2 --timeout 900 > "$log" 2>&1 || rc=$?
  echo "ctest-under-load: run $i of $runs: exit $rc in $((SECONDS - t0)) s ($(grep -E '^[0-9]+% tests passed' "$log" || echo 'no summary'))"
  [[ $rc -eq 0 ]] || { grep -E '\*\*\*|Failed|Timeout' "$log" | head -20; exit "$rc"; }
done
# Per suite: its duration in each run, and its TIMEOUT (ctest --show-only=json-v1).
python3 - "$dir" "${logs[@]}" <<'PY'
import json, re, subprocess, sys
d, logs = sys.argv[1], sys.argv[2:]
info = json.loads(subprocess.run(["ctest", "--test-dir", d, "--show-only=json-v1"], capture_output=True, text=True).stdout)
timeout = {}
for t in info.get("tests", []):
    for p in t.get("properties", []):
        if p["name"] == "TIMEOUT":
            timeout[t["name"]] = float(p["value"])
times = {}
for log in logs:
    for m in re.finditer(r"Test\s+#\d+: (\S+) \.+\s+Passed\s+([\d.]+) sec", open(log).read()):
        times.setdefault(m.group(1), []).append(float(m.group(2)))
print(f"{'suite':28} {'runs (s)':>26} {'timeout':>8} {'max/timeout':>11}")
for name, ts in sorted(times.items(), key=lambda kv: -max(kv[1])):
    to = timeout.get(name, 900.0)
    print(f"{name:28} {' '.join(f'{t:7.1f}' for t in ts):>26} {to:8.0f} {max(ts) / to:10.0%}")
PY
