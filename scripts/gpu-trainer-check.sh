#!/usr/bin/env bash
# gpu-trainer-check.sh OUT_DIR — dlsweep-train with `device: cuda` on a GPU host, end to end
# on Fashion-MNIST (called by scripts/gpu-check.sh; DLSWEEP_TRAIN names the binary,
# DLSWEEP_FMNIST_DIR the data, PYTORCH_TTT bench/pytorch_time_to_target.py):
#   1. the same seed on cpu and cuda (fp32, SGD): metrics side by side, accuracy within 0.01;
#   2. every GPU optimizer (sgd nesterov, adam, adamw, lars, larc, lamb) and tf32 train
#      (val_acc >= 0.80); the convolutional models against the CPU; bf16 and fp16 (NHWC nets)
#      within 0.5 points of fp32's val_acc for mlp, cnn and resnet20 at the same seed and epochs;
#   3. resume: a run stopped at epoch 1 (checkpoint) and resumed on the GPU ends with the
#      uninterrupted run's metrics (bit for bit), and the same checkpoint resumes on the CPU;
#   4. throughput (samples/s of the training steps) by batch, fp32 and tf32, ours vs PyTorch
#      eager on the same GPU (the same MLP, SGD, data on the device).
# (Time to target: bench_time_to_target --device cuda; step throughput of every model:
# bench_trainer_throughput --device cuda; scripts/gpu-check.sh runs both.)
# Prints a report and exits with the number of failed checks.
set -uo pipefail
tr=${DLSWEEP_TRAIN:?set DLSWEEP_TRAIN to dlsweep-train}
: "${DLSWEEP_FMNIST_DIR:=/usr/share/datasets/fashion-mnist}"
out=${1:?usage: gpu-trainer-check.sh OUT_DIR}
ttt=${PYTORCH_TTT:-$(dirname "$0")/../bench/pytorch_time_to_target.py}
work=$(mktemp -d)
fails=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi; }
# trial NAME JSON: runs dlsweep-train in $work/NAME (kept: a rerun resumes there).
trial() {
  local d=$work/$1
  mkdir -p "$d" && echo "$2" >"$d/params.json"
  timeout 600 "$tr" --trial-dir "$d" >"$d/stdout" 2>"$d/stderr"
  echo $? >"$d/rc"
}
rc() { cat "$work/$1/rc"; }
# metric NAME KEY [last|all|first_at V]: reads eval records of metrics.jsonl.
metric() {
  python3 - "$work/$1/metrics.jsonl" "$2" "${3:-last}" "${4:-}" <<'PY'
import json, sys
path, key, how, thr = sys.argv[1:5]
ev = [json.loads(l) for l in open(path) if '"eval"' in l]
ev = [r for r in ev if r.get("kind") == "eval"]
if how == "last":
    print(ev[-1]["metrics"].get(key, "nan") if ev else "nan")
elif how == "first_val":
    print(ev[0]["metrics"].get(key, "nan") if ev else "nan")
elif how == "all":
    print(" ".join(f'{r["metrics"].get(key, float("nan")):.6g}' for r in ev))
else:  # first_at: wall_s of the first record with key >= thr
    hit = [r["wall_s"] for r in ev if r["metrics"].get(key, 0) >= float(thr)]
    print(f"{hit[0]:.3f}" if hit else "never")
PY
}
ge() { python3 -c "import sys; sys.exit(0 if float('$1') >= float('$2') else 1)"; }
# TRAINER_SECTIONS="2c 4" runs only those sections (default: all).
want() { [[ -z ${TRAINER_SECTIONS:-} || " $TRAINER_SECTIONS " == *" $1 "* ]]; }
close() { python3 -c "import sys; a,b,t=float('$1'),float('$2'),float('$3'); sys.exit(0 if abs(a-b) <= t else 1)"; }

base='"model":"mlp","dataset":"fashion-mnist","epochs":2,"batch_size":256,"base_batch":256,"base_lr":0.1,
"seed":1,"standardize":true,"eval_every":0.5,"checkpoint_every_s":0,"decay":"cosine"'

if want 1; then
echo "== 1. cpu vs cuda, fp32 SGD, same seed"
trial cpu "{$base,\"device\":\"cpu\",\"threads\":8}"
trial cuda "{$base,\"device\":\"cuda\"}"
head -c 600 "$work/cuda/metrics.jsonl"; echo
for k in val_loss val_acc grad_noise_scale; do
  echo "cpu  $k: $(metric cpu $k all)"
  echo "cuda $k: $(metric cuda $k all)"
done
check "cuda run exits 0" '[[ $(rc cuda) == 0 ]]'
check "cuda val_acc within 0.01 of cpu" 'close "$(metric cuda val_acc)" "$(metric cpu val_acc)" 0.01'
check "cuda run logs its device" 'grep -q "cuda kernels on cuda:" "$work/cuda/metrics.jsonl"'
check "cuda noise scale within 10% of cpu's" \
  'close "$(metric cuda grad_noise_scale)" "$(metric cpu grad_noise_scale)" "$(python3 -c "print(0.1 * $(metric cpu grad_noise_scale))")"'
trial cuda2 "{$base,\"device\":\"cuda\"}"
check "two cuda runs with one seed give the same records (deterministic)" \
  '[[ "$(metric cuda val_loss all)" == "$(metric cuda2 val_loss all)" && "$(metric cuda grad_noise_scale all)" == "$(metric cuda2 grad_noise_scale all)" ]]'
cat "$work/cuda/stderr" | tail -3
fi

if want 2; then
echo "== 2. optimizers and precision on cuda"
trial nesterov "{$base,\"device\":\"cuda\",\"nesterov\":true}"
trial adam "{$base,\"device\":\"cuda\",\"optimizer\":\"adam\",\"base_lr\":0.001}"
trial adamw "{$base,\"device\":\"cuda\",\"optimizer\":\"adamw\",\"base_lr\":0.001,\"weight_decay\":0.01}"
trial lars "{$base,\"device\":\"cuda\",\"optimizer\":\"lars\",\"base_lr\":2.0,\"batch_size\":1024}"
trial tf32 "{$base,\"device\":\"cuda\",\"precision\":\"tf32\"}"
trial larc "{$base,\"device\":\"cuda\",\"optimizer\":\"larc\"}"
trial lamb "{$base,\"device\":\"cuda\",\"optimizer\":\"lamb\",\"base_lr\":0.005,\"weight_decay\":0.01}"
for n in nesterov adam adamw lars larc lamb tf32; do
  echo "$n: rc $(rc $n) val_acc $(metric $n val_acc all)"
  check "$n trains on cuda (val_acc >= 0.80)" '[[ $(rc $n) == 0 ]] && ge "$(metric $n val_acc)" 0.80'
done
fi

if want 2b; then
echo "== 2b. convolutional models on cuda (cuDNN) against the cpu"
trial cnn_cpu "{$base,\"device\":\"cpu\",\"threads\":8,\"model\":\"cnn\",\"epochs\":1,\"base_lr\":0.01}"
trial cnn "{$base,\"device\":\"cuda\",\"model\":\"cnn\",\"epochs\":1,\"base_lr\":0.01}"
echo "cnn cpu  val_acc: $(metric cnn_cpu val_acc all)   cuda: $(metric cnn val_acc all)"
check "cnn trains on cuda, val_acc within 0.02 of cpu" \
  '[[ $(rc cnn) == 0 ]] && close "$(metric cnn val_acc)" "$(metric cnn_cpu val_acc)" 0.02'
rb='"dataset":"synthetic","train_subset":2048,"test_subset":512,"epochs":2,"batch_size":128,"base_batch":128,
"base_lr":0.05,"seed":3,"eval_every":1,"checkpoint_every_s":0,"noise_scale_every":5'
for m in resnet8 resnet20; do
  trial "${m}_cpu" "{$rb,\"model\":\"$m\",\"device\":\"cpu\",\"threads\":8}"
  trial "$m" "{$rb,\"model\":\"$m\",\"device\":\"cuda\"}"
  trial "${m}_again" "{$rb,\"model\":\"$m\",\"device\":\"cuda\"}"
  echo "$m train_loss cpu: $(metric ${m}_cpu train_loss all)  cuda: $(metric $m train_loss all)"
  echo "$m val_loss   cpu: $(metric ${m}_cpu val_loss all)  cuda: $(metric $m val_loss all)"
  check "$m trains on cuda (batch norm, residual adds): first train_loss within 2% of cpu" \
    '[[ $(rc $m) == 0 ]] && close "$(metric $m train_loss first_val)" "$(metric ${m}_cpu train_loss first_val)" "$(python3 -c "print(0.02 * $(metric ${m}_cpu train_loss first_val))")"'
  check "$m on cuda repeats bit for bit (deterministic cuDNN algorithms)" \
    '[[ "$(metric $m val_loss all)" != "" && "$(metric $m val_loss all)" == "$(metric ${m}_again val_loss all)" ]]'
done
tail -2 "$work/resnet20/stderr"
fi

if want 2c; then

echo "== 2c. precision outcomes on cuda: bf16 and fp16 (NHWC, tensor cores) vs fp32, same seed and epochs"
po='"dataset":"fashion-mnist","epochs":2,"batch_size":256,"base_batch":256,"seed":1,"standardize":true,
"eval_every":1,"checkpoint_every_s":0,"decay":"cosine","device":"cuda"'
for m in ${PRECISION_MODELS:-mlp cnn resnet20}; do
  lr=0.1; [[ $m == cnn ]] && lr=0.01
  for p in fp32 tf32 bf16 fp16; do trial "prec_${m}_$p" "{$po,\"model\":\"$m\",\"base_lr\":$lr,\"precision\":\"$p\"}"; done
  echo "$m val_acc fp32 $(metric prec_${m}_fp32 val_acc)  tf32 $(metric prec_${m}_tf32 val_acc)  bf16 $(metric prec_${m}_bf16 val_acc)  fp16 $(metric prec_${m}_fp16 val_acc) (fp16 skipped steps $(metric prec_${m}_fp16 skipped_steps), loss scale $(metric prec_${m}_fp16 loss_scale))"
  echo "$m samples/s fp32 $(metric prec_${m}_fp32 samples_per_s)  tf32 $(metric prec_${m}_tf32 samples_per_s)  bf16 $(metric prec_${m}_bf16 samples_per_s)  fp16 $(metric prec_${m}_fp16 samples_per_s)"
  for p in tf32 bf16 fp16; do
    check "$m $p trains on cuda" '[[ $(rc prec_${m}_$p) == 0 ]]'
    check "$m $p val_acc within 0.5 points of fp32" 'close "$(metric prec_${m}_$p val_acc)" "$(metric prec_${m}_fp32 val_acc)" 0.005'
  done
  [[ $(rc prec_${m}_bf16) == 0 ]] || tail -5 "$work/prec_${m}_bf16/stderr"
done
trial prec_bf16_again "{$po,\"model\":\"cnn\",\"base_lr\":0.01,\"precision\":\"bf16\"}"
check "cnn bf16 repeats bit for bit" '[[ "$(metric prec_cnn_bf16 val_loss all)" == "$(metric prec_bf16_again val_loss all)" ]]'
fi

if want 3; then
echo "== 3. checkpoint and resume"
trial stop "{$base,\"device\":\"cuda\",\"stop_epoch\":1}"
cp -r "$work/stop" "$work/stop_cpu"
trial stop "{$base,\"device\":\"cuda\"}"
trial stop_cpu "{$base,\"device\":\"cpu\",\"threads\":8}"
echo "uninterrupted cuda val_loss: $(metric cuda val_loss all)"
echo "resumed on cuda   val_loss: $(metric stop val_loss all)"
echo "resumed on cpu    val_loss: $(metric stop_cpu val_loss all)"
check "resumed on cuda (log says so)" 'grep -q "resumed from" "$work/stop/metrics.jsonl"'
check "resumed cuda run = uninterrupted (final val_loss, bit for bit)" \
  '[[ "$(metric stop val_loss)" != nan && "$(metric stop val_loss)" == "$(metric cuda val_loss)" ]]'
check "the GPU checkpoint resumes on the cpu" 'grep -q "resumed from" "$work/stop_cpu/metrics.jsonl" && [[ $(rc stop_cpu) == 0 ]]'
check "cpu-resumed accuracy within 0.01" 'close "$(metric stop_cpu val_acc)" "$(metric cuda val_acc)" 0.01'
fi

if want 4; then
echo "== 4. throughput by batch (samples/s of training steps), ours vs PyTorch eager, same GPU"
printf "%-7s %12s %12s %12s %8s %8s\n" batch ours_fp32 ours_tf32 torch_fp32 fp32_x tf32_x
for b in ${THROUGHPUT_BATCHES:-64 256 1024 4096 16384}; do
  tp="\"model\":\"mlp\",\"dataset\":\"fashion-mnist\",\"epochs\":1,\"batch_size\":$b,\"base_batch\":$b,\"seed\":1,
\"standardize\":true,\"eval_every\":1,\"checkpoint_every_s\":0,\"noise_scale_every\":0,\"device\":\"cuda\""
  trial "tp_fp32_$b" "{$tp}"
  trial "tp_tf32_$b" "{$tp,\"precision\":\"tf32\"}"
  python3 "$ttt" --device cuda --batch "$b" --epochs 1 --data-dir "$DLSWEEP_FMNIST_DIR" --threads 8 \
    --out "$work/torch_$b.jsonl" >"$work/torch_$b.out" 2>&1 || tail -3 "$work/torch_$b.out"
  python3 - "$work" "$b" <<'PY'
import json, sys
w, b = sys.argv[1], sys.argv[2]
def sps(p):
    try:
        ev = [json.loads(l) for l in open(p)]
        return [r for r in ev if r.get("kind") == "eval"][-1]["metrics"]["samples_per_s"]
    except Exception:
        return float("nan")
o32, o_tf, t = sps(f"{w}/tp_fp32_{b}/metrics.jsonl"), sps(f"{w}/tp_tf32_{b}/metrics.jsonl"), sps(f"{w}/torch_{b}.jsonl")
print(f"{b:<7} {o32:12.0f} {o_tf:12.0f} {t:12.0f} {o32 / t:8.2f} {o_tf / t:8.2f}")
PY
done
fi

tar czf "$out/trainer-runs.tgz" -C "$work" . 2>/dev/null
echo "gpu-trainer-check: $fails failed"
exit "$fails"
