#!/usr/bin/env bash
# Configures and builds lmzoo (CMake, Release) into BUILD_DIR (default: build/).
# Usage: bash tools/build.sh [BUILD_DIR] [extra cmake -D options...]
# Installs missing build dependencies first; uses ccache when present (CMakeLists picks it up).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
[ $# -gt 0 ] && shift

bash "$ROOT/tools/setup_deps.sh" build

cmake_args=(-S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release)
if command -v ccache >/dev/null 2>&1; then
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # ccache caches compilations that use the precompiled header only with these sloppiness settings.
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
fi

cmake "${cmake_args[@]}" "$@"
cmake --build "$BUILD_DIR" -j"$(nproc)"
