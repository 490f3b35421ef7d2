#!/usr/bin/env bash
# layering_test.sh — the folder dependencies of docs/architecture.md, checked on the sources:
# common/ includes nobody's headers but its own; db/, search/, schedulers/ and trainer/ include
# only common/ (and themselves); orchestrator/ uses all of those but not trainer/ (the
# trainer is a standalone program; what both need, like the params.json table, is in common/).
# analysis/ (the batch-size model, noise scale, speedups, plan) uses common/ and db/ only.
# report/ (the report model and page) reads db/ and the analysis/ library.
# study/ (the study file) uses common/, search/, schedulers/; engine/ (the sweep) adds db/ and study/;
# orchestrator/ (the command line) sits on all of them. Concrete backends stay inside schedulers/.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
check() {  # check FOLDER ALLOWED...
  local dir=$1; shift
  local allowed="$dir $*"
  while IFS= read -r line; do
    inc=$(sed -E 's/^#include "([a-z_]+)\/.*/\1/' <<<"${line#*:}")
    if [[ " $allowed " != *" $inc "* ]]; then
      echo "layering: ${line%%:*} includes $inc/ (allowed from $dir/: $allowed)" >&2
      bad=1
    fi
  done < <(grep -rHE '^#include "[a-z_]+/' "$dir" --include='*.cpp' --include='*.hpp' | cut -d: -f1,2-)
}
check common
check db common
check search common
check schedulers common
check trainer common
check study common search schedulers
check engine common db search schedulers study
check analysis common db
check report common db analysis
check serve common db report
check orchestrator common db search schedulers study engine analysis report serve
# analysis/ reads the database in one thin file (load.*); everything else in it is pure.
while IFS= read -r f; do
  echo "layering: $f includes db/ (in analysis/ only load.hpp/load.cpp may)" >&2
  bad=1
done < <(grep -rlE '^#include "db/' analysis --include='*.cpp' --include='*.hpp' | grep -vE '^analysis/load\.(hpp|cpp)$' || true)
# Slurm knowledge only in schedulers/ (issues 19, 31): no file outside schedulers/ names a
# concrete backend (schedulers/slurm/, schedulers/local/); a study holds each kind's options as
# schedulers/backend_options.hpp, which the kind itself reads and writes (BackendKind).
while IFS= read -r f; do
  echo "layering: $f includes schedulers/slurm/ or schedulers/local/ (go through schedulers/backend.hpp)" >&2
  bad=1
done < <(grep -rlE '^#include "schedulers/(slurm|local)/' common db search trainer study engine analysis report serve \
           orchestrator --include='*.cpp' --include='*.hpp' || true)
# Inside schedulers/: slurm/ and local/ do not know each other.
while IFS= read -r f; do echo "layering: $f: schedulers/slurm/ and schedulers/local/ include each other" >&2; bad=1; done \
  < <({ grep -rlE '^#include "schedulers/local/' schedulers/slurm; grep -rlE '^#include "schedulers/slurm/' schedulers/local; } || true)

exit $bad
