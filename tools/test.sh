#!/usr/bin/env bash
# Runs the lmzoo test suite: installs missing build+test dependencies, builds build/
# (Release) and runs every Catch2 test case through ctest. Exit status is ctest's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash tools/setup_deps.sh build test
bash tools/build.sh "$ROOT/build"
ctest --test-dir "$ROOT/build" --output-on-failure -j2 </dev/null
