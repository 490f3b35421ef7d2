#!/usr/bin/env bash
# gpu-check.sh DEBS_DIR [OUT_DIR] — on a GPU host without Debian's packages (CUDA, CMake,
# a C++ compiler and PyTorch present): builds the trainer-only CUDA build from the packages
# that scripts/fetch-trainer-debs.sh downloaded, then runs everything that needs a GPU:
#   1. test_trainer_cuda (the CUDA conformance suite, every kernel against the CPU path),
#   2. the same suite under compute-sanitizer memcheck (when it is installed), and a short
#      dlsweep-train `device: cuda` run under it,
#   3. scripts/gpu-trainer-check.sh: dlsweep-train with `device: cuda` on Fashion-MNIST
#      against `device: cpu` (same seed: metrics side by side), every GPU optimizer, tf32,
#      checkpoint/resume on the GPU and GPU -> CPU, throughput by batch, time to 0.88 vs PyTorch,
#   4. bench_time_to_target --device cuda, bench_trainer_throughput --device cuda (mlp, cnn, resnet20: the trainer's step vs PyTorch's
#      best of eager/tf32/channels_last/amp_bf16 on the same GPU) and bench_cuda_step (one MLP
#      training step from the raw kernels, ours vs PyTorch in the same run),
#   5. bench_trainer_throughput --bf16 on the host CPU (AMX where it has it),
#   6. scripts/gpu-comm-check.sh: bench_allreduce (MPI vs NCCL by message size), comm: nccl and
#      nccl-hierarchical on the GPU, device: auto's fallback line, 1 vs 2 ranks on one GPU
#      (comm: mpi; skipped without mpirun). SKIP_COMM=1 skips it.
# Fashion-MNIST: $DLSWEEP_FMNIST_DIR (default: the Debian package's folder, else .gpu/fmnist).
# cuDNN and NCCL are taken from the CUDA toolkit, else from the Python wheels beside PyTorch
# (nvidia-cudnn-*, nvidia-nccl-*), else the headers in $GPU_HEADERS with those libraries.
# TRAINER_SECTIONS (e.g. "2c 4") limits 3 to those sections of gpu-trainer-check.sh (SKIP_TRAINER_CHECK=1
# skips 3), SKIP_THROUGHPUT=1 skips bench_trainer_throughput, SKIP_TTT=1 skips bench_time_to_target,
# PROFILE=1 adds the per-node GPU times of bf16 runs (DLSWEEP_CUDA_PROFILE), SANITIZER_FILTER (a Catch2
# filter) and SANITIZER_RUNS (params fragments) narrow the memcheck runs, BENCH_ONLY=1 skips 1 and 2, SKIP_SANITIZER=1 skips 2 (SKIP_SUITE_SANITIZER=1 its suite part), SKIP_STEP_BENCH=1 skips bench_cuda_step,
# SKIP_CPU_BENCH=1 the CPU one; BENCH_BATCHES, BENCH_STEPS, BENCH_ARGS (e.g. --phases) shape 4.
# The sanitizer runs come last (the slowest). Every step runs even when an earlier one fails; the log is OUT_DIR/gpu-check.log and the
# exit status is the number of failed steps.
set -uo pipefail
debs=$(realpath "${1:?usage: gpu-check.sh DEBS_DIR [OUT_DIR]}")
out=$(mkdir -p "${2:-${OUT:-/tmp/gpu-check}}" && realpath "${2:-${OUT:-/tmp/gpu-check}}")
src=$(cd "$(dirname "$0")/.." && pwd)
log=$out/gpu-check.log
prefix=${DLSWEEP_DEPS_PREFIX:-/opt/dlsweep-deps}
build=${BUILD_DIR:-$src/build-gpu}
failed=0
step() { echo "== $*" | tee -a "$log"; }
run() { "$@" 2>&1 | tee -a "$log"; local rc=${PIPESTATUS[0]}; [[ $rc -eq 0 ]] || { echo "!! rc=$rc: $*" | tee -a "$log"; failed=$((failed + 1)); }; return "$rc"; }

step host
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; g++ --version | head -1
  cmake --version | head -1; command -v nvcc && nvcc --version | tail -1; nproc; } 2>&1 | tee -a "$log"

step "unpack $(ls "$debs"/*.deb | wc -l) packages into $prefix"
mkdir -p "$prefix" && for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$prefix"; done
export CMAKE_PREFIX_PATH=$prefix/usr
ld_path=$prefix/usr/lib/x86_64-linux-gnu

# A library's folder: the toolkit's, else the first one under /usr, /opt (Python wheels).
lib_dir() {
  local f
  for f in /usr/local/cuda/lib64/"$1" /usr/local/cuda/lib/"$1"; do [[ -e $f ]] && { dirname "$f"; return; }; done
  f=$(find /usr /opt -name "$1" -not -path '*/proc/*' 2>/dev/null | head -1)
  [[ -n $f ]] && dirname "$f"
}
for pair in cudnn:libcudnn.so.9 nccl:libnccl.so.2; do
  name=${pair%%:*} so=${pair#*:}
  [[ -e /usr/local/cuda/include/$name.h ]] && continue
  dir=$(lib_dir "$so") || true
  [[ -n $dir ]] || { step "no $so on this host"; failed=$((failed + 1)); continue; }
  root=/opt/dlsweep-$name && mkdir -p "$root/lib"
  ln -sfn "$dir/$so" "$root/lib/lib$name.so"
  if [[ -d $dir/../include && -e $dir/../include/$name.h ]]; then ln -sfn "$(realpath "$dir/../include")" "$root/include"
  else ln -sfn "${GPU_HEADERS:-$src/.gpu/cuda-headers}" "$root/include"; fi
  export "${name^^}_ROOT=$root"
  ld_path=$ld_path:$dir
  step "$name: $dir/$so, headers $(realpath "$root/include")"
done
export LD_LIBRARY_PATH=$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

step configure
run cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLSWEEP_TRAINER_ONLY=ON -DDLSWEEP_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" >/dev/null || true
step build
# -k 0: build every target that can be built; the errors (only) go to the log.
run cmake --build "$build" -j "$(nproc)" --target test_trainer_cuda bench_cuda_step dlsweep-train dlsweep-cuda \
  bench_trainer_throughput bench_time_to_target bench_allreduce -- -k 0 2>&1 | grep -E -A8 "error|FAILED" | head -80 || true
fm=${DLSWEEP_FMNIST_DIR:-/usr/share/datasets/fashion-mnist}
[[ -e $fm/train-images-idx3-ubyte.gz ]] || fm=$src/.gpu/fmnist
export DLSWEEP_FMNIST_DIR=$fm

if [[ -z ${BENCH_ONLY:-} ]]; then
step "test_trainer_cuda"
run "$build/bin/test_trainer_cuda" --order decl --durations yes || true
fi
if [[ -z ${SKIP_TRAINER_CHECK:-} ]]; then
step "dlsweep-train device cuda (scripts/gpu-trainer-check.sh)"
run env DLSWEEP_TRAIN="$build/bin/dlsweep-train" PYTORCH_TTT="$src/bench/pytorch_time_to_target.py" \
  "$src/scripts/gpu-trainer-check.sh" "$out" || true
fi
if [[ -n ${PROFILE:-} ]]; then
step "per-node GPU time (DLSWEEP_CUDA_PROFILE=1): the NHWC nets of the large-batch runs"
for p in '"model":"cnn","batch_size":4096' '"model":"resnet20","batch_size":1024' '"model":"mlp","batch_size":64,"epochs":0.1'; do
  prof=$(mktemp -d) && echo "{\"device\":\"cuda\",\"precision\":\"bf16\",\"epochs\":2,\"train_subset\":32768,\"test_subset\":512,
    \"eval_every\":1,\"checkpoint_every_s\":0,\"noise_scale_every\":0,$p}" >"$prof/params.json"
  run env DLSWEEP_CUDA_PROFILE=1 "$build/bin/dlsweep-train" --trial-dir "$prof" || true
done
fi
if [[ -z ${SKIP_THROUGHPUT:-} ]]; then
step "bench_trainer_throughput --device cuda (ours vs PyTorch on this GPU)"
run "$build/bin/bench_trainer_throughput" --device cuda --models mlp --batches "${BENCH_BATCHES:-64,256,1024,4096,16384}" \
  --seconds "${BENCH_SECONDS:-1}" --pytorch "$src/bench/pytorch_baseline.py" || true
run "$build/bin/bench_trainer_throughput" --device cuda --models cnn,resnet20 --batches "${CONV_BATCHES:-64,256,1024,4096}" \
  --seconds "${BENCH_SECONDS:-1}" --pytorch "$src/bench/pytorch_baseline.py" || true
fi
if [[ -z ${SKIP_TTT:-} ]]; then
step "bench_time_to_target --device cuda (0.88 on Fashion-MNIST from process start, ours vs PyTorch)"
run "$build/bin/bench_time_to_target" --device cuda --repeat "${TTT_REPEAT:-2}" --threads 8 --python "$(command -v python3)" \
  --data-dir "$DLSWEEP_FMNIST_DIR" --train-bin "$build/bin/dlsweep-train" || true
fi
if [[ -z ${SKIP_STEP_BENCH:-} ]]; then
step "bench_cuda_step"
run "$build/bin/bench_cuda_step" --batches "${BENCH_BATCHES:-64,256,1024,4096,16384}" --steps "${BENCH_STEPS:-200}" \
  --python "$(command -v python3)" ${BENCH_ARGS:-} || true
fi
if [[ -z ${SKIP_CPU_BENCH:-} ]]; then
step "bench_trainer_throughput --bf16 on the host CPU ($(grep -o -m1 'amx_bf16' /proc/cpuinfo || echo 'no AMX'))"
run "$build/bin/bench_trainer_throughput" --threads "${CPU_THREADS:-8}" --models mlp --batches 256,1024,4096 \
  --seconds 1 --bf16 --pytorch none || true
fi
if [[ -z ${SKIP_COMM:-} ]]; then
step "data parallelism on GPU buffers, device choice (scripts/gpu-comm-check.sh)"
run "$src/scripts/gpu-comm-check.sh" "$build" "$out" || true
fi
if [[ -z ${BENCH_ONLY:-}${SKIP_SANITIZER:-}${SKIP_SUITE_SANITIZER:-} ]] && command -v compute-sanitizer >/dev/null; then
  step "test_trainer_cuda under compute-sanitizer memcheck"
  run timeout "${SANITIZER_TIMEOUT:-120}" compute-sanitizer --tool memcheck --error-exitcode 3 "$build/bin/test_trainer_cuda" --order decl ${SANITIZER_FILTER:+"$SANITIZER_FILTER"} || true
fi
if [[ -z ${BENCH_ONLY:-}${SKIP_SANITIZER:-} ]] && command -v compute-sanitizer >/dev/null; then
  step "dlsweep-train device cuda under compute-sanitizer memcheck"
  for p in ${SANITIZER_RUNS:-'"optimizer":"lars"' '"model":"cnn","optimizer":"lamb","base_lr":0.005' \
           '"model":"resnet8","dataset":"synthetic","optimizer":"larc"' '"model":"cnn","precision":"bf16"' \
           '"model":"resnet8","dataset":"synthetic","precision":"fp16"'}; do
    san=$(mktemp -d) && echo "{\"device\":\"cuda\",\"epochs\":1,\"train_subset\":1024,\"test_subset\":500,
      \"batch_size\":128,\"noise_scale_every\":3,$p}" >"$san/params.json"
    run timeout "${SANITIZER_TIMEOUT:-120}" compute-sanitizer --tool memcheck --error-exitcode 3 "$build/bin/dlsweep-train" --trial-dir "$san" || true
  done
fi
step "failed steps: $failed"
exit "$failed"
