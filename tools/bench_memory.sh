#!/usr/bin/env bash
# Peak resident memory and speed of fine-tuning on this machine, beside the memory estimate's prediction: GPT-2 124M
# at contexts 512 and 1024, batch 4, as a full fine-tune, with activation checkpointing, with LoRA (rank 8 on q,v)
# and with LoRA + checkpointing + a bf16 base (at 512 also an int8 base); and a TinyLlama-1.1B-shaped model (random
# weights) with LoRA + checkpointing + a bf16 or an int8 base at context 512, batch 1. Every configuration runs ROUNDS times (default 3), each run
# its own process, rounds alternating over the configurations; prints a markdown table of the medians.
# A setting whose feature the trainer does not carry out is reported as not landed, never run as something else.
# Usage: tools/bench_memory.sh [ROUNDS] [STEPS]   (env: LMZOO=path/to/lmzoo, THREADS=N, KEEP=file for the JSON
# lines, ONLY=regex of configuration names to run, HOST_MEMORY=release|keep: bench --host-memory, default release)
#        tools/bench_memory.sh --table FILE [FILE...]: the table of kept JSON lines, predictions made afresh by this
#        lmzoo's estimate (bench --dry-run with each run's settings)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LMZOO=${LMZOO:-$ROOT/build/lmzoo}
THREADS=${THREADS:-}
ONLY=${ONLY:-.}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# table FILE...: the markdown table of the JSON lines in FILEs (one per run, "name" and "flags" added), medians per
# configuration, each prediction from this lmzoo's bench --dry-run with the run's flags.
table() {
  python3 - "$LMZOO" "$@" <<'PY'
import json, statistics, subprocess, sys
lmzoo, files = sys.argv[1], sys.argv[2:]
rows, order = {}, []
for path in files:
    for line in open(path):
        j = json.loads(line)
        if j["name"] not in rows:
            order.append(j["name"])
            rows[j["name"]] = []
        rows[j["name"]].append(j)
settings = ["full fine-tune", "checkpointing", "LoRA r8 q,v", "LoRA + checkpointing + bf16 base",
            "LoRA + checkpointing + int8 base", "bf16 base", "int8 base"]
def place(name):  # GPT-2 by context, its settings in the script's order; TinyLlama last
    rank = next((i for i, s in enumerate(settings) if name.endswith(s)), len(settings))
    return ("tinyllama" in name, 1024 if "ctx 1024" in name else 512, rank)
order.sort(key=place)
gib = 1024 ** 3
print("| configuration | tokens/s | peak RSS (GiB) | tensors' peak (GiB) | predicted peak (GiB) | prediction error (vs RSS) | trainable parameters | runs |")
print("|---|---|---|---|---|---|---|---|")
for name in order:
    runs = rows[name]
    if "not_landed" in runs[0]:
        print(f"| {name} | not landed: {runs[0]['not_landed']} | | | | | | 0 |")
        continue
    dry = subprocess.run([lmzoo, "bench", "--dry-run", "--json", "--device", "cpu"] + runs[0]["flags"].split(),
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    predicted = json.loads(dry)["predicted_peak_bytes"]
    tps = statistics.median(r["tokens_per_s"] for r in runs)
    rss = statistics.median(r["peak_rss_bytes"] for r in runs)
    tensors = statistics.median(r["peak_memory_bytes"] for r in runs)
    error = 100.0 * (predicted - rss) / rss
    print(f"| {name} | {tps:,.0f} | {rss / gib:.2f} | {tensors / gib:.2f} | {predicted / gib:.2f} | {error:+.1f}% | "
          f"{runs[0]['trainable_parameters']:,} | {len(runs)} |")
first = next((r[0] for r in rows.values() if "threads" in r[0]), None)
if first:
    print(f"\nthreads {first['threads']}, --host-memory {first.get('host_memory', 'keep')}, "
          f"OPENBLAS_CORETYPE={first['openblas_coretype'] or '(unset)'}, "
          f"{first['iters_timed']} timed step(s) per run after 1 untimed; medians of each configuration's runs.")
PY
}

if [[ "${1:-}" == "--table" ]]; then
  shift
  table "$@"
  exit 0
fi
ROUNDS=${1:-3}
STEPS=${2:-2}  # the first step is left out of the timing: it allocates AdamW's moments
HOST_MEMORY=${HOST_MEMORY:-release}  # release: peak RSS = the tensors' peak + the runtime, what --dry-run predicts
COMMON="--steps $STEPS --skip 1 --device cpu --json --host-memory $HOST_MEMORY${THREADS:+ --threads $THREADS}"

GPT2="--preset gpt2 --batch-size 4"
LORA="--lora-rank 8 --lora-targets q,v"
CKPT="--activation-checkpointing blocks"
BF16="--base-precision bf16"
INT8="--base-precision int8"
# name|flags
CONFIGS=(
  "gpt2 ctx 512, full fine-tune|$GPT2 --seq-len 512"
  "gpt2 ctx 512, checkpointing|$GPT2 --seq-len 512 $CKPT"
  "gpt2 ctx 512, LoRA r8 q,v|$GPT2 --seq-len 512 $LORA"
  "gpt2 ctx 512, LoRA + checkpointing + bf16 base|$GPT2 --seq-len 512 $LORA $CKPT $BF16"
  "gpt2 ctx 512, LoRA + checkpointing + int8 base|$GPT2 --seq-len 512 $LORA $CKPT $INT8"
  "gpt2 ctx 1024, full fine-tune|$GPT2 --seq-len 1024"
  "gpt2 ctx 1024, checkpointing|$GPT2 --seq-len 1024 $CKPT"
  "gpt2 ctx 1024, LoRA r8 q,v|$GPT2 --seq-len 1024 $LORA"
  "gpt2 ctx 1024, LoRA + checkpointing + bf16 base|$GPT2 --seq-len 1024 $LORA $CKPT $BF16"
  "tinyllama-1.1b ctx 512 batch 1, LoRA r8 + checkpointing + bf16 base|--preset tinyllama-1.1b --seq-len 512 --batch-size 1 --lora-rank 8 $CKPT $BF16"
  "tinyllama-1.1b ctx 512 batch 1, LoRA r8 + checkpointing + int8 base|--preset tinyllama-1.1b --seq-len 512 --batch-size 1 --lora-rank 8 $CKPT $INT8"
)

bench() {  # bench FLAGS...: the JSON line of one run
  # shellcheck disable=SC2086
  "$LMZOO" bench $COMMON "$@" 2>"$WORK/err" | tail -n 1 || { cat "$WORK/err" >&2; return 1; }
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# Whether the trainer carries out each feature, from short runs of gpt-nano: LoRA leaves fewer parameters trainable
# than the model has; a bf16 base stores fewer parameter bytes than 4 per parameter, an int8 one fewer than the bf16
# one; checkpointing lowers the peak
# RSS by at least half of what the estimate says it saves.
probe="--preset gpt-nano --vocab-size 2000 --batch-size 64 --steps 2 --skip 1 --device cpu --json --threads 1"
# shellcheck disable=SC2086
full=$("$LMZOO" bench $probe 2>/dev/null | tail -n 1)
# shellcheck disable=SC2086
ckpt=$("$LMZOO" bench $probe $CKPT 2>/dev/null | tail -n 1)
# shellcheck disable=SC2086
bf16=$("$LMZOO" bench $probe --lora-rank 8 $BF16 2>/dev/null | tail -n 1) || bf16='{}'
# shellcheck disable=SC2086
int8=$("$LMZOO" bench $probe --lora-rank 8 $INT8 2>/dev/null | tail -n 1) || int8='{}'
LANDED=$(python3 - "$full" "$ckpt" "$bf16" "$int8" <<'PY'
import json, sys
full, ckpt, bf16, int8 = (json.loads(a) for a in sys.argv[1:])
landed = []
if bf16.get("trainable_parameters", full["trainable_parameters"]) < full["trainable_parameters"]: landed.append("lora")
if "lora" in landed and bf16["parameter_bytes"] < 4 * full["trainable_parameters"]: landed.append("bf16")
if "bf16" in landed and int8.get("parameter_bytes", bf16["parameter_bytes"]) < bf16["parameter_bytes"]: landed.append("int8")
predicted_saving = full["predicted_peak_bytes"] - ckpt["predicted_peak_bytes"]
if predicted_saving > 0 and full["peak_rss_bytes"] - ckpt["peak_rss_bytes"] > 0.5 * predicted_saving:
    landed.append("checkpointing")
print(" ".join(landed))
PY
)
echo "features the trainer carries out (probed on gpt-nano): ${LANDED:-none}" >&2

missing() {  # missing FLAGS: the features FLAGS asks for that have not landed, comma-separated
  local out=()
  [[ "$1" == *--lora-rank* && " $LANDED " != *" lora "* ]] && out+=("LoRA")
  [[ "$1" == *--activation-checkpointing* && " $LANDED " != *" checkpointing "* ]] && out+=("checkpointing")
  [[ "$1" == *"$BF16"* && " $LANDED " != *" bf16 "* ]] && out+=("bf16 base")
  [[ "$1" == *"$INT8"* && " $LANDED " != *" int8 "* ]] && out+=("int8 base")
  local IFS=,
  echo "${out[*]}"
}

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  for entry in "${CONFIGS[@]}"; do
    name=${entry%%|*}
    flags=${entry#*|}
    [[ "$name" =~ $ONLY ]] || continue
    if [[ -n "$(missing "$flags")" ]]; then
      [[ $round == 1 ]] && echo "{\"name\": \"$name\", \"not_landed\": \"$(missing "$flags")\"}" >>"$RESULTS"
      continue
    fi
    echo "round $round: $name" >&2
    # shellcheck disable=SC2086
    line=$(bench $flags)
    python3 -c 'import json,sys; j=json.loads(sys.argv[3]); j["name"]=sys.argv[1]; j["flags"]=sys.argv[2]; print(json.dumps(j))' \
      "$name" "$flags" "$line" >>"$RESULTS"
  done
done
[[ -n "${KEEP:-}" ]] && cp "$RESULTS" "$KEEP"
table "$RESULTS"
