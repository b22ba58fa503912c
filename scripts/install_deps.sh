#!/usr/bin/env bash
# Installs the Debian packages xgrad needs to build and test, when any is missing.
#   scripts/install_deps.sh          install what is missing
#   scripts/install_deps.sh --bench  also OpenBLAS (bench_gemm's yardstick), PyTorch (bench/, tools/),
#                                    matplotlib (tools/plot_run.py)
#                                    and the benchmarks' peer venvs (below)
# --bench then makes, unless they already import what they are for:
#   build/venv-ort     Debian's python3-torch 1.13 (--system-site-packages) with PyPI's onnxruntime,
#                      onnx and transformers, pinned as bench/infer_vs_ort.sh pins them (which makes
#                      the same venv on first use): the ONNX Runtime peer and the Hugging Face
#                      models of bench/bert_vs_torch.sh (roberta-, albert-) and finetune_vs_torch.sh.
#   build/venv-torch2  PyPI's PyTorch 2.15 (its default x86 wheel: CUDA libraries included, a
#                      multi-GB download, runs on CPU with MKL and oneDNN) with transformers 5.25:
#                      the benchmarks' second peer, beside Debian's 1.13, for BERT and for the
#                      Hugging Face models.
set -euo pipefail

# clang and libclang-rt-dev (libFuzzer and the sanitizer runtimes, only "recommended" by clang)
# build the sanitizer and fuzzing configuration of scripts/test.sh. OpenMPI: data-parallel training
# (mpirun) and its tests. cpp-httplib: bert_serve's HTTP; wrk and curl: its load and drain tests.
packages=(g++ cmake ninja-build libxtensor-dev xtl-dev libxsimd-dev libfmt-dev catch2
          nlohmann-json3-dev libutf8proc-dev libisal-dev
          libcli11-dev clang libclang-rt-dev pkg-config libsentencepiece-dev
          libopenmpi-dev openmpi-bin libcpp-httplib-dev wrk curl)
bench=false
[[ "${1:-}" == "--bench" ]] && bench=true
if $bench; then
  # libopenblas0-pthread: PyTorch 1.13's BLAS (bench/torch_blas.sh); python3-venv: the venvs below
  packages+=(libopenblas-dev libopenblas0-pthread python3-torch python3-venv python3-matplotlib)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
$bench || exit 0

cd "$(dirname "$0")/.."
mkdir -p build
if ! build/venv-ort/bin/python -c "import onnxruntime, onnx, transformers, ml_dtypes" 2>/dev/null; then
  echo "making build/venv-ort (onnxruntime, onnx, transformers over Debian's torch)"
  /usr/bin/python3 -m venv --system-site-packages build/venv-ort
  build/venv-ort/bin/pip install --quiet "onnxruntime==1.32.0" "onnx==1.17.0" "transformers==4.45.2" "ml_dtypes==0.7.0"
fi
# (missing, or other versions: the import prints nothing, or something else)
if [[ $(build/venv-torch2/bin/python -c "import torch, transformers; print(torch.__version__.split('+')[0], transformers.__version__)" 2>/dev/null) != "2.15.0 5.25.0" ]]; then
  echo "making build/venv-torch2 (PyPI's PyTorch 2.x and transformers)"
  [[ -x build/venv-torch2/bin/pip ]] || /usr/bin/python3 -m venv build/venv-torch2
  build/venv-torch2/bin/pip install --quiet "torch==2.15.0" "numpy==2.4.6" "transformers==5.25.0"
fi
