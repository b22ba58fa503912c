#!/usr/bin/env bash
# Sourced by the benchmarks against PyTorch (bert_vs_torch.sh, finetune_vs_torch.sh): which peer
# Pythons to search, each checked before anything runs.
#   peer_python_check PYTHON MODULES WHAT   fails naming PYTHON unless it imports MODULES; leaves
#                                           torch's version and BLAS in py_torch[PYTHON], py_blas[PYTHON]
#                                           (bench/torch_peer.py's blas_info: "generic" is Debian's
#                                           torch over the system libblas.so.3, "mkl" PyPI's)
#   hf_peer_pythons                         fills hf_pythons: $HF_PYTHON (one or more, space-separated)
#                                           or else each of build/venv-ort (Debian's 1.13 with PyPI's
#                                           transformers) and build/venv-torch2 (PyPI's 2.x with
#                                           transformers) that imports transformers (warning on stderr
#                                           for one that is there without it); fails when none does
#   use_openblas_for PYTHON...              sources bench/torch_blas.sh (OpenBLAS and its fastest kernel
#                                           set; fastest_peer) under the first PYTHON whose torch calls
#                                           the system BLAS, if any
#   blas_description SETTING OB_THREADS     "OpenBLAS kernels K, OpenBLAS threads N", "MKL/oneDNN", ... for
#                                           a peer's "setting: ..." line
#   field KEY TEXT, kv KEY SETTING, greater A B: the last word of TEXT's "KEY ..." line; the value of
#                                           KEY=X in a "setting: ..." line; whether A > B (decimals)
declare -A py_torch py_blas
peer_python_check() {
  local info version blas
  info=$("$1" -c "import sys, $2; sys.path.insert(0, 'bench'); from torch_peer import blas_info; print('peer:', torch.__version__, blas_info())" 2>&1) ||
    { echo "${0##*/}: $1 cannot run the $3 peer (import $2): ${info##*$'\n'}" >&2; exit 1; }
  read -r _ version blas <<< "$(grep '^peer: ' <<< "$info")"
  py_torch[$1]=$version; py_blas[$1]=$blas
}
hf_peer_pythons() {
  local py
  hf_pythons=()
  if [[ -n "${HF_PYTHON:-}" ]]; then
    read -ra hf_pythons <<< "$HF_PYTHON"
  else
    for py in build/venv-ort/bin/python build/venv-torch2/bin/python; do
      [[ -x "$py" ]] || continue
      if "$py" -c "import torch, transformers" 2>/dev/null; then
        hf_pythons+=("$py")
      else  # a peer left out would make the comparison unfair without a word
        echo "${0##*/}: warning: $py lacks torch or transformers, so it is not a peer: run scripts/install_deps.sh --bench" >&2
      fi
    done
  fi
  (( ${#hf_pythons[@]} )) || { echo "${0##*/}: the Hugging Face peers need a Python with transformers: set HF_PYTHON, or run" \
    "scripts/install_deps.sh --bench (it makes build/venv-ort and build/venv-torch2)" >&2; exit 1; }
  for py in "${hf_pythons[@]}"; do peer_python_check "$py" "torch, transformers" "Hugging Face"; done
}
use_openblas_for() {
  local py
  for py in "$@"; do
    if [[ "${py_blas[$py]:-}" == generic ]]; then
      torch_blas_python=$py
      source bench/torch_blas.sh
      return
    fi
  done
}
field() { grep "^$1" <<< "$2" | awk '{print $NF}'; }
kv() { tr ' ' '\n' <<< "$2" | sed -n "s/^$1=//p"; }
greater() { python3 -c "import sys; sys.exit(0 if $1 > $2 else 1)"; }
blas_description() {
  case "$(kv blas "$1")" in
    generic) echo "OpenBLAS kernels ${openblas_kernels:-auto-detected}, OpenBLAS threads $2" ;;
    mkl) echo "MKL/oneDNN" ;;
    *) echo "BLAS $(kv blas "$1")" ;;
  esac
}
