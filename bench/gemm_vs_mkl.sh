#!/usr/bin/env bash
# bench_gemm against Intel MKL instead of OpenBLAS: installs MKL from PyPI (mkl-devel, mkl-include)
# into build/venv-mkl, builds bench_gemm_mkl (the same program with MKL's cblas_sgemm as the peer)
# and runs it with the given arguments. MKL runs its own OpenMP threads (libiomp5); KMP_BLOCKTIME
# (how long they spin after a call) is set below bench_gemm's 150 ms gap between timed blocks, so
# they do not spin into our block, unless the caller set it.
#   bench/gemm_vs_mkl.sh [bench_gemm arguments]     e.g. bench/gemm_vs_mkl.sh --threads 2
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/venv-mkl
if [[ ! -e "$venv/lib/libmkl_rt.so.3" ]]; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q mkl-devel mkl-include
fi
cmake -S . -B build -DXGRAD_BENCH_MKL_PREFIX="$PWD/$venv" > /dev/null
cmake --build build --target bench_gemm_mkl > /dev/null
KMP_BLOCKTIME=${KMP_BLOCKTIME:-50} build/bin/bench_gemm_mkl "$@"
