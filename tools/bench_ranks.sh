#!/usr/bin/env bash
# Data-parallel scaling on this machine: training tokens/s of 1 rank against 2 ranks (Gloo, one thread each, same
# per-rank batch), the median of REPEATS alternating runs each, and their ratio. Usage: tools/bench_ranks.sh DATA_DIR
set -euo pipefail
DATA=${1:?usage: tools/bench_ranks.sh DATA_DIR (a directory made by lmzoo prepare)}
LMZOO=${LMZOO:-$(cd "$(dirname "$0")/.." && pwd)/build/lmzoo}
STEPS=${STEPS:-40}
REPEATS=${REPEATS:-3}
MODEL=${MODEL:-"--n-layer 4 --n-head 4 --d-model 128 --seq-len 128 --batch-size 8"}
ARGS="train --data $DATA --device cpu --threads 1 $MODEL --steps $STEPS --log-interval 5 --eval-interval 100000 --dropout 0"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The median tokens/s of a run's train records after the first (warm-up) one.
run_tokens_per_s() {
  /usr/bin/python3 - "$1/metrics.jsonl" <<'PY'
import json, statistics, sys
rates = [r["tokens_per_s"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "train"][1:]
print(statistics.median(rates))
PY
}

one_rank() {
  OMP_NUM_THREADS=1 "$LMZOO" $ARGS --out "$1" 2>"$1.err" >/dev/null || { cat "$1.err" >&2; exit 1; }
}

two_ranks() {
  local port=$((20000 + RANDOM % 20000)) rank
  for rank in 0 1; do
    env RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
      "$LMZOO" $ARGS --out "$1" 2>"$1.err$rank" >/dev/null &
  done
  wait %1 && wait %2 || { cat "$1".err* >&2; exit 1; }
}

ones=() twos=()
for i in $(seq "$REPEATS"); do
  one_rank "$WORK/one$i"
  ones+=("$(run_tokens_per_s "$WORK/one$i")")
  two_ranks "$WORK/two$i"
  twos+=("$(run_tokens_per_s "$WORK/two$i")")
done
/usr/bin/python3 - "${ones[*]}" "${twos[*]}" "$MODEL" <<'PY'
import statistics, sys
one = statistics.median(map(float, sys.argv[1].split()))
two = statistics.median(map(float, sys.argv[2].split()))
print(f"model: {sys.argv[3]}, one thread per rank, {len(sys.argv[1].split())} runs each (medians)")
print(f"1 rank : {one:10.0f} tokens/s")
print(f"2 ranks: {two:10.0f} tokens/s (both ranks together)")
print(f"ratio  : {two / one:.2f}x")
PY
