#!/usr/bin/env bash
# The main job, end to end: install what is missing, build (Release), train a tokenizer on a corpus
# (default: the King James Bible from Debian's bible-kjv), prepare shards, train a small GPT for a few
# minutes, evaluate validation perplexity, export TorchScript and print a generated sample.
# Usage: bash tools/demo.sh [FILE...]      (outputs in demo_out/; DEMO_STEPS=N to change the length)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/demo_out"
STEPS="${DEMO_STEPS:-1000}"

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
bash tools/setup_deps.sh build demo

step "build (Release)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target lmzoo -j"$(nproc)"
LMZOO="$ROOT/build/lmzoo"

mkdir -p "$OUT"
if [ $# -gt 0 ]; then
  INPUTS=("$@")
else
  step "corpus: the King James Bible (bible gen1:1-rev22:21)"
  bible gen1:1-rev22:21 >"$OUT/kjv.txt"
  INPUTS=("$OUT/kjv.txt")
fi

step "tokenizer: BPE, 2048 pieces"
"$LMZOO" tokenizer train --input "${INPUTS[@]}" --vocab-size 2048 --model-type bpe --out "$OUT/tokenizer"

step "prepare: token shards, last 5% for validation"
rm -rf "$OUT/data"
"$LMZOO" prepare --tokenizer "$OUT/tokenizer" --input "${INPUTS[@]}" --out "$OUT/data" --val-fraction 0.05

step "train: GPT, 4 layers, 4 heads, d_model 128, context 128, $STEPS steps"
rm -rf "$OUT/run"
"$LMZOO" train --arch gpt --preset gpt-nano --seq-len 128 --data "$OUT/data" --out "$OUT/run" \
  --steps "$STEPS" --batch-size 16 --lr 2e-3 --min-lr 2e-4 --warmup 100 --eval-interval 500 --eval-iters 20

echo "loss and learning-rate curves: $OUT/run/curves.svg (lmzoo plot RUN_DIR... overlays runs)"

step "eval: sliding-window perplexity on the validation split"
"$LMZOO" eval --checkpoint "$OUT/run" --data "$OUT/data" --split val --stride 64

step "export: TorchScript"
"$LMZOO" export --checkpoint "$OUT/run" --out "$OUT/model.pt"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  /usr/bin/python3 - "$OUT/model.pt" <<'PY'
import json, sys, torch
m = torch.jit.load(sys.argv[1])
config = json.loads(m.config_json)
logits = m(torch.tensor([[5, 6, 7]]))
print(f"python torch.jit.load: {sys.argv[1]} -> logits {tuple(logits.shape)}, d_model {config['d_model']}")
PY
fi

step "generate"
"$LMZOO" generate --checkpoint "$OUT/run" --prompt "In the beginning" --max-new-tokens 80 --temperature 0.8 --top-k 50
