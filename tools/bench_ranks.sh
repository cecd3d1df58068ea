#!/usr/bin/env bash
# Data-parallel scaling on this machine: training tokens/s and peak resident memory per rank of 1 rank, 2 ranks and
# 2 ranks with --shard-optimizer (Gloo, one thread each, same per-rank batch), the median of REPEATS alternating
# runs each, and the ratios against 1 rank. Usage: tools/bench_ranks.sh DATA_DIR
set -euo pipefail
DATA=${1:?usage: tools/bench_ranks.sh DATA_DIR (a directory made by lmzoo prepare)}
LMZOO=${LMZOO:-$(cd "$(dirname "$0")/.." && pwd)/build/lmzoo}
STEPS=${STEPS:-40}
REPEATS=${REPEATS:-3}
MODEL=${MODEL:-"--n-layer 4 --n-head 4 --d-model 128 --seq-len 128 --batch-size 8"}
ARGS="train --data $DATA --device cpu --threads 1 $MODEL --steps $STEPS --log-interval 5 --eval-interval 100000 --dropout 0"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# "TOKENS_PER_S PEAK_MIB": the median tokens/s of a run's train records after the first (warm-up) one, and the
# largest peak resident memory of its ranks (their summary lines).
run_figures() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, json, statistics, sys
rates = [r["tokens_per_s"] for r in map(json.loads, open(sys.argv[1] + "/metrics.jsonl")) if r["type"] == "train"][1:]
peaks = [json.loads(open(f).read())["peak_host_memory_bytes"] for f in glob.glob(sys.argv[1] + ".out*")]
print(statistics.median(rates), max(peaks) / 2**20)
PY
}

one_rank() {
  OMP_NUM_THREADS=1 "$LMZOO" $ARGS --out "$1" 2>"$1.err" >"$1.out0" || { cat "$1.err" >&2; exit 1; }
}

# two_ranks OUT [FLAG...]
two_ranks() {
  local out=$1 port=$((20000 + RANDOM % 20000)) rank
  shift
  for rank in 0 1; do
    env RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
      "$LMZOO" $ARGS "$@" --out "$out" 2>"$out.err$rank" >"$out.out$rank" &
  done
  wait %1 && wait %2 || { cat "$out".err* >&2; exit 1; }
}

ones=() twos=() shards=()
for i in $(seq "$REPEATS"); do
  one_rank "$WORK/one$i"
  ones+=("$(run_figures "$WORK/one$i")")
  two_ranks "$WORK/two$i"
  twos+=("$(run_figures "$WORK/two$i")")
  two_ranks "$WORK/shard$i" --shard-optimizer
  shards+=("$(run_figures "$WORK/shard$i")")
done
/usr/bin/python3 - "$MODEL" "$REPEATS" "$(IFS=,; echo "${ones[*]}")" "$(IFS=,; echo "${twos[*]}")" \
  "$(IFS=,; echo "${shards[*]}")" <<'PY'
import statistics, sys
model, repeats = sys.argv[1], sys.argv[2]
def medians(arg):
    runs = [tuple(map(float, run.split())) for run in arg.split(",")]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
one, two, shard = medians(sys.argv[3]), medians(sys.argv[4]), medians(sys.argv[5])
print(f"model: {model}, one thread per rank, {repeats} runs each (medians)")
print(f"{'':32}{'tokens/s':>10}{'vs 1 rank':>11}{'peak RSS/rank':>15}")
for name, (rate, mib) in [("1 rank", one), ("2 ranks", two), ("2 ranks, --shard-optimizer", shard)]:
    print(f"{name:32}{rate:10.0f}{rate / one[0]:10.2f}x{mib:11.0f} MiB")
PY
