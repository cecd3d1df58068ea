#!/usr/bin/env bash
# Speed of lmzoo's training step against the PyTorch reference (tools/bench_reference.py) on
# nanoGPT's CPU "baby" configuration, measured in the same run, alternating the two programs.
# Usage: bash tools/bench_vs_reference.sh [ROUNDS=5] [ITERS=60]
# Honours OPENBLAS_CORETYPE and THREADS (default 1) as given; prints both in the report.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-5}"
ITERS="${2:-60}"
THREADS="${THREADS:-1}"
WORK="${BENCH_DIR:-$ROOT/build/bench}"
LMZOO="$ROOT/build/lmzoo"
[ -x "$LMZOO" ] || { echo "build lmzoo first: bash tools/build.sh" >&2; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "needs python3-torch (apt-get install python3-torch)" >&2; exit 1; }

# A 1.1 MB English character corpus, as in nanoGPT's Shakespeare run: the first 1.1 MB of the KJV.
mkdir -p "$WORK"
if [ ! -f "$WORK/corpus.txt" ]; then
  command -v bible >/dev/null || bash "$ROOT/tools/setup_deps.sh" demo
  bible gen1:1-rev22:21 >"$WORK/kjv.txt"  # (piping into head would SIGPIPE bible under pipefail)
  head -c 1100000 "$WORK/kjv.txt" >"$WORK/corpus.txt"
fi
if [ ! -f "$WORK/data/manifest.json" ]; then
  "$LMZOO" tokenizer train --input "$WORK/corpus.txt" --model-type char --vocab-size 100000 --out "$WORK/tok" >/dev/null
  "$LMZOO" prepare --tokenizer "$WORK/tok" --input "$WORK/corpus.txt" --out "$WORK/data" >/dev/null
fi

field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }
lm=() py=() mfu=()
for round in $(seq "$ROUNDS"); do
  out=$("$LMZOO" bench --data "$WORK/data" --steps "$ITERS" --skip 10 --threads "$THREADS" --json 2>/dev/null)
  lm+=("$(echo "$out" | field ms_per_iter_median)")
  mfu+=("$(echo "$out" | field mfu)")
  ref=$(/usr/bin/python3 "$ROOT/tools/bench_reference.py" --text "$WORK/corpus.txt" --iters "$ITERS" \
          --time-only --json --threads "$THREADS" 2>/dev/null)
  py+=("$(echo "$ref" | field ms_per_iter_median)")
  echo "round $round: lmzoo ${lm[-1]} ms/iter, reference ${py[-1]} ms/iter"
done
/usr/bin/python3 - "${lm[*]}" "${py[*]}" "${mfu[*]}" "$THREADS" "${OPENBLAS_CORETYPE-(unset)}" <<'PY'
import statistics, sys
lm = [float(x) for x in sys.argv[1].split()]
py = [float(x) for x in sys.argv[2].split()]
mfu = [float(x) for x in sys.argv[3].split()]
l, p = statistics.median(lm), statistics.median(py)
tokens = 12 * 64
print(f"threads {sys.argv[4]}, OPENBLAS_CORETYPE={sys.argv[5]}, {len(lm)} rounds")
print(f"lmzoo:     {l:.1f} ms/iter  {tokens / l * 1e3:.0f} tokens/s  MFU {100 * statistics.median(mfu):.1f}%")
print(f"reference: {p:.1f} ms/iter  {tokens / p * 1e3:.0f} tokens/s")
print(f"ratio lmzoo/reference: {l / p:.3f}")
# Each round times both programs back to back, so its own ratio is less exposed to the host's drift.
rounds = sorted(a / b for a, b in zip(lm, py))
print(f"per-round ratios: median {statistics.median(rounds):.3f}, range {rounds[0]:.3f}-{rounds[-1]:.3f}")
PY
