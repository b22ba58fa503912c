#!/usr/bin/env bash
# Sourced by the benchmarks against PyTorch (bert_vs_torch.sh, finetune_vs_torch.sh): gives Debian's
# PyTorch 1.13 its fastest BLAS setting (PyPI's PyTorch 2.x brings MKL and oneDNN and ignores all
# this). Debian's torch (BLAS_INFO=generic) calls whatever libblas.so.3 points to; with only
# libblas3 installed that is the reference BLAS, about 30x slower, so OpenBLAS is installed when
# missing. Then the fastest OpenBLAS kernel set that runs on this CPU (a GEMM probe tries the
# auto-detected one, SkylakeX, Zen and Haswell: auto-detection picks SSE3 kernels on some CPUs, and
# SkylakeX dies with SIGILL on others) is exported as OPENBLAS_CORETYPE (left unset when
# auto-detection wins), unless the caller set it. Prints the choice on stdout, one line, and leaves
# it in $openblas_kernels ("Haswell", "auto-detected", "SkylakeX (set by the caller)").
# The probe runs under $torch_blas_python (default /usr/bin/python3), a Python with Debian's torch.
blas_lib=/usr/lib/x86_64-linux-gnu/libblas.so.3
blas=$(readlink -f "$blas_lib" || true)
if [[ "$blas" != *openblas* ]]; then
  echo "the system BLAS is ${blas:-missing}, not OpenBLAS: installing libopenblas0-pthread for a fair PyTorch" >&2
  blas_sudo=""
  [[ $(id -u) -ne 0 ]] && blas_sudo="sudo"
  { $blas_sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $blas_sudo apt-get install -y -qq libopenblas0-pthread; } >&2 ||
    { echo "install libopenblas0-pthread first (root: apt-get update && apt-get install libopenblas0-pthread)" >&2; exit 1; }
  blas=$(readlink -f "$blas_lib" || true)
  [[ "$blas" == *openblas* ]] ||
    { echo "libblas.so.3 is still $blas after installing OpenBLAS: pick it with update-alternatives --config libblas.so.3-x86_64-linux-gnu" >&2; exit 1; }
fi
# GFLOP/s of a 1024^3 float GEMM on 2 torch threads under a kernel set (empty: OpenBLAS's own
# detection, OPENBLAS_CORETYPE unset, as an empty value would be an unknown name); 0 when it
# cannot run here.
probe() {
  local kernels=(-u OPENBLAS_CORETYPE)
  [[ -n "$1" ]] && kernels=("OPENBLAS_CORETYPE=$1")
  env "${kernels[@]}" "${torch_blas_python:-/usr/bin/python3}" - 2>/dev/null <<'PY' || echo 0
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
  if [[ -n "$best_core" ]]; then
    export OPENBLAS_CORETYPE=$best_core
    openblas_kernels=$best_core
  else
    unset OPENBLAS_CORETYPE
    openblas_kernels=auto-detected
  fi
  echo "PyTorch 1.x BLAS: $blas, OpenBLAS kernels $openblas_kernels (won the probe at ${best_gflops} GFLOP/s on a 1024^3 GEMM)"
else
  openblas_kernels="${OPENBLAS_CORETYPE:-auto-detected} (set by the caller)"
  [[ -z "$OPENBLAS_CORETYPE" ]] && unset OPENBLAS_CORETYPE
  echo "PyTorch 1.x BLAS: $blas, OpenBLAS kernels $openblas_kernels"
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
