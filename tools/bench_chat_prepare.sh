#!/usr/bin/env bash
# `lmzoo prepare --chat` throughput: ~SIZE_MB of generated conversations (system prompt, 1-4 turns, English-like
# words, digits and some non-ASCII) rendered with ChatML and tokenized by an lmzoo SentencePiece tokenizer (vocab
# 8000) trained with the ChatML markers kept whole; tokens/s at --threads 1 and 2, medians of RUNS runs, and a check
# that both thread counts write byte-identical splits.
# Usage: tools/bench_chat_prepare.sh [--lmzoo BINARY] [--runs N] [--size-mb N] [--work DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lmzoo="$root/build/lmzoo" runs=3 size_mb=50 work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lmzoo) lmzoo="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --size-mb) size_mb="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    *) echo "usage: $0 [--lmzoo BINARY] [--runs N] [--size-mb N] [--work DIR]" >&2; exit 2 ;;
  esac
done
[ -x "$lmzoo" ] || { echo "bench_chat_prepare: no lmzoo binary at $lmzoo (build first)" >&2; exit 1; }
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

python3 - "$work/chats.jsonl" "$work/sample.txt" "$size_mb" <<'PY'
import json, random, sys
out, sample, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(7)
words = ("the of and to in is that it was for on are as with his they at be this from have or by one had not but "
         "what all were when we there can an your which their said if do will each about how up out them then she "
         "many some so these would other into has more her two like him see time could no make than first been its "
         "who now people my made over did down only way find use may water long little very after words called "
         "just where most know café naïve 東京 résumé").split()
def sentence():
    s = " ".join(rng.choice(words) for _ in range(rng.randint(4, 18)))
    if rng.random() < 0.2: s += " " + str(rng.randint(0, 99999))
    return s[0].upper() + s[1:] + rng.choice(".?!")
total, target = 0, size_mb * 1000000
with open(out, "w") as f, open(sample, "w") as g:
    while total < target:
        messages = [{"role": "system", "content": sentence()}] if rng.random() < 0.5 else []
        for _ in range(rng.randint(1, 4)):
            messages.append({"role": "user", "content": " ".join(sentence() for _ in range(rng.randint(1, 3)))})
            messages.append({"role": "assistant", "content": " ".join(sentence() for _ in range(rng.randint(1, 6)))})
        line = json.dumps({"messages": messages}, ensure_ascii=False) + "\n"
        f.write(line)
        if total < 2000000: g.write(" ".join(m["content"] for m in messages) + "\n")
        total += len(line.encode())
PY
"$lmzoo" tokenizer train --input "$work/sample.txt" --vocab-size 8000 --out "$work/tok" \
  --special-tokens '<|im_start|>,<|im_end|>' >/dev/null
bytes=$(stat -c %s "$work/chats.jsonl")
echo "conversations: $((bytes / 1000000)) MB ($(wc -l <"$work/chats.jsonl") examples), $(nproc) cores"
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for threads in 1 2; do
  for run in $(seq "$runs"); do
    rm -rf "$work/out$threads"
    "$lmzoo" prepare --tokenizer "$work/tok" --chat "$work/chats.jsonl" --out "$work/out$threads" \
      --threads "$threads" | sed -n 's/.*(\([0-9]*\) tokens\/s).*/\1/p'
  done | median | awk -v t="$threads" '{printf "prepare --chat --threads %d: %.0f tokens/s (median)\n", t, $1}'
done
for split in train val train_flags val_flags; do
  cmp -s <(cat "$work"/out1/${split}_0*.bin) <(cat "$work"/out2/${split}_0*.bin) ||
    { echo "bench_chat_prepare: $split differs between 1 and 2 threads" >&2; exit 1; }
done
echo "splits identical at 1 and 2 threads"
