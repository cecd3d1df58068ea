#!/usr/bin/env bash
# Builds lmzoo with AddressSanitizer + UndefinedBehaviorSanitizer (-DLMZOO_SANITIZE=ON; UBSan alone where the
# sentencepiece bridge needs RTLD_DEEPBIND, see CMakeLists.txt) into build-sanitize/ and runs the signal, fault and
# bad-input tests there. Usage: bash tools/sanitize_check.sh [extra Catch2 test spec]
# (takes about twice a normal build; not part of tools/test.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build-sanitize"
bash "$ROOT/tools/build.sh" "$BUILD_DIR" -DLMZOO_SANITIZE=ON
# LibTorch is not instrumented: leaks it keeps until exit are not lmzoo's, and its own allocator hooks would
# otherwise trip the container-overflow checks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:detect_container_overflow=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
"$BUILD_DIR/lmzoo_tests" "${1:-[signal],[faults],[bad_inputs]}"
