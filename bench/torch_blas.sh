#!/usr/bin/env bash
# Sourced by the benchmarks against PyTorch (bert_vs_torch.sh, finetune_vs_torch.sh): gives PyTorch
# its fastest BLAS setting. Debian's torch calls whatever libblas.so.3 points to; with only libblas3
# installed that is the reference BLAS, about 30x slower, so OpenBLAS is installed when missing.
# Then the fastest OpenBLAS kernel set that runs on this CPU (a GEMM probe tries the auto-detected
# one, SkylakeX, Zen and Haswell: auto-detection picks SSE3 kernels on some CPUs, and SkylakeX dies
# with SIGILL on others) is exported as OPENBLAS_CORETYPE, unless the caller set it.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
if [[ "$blas" != *openblas* ]]; then
  echo "the system BLAS is $blas, not OpenBLAS: installing libopenblas0-pthread for a fair PyTorch" >&2
  apt-get install -y -qq libopenblas0-pthread >&2 || { echo "install libopenblas0-pthread first (root)" >&2; exit 1; }
fi
# GFLOP/s of a 1024^3 float GEMM on 2 torch threads under a kernel set; 0 when it cannot run here.
probe() {
  OPENBLAS_CORETYPE=$1 /usr/bin/python3 - 2>/dev/null <<'PY' || echo 0
import time, torch
torch.set_num_threads(2)
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
for _ in range(3): a @ b
t = time.time()
for _ in range(10): a @ b
print(f"{2 * 1024**3 * 10 / (time.time() - t) / 1e9:.1f}")
PY
}
if [[ -z "${OPENBLAS_CORETYPE+set}" ]]; then
  best_core=""; best_gflops=$(probe "")
  for c in SkylakeX Zen Haswell; do
    g=$(probe "$c")
    if python3 -c "import sys; sys.exit(0 if $g > $best_gflops else 1)"; then best_core=$c; best_gflops=$g; fi
  done
  export OPENBLAS_CORETYPE=$best_core
  echo "PyTorch BLAS: $blas, OPENBLAS_CORETYPE='${best_core}' (${best_gflops} GFLOP/s on a 1024^3 GEMM)" >&2
fi
# Runs a PyTorch peer (the command and its arguments) under 1 and then 2 OpenBLAS threads and prints
# the output of the faster run, judged by its line "KEY X" (KEY: tokens/s, examples/s), and last
# "openblas threads: N", the count it ran with.
fastest_peer() {
  local key=$1 best=0 best_out="" out value ob
  shift
  for ob in 1 2; do
    out=$(OPENBLAS_NUM_THREADS=$ob "$@")
    value=$(grep "^$key" <<< "$out" | awk '{print $2}')
    if python3 -c "import sys; sys.exit(0 if $value > $best else 1)"; then best=$value; best_out="$out"$'\n'"openblas threads: $ob"; fi
  done
  printf "%s\n" "$best_out"
}
