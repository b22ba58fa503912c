#!/usr/bin/env bash
# Installs the Debian packages xgrad needs to build and test, when any is missing.
#   scripts/install_deps.sh          install what is missing
#   scripts/install_deps.sh --bench  also OpenBLAS (bench_gemm's yardstick) and PyTorch (bench/, tools/)
set -euo pipefail

# clang and libclang-rt-dev (libFuzzer and the sanitizer runtimes, only "recommended" by clang)
# build the sanitizer and fuzzing configuration of scripts/test.sh. OpenMPI: data-parallel training
# (mpirun) and its tests.
packages=(g++ cmake ninja-build libxtensor-dev xtl-dev libxsimd-dev libfmt-dev catch2
          nlohmann-json3-dev libutf8proc-dev libisal-dev
          libcli11-dev clang libclang-rt-dev pkg-config libsentencepiece-dev
          libopenmpi-dev openmpi-bin)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(libopenblas-dev python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
