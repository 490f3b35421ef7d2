#!/usr/bin/env bash
# gpu-comm-check.sh BUILD_DIR OUT_DIR — data parallelism on GPU buffers and the device choice
# (issue 39, items 4 and 5), on a GPU host (called by scripts/gpu-check.sh; one GPU is enough;
# DLSWEEP_FMNIST_DIR names Fashion-MNIST). Each check is short:
#   1. bench_allreduce on one rank: mpi-host, mpi-staged, nccl, nccl-hier by message size
#      (OSU-style table, ratios of the same run); "bytes staged" of nccl must be 0;
#   2. dlsweep-train with comm: nccl and comm: nccl-hierarchical on one rank on the GPU: trains,
#      and the start line names the communicator;
#   3. device: auto on the GPU trains there (no fallback line); with no visible GPU
#      (CUDA_VISIBLE_DEVICES=) it trains on the CPU with one line naming why;
#   4. with mpirun and an MPI build: 1 vs 2 ranks sharing the GPU (comm: mpi, pinned staging):
#      losses within 1e-5 relative; bench_allreduce on 2 ranks (the MPI columns; NCCL refuses
#      two ranks on one GPU). Skipped, saying so, without mpirun or MPI.
# (test_trainer_cuda, run by gpu-check.sh, holds the device-path test: comm: nccl and
# nccl-hierarchical on device buffers stage nothing; tests/trainer/comm/nccl_device_test.cpp.)
# Prints PASS/FAIL/SKIP lines; exits with the number of failed checks.
set -uo pipefail
build=${1:?usage: gpu-comm-check.sh BUILD_DIR OUT_DIR}
out=${2:?usage: gpu-comm-check.sh BUILD_DIR OUT_DIR}
tr=$build/bin/dlsweep-train
: "${DLSWEEP_FMNIST_DIR:=/usr/share/datasets/fashion-mnist}"
work=$(mktemp -d)
fails=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
# Fashion-MNIST where it is, else the synthetic set (same sizes).
data='"dataset":"fashion-mnist","data_dir":"'$DLSWEEP_FMNIST_DIR'"'
[[ -e $DLSWEEP_FMNIST_DIR/train-images-idx3-ubyte.gz ]] || data='"dataset":"synthetic"'
base=$data',"train_subset":3000,"test_subset":1000,"batch_size":100,"hidden":[128,64],"base_lr":0.05,"bucket_mb":0.05'
trial() {  # trial NAME JSON [launcher...]
  local d=$work/$1 json=$2; shift 2
  mkdir -p "$d" && echo "$json" >"$d/params.json"
  timeout 300 "$@" "$tr" --trial-dir "$d" >"$d/stdout" 2>"$d/stderr"
  echo $? >"$d/rc"
}
rc() { cat "$work/$1/rc"; }
logs() { grep '"kind":"log"' "$work/$1/metrics.jsonl" 2>/dev/null; }

echo "== bench_allreduce, 1 rank"
"$build/bin/bench_allreduce" --sizes "${ALLREDUCE_SIZES:-4K,64K,1M,16M,64M}" --iters 20 --warmup 3 >"$out/allreduce-1.txt" 2>&1
brc=$?
cat "$out/allreduce-1.txt"
check "bench_allreduce ran (rc $brc)" '[[ $brc -eq 0 ]]'
check "nccl stages no byte through the host" 'grep -q "# nccl: 0 bytes staged" "$out/allreduce-1.txt"'

for c in nccl nccl-hierarchical; do
  echo "== dlsweep-train comm: $c, 1 rank, device cuda"
  trial "comm-$c" "{$base,\"epochs\":1,\"device\":\"cuda\",\"comm\":\"$c\"}"
  check "comm $c trains on the GPU (rc $(rc "comm-$c"))" "[[ $(rc "comm-$c") -eq 0 ]] && logs comm-$c | grep -q '($c comm)'"
  [[ $(rc "comm-$c") -eq 0 ]] || tail -3 "$work/comm-$c/stderr"
done

echo "== device: auto"
trial auto-gpu "{$base,\"epochs\":1,\"device\":\"auto\"}"
check "device auto trains on the GPU, no fallback line" \
  "[[ $(rc auto-gpu) -eq 0 ]] && logs auto-gpu | grep -q 'cuda kernels on cuda:' && ! logs auto-gpu | grep -q 'device auto: training on the CPU'"
CUDA_VISIBLE_DEVICES= trial auto-cpu "{$base,\"epochs\":1,\"device\":\"auto\"}"
logs auto-cpu | grep 'device auto' | head -1
check "device auto without a visible GPU says why it trains on the CPU" \
  "[[ $(rc auto-cpu) -eq 0 ]] && [[ \$(logs auto-cpu | grep -c 'device auto: training on the CPU, because') -eq 1 ]]"

echo "== 1 vs 2 ranks on one GPU (comm: mpi, pinned staging)"
mpirun=$(command -v mpirun || true)
two="{$base,\"epochs\":2,\"device\":\"cuda\",\"comm\":\"mpi\"}"
if [[ -z $mpirun ]]; then
  echo "SKIP 1 vs 2 ranks: no mpirun on this host"
else
  trial one-rank "$two"
  if grep -q "built without MPI" "$work/one-rank/stderr"; then
    echo "SKIP 1 vs 2 ranks: this build has no MPI"
  else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    trial two-ranks "$two" "$mpirun" -np 2
    worst=$(python3 - "$work/one-rank/metrics.jsonl" "$work/two-ranks/metrics.jsonl" <<'PY'
import json, sys
ev = [[json.loads(l)["metrics"] for l in open(p) if '"kind":"eval"' in l] for p in sys.argv[1:3]]
if not ev[0] or len(ev[0]) != len(ev[1]): print("nan"); sys.exit()
print(max(abs(a[m] / b[m] - 1) for a, b in zip(*ev) for m in ("train_loss", "val_loss")))
PY
)
    echo "max relative loss difference, 1 vs 2 ranks on one GPU: $worst"
    check "1 vs 2 ranks within 1e-5 (rc $(rc one-rank)/$(rc two-ranks))" \
      "[[ $(rc one-rank) -eq 0 && $(rc two-ranks) -eq 0 ]] && python3 -c 'import sys; sys.exit(0 if float(\"$worst\") < 1e-5 else 1)'"
    "$mpirun" -np 2 "$build/bin/bench_allreduce" --methods mpi-host,mpi-staged --sizes 4K,1M,64M --iters 20 \
      | tee "$out/allreduce-2.txt"
  fi
fi
rm -rf "$work"
echo "gpu-comm-check: $fails failed"
exit "$fails"
