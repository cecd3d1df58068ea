#!/usr/bin/env bash
# Installs the llama.cpp reference for lmzoo's GGUF files (tools/gguf_check/package-lock.json: node-llama-cpp 3.21.1,
# which ships llama.cpp prebuilt for linux-x64, and @huggingface/gguf) with npm into a cache folder, for
# tests/test_gguf_llama_cpp.cpp and tools/gguf_check/check.mjs. Leaves out node/npm themselves.
# Usage: tools/fetch_gguf_check.sh [DIR]   (default: ${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}/gguf_check);
# prints the folder to export as LMZOO_GGUF_CHECK (the tests also look in the default folder without it).
# Exit 1 (nothing half-installed left behind) when npm is missing, the registry cannot be reached, or llama.cpp's
# prebuilt binary does not load here.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/gguf_check" && pwd)"
dir="${1:-${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}/gguf_check}"
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "fetch_gguf_check: node or npm not found (apt-get install nodejs npm); the llama.cpp GGUF checks will be skipped" >&2
  exit 1
fi
if cmp -s "$here/package-lock.json" "$dir/package-lock.json" && [ -f "$dir/.installed" ]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
rm -f "$dir/.installed"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
# --ignore-scripts: node-llama-cpp's postinstall would offer to build llama.cpp from source; the prebuilt
# @node-llama-cpp/linux-x64 binary is an optional dependency and needs no script.
if ! (cd "$dir" && timeout 900 npm ci --no-audit --no-fund --ignore-scripts --silent >&2); then
  echo "fetch_gguf_check: npm ci failed (registry unreachable?); the llama.cpp GGUF checks will be skipped" >&2
  rm -rf "$dir/node_modules"
  exit 1
fi
if ! (cd "$dir" && node --input-type=module -e 'const {getLlama}=await import("node-llama-cpp"); await getLlama({gpu:false,build:"never"})' >/dev/null 2>&1); then
  echo "fetch_gguf_check: node-llama-cpp's prebuilt llama.cpp does not load here (no binary for this platform?)" >&2
  exit 1
fi
touch "$dir/.installed"
echo "$dir"
