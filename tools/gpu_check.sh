#!/usr/bin/env bash
# Builds lmzoo against this machine's LibTorch (pip torch by default) and checks it on the GPU:
#   prereqs  LibTorch's CMake prefix, torch/CUDA versions, the GPU          (always)
#   deps     sentencepiece, nlohmann-json, cxxopts, Catch2: the system's, else Debian .debs unpacked
#            into a scratch sysroot                                         (always)
#   build    bash tools/build.sh BUILD_DIR -DCMAKE_PREFIX_PATH=... (no apt-get: LMZOO_SKIP_APT=1)
#   suite    ctest, the [cuda] test cases included
#   smoke    gpt, bert and t5 in fp32 and bf16 on CUDA: train, eval, generate, export; each command
#            must exit 0 with no "Warning" or "deprecated" on stderr; one NCCL rank under torchrun trains
#            to exactly the losses of one process
#   speed    lmzoo bench --preset gpt2 against tools/gpu_reference.py (eager and torch.compile),
#            alternating, ROUNDS rounds; then bert-base and t5-small (and Hugging Face eager
#            references for those two when python3 can import transformers)
#
# Usage: bash tools/gpu_check.sh [--dry-run] [STEP...]     (default: build suite smoke speed)
#   --dry-run (or DRY_RUN=1): no GPU needed. Every step runs what it can so that the script's own errors show up
#            before a GPU is lent: a stand-in nvidia-smi answers the GPU queries (compute capability 9.0), a CPU-only
#            torch or a missing nvcc is noted instead of refused; suite runs the [cuda] cases (ctest -L cuda), which
#            must all report themselves skipped; smoke trains on the CPU, its torchrun rank on gloo instead of nccl;
#            speed times gpt-nano / bert-tiny / t5-small with tiny shapes on the CPU, 1 round of 4 iterations.
#            tools/cuda_build_check.sh runs it against Debian 13's CUDA LibTorch.
# Environment:
#   LIBTORCH_PREFIX  LibTorch's CMake prefix (default: python3 -c 'import torch;print(torch.utils.cmake_prefix_path)',
#                    else Debian's /usr/lib/<multiarch>/cmake; for the official zip: /path/libtorch/share/cmake)
#   PYTHON           the Python with torch (python3)           BUILD_DIR  build folder (/tmp/lmzoo-gpu-build)
#   DEBS_DIR         Debian .debs to unpack when the system lacks a dependency (.carry/debs)
#   SYSROOT          where they are unpacked (/tmp/lmzoo-gpu-sysroot)
#   WORK_DIR         corpora, data, runs and logs (/tmp/lmzoo-gpu-check)
#   CORPUS           a text file for the smoke and speed steps (default: a generated pseudo-English text)
#   ROUNDS           speed rounds (3)       SPEED_STEPS / SPEED_SKIP   bench iterations / left out (30 / 10)
#   CUDA_ARCH        CMAKE_CUDA_ARCHITECTURES (default: the GPU's compute capability, else native, else 90)
# Exit status: 0 when every step passed, 1 when any failed, 2 when a prerequisite is missing.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Paths given relative are taken from the directory the script was started in (it then works in ROOT).
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
PY="${PYTHON:-python3}"
BUILD_DIR="$(absolute "${BUILD_DIR:-/tmp/lmzoo-gpu-build}")"
DEBS_DIR="$(absolute "${DEBS_DIR:-$ROOT/.carry/debs}")"
SYSROOT="$(absolute "${SYSROOT:-/tmp/lmzoo-gpu-sysroot}")"
WORK_DIR="$(absolute "${WORK_DIR:-/tmp/lmzoo-gpu-check}")"
[ -z "${CORPUS:-}" ] || CORPUS="$(absolute "$CORPUS")"
DRY="${DRY_RUN:-0}"
for arg in "$@"; do [ "$arg" = --dry-run ] && DRY=1; done
if [ "$DRY" = 1 ]; then
  ROUNDS="${ROUNDS:-1}"
  SPEED_STEPS="${SPEED_STEPS:-4}"
  SPEED_SKIP="${SPEED_SKIP:-1}"
else
  ROUNDS="${ROUNDS:-3}"
  SPEED_STEPS="${SPEED_STEPS:-30}"
  SPEED_SKIP="${SPEED_SKIP:-10}"
fi
# Where the smoke and speed steps run, and the backend of the torchrun rank (the CPU and gloo in a dry run).
DEVICE=cuda
BACKEND=nccl
[ "$DRY" = 1 ] && DEVICE=cpu && BACKEND=gloo
LMZOO="$BUILD_DIR/lmzoo"
LOGS="$WORK_DIR/logs"
DEB_PACKAGES="libsentencepiece-dev libsentencepiece0 nlohmann-json3-dev libcxxopts-dev catch2 libonig-dev libonig5 libutf8proc-dev libutf8proc2"

PASSED=()
FAILED=()
CMAKE_PREFIXES=""  # set by check_prerequisites / setup_dependencies
CUDA_ARCHS=""

# ------------------------------------------------------------------------------------------ output
header() { printf '\n==== %s\n' "$*"; }
note() { printf '  %s\n' "$*"; }
die() {
  printf 'gpu_check: %s\n' "$*" >&2
  exit 2
}
# A missing prerequisite: fatal, except in a dry run, where it is noted and the check goes on.
require() {
  if [ "$DRY" = 1 ]; then
    note "(dry run, would stop here) $*"
  else
    die "$*"
  fi
}
pass() {
  PASSED+=("$1")
  printf '  PASS  %s\n' "$1"
}
fail() {
  FAILED+=("$1")
  printf '  FAIL  %s%s\n' "$1" "${2:+ ($2)}"
}

# Runs NAME's command (the arguments after NAME) with stdout and stderr in $LOGS/NAME.{out,err}.
# PASS: exit 0 and no stderr line containing "Warning" or "deprecated". Returns 0 on PASS.
run_checked() {
  local name="$1" log
  shift
  log="$LOGS/${name//[^A-Za-z0-9_.-]/_}"
  "$@" >"$log.out" 2>"$log.err" </dev/null
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$name" "exit $rc; $log.err"
    tail -n 5 "$log.err" | sed 's/^/        /'
    return 1
  fi
  if grep -E 'Warning|deprecated' "$log.err" >"$log.warnings"; then
    fail "$name" "warnings on stderr"
    head -n 5 "$log.warnings" | sed 's/^/        /'
    return 1
  fi
  pass "$name"
}

# ------------------------------------------------------------------------- a. prerequisites
# A dry run's nvidia-smi: answers the queries this script makes as if there were one compute capability 9.0 GPU.
install_nvidia_smi_stand_in() {
  local bin="$WORK_DIR/dry-run-bin"
  mkdir -p "$bin" || die "cannot create $bin"
  cat >"$bin/nvidia-smi" <<'SH'
#!/bin/sh
# Written by tools/gpu_check.sh --dry-run: stands in for nvidia-smi on a machine without a GPU.
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *name,memory.total,driver_version*) echo "no GPU (gpu_check.sh --dry-run stand-in), 0 MiB, none" ;;
  *--query-gpu=name*) echo "no GPU (gpu_check.sh --dry-run stand-in)" ;;
  *) echo "nvidia-smi stand-in of tools/gpu_check.sh --dry-run: no GPU" ;;
esac
SH
  chmod +x "$bin/nvidia-smi"
  export PATH="$bin:$PATH"
}

check_prerequisites() {
  header "prerequisites: LibTorch, CUDA, GPU, compilers"
  if [ "$DRY" = 1 ]; then
    install_nvidia_smi_stand_in
    note "dry run: $(command -v nvidia-smi) stands in for nvidia-smi; smoke and speed run on the CPU"
  fi
  command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this check needs a machine with an NVIDIA GPU and its driver"
  command -v cmake >/dev/null || die "cmake not found: install CMake >= 3.18"
  command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler (c++ / g++) found: install g++"
  command -v pkg-config >/dev/null || die "pkg-config not found: install it (sentencepiece is found through it)"
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  command -v nvcc >/dev/null || require "nvcc not found: LibTorch's CMake config needs the CUDA toolkit; install it or put its bin/ on PATH"

  local torch_prefix
  if [ -n "${LIBTORCH_PREFIX:-}" ]; then
    torch_prefix="$LIBTORCH_PREFIX"
  else
    torch_prefix=$("$PY" -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null) ||
      die "$PY cannot import torch: pip install torch (a CUDA build), or set LIBTORCH_PREFIX=/path/libtorch/share/cmake"
    # Debian's python3-torch(-cuda) ships no share/cmake: its LibTorch's config is libtorch(-cuda)-dev's.
    local debian_prefix
    debian_prefix="/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/cmake"
    if [ ! -f "$torch_prefix/Torch/TorchConfig.cmake" ] && [ -f "$debian_prefix/Torch/TorchConfig.cmake" ]; then
      torch_prefix="$debian_prefix"
    fi
    # lmzoo links the system's sentencepiece, built with the C++11 string ABI; pip wheels before 2.7 used the old one.
    "$PY" -c 'import sys, torch; sys.exit(not torch.compiled_with_cxx11_abi())' ||
      die "this pip torch uses the pre-C++11 ABI (pip wheels before 2.7): install torch >= 2.7, or use the official cxx11-abi zip via LIBTORCH_PREFIX"
    "$PY" -c 'import sys, torch; sys.exit(torch.version.cuda is None)' ||
      require "this pip torch is a CPU-only build: install a CUDA wheel (pip install torch --index-url https://download.pytorch.org/whl/cu126 or newer)"
  fi
  [ -f "$torch_prefix/Torch/TorchConfig.cmake" ] ||
    die "no Torch/TorchConfig.cmake under $torch_prefix: LIBTORCH_PREFIX must be LibTorch's CMake prefix (.../share/cmake)"
  CMAKE_PREFIXES="$torch_prefix"
  note "LibTorch CMake prefix: $torch_prefix"

  if "$PY" -c 'import torch' 2>/dev/null; then
    note "$("$PY" -c 'import torch; print("python torch", torch.__version__, "| CUDA", torch.version.cuda, "| GPU visible:", torch.cuda.is_available())')"
  elif [ -f "$torch_prefix/../../build-version" ]; then
    note "LibTorch $(cat "$torch_prefix/../../build-version") (no python torch: the speed step's reference will be skipped)"
  fi
  note "nvcc: $(nvcc --version | grep -o 'release [^,]*' | head -n 1)"
  note "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"

  CUDA_ARCHS="${CUDA_ARCH:-}"
  if [ -z "$CUDA_ARCHS" ]; then
    local cap
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
    if [[ "$cap" =~ ^[0-9]+$ ]]; then
      CUDA_ARCHS="$cap"
    elif cmake_at_least 3.24; then
      CUDA_ARCHS=native
    else
      CUDA_ARCHS=90
    fi
  fi
  note "CMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS"
}

# True when cmake's version is at least $1 (major.minor).
cmake_at_least() {
  local have
  have=$(cmake --version | head -n 1 | grep -oE '[0-9]+\.[0-9]+' | head -n 1)
  [ "$(printf '%s\n%s\n' "$1" "$have" | sort -V | head -n 1)" = "$1" ]
}

# --------------------------------------------------------------------------- b. dependencies
# True when a CMake package config named $1 (a file name) is under the usual prefixes.
has_cmake_config() {
  find /usr/lib /usr/share /usr/local/lib /usr/local/share -maxdepth 4 -name "$1" 2>/dev/null | grep -q .
}

system_has_dependencies() {
  pkg-config --exists sentencepiece oniguruma libutf8proc &&
    has_cmake_config nlohmann_jsonConfig.cmake &&
    { has_cmake_config cxxopts-config.cmake || has_cmake_config cxxoptsConfig.cmake; } &&
    has_cmake_config Catch2Config.cmake
}

# Unpacks every .deb of DEBS_DIR into SYSROOT (dpkg -x, else ar + tar).
unpack_debs() {
  local deb
  mkdir -p "$SYSROOT"
  for deb in "$DEBS_DIR"/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$SYSROOT" || die "cannot unpack $deb"
    else  # a .deb is an ar archive whose data.tar.* holds the files
      command -v ar >/dev/null || die "neither dpkg nor ar (binutils) is installed: cannot unpack $deb"
      local tmp
      tmp=$(mktemp -d)
      { (cd "$tmp" && ar x "$deb") && tar -xf "$tmp"/data.tar.* -C "$SYSROOT"; } || die "cannot unpack $deb"
      rm -rf "$tmp"
    fi
  done
}

setup_dependencies() {
  header "dependencies: sentencepiece, nlohmann-json, cxxopts, Catch2"
  if system_has_dependencies; then
    note "all found on the system"
    return
  fi
  compgen -G "$DEBS_DIR/*.deb" >/dev/null ||
    die "the system lacks some of sentencepiece / nlohmann-json / cxxopts / Catch2, and $DEBS_DIR holds no .deb files.
  Install them (Debian/Ubuntu: apt-get install libsentencepiece-dev nlohmann-json3-dev libcxxopts-dev catch2), or
  fetch the .debs on a Debian 12 machine and copy them here:
    mkdir -p .carry/debs && (cd .carry/debs && apt-get download $DEB_PACKAGES)"
  unpack_debs
  local lib="$SYSROOT/usr/lib/x86_64-linux-gnu"
  export CPATH="$SYSROOT/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_SYSROOT_DIR="$SYSROOT"
  export PKG_CONFIG_PATH="$lib/pkgconfig"
  CMAKE_PREFIXES="$CMAKE_PREFIXES;$SYSROOT/usr"
  note "unpacked $(find "$DEBS_DIR" -maxdepth 1 -name '*.deb' | wc -l) .debs from $DEBS_DIR into $SYSROOT"
}

# ---------------------------------------------------------------------------------- c. build
build_lmzoo() {
  header "build: $BUILD_DIR (Release, -j$(nproc))"
  local log="$LOGS/build.log" cmake_args=(-DCMAKE_PREFIX_PATH="$CMAKE_PREFIXES" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS")
  note "bash tools/build.sh $BUILD_DIR ${cmake_args[*]}"
  local rc
  LMZOO_SKIP_APT=1 bash "$ROOT/tools/build.sh" "$BUILD_DIR" "${cmake_args[@]}" >"$log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] || [ ! -x "$LMZOO" ]; then
    fail "build" "see $log"
    grep -m 20 -E 'error|Error|Could not find' "$log" | sed 's/^/        /'
    return 1
  fi
  grep -m 1 'lmzoo: LibTorch' "$log" | sed 's/^-- /  /'
  if grep -q 'lmzoo: LibTorch [^,]*, CUDA 0,' "$log"; then
    if [ "$DRY" = 1 ]; then
      note "(dry run, would fail here) configured against a LibTorch without CUDA"
    else
      fail "build" "configured against a LibTorch without CUDA; see $log"
      return 1
    fi
  elif grep -q 'lmzoo: LibTorch .*own CUDA kernels 0' "$log"; then
    fail "build" "CMake found no working CUDA compiler for lmzoo's own kernels (models/kernels/cuda/); see $log"
    return 1
  fi
  pass "build"
  note "binary: $LMZOO"
}

require_binary() {
  [ -x "$LMZOO" ] || die "no lmzoo binary at $LMZOO: run the build step first (bash tools/gpu_check.sh build)"
}

# ---------------------------------------------------------------------------------- d. suite
run_suite() {
  local ctest_args=(--output-on-failure -j8)
  if [ "$DRY" = 1 ]; then
    header "suite (dry run): ctest -L cuda in $BUILD_DIR, the [cuda] cases only; each must report itself skipped"
    ctest_args+=(-L cuda)
  else
    header "suite: ctest -j8 in $BUILD_DIR ([cuda] cases included)"
  fi
  require_binary
  local log="$LOGS/ctest.log"
  (cd "$BUILD_DIR" && ctest "${ctest_args[@]}" </dev/null) >"$log" 2>&1
  local rc=$?
  grep -E 'tests passed|tests failed|Total Test time' "$log" | sed 's/^/  /'
  if [ "$rc" -ne 0 ]; then
    fail "suite" "see $log"
    grep -E '^\s*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)' "$log" | head -n 30 | sed 's/^/        /'
    return 1
  fi
  if [ "$DRY" = 1 ]; then
    # Without a GPU every [cuda] case must see no CUDA (exit code 4), and there must be some.
    local run skipped
    run=$(grep -c -E '^ *[0-9]+/[0-9]+ Test +#' "$log")
    skipped=$(grep -c '\*\*\*Skipped' "$log")
    if [ "$run" -eq 0 ] || [ "$skipped" -ne "$run" ]; then
      fail "suite (dry run)" "$skipped of $run [cuda] cases skipped; see $log"
      return 1
    fi
    pass "suite (dry run): all $run [cuda] cases skipped"
    return 0
  fi
  # With a GPU present no [cuda] case may report itself skipped (exit code 4: no CUDA seen).
  if grep -q '\*\*\*Skipped' "$log"; then
    fail "suite" "test cases skipped on a CUDA machine; see $log"
    grep '\*\*\*Skipped' "$log" | head -n 10 | sed 's/^/        /'
    return 1
  fi
  pass "suite"
}

# ---------------------------------------------------------------------------------- corpora
# Writes about BYTES bytes of seeded pseudo-English (a Zipf-like lexicon of syllable words) to FILE.
generate_corpus() {
  local file="$1" bytes="$2"
  awk -v bytes="$bytes" 'BEGIN {
    srand(1234)
    ns = split("th an er in re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur", syl, " ")
    nw = 6000
    for (i = 1; i <= nw; i++) { w = ""; k = 1 + int(rand() * 3.2); for (j = 0; j < k; j++) w = w syl[1 + int(rand() * ns)]; lex[i] = w }
    total = 0
    while (total < bytes) {
      line = ""; sentences = 1 + int(rand() * 5)
      for (s = 0; s < sentences; s++) {
        n = 4 + int(rand() * 14)
        for (i = 0; i < n; i++) {
          w = lex[int(exp(rand() * log(nw)))]
          if (i == 0) w = toupper(substr(w, 1, 1)) substr(w, 2)
          line = line w (i == n - 1 ? (rand() < 0.8 ? ". " : "? ") : (rand() < 0.08 ? ", " : " "))
        }
      }
      print line; total += length(line) + 1
      if (rand() < 0.15) { print ""; total++ }
    }
  }' >"$file"
}

# Corpus for a step: $CORPUS when given, else a generated one of BYTES bytes in DIR. Prints its path.
corpus_for() {
  local dir="$1" bytes="$2"
  if [ -n "${CORPUS:-}" ]; then
    [ -f "$CORPUS" ] || die "CORPUS=$CORPUS is not a file"
    echo "$CORPUS"
  else
    [ -s "$dir/corpus.txt" ] || generate_corpus "$dir/corpus.txt" "$bytes"
    echo "$dir/corpus.txt"
  fi
}

# Trains a BPE tokenizer of VOCAB pieces on CORPUS into DIR/tok and prepares DIR/data. Checked steps named PREFIX.
tokenize_and_prepare() {
  local prefix="$1" dir="$2" corpus="$3" vocab="$4"
  rm -rf "$dir/tok" "$dir/data"
  run_checked "$prefix tokenizer train (bpe $vocab)" \
    "$LMZOO" tokenizer train --input "$corpus" --vocab-size "$vocab" --model-type bpe --out "$dir/tok" &&
    run_checked "$prefix prepare" "$LMZOO" prepare --tokenizer "$dir/tok" --input "$corpus" --out "$dir/data"
}

# ---------------------------------------------------------------------------------- e. smoke
# Train, eval, generate and export one family ARCH in PRECISION on CUDA with a tiny shape.
smoke_family() {
  local arch="$1" precision="$2" data="$3" runs="$4"
  local run="$runs/$arch-$precision" name="$arch $precision"
  local eval_flags=(--data "$data") generate_flags=(--prompt "the" --max-new-tokens 16 --temperature 0)
  case "$arch" in
    bert) generate_flags=(--prompt "the [MASK] of the" --top-k 3) ;;  # fills masks: no sampling flags
    t5) eval_flags+=(--batches 4) ;;
  esac
  rm -rf "$run" "$run.pt"
  run_checked "$name train" "$LMZOO" train --arch "$arch" --data "$data" --out "$run" \
    --n-layer 2 --n-head 2 --d-model 64 --seq-len 64 --batch-size 8 --steps 20 --warmup 2 \
    --eval-interval 10 --eval-iters 2 --device "$DEVICE" --precision "$precision" || return 1
  run_checked "$name eval" "$LMZOO" eval --checkpoint "$run" "${eval_flags[@]}" --device "$DEVICE" --precision "$precision"
  run_checked "$name generate" "$LMZOO" generate --checkpoint "$run" "${generate_flags[@]}" --device "$DEVICE"
  run_checked "$name export" "$LMZOO" export --checkpoint "$run" --out "$run.pt"
}

# One NCCL rank under torchrun (this machine has one GPU) must train to exactly the losses of the same run in one
# process: the process group, the gradient buckets and the target-count weighting change nothing with one rank;
# nor does --shard-optimizer (its owner broadcasts and the state gathered for the checkpoint run on the device).
# (A dry run does the same on the CPU, where the rank's backend is gloo.)
smoke_nccl() {
  local data="$1" runs="$2"
  local flags=(train --data "$data" --n-layer 2 --n-head 2 --d-model 64 --seq-len 64 --batch-size 8 --steps 20
               --warmup 2 --eval-interval 10 --eval-iters 2 --device "$DEVICE" --dropout 0)
  rm -rf "$runs/$BACKEND-one" "$runs/$BACKEND-rank" "$runs/$BACKEND-sharded"
  run_checked "$BACKEND one process" "$LMZOO" "${flags[@]}" --out "$runs/$BACKEND-one" || return 1
  # The summary lines less what differs between two processes of the same run: the run directory, the peaks.
  local one same='s/"peak_[a-z_]*":[0-9]*,//g; s/"run_dir":"[^"]*",//'
  one=$(tail -n 1 "$LOGS/${BACKEND}_one_process.out" | sed "$same")
  local variant name rank out
  for variant in "" "--shard-optimizer"; do
    name="$BACKEND 1 rank under torchrun${variant:+ $variant}"
    out="$runs/$BACKEND-rank"
    [ -n "$variant" ] && out="$runs/$BACKEND-sharded"
    # tools/torchrun.py: torchrun with its store served without libuv (PyTorch 2.4+ built without it, as Debian 13's,
    # refuses to start otherwise); -r/-t give torch 1.13's launcher the maps it dereferences (as the tests do).
    run_checked "$name" "$PY" "$ROOT/tools/torchrun.py" --nproc_per_node 1 --nnodes 1 --no_python -r 9:0 -t 9:0 \
      "$LMZOO" "${flags[@]}" $variant --out "$out" || return 1
    rank=$(tail -n 1 "$LOGS/${name//[^A-Za-z0-9_.-]/_}.out" | sed "$same")
    if ! grep -q "1 ranks ($BACKEND)" "$LOGS/${name//[^A-Za-z0-9_.-]/_}.err"; then
      fail "$name: rank named in the first line" "no '1 ranks ($BACKEND)' on stderr"
    elif [ "$one" != "$rank" ]; then
      fail "$name = one process" "$rank vs $one"
    else
      pass "$name = one process ($rank)"
    fi
  done
}

smoke() {
  header "smoke: gpt, bert, t5 x fp32, bf16 on $DEVICE (train, eval, generate, export)"
  require_binary
  local dir="$WORK_DIR/smoke" corpus
  mkdir -p "$dir/runs"
  corpus=$(corpus_for "$dir" 1000000)
  note "corpus: $corpus"
  tokenize_and_prepare "smoke" "$dir" "$corpus" 1000 || return 1
  local arch precision
  for arch in gpt bert t5; do
    for precision in fp32 bf16; do
      smoke_family "$arch" "$precision" "$dir/data" "$dir/runs"
    done
  done
  smoke_nccl "$dir/data" "$dir/runs"
}

# ---------------------------------------------------------------------------------- f. speed
# Runs a benchmark command (after NAME and OUT) and appends its last stdout line (JSON) to OUT.
bench_into() {
  local name="$1" out="$2" log
  shift 2
  log="$LOGS/${name//[^A-Za-z0-9_.-]/_}"
  if "$@" >"$log.out" 2>"$log.err" </dev/null && tail -n 1 "$log.out" | grep -q '^{'; then
    tail -n 1 "$log.out" >>"$out"
    pass "$name"
  else
    fail "$name" "see $log.err"
    tail -n 3 "$log.err" | sed 's/^/        /'
  fi
}

# Hugging Face eager reference for bert-base (masked LM) or t5-small (span-corruption lengths 512 -> 114):
# random token ids, bf16 autocast, fused AdamW, no dropout; prints one JSON line like lmzoo bench.
# Arguments: ARCH DATA BATCH SEQ STEPS SKIP [DEVICE (cuda)]; on the CPU (a dry run) with the models' small shapes.
hf_reference() {
  "$PY" - "$@" <<'PY'
import json, statistics, sys, time
import torch, transformers

arch, data, batch, seq, steps, skip = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
vocab = json.load(open(f"{data}/manifest.json"))["vocab_size"]
dev = torch.device(sys.argv[7] if len(sys.argv) > 7 else "cuda")
cuda = dev.type == "cuda"
small = {} if cuda else {"num_layers": 2, "num_decoder_layers": 2, "d_model": 64, "d_ff": 128, "num_heads": 2}
if arch == "bert":
    cfg = transformers.BertConfig(vocab_size=vocab, max_position_embeddings=seq, hidden_dropout_prob=0.0,
                                  attention_probs_dropout_prob=0.0,
                                  **({} if cuda else {"num_hidden_layers": 2, "hidden_size": 128,
                                                      "num_attention_heads": 2, "intermediate_size": 512}))
    model = transformers.BertForMaskedLM(cfg)
else:
    cfg = transformers.T5Config(vocab_size=vocab, dropout_rate=0.0, **small)  # the defaults are t5-small's shape
    model = transformers.T5ForConditionalGeneration(cfg)
model.to(dev).train()
decay = [p for p in model.parameters() if p.dim() >= 2]
rest = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                        lr=1e-4, fused=cuda)
g = torch.Generator(device=dev).manual_seed(0)

def batch_inputs():
    ids = torch.randint(107, vocab, (batch, seq), device=dev, generator=g)
    if arch == "bert":
        labels = torch.where(torch.rand(batch, seq, device=dev, generator=g) < 0.15, ids, -100)
        return {"input_ids": ids, "labels": labels}
    return {"input_ids": ids, "labels": torch.randint(107, vocab, (batch, seq * 114 // 512), device=dev, generator=g)}

def sync():
    if cuda:
        torch.cuda.synchronize()

times = []
for _ in range(steps):
    sync()
    t0 = time.perf_counter()
    with torch.autocast(dev.type, dtype=torch.bfloat16):
        loss = model(**batch_inputs()).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    sync()
    times.append(time.perf_counter() - t0)
ms = statistics.median(times[skip:]) * 1e3
print(json.dumps({"reference": f"transformers {transformers.__version__} eager", "ms_per_iter_median": ms,
                  "ms_per_iter_min": min(times[skip:]) * 1e3, "tokens_per_s": batch * seq / (ms / 1e3),
                  "iters_timed": steps - skip, "peak_memory_bytes": torch.cuda.max_memory_allocated() if cuda else 0}))
PY
}

# Prints the comparison table from the JSON-lines files of DIR.
speed_table() {
  "$PY" - "$1" <<'PY'
import json, os, statistics, sys

d = sys.argv[1]
def rows(name):
    path = os.path.join(d, name + ".jsonl")
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []
def med(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None
def fmt(v, f):
    return "-" if v is None else f.format(v)

print(f"{'program':48} {'runs':>4} {'ms/iter':>9} {'tokens/s':>11} {'MFU':>7} {'peak GiB':>9}")
table = [("gpt2: lmzoo bench (bf16)", "gpt2_lmzoo"), ("gpt2: lmzoo bench --fused-loss", "gpt2_lmzoo_fused"),
         ("gpt2: lmzoo bench, all levers (*)", "gpt2_lmzoo_graphs"),
         ("gpt2: gpu_reference.py eager", "gpt2_eager"), ("gpt2: gpu_reference.py --compile", "gpt2_compiled"),
         ("bert-base: lmzoo bench", "bert_lmzoo"), ("bert-base: lmzoo bench --fused-loss", "bert_lmzoo_fused"),
         ("bert-base: lmzoo bench, all levers (*)", "bert_lmzoo_graphs"), ("bert-base: transformers eager", "bert_hf"), ("t5-small: lmzoo bench", "t5_lmzoo"),
         ("t5-small: lmzoo bench --fused-loss", "t5_lmzoo_fused"),
         ("t5-small: lmzoo bench, all levers (*)", "t5_lmzoo_graphs"), ("t5-small: transformers eager", "t5_hf")]
for label, name in table:
    rs = rows(name)
    if not rs:
        continue
    ms, mfu, mem = med(rs, "ms_per_iter_median"), med(rs, "mfu"), med(rs, "peak_memory_bytes")
    tps = med(rs, "tokens_per_s")
    print(f"{label:48} {len(rs):>4} {fmt(ms, '{:.2f}'):>9} {fmt(tps, '{:,.0f}'):>11} "
          f"{fmt(mfu and 100 * mfu, '{:.1f}%'):>7} {fmt(mem and mem / 2**30, '{:.2f}'):>9}")
print("(*) --fused-loss --cuda-graphs --attention-kernel fastest --fused-add-norm --fused-bias-gelu")
for name in ("gpt2_lmzoo_graphs", "bert_lmzoo_graphs", "t5_lmzoo_graphs"):
    for r in rows(name)[:1]:
        print(f"{name}: cuda graphs {r.get('cuda_graphs', '-')}; attention {r.get('attention', '-')}")
print()
for mine, label in (("gpt2_lmzoo", "lmzoo"), ("gpt2_lmzoo_fused", "lmzoo --fused-loss"),
                    ("gpt2_lmzoo_graphs", "lmzoo, all levers")):
    lm = rows(mine)
    for ref in ("eager", "compiled"):
        rs = rows("gpt2_" + ref)
        if lm and rs:
            ratio = med(lm, "ms_per_iter_median") / med(rs, "ms_per_iter_median")
            per_round = sorted(a["ms_per_iter_median"] / b["ms_per_iter_median"] for a, b in zip(lm, rs))
            print(f"gpt2 ms/iter ratio {label}/{ref}: {ratio:.3f} (below 1: lmzoo faster); "
                  f"per-round median {statistics.median(per_round):.3f}, range {per_round[0]:.3f}-{per_round[-1]:.3f}")
for fam in ("bert", "t5"):
    for mine, label in ((fam + "_lmzoo", "lmzoo"), (fam + "_lmzoo_fused", "lmzoo --fused-loss"),
                        (fam + "_lmzoo_graphs", "lmzoo, all levers")):
        a, b = rows(mine), rows(fam + "_hf")
        if a and b:
            print(f"{fam} ms/iter ratio {label}/transformers: "
                  f"{med(a, 'ms_per_iter_median') / med(b, 'ms_per_iter_median'):.3f}")
PY
}

speed() {
  header "speed: lmzoo bench vs tools/gpu_reference.py, $ROUNDS rounds of $SPEED_STEPS iterations ($SPEED_SKIP left out)"
  require_binary
  local dir="$WORK_DIR/speed" corpus data r
  local levers=(--fused-loss --cuda-graphs --attention-kernel fastest --fused-add-norm --fused-bias-gelu)
  local steps=(--steps "$SPEED_STEPS" --skip "$SPEED_SKIP") iters=(--iters "$SPEED_STEPS" --skip "$SPEED_SKIP")
  # The programs' shapes: GPT-2 124M, bert-base and t5-small at 512 tokens; a dry run's are tiny, on the CPU.
  local gpt=(--preset gpt2 --batch-size 16) reference=(--batch-size 16) bert=(--preset bert-base --seq-len 512)
  local t5=(--preset t5-small --seq-len 512) encoder_batch=32 encoder_seq=512 vocab=8000 bytes=4000000
  if [ "$DRY" = 1 ]; then
    gpt=(--preset gpt-nano --batch-size 4)
    reference=(--batch-size 4 --n-layer 4 --n-head 4 --d-model 128 --seq-len 64 --device cpu --log-interval 0)
    bert=(--preset bert-tiny --seq-len 64) t5=(--preset t5-small --seq-len 64) encoder_batch=4 encoder_seq=64
    vocab=2000 bytes=1000000
    note "dry run: gpt-nano, bert-tiny and t5-small at 64 tokens on the CPU stand in the gpt2, bert-base and t5-small rows"
  fi
  mkdir -p "$dir"
  rm -f "$dir"/*.jsonl
  corpus=$(corpus_for "$dir" "$bytes")
  note "corpus: $corpus"
  tokenize_and_prepare "speed" "$dir" "$corpus" "$vocab" || return 1
  data="$dir/data"
  local have_torch=1 have_hf=0 torch_check='import torch; assert torch.cuda.is_available()'
  [ "$DRY" = 1 ] && torch_check='import torch'
  "$PY" -c "$torch_check" 2>/dev/null || have_torch=0
  [ "$have_torch" = 1 ] && "$PY" -c 'import transformers' 2>/dev/null && have_hf=1
  [ "$have_torch" = 1 ] || note "($PY has no CUDA torch: the PyTorch references are skipped)"
  [ "$have_torch" = 1 ] && [ "$have_hf" = 0 ] && note "($PY cannot import transformers: the Hugging Face references are skipped)"
  local have_compile=1
  "$PY" -c 'import sys, torch; sys.exit(not hasattr(torch, "compile"))' 2>/dev/null || have_compile=0
  [ "$have_torch" = 1 ] && [ "$have_compile" = 0 ] && note "($PY has torch < 2.0, no torch.compile: the compiled reference is skipped)"

  for r in $(seq "$ROUNDS"); do
    note "round $r"
    bench_into "speed gpt2 lmzoo r$r" "$dir/gpt2_lmzoo.jsonl" "$LMZOO" bench "${gpt[@]}" --data "$data" \
      --device "$DEVICE" --precision bf16 "${steps[@]}" --json
    bench_into "speed gpt2 lmzoo --fused-loss r$r" "$dir/gpt2_lmzoo_fused.jsonl" "$LMZOO" bench "${gpt[@]}" \
      --data "$data" --device "$DEVICE" --precision bf16 --fused-loss "${steps[@]}" --json
    bench_into "speed gpt2 lmzoo all levers r$r" "$dir/gpt2_lmzoo_graphs.jsonl" "$LMZOO" bench "${gpt[@]}" \
      --data "$data" --device "$DEVICE" --precision bf16 "${levers[@]}" "${steps[@]}" --json
    [ "$have_torch" = 1 ] || continue
    bench_into "speed gpt2 eager r$r" "$dir/gpt2_eager.jsonl" "$PY" "$ROOT/tools/gpu_reference.py" --data "$data" \
      "${reference[@]}" "${iters[@]}" --json
    [ "$have_compile" = 1 ] || continue
    bench_into "speed gpt2 compiled r$r" "$dir/gpt2_compiled.jsonl" "$PY" "$ROOT/tools/gpu_reference.py" \
      --data "$data" "${reference[@]}" "${iters[@]}" --compile --json
  done
  bench_into "speed bert-base lmzoo" "$dir/bert_lmzoo.jsonl" "$LMZOO" bench "${bert[@]}" --data "$data" \
    --device "$DEVICE" --precision bf16 --batch-size "$encoder_batch" "${steps[@]}" --json
  bench_into "speed bert-base lmzoo --fused-loss" "$dir/bert_lmzoo_fused.jsonl" "$LMZOO" bench "${bert[@]}" \
    --data "$data" --device "$DEVICE" --precision bf16 --batch-size "$encoder_batch" --fused-loss "${steps[@]}" --json
  bench_into "speed bert-base lmzoo all levers" "$dir/bert_lmzoo_graphs.jsonl" "$LMZOO" bench "${bert[@]}" \
    --data "$data" --device "$DEVICE" --precision bf16 --batch-size "$encoder_batch" "${levers[@]}" "${steps[@]}" --json
  [ "$have_hf" = 1 ] && bench_into "speed bert-base transformers" "$dir/bert_hf.jsonl" \
    hf_reference bert "$data" "$encoder_batch" "$encoder_seq" "$SPEED_STEPS" "$SPEED_SKIP" "$DEVICE"
  bench_into "speed t5-small lmzoo" "$dir/t5_lmzoo.jsonl" "$LMZOO" bench "${t5[@]}" --data "$data" \
    --device "$DEVICE" --precision bf16 --batch-size "$encoder_batch" "${steps[@]}" --json
  bench_into "speed t5-small lmzoo --fused-loss" "$dir/t5_lmzoo_fused.jsonl" "$LMZOO" bench "${t5[@]}" \
    --data "$data" --device "$DEVICE" --precision bf16 --batch-size "$encoder_batch" --fused-loss "${steps[@]}" --json
  bench_into "speed t5-small lmzoo all levers" "$dir/t5_lmzoo_graphs.jsonl" "$LMZOO" bench "${t5[@]}" \
    --data "$data" --device "$DEVICE" --precision bf16 --batch-size "$encoder_batch" "${levers[@]}" "${steps[@]}" --json
  [ "$have_hf" = 1 ] && bench_into "speed t5-small transformers" "$dir/t5_hf.jsonl" \
    hf_reference t5 "$data" "$encoder_batch" "$encoder_seq" "$SPEED_STEPS" "$SPEED_SKIP" "$DEVICE"

  header "speed: medians over rounds ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1))"
  speed_table "$dir"
  profile_step "$dir" "$data" "${gpt[@]}"
}

# Where gpt2's step goes: lmzoo bench --profile's kernels per step, host waits and top kernels (its Chrome trace in
# DIR). Arguments: DIR DATA then bench's model flags.
profile_step() {
  local dir="$1" data="$2" log="$LOGS/speed_profile"
  shift 2
  header "speed: where the gpt2 step goes (lmzoo bench --profile, 6 steps)"
  if "$LMZOO" bench "$@" --data "$data" --device "$DEVICE" --precision bf16 --steps 12 --skip 6 \
    --profile "$dir/gpt2_profile.json" >"$log.out" 2>"$log.err" </dev/null; then
    sed -n '/^profile of/,/^Chrome trace/p' "$log.out"
    pass "speed profile"
  else
    fail "speed profile" "see $log.err"
    tail -n 3 "$log.err" | sed 's/^/        /'
  fi
}

# ---------------------------------------------------------------------------------- main
summary() {
  header "summary: ${#PASSED[@]} passed, ${#FAILED[@]} failed (logs: $LOGS)"
  local f
  for f in "${FAILED[@]}"; do note "FAIL  $f"; done
  [ "${#FAILED[@]}" -eq 0 ]
}

main() {
  local steps=() s
  for s in "$@"; do [ "$s" = --dry-run ] || steps+=("$s"); done  # (--dry-run was read at the top)
  [ ${#steps[@]} -eq 0 ] && steps=(build suite smoke speed)
  for s in "${steps[@]}"; do
    case "$s" in
      build | suite | smoke | speed) ;;
      -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown step '$s' (steps: build suite smoke speed)" ;;
    esac
  done
  cd "$ROOT" || die "cannot enter $ROOT"
  mkdir -p "$LOGS" || die "cannot create $LOGS"
  check_prerequisites
  setup_dependencies
  for s in "${steps[@]}"; do
    case "$s" in
      build) build_lmzoo ;;
      suite) run_suite ;;
      smoke) smoke ;;
      speed) speed ;;
    esac
  done
  summary || exit 1
}

main "$@"
