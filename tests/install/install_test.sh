#!/usr/bin/env bash
# install_test.sh SOURCE_DIR BUILD_DIR — the release tarball (scripts/release.sh) unpacked
# and run by a non-root user inside a root directory that holds only the unpacked tarball,
# a static busybox (the shell) and a trial program: no /usr, no /lib, so nothing of this
# machine's libraries can be found. Run in a user namespace with bwrap. In it: `--version`,
# `submit --dry-run` of a Slurm study (the batch template found beside the binary), and a
# local sweep of a protocol program (a shell script) to its answer (`best`).
# Exit 77 (ctest: SKIPPED) when it cannot run here: no bwrap, no static busybox, user
# namespaces disabled, or not x86-64. Run as root, it does the unprivileged part as nobody.
set -euo pipefail
skip() { echo "install_test: SKIPPED: $*"; exit 77; }
die() { echo "install_test: FAILED: $*" >&2; exit 1; }

if [[ ${1:-} == --unprivileged ]]; then
  # Part 2, as the unprivileged user: unpack, build the root, run inside it.
  work=$2 busybox=$3
  root=$work/root
  mkdir -p "$root"/{bin,opt,proc,dev,tmp,work}
  tar -xzf "$work/dlsweep.tar.gz" -C "$root/opt"
  dirs=("$root"/opt/dlsweep-*)
  [[ ${#dirs[@]} -eq 1 && -x ${dirs[0]}/bin/dlsweep ]] || die "the tarball holds no single dlsweep-<version>/bin/dlsweep: $(ls "$root/opt")"
  prefix=/opt/${dirs[0]##*/}
  # `pip install share/dlsweep/python` installs what pyproject.toml names: every module and
  # package of it must be in the tarball (pip skips a missing py-module without a word).
  py=${dirs[0]}/share/dlsweep/python
  for m in $(sed -n 's/^py-modules *= *\[\(.*\)\]/\1/p' "$py/pyproject.toml" | tr -d '",'); do
    [[ -f $py/$m.py ]] || die "the tarball lacks share/dlsweep/python/$m.py, which pyproject.toml names"
  done
  for p in $(sed -n 's/^packages *= *\[\(.*\)\]/\1/p' "$py/pyproject.toml" | tr -d '",'); do
    [[ -f $py/$p/__init__.py ]] || die "the tarball lacks share/dlsweep/python/$p/, which pyproject.toml names"
  done
  cp "$busybox" "$root/bin/busybox"
  for applet in sh cat sed grep ls test printf echo readlink; do ln -s busybox "$root/bin/$applet"; done

  cat > "$root/work/trial.sh" <<'TRIAL'
#!/bin/sh
# A protocol program: loss = x * x, one eval and one final record.
x=$(sed -n 's/.*"x": *\([0-9-]*\).*/\1/p' params.json)
[ -n "$x" ] || { echo "no x in params.json: $(cat params.json)" >&2; exit 2; }
printf '{"seq": 0, "kind": "eval", "step": 1, "wall_s": 0.1, "metrics": {"loss": %d}}\n' $((x * x + 1)) >> metrics.jsonl
printf '{"seq": 1, "kind": "final", "step": 2, "wall_s": 0.2, "metrics": {"loss": %d}}\n' $((x * x)) >> metrics.jsonl
TRIAL
  cat > "$root/work/local.yaml" <<'STUDY'
name: chroot-local
backend: {kind: local, max_concurrent: 2}
trial:
  command: [/bin/sh, "{study_dir}/trial.sh"]
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space:
  x: [3, -1, 2]
STUDY
  cat > "$root/work/slurm.yaml" <<'STUDY'
name: chroot-slurm
backend: {kind: slurm, max_concurrent: 2, partition: batch, time: 5}
trial:
  command: [/bin/sh, "{study_dir}/trial.sh"]
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space:
  x: [1, 2]
STUDY
  cat > "$root/work/check.sh" <<'CHECK'
set -e
fail() { echo "install_test (inside the root): FAILED: $*" >&2; exit 1; }
for d in /usr /lib /lib64 /etc; do [ ! -e "$d" ] || fail "$d exists inside the test root"; done
cd /work
v=$(dlsweep --version) || fail "dlsweep --version failed"
echo "inside: $v"
dlsweep --db /work/dry.db submit --dry-run slurm.yaml > dry.out 2>&1 || { cat dry.out; fail "submit --dry-run of a Slurm study failed"; }
cat dry.out
ls dlsweep-runs/chroot-slurm.dry-run/dry-run-*.sh > /dev/null 2>&1 || { ls -R dlsweep-runs; fail "no dry-run batch script written"; }
grep -q '^#SBATCH' dlsweep-runs/chroot-slurm.dry-run/dry-run-*.sh || fail "the dry-run batch script has no #SBATCH line"
dlsweep --db /work/local.db submit local.yaml > local.out 2>&1 || { cat local.out; fail "the local sweep failed"; }
dlsweep --db /work/local.db status chroot-local > status.out 2>&1 || { cat status.out; fail "status failed"; }
cat status.out
dlsweep --db /work/local.db best chroot-local > best.out 2>&1 || { cat best.out; fail "best failed"; }
cat best.out
grep -q 'x=-1' best.out || fail "best did not name the trial with x=-1 (loss 1)"
echo "inside: all checks passed"
CHECK
  set +e
  bwrap --unshare-all --die-with-parent --bind "$root" / --proc /proc --dev /dev --tmpfs /tmp \
    --chdir /work --clearenv --setenv PATH "$prefix/bin:/bin" --setenv HOME /work \
    /bin/sh /work/check.sh
  rc=$?
  set -e
  [[ $rc -eq 0 ]] || die "the checks inside the root failed (exit $rc)"
  echo "install_test: passed (as uid $(id -u), prefix $prefix)"
  exit 0
fi

src=${1:?usage: install_test.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: install_test.sh SOURCE_DIR BUILD_DIR}
[[ $(uname -m) == x86_64 ]] || skip "the release tarball is linux-x86_64, this is $(uname -m)"
command -v bwrap > /dev/null || skip "bwrap not found (Debian: bubblewrap)"
busybox=
for b in /bin/busybox /usr/bin/busybox; do [[ -x $b ]] && { busybox=$b; break; }; done
[[ -n $busybox ]] || skip "busybox not found (Debian: busybox-static)"
LC_ALL=C readelf -l "$busybox" 2> /dev/null | grep -q 'program interpreter' &&
  skip "$busybox is dynamically linked; the test root needs a static one (Debian: busybox-static)"

as_user=()
uid=$(id -u)
if [[ $uid -eq 0 ]]; then
  uid=65534
  command -v setpriv > /dev/null || skip "running as root and setpriv (util-linux) is missing to become nobody"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin HOME=/nonexistent)
fi
"${as_user[@]}" bwrap --unshare-all --ro-bind / / true 2> /dev/null ||
  skip "bwrap cannot create a user namespace here as uid $uid (kernel.unprivileged_userns_clone or user.max_user_namespaces)"

work=$(mktemp -d "${TMPDIR:-/tmp}/dlsweep-install-test.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
tarball=$("$src/scripts/release.sh" --build-dir "$build" --out "$work/out" | tail -n 1) ||
  die "scripts/release.sh --build-dir $build failed (its output is above)"
[[ -f $tarball ]] || die "scripts/release.sh printed '$tarball', not a tarball"
[[ ${tarball##*/} =~ ^dlsweep-[^/]+-linux-x86_64\.tar\.gz$ ]] || die "unexpected tarball name ${tarball##*/}"
cp "$tarball" "$work/dlsweep.tar.gz"
chmod 0755 "$work"
[[ ${#as_user[@]} -eq 0 ]] || chown -R 65534:65534 "$work"
"${as_user[@]}" bash "$(realpath "$0")" --unprivileged "$work" "$busybox"
