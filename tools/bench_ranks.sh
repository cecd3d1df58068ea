#!/usr/bin/env bash
# Data-parallel scaling on this machine: training tokens/s and each rank's peak resident memory for 1 rank, 2 ranks
# and 2 ranks with --shard-optimizer (Gloo, one thread each, same per-rank batch), the median of REPEATS
# alternating runs each, and the ratios against 1 rank. Usage: tools/bench_ranks.sh DATA_DIR
set -euo pipefail
DATA=${1:?usage: tools/bench_ranks.sh DATA_DIR (a directory made by lmzoo prepare)}
LMZOO=${LMZOO:-$(cd "$(dirname "$0")/.." && pwd)/build/lmzoo}
STEPS=${STEPS:-40}
REPEATS=${REPEATS:-3}
MODEL=${MODEL:-"--n-layer 4 --n-head 4 --d-model 128 --seq-len 128 --batch-size 8"}
ARGS="train --data $DATA --device cpu --threads 1 $MODEL --steps $STEPS --log-interval 5 --eval-interval 100000 --dropout 0"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# run RANKS OUT [FLAG...]: one run (RANKS processes, as torchrun starts them); prints "TOKENS_PER_S RSS0 RSS1..":
# the median tokens/s of its train records after the first (warm-up) one, and each rank's peak RSS in MiB.
run() {
  /usr/bin/python3 - "$LMZOO" "$DATA" "$@" <<PY
import json, os, random, statistics, subprocess, sys
lmzoo, data, world, out, flags = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
port = str(random.randint(20000, 40000))
ranks = []
for rank in range(world):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if world > 1:
        env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    with open(f"{out}.err{rank}", "w") as err:
        ranks.append(subprocess.Popen([lmzoo] + "$ARGS".split() + flags + ["--out", out], env=env,
                                      stdout=subprocess.DEVNULL, stderr=err))
peaks = []
for proc in ranks:
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(open(f"{out}.err{len(peaks)}").read())
    peaks.append(usage.ru_maxrss / 1024)  # kilobytes -> MiB
rates = [r["tokens_per_s"] for r in map(json.loads, open(out + "/metrics.jsonl")) if r["type"] == "train"][1:]
print(statistics.median(rates), *peaks)
PY
}

ones=() twos=() shards=()
for i in $(seq "$REPEATS"); do
  ones+=("$(run 1 "$WORK/one$i")")
  twos+=("$(run 2 "$WORK/two$i")")
  shards+=("$(run 2 "$WORK/shard$i" --shard-optimizer)")
done
/usr/bin/python3 - "$MODEL" "$REPEATS" "$(IFS=,; echo "${ones[*]}")" "$(IFS=,; echo "${twos[*]}")" \
  "$(IFS=,; echo "${shards[*]}")" <<'PY'
import statistics, sys
model, repeats = sys.argv[1], sys.argv[2]
def medians(arg):  # per column over the runs
    runs = [list(map(float, run.split())) for run in arg.split(",")]
    return [statistics.median(column) for column in zip(*runs)]
one, two, shard = medians(sys.argv[3]), medians(sys.argv[4]), medians(sys.argv[5])
print(f"model: {model}, one thread per rank, {repeats} runs each (medians)")
print(f"{'':28}{'tokens/s':>10}{'vs 1 rank':>11}   peak RSS per rank (MiB)")
for name, (rate, *mib) in [("1 rank", one), ("2 ranks", two), ("2 ranks, --shard-optimizer", shard)]:
    print(f"{name:28}{rate:10.0f}{rate / one[0]:10.2f}x   " + " / ".join(f"{m:.0f}" for m in mib))
PY
