#!/usr/bin/env bash
# Compiles lmzoo against Debian 13's CUDA LibTorch on a machine without a GPU, and runs the CPU suite on it, so
# that the CUDA and NCCL code paths get compiled (warning-free) wherever a Debian mirror is reachable.
#
# Works in a trixie chroot with main contrib non-free (created on first use, reused afterwards):
#   packages  contrib's libtorch-cuda-dev (LibTorch 2.6 built with CUDA 12.4) and python3-torch-cuda, non-free's
#             libnccl-dev and nvidia-cuda-toolkit, and libgloo-cuda-dev; then tools/setup_deps.sh build test for
#             the rest, which must accept the CUDA packages and remove nothing. Debian's nvidia-cudnn is an
#             installer that downloads from NVIDIA (it fails offline), so a local package of that name stands in:
#             a stub libcudnn.so.9 that defines the cudnn* symbols libtorch_cuda.so and libtorch_python.so leave
#             undefined, under the version node libcudnn.so.9 that they ask for. Nothing calls them without a GPU;
#             a call would abort with a message.
#   build     tools/build.sh /root/lmzoo-build-cuda -DCMAKE_CUDA_ARCHITECTURES=90. The configure line must say
#             "CUDA 1, Gloo 1, NCCL 1" and "own CUDA kernels 1" (nvcc compiled models/kernels/cuda/); no compiler warning and no CMake warning is allowed.
#   suite     ctest -j2 in that build, after fetching the GPT-2 and tokenizer.json references as tools/test.sh
#             does. The [cuda] cases must be the skipped ones.
#   device    lmzoo train, eval, generate and bench with --device cuda: each must exit non-zero with exactly one
#             line on stderr (on tiny data prepared for the check); train must leave no run directory.
#   dry       tools/gpu_check.sh --dry-run against the same build: every step of the GPU check that can run
#             without a GPU (a stand-in nvidia-smi, the CPU in place of CUDA), so that the script's shell errors
#             show up before a GPU is lent.
# The project goes into the chroot as its committed HEAD (git archive), or with --worktree as the working tree's
# files, tracked and untracked but not ignored.
#
# Usage: sudo bash tools/cuda_build_check.sh [options] [STEP...]     (default: all steps, in the order above)
#   --chroot DIR   the chroot (default /tmp/lmzoo-cuda-trixie); kept between runs, so packages install once
#   --base DIR     a minbase trixie to copy when creating the chroot, instead of running debootstrap
#   --mirror URL   the Debian mirror (default: the first URIs: of this machine's apt sources, else deb.debian.org)
#   --worktree     copy the working tree's files instead of HEAD
#   --log FILE     the full log (default /tmp/lmzoo-cuda-build-check.log)
#   -h, --help     this text
# Needs root (debootstrap, chroot, mounts) and about 15 GB of disk. The steps' logs stay in the chroot under
# /root/lmzoo-logs. The run ends with a summary, one line per step. Exit status: 0 when every step passed, 1 when
# any failed, 2 on a setup error.
set -uo pipefail

SUITE=trixie
STUB_DIR=/root/lmzoo-cudnn-stub   # inside the chroot
PROJECT=/root/lmzoo               # inside the chroot
BUILD=/root/lmzoo-build-cuda      # inside the chroot (outside PROJECT, which each run copies afresh)
LOGS=/root/lmzoo-logs             # inside the chroot
CUDA_PKGS=(libtorch-cuda-dev python3-torch-cuda libgloo-cuda-dev libnccl-dev nvidia-cuda-toolkit)
# torch.compile on the CPU (the compiled reference of gpu_check.sh --dry-run) imports setuptools.
EXTRA_PKGS=(python3-setuptools)

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

# ================================================================================ inside the chroot
# The script runs itself inside the chroot as `cuda_build_check.sh --inside STEP`.

say() { printf '%s\n' "$*"; }
result() { printf 'RESULT %s\n' "$*"; }  # the lines the summary is made of

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

# Builds $STUB_DIR/nvidia-cudnn_<archive version>+lmzoo.stub_amd64.deb: the stand-in for Debian's nvidia-cudnn.
make_cudnn_stub() {
  local work=$STUB_DIR/work version
  rm -rf "$STUB_DIR" && mkdir -p "$work/debs" "$work/x" "$STUB_DIR/pkg/DEBIAN" "$STUB_DIR/pkg/usr/lib/x86_64-linux-gnu"
  version=$(apt-cache show nvidia-cudnn | sed -n 's/^Version: //p' | head -n 1)
  [ -n "$version" ] || { say "no nvidia-cudnn in the archive (is contrib enabled?)"; return 1; }
  # The libraries that need libcudnn.so.9, from the packages (not installable before the stub exists).
  (cd "$work/debs" && apt-get download -qq libtorch-cuda-2.6 2>/dev/null) || { say "cannot download libtorch-cuda-2.6"; return 1; }
  local deb
  for deb in "$work"/debs/*.deb; do dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/x" --wildcards './usr/lib/*.so*'; done
  local lib needing=()
  while IFS= read -r lib; do
    readelf -d "$lib" 2>/dev/null | grep -q 'NEEDED.*\[libcudnn\.so\.9\]' && needing+=("$lib")
  done < <(find "$work/x" -type f -name '*.so*')
  [ ${#needing[@]} -gt 0 ] || { say "no library of libtorch-cuda-2.6 needs libcudnn.so.9"; return 1; }
  nm -D --undefined-only "${needing[@]}" | awk '{print $2}' | sed -n 's/^\(cudnn[A-Za-z0-9_]*\)@libcudnn\.so\.9$/\1/p' |
    sort -u >"$STUB_DIR/symbols"
  [ -s "$STUB_DIR/symbols" ] || { say "no cudnn*@libcudnn.so.9 symbol undefined in ${needing[*]}"; return 1; }
  {
    echo '// Generated by tools/cuda_build_check.sh: a stand-in libcudnn.so.9 for compiling against a CUDA LibTorch'
    echo '// without a GPU. Every function the LibTorch libraries import aborts with a message if called.'
    echo '#include <stdlib.h>'
    echo '#include <unistd.h>'
    echo 'static void stub_called(const char* name) {'
    echo '  static const char msg[] = "libcudnn.so.9 is a stub (tools/cuda_build_check.sh): called ";'
    echo '  if (write(2, msg, sizeof msg - 1) < 0 || write(2, name, __builtin_strlen(name)) < 0 || write(2, "\n", 1) < 0) {}'
    echo '  abort();'
    echo '}'
    while IFS= read -r s; do echo "int $s(void) { stub_called(\"$s\"); return 0; }"; done <"$STUB_DIR/symbols"
  } >"$STUB_DIR/cudnn_stub.c"
  { echo 'libcudnn.so.9 {'; echo '  global:'; sed 's/^/    /; s/$/;/' "$STUB_DIR/symbols"; echo '  local: *;'; echo '};'; } \
    >"$STUB_DIR/cudnn_stub.map"
  local out=$STUB_DIR/pkg/usr/lib/x86_64-linux-gnu
  gcc -O2 -Wall -Wextra -shared -fPIC -o "$out/libcudnn.so.9" "$STUB_DIR/cudnn_stub.c" \
    -Wl,-soname,libcudnn.so.9 -Wl,--version-script,"$STUB_DIR/cudnn_stub.map" || return 1
  ln -s libcudnn.so.9 "$out/libcudnn.so"
  cat >"$STUB_DIR/pkg/DEBIAN/control" <<EOF
Package: nvidia-cudnn
Version: ${version}+lmzoo.stub
Architecture: amd64
Maintainer: lmzoo tools/cuda_build_check.sh <root@localhost>
Provides: libcudnn.so.9, libcudnn-dev
Section: contrib/libs
Priority: optional
Description: stand-in for nvidia-cudnn: a stub libcudnn.so.9 (compile checks only)
 Defines the $(wc -l <"$STUB_DIR/symbols") cudnn* functions that LibTorch's CUDA libraries import; each aborts
 when called. Made by lmzoo's tools/cuda_build_check.sh for building on a machine without a GPU.
EOF
  dpkg-deb --root-owner-group -b "$STUB_DIR/pkg" "$STUB_DIR/nvidia-cudnn_${version}+lmzoo.stub_amd64.deb" >/dev/null || return 1
  rm -rf "$work"
  say "cudnn stub: $(wc -l <"$STUB_DIR/symbols") symbols, package $(ls "$STUB_DIR"/*.deb)"
}

inside_packages() {
  export DEBIAN_FRONTEND=noninteractive
  local p missing=()
  for p in "${CUDA_PKGS[@]}" "${EXTRA_PKGS[@]}"; do installed "$p" || missing+=("$p"); done
  if ! dpkg-query -W -f='${Version}' nvidia-cudnn 2>/dev/null | grep -q 'lmzoo\.stub$'; then missing+=(nvidia-cudnn); fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing: ${missing[*]} (apt's output: $LOGS/apt.log)"
    local apt_log=$LOGS/apt.log
    : >"$apt_log"
    # (an install cut short by a previous run is finished first)
    { dpkg --configure -a && apt-get update -qq &&
      apt-get install -y -q --no-install-recommends gcc libc6-dev binutils ca-certificates; } >>"$apt_log" 2>&1 ||
      { tail -n 20 "$apt_log"; return 1; }
    local stub=()
    if [[ " ${missing[*]} " == *" nvidia-cudnn "* ]]; then
      make_cudnn_stub || return 1
      stub=("$STUB_DIR"/nvidia-cudnn_*+lmzoo.stub_amd64.deb)
    fi
    apt-get install -y -q --no-install-recommends --no-remove "${stub[@]}" "${CUDA_PKGS[@]}" "${EXTRA_PKGS[@]}" \
      >>"$apt_log" 2>&1 || { tail -n 20 "$apt_log"; return 1; }
  fi
  # The host's certificate authorities copied in (see host_main), for npm.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null && command -v update-ca-certificates >/dev/null; then
    update-ca-certificates >>"$LOGS/apt.log" 2>&1
  fi
  # The rest the way a developer gets it; with the CUDA packages present, setup_deps must install around them.
  bash "$PROJECT/tools/setup_deps.sh" build test >>"$LOGS/apt.log" 2>&1 || { tail -n 20 "$LOGS/apt.log"; return 1; }
  local gone=()
  for p in "${CUDA_PKGS[@]}"; do installed "$p" || gone+=("$p"); done
  if [ ${#gone[@]} -gt 0 ]; then
    result "packages FAIL: ${gone[*]} no longer installed after tools/setup_deps.sh"
    return 1
  fi
  result "packages ok: $(dpkg-query -W -f='libtorch-cuda-dev ${Version}' libtorch-cuda-dev), $(dpkg-query -W -f='nvidia-cuda-toolkit ${Version}' nvidia-cuda-toolkit), $(dpkg-query -W -f='libnccl-dev ${Version}' libnccl-dev), cudnn stub ($(wc -l <"$STUB_DIR/symbols" 2>/dev/null || echo '?') symbols)"
}

inside_build() {
  cd "$PROJECT" || return 1
  local log=$LOGS/build.log rc
  rm -rf "$BUILD"
  # (no GPU to detect: the architecture is named, as gpu_check.sh --dry-run's stand-in nvidia-smi names it)
  bash tools/build.sh "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 >"$log" 2>&1
  rc=$?
  local configured warnings cmake_warnings
  configured=$(grep -m 1 -o 'lmzoo: LibTorch .*' "$log")
  warnings=$(grep -c -E '(^|: )warning:' "$log")
  cmake_warnings=$(grep -c 'CMake Warning' "$log")
  say "configure: $configured"
  grep -E '(^|: )warning:|CMake Warning' "$log" | head -n 20
  if [ "$rc" -ne 0 ]; then
    grep -m 20 -E 'error|Error' "$log"
    result "build FAIL: exit $rc; $configured; see $log"
    return 1
  fi
  if [[ "$configured" != *"CUDA 1, Gloo 1, NCCL 1"* || "$configured" != *"own CUDA kernels 1"* ]]; then
    result "build FAIL: configured as '$configured', not CUDA 1, Gloo 1, NCCL 1 with own CUDA kernels 1"
    return 1
  fi
  if [ "$warnings" -ne 0 ] || [ "$cmake_warnings" -ne 0 ]; then
    result "build FAIL: $warnings compiler warnings, $cmake_warnings CMake warnings; $configured"
    return 1
  fi
  result "build ok: $configured; 0 compiler warnings, 0 CMake warnings; $("$BUILD/lmzoo" --version)"
}

inside_suite() {
  cd "$PROJECT" || return 1
  [ -x "$BUILD/lmzoo_tests" ] || { result "suite FAIL: no $BUILD/lmzoo_tests (run the build step)"; return 1; }
  bash tools/fetch_gpt2_vocab.sh >/dev/null || say "GPT-2 vocabulary not fetched; its tests will skip"
  bash tools/fetch_hf_tokenizers.sh >/dev/null || say "tokenizers reference not fetched; its tests will skip"
  local log=$LOGS/ctest.log rc
  ctest --test-dir "$BUILD" --output-on-failure -j2 </dev/null >"$log" 2>&1
  rc=$?
  local total failed skipped time
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n 1)
  skipped=$(grep -c '\*\*\*Skipped' "$log")
  time=$(sed -n 's/^Total Test time (real) = *//p' "$log" | tail -n 1)
  local passed=$(( ${total:-0} - ${failed:-0} - skipped ))
  grep -E '^\s*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)\)' "$log" | sed 's/^/  /'
  # The skipped ones must be the [cuda] cases, and all of them.
  local cuda_cases
  cuda_cases=$(ctest --test-dir "$BUILD" -N -L cuda | sed -n 's/^Total Tests: *//p')
  local ok=1
  [ "$rc" -eq 0 ] || ok=0
  if [ "$skipped" != "${cuda_cases:-?}" ]; then
    say "  $skipped skipped, but there are ${cuda_cases:-?} [cuda] cases:"
    grep '\*\*\*Skipped' "$log" | sed 's/^/    /'
    ok=0
  fi
  result "suite $([ "$ok" = 1 ] && echo ok || echo FAIL): ${total:-?} tests, $passed passed, ${failed:-?} failed, $skipped skipped (the ${cuda_cases:-?} [cuda] cases), $time"
  [ "$ok" = 1 ]
}

inside_device() {
  cd "$PROJECT" || return 1
  local dir=$LOGS/device lmzoo=$BUILD/lmzoo
  [ -x "$lmzoo" ] || { result "device FAIL: no $lmzoo (run the build step)"; return 1; }
  rm -rf "$dir" && mkdir -p "$dir"
  # Tiny prepared data and a CPU run to point the commands at, so that the device is what they stop at.
  local i
  for i in $(seq 400); do echo "line $i: the quick brown fox jumps over the lazy dog, and the dog sleeps on."; done >"$dir/corpus.txt"
  { "$lmzoo" tokenizer train --input "$dir/corpus.txt" --vocab-size 500 --model-type bpe --out "$dir/tok" &&
    "$lmzoo" prepare --tokenizer "$dir/tok" --input "$dir/corpus.txt" --out "$dir/data" &&
    "$lmzoo" train --data "$dir/data" --out "$dir/cpu-run" --device cpu --steps 2 --n-layer 1 --n-head 2 \
      --d-model 32 --seq-len 16 --batch-size 2; } >"$dir/setup.log" 2>&1 ||
    { tail -n 5 "$dir/setup.log"; result "device FAIL: could not prepare data for the check (see $dir/setup.log)"; return 1; }
  # Each command asked for --device cuda: a non-zero exit and exactly one line on stderr; train makes no run directory.
  local name rc lines bad=0 train_line=""
  local -A commands=(
    [train]="train --data $dir/data --out $dir/cuda-run --device cuda"
    [eval]="eval --checkpoint $dir/cpu-run --data $dir/data --device cuda"
    [generate]="generate --checkpoint $dir/cpu-run --prompt the --device cuda"
    [bench]="bench --data $dir/data --steps 3 --skip 1 --device cuda"
  )
  for name in train eval generate bench; do
    # shellcheck disable=SC2086  # (the command lines above have no spaces inside their words)
    "$lmzoo" ${commands[$name]} >"$dir/$name.out" 2>"$dir/$name.err" </dev/null
    rc=$?
    lines=$(wc -l <"$dir/$name.err")
    say "  lmzoo $name --device cuda: exit $rc, $lines stderr line(s): $(head -c 300 "$dir/$name.err")"
    if [ "$rc" -eq 0 ] || [ "$lines" -ne 1 ]; then bad=1; fi
    [ "$name" = train ] && train_line=$(cat "$dir/$name.err")
  done
  if [ -e "$dir/cuda-run" ]; then say "  lmzoo train --device cuda left $dir/cuda-run behind"; bad=1; fi
  if [ "$bad" = 1 ]; then
    result "device FAIL: see above ($dir)"
    return 1
  fi
  result "device ok: train, eval, generate, bench each exit non-zero with one line; train's: $train_line"
}

inside_dry() {
  cd "$PROJECT" || return 1
  local log=$LOGS/gpu_check_dry.log rc
  BUILD_DIR="$BUILD" WORK_DIR=/root/lmzoo-gpu-check-dry bash tools/gpu_check.sh --dry-run >"$log" 2>&1
  rc=$?
  grep -E '^====|FAIL|unbound|command not found|syntax error' "$log" | sed 's/^/  /'
  result "dry $([ "$rc" -eq 0 ] && echo ok || echo FAIL): tools/gpu_check.sh --dry-run exit $rc, $(grep -m 1 -o '[0-9]* passed, [0-9]* failed' "$log" | tail -n 1)"
  [ "$rc" -eq 0 ]
}

if [ "${1:-}" = "--inside" ]; then
  mkdir -p "$LOGS"
  case "${2:-}" in
    packages) inside_packages ;;
    build) inside_build ;;
    suite) inside_suite ;;
    device) inside_device ;;
    dry) inside_dry ;;
    *) echo "unknown inside step '${2:-}'" >&2; exit 2 ;;
  esac
  exit $?
fi

# ================================================================================ on the host
# (one function, read whole before it runs: editing this file meanwhile cannot derail a run)
host_main() {
  CHROOT=/tmp/lmzoo-cuda-trixie
  BASE=""
  MIRROR=""
  WORKTREE=0
  LOG=/tmp/lmzoo-cuda-build-check.log
  STEPS=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --chroot) CHROOT=$2; shift 2 ;;
      --base) BASE=$2; shift 2 ;;
      --mirror) MIRROR=$2; shift 2 ;;
      --worktree) WORKTREE=1; shift ;;
      --log) LOG=$2; shift 2 ;;
      -h | --help) usage; exit 0 ;;
      packages | build | suite | device | dry) STEPS+=("$1"); shift ;;
      *) echo "cuda_build_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
  done
  [ ${#STEPS[@]} -eq 0 ] && STEPS=(packages build suite device dry)

  die() { echo "cuda_build_check: $*" >&2; exit 2; }
  [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts)"
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  [ -n "$MIRROR" ] || MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
  [ -n "$MIRROR" ] || MIRROR=$(sed -n 's/^deb \(http[^ ]*\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
  [ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian

  exec > >(tee "$LOG") 2>&1
  started=$(date +%s)
  echo "cuda_build_check: chroot $CHROOT ($SUITE, main contrib non-free), mirror $MIRROR, steps: ${STEPS[*]}"

  # ---- the chroot
  if [ ! -x "$CHROOT/bin/bash" ]; then
    if [ -n "$BASE" ]; then
      [ -x "$BASE/bin/bash" ] || die "--base $BASE is not a root file system"
      echo "copying $BASE to $CHROOT"
      cp -a "$BASE" "$CHROOT" || die "cannot copy $BASE"
    else
      command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
        die "debootstrap is missing and cannot be installed"
      echo "debootstrap --variant=minbase $SUITE $CHROOT"
      debootstrap --variant=minbase "$SUITE" "$CHROOT" "$MIRROR" >"$LOG.debootstrap" 2>&1 ||
        { rm -rf "$CHROOT"; die "debootstrap failed; see $LOG.debootstrap"; }
    fi
  fi
  echo "deb $MIRROR $SUITE main contrib non-free" >"$CHROOT/etc/apt/sources.list"
  rm -f "$CHROOT"/etc/apt/sources.list.d/*.sources
  cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
  # This machine's own certificate authorities (a TLS-intercepting proxy's, say) go in too, for npm's fetches.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$CHROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$CHROOT/usr/local/share/ca-certificates/"
  fi

  mounted=()
  unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null; done
  }
  trap unmount_all EXIT
  for m in dev dev/pts proc sys; do
    mountpoint -q "$CHROOT/$m" && continue
    case "$m" in
      proc) mount -t proc proc "$CHROOT/proc" ;;
      sys) mount -t sysfs sys "$CHROOT/sys" ;;
      *) mount --bind "/$m" "$CHROOT/$m" ;;
    esac || die "cannot mount $CHROOT/$m"
    mounted+=("$CHROOT/$m")
  done

  # ---- the project: HEAD, or the working tree's files
  rm -rf "${CHROOT:?}$PROJECT" && mkdir -p "$CHROOT$PROJECT"
  if [ "$WORKTREE" = 1 ]; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r ls -d 2>/dev/null |
      tar -c -T - ) | tar -x -C "$CHROOT$PROJECT" || die "cannot copy the working tree"
    echo "project: working tree of $ROOT ($(cd "$ROOT" && git rev-parse --short HEAD) + uncommitted changes)"
  else
    (cd "$ROOT" && git archive HEAD) | tar -x -C "$CHROOT$PROJECT" || die "cannot copy HEAD of $ROOT"
    echo "project: $(cd "$ROOT" && git log -1 --format='%h %s' HEAD)"
  fi

  # ---- the steps
  inside() {
    env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb LANG=C.UTF-8 CI=true \
      chroot "$CHROOT" bash "$PROJECT/tools/cuda_build_check.sh" --inside "$1" </dev/null
  }
  RESULTS=()
  status=0
  for s in "${STEPS[@]}"; do
    echo
    echo "==== $s ($(date +%H:%M:%S))"
    t0=$(date +%s)
    out=$(mktemp)
    inside "$s" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    line=$(sed -n 's/^RESULT //p' "$out" | tail -n 1)
    rm -f "$out"
    [ -n "$line" ] || line="$s $([ "$rc" -eq 0 ] && echo ok || echo "FAIL: exit $rc")"
    RESULTS+=("$line ($(( $(date +%s) - t0 )) s)")
    if [ "$rc" -ne 0 ]; then
      status=1
      # Later steps need the packages and the build.
      case "$s" in packages | build) echo "(stopping: later steps need $s)"; break ;; esac
    fi
  done

  echo
  echo "==== summary ($(( ($(date +%s) - started) / 60 )) min; full log $LOG; step logs in $CHROOT$LOGS)"
  for r in "${RESULTS[@]}"; do echo "  $r"; done
  return $status
}

host_main "$@"; exit $?
