#!/usr/bin/env python3
# Checks `lmzoo generate --chat` against transformers' apply_chat_template + generate on lmzoo's HF export.
"""For a transformers environment (4.4x with its slow tokenizers: ../shared/hf-reference/env.sh on Debian 13).

Usage:
    python3 tools/chat_transformers_check.py HF_DIR QUESTIONS.jsonl LMZOO_ANSWERS.jsonl [--max-new-tokens N]

HF_DIR is `lmzoo export --format hf [--merge-lora]` of a chat run with a byte-level BPE tokenizer.json (SmolLM2,
Qwen2: GPT-2's byte-level symbols): its vocabulary and merges are given to transformers' own slow GPT2Tokenizer
(the environment has no Rust tokenizers), the tokenizer's special tokens as its added tokens, and its
chat_template.jinja as the tokenizer's template. QUESTIONS.jsonl holds one messages list per line;
LMZOO_ANSWERS.jsonl the answers `lmzoo generate --chat FILE --temperature 0` printed for them, one JSON string
per line. For each question, transformers renders and tokenizes it (apply_chat_template with
add_generation_prompt), AutoModelForCausalLM.from_pretrained(HF_DIR) continues it greedily, stopping at
generation_config.json's eos ids, and the decoded answer must equal lmzoo's. Prints one line per question and a
final PASS or FAIL; exits 1 on any difference. Texts with digits are refused (GPT2Tokenizer has no Digits
pre-tokenizer, which SmolLM2's tokenizer.json has).
"""
import argparse
import json
import os
import sys
import tempfile

import torch
import transformers
import transformers.tokenization_utils_base as tokenization_base

# Without the Rust tokenizers package (../shared/hf-reference has none), transformers 4.4x's slow tokenizers use
# its own Python AddedToken, which lacks two methods of the Rust one that their constructor calls: __hash__ (a
# dataclass with eq=True has none; the Rust AddedToken hashes its content) and __setstate__.
if tokenization_base.AddedToken.__hash__ is None:
    tokenization_base.AddedToken.__hash__ = lambda self: hash(self.content)
if not hasattr(tokenization_base.AddedToken, "__setstate__"):
    tokenization_base.AddedToken.__setstate__ = lambda self, state: self.__dict__.update(state)


def slow_tokenizer(hf_dir, work):
    """transformers' GPT2Tokenizer over the vocabulary and merges of HF_DIR/tokenizer.json."""
    with open(os.path.join(hf_dir, "tokenizer.json"), encoding="utf-8") as f:
        spec = json.load(f)
    model = spec["model"]
    if model.get("type") != "BPE":
        raise SystemExit("chat_transformers_check: tokenizer.json's model is not BPE")
    vocab_path, merges_path = os.path.join(work, "vocab.json"), os.path.join(work, "merges.txt")
    with open(vocab_path, "w", encoding="utf-8") as f:
        json.dump(model["vocab"], f, ensure_ascii=False)
    with open(merges_path, "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for merge in model["merges"]:
            f.write((merge if isinstance(merge, str) else " ".join(merge)) + "\n")
    with open(os.path.join(hf_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    specials = [t["content"] for t in spec.get("added_tokens", []) if t.get("special")]
    tok = transformers.GPT2Tokenizer(vocab_path, merges_path, bos_token=config.get("bos_token"),
                                     eos_token=config.get("eos_token"), unk_token=config.get("unk_token"))
    tok.add_special_tokens({"additional_special_tokens": specials})
    for t in specials:
        if tok.convert_tokens_to_ids(t) != model["vocab"][t]:
            raise SystemExit(f"chat_transformers_check: special token {t} moved to a new id")
    template = os.path.join(hf_dir, "chat_template.jinja")
    with open(template, encoding="utf-8") as f:
        tok.chat_template = f.read()
    return tok


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("hf_dir")
    p.add_argument("questions")
    p.add_argument("lmzoo_answers")
    p.add_argument("--max-new-tokens", type=int, default=8)
    args = p.parse_args(argv)
    torch.manual_seed(0)
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line) for line in f if line.strip()]
    with open(args.lmzoo_answers, encoding="utf-8") as f:
        answers = [json.loads(line) for line in f if line.strip()]
    if len(questions) != len(answers):
        raise SystemExit("chat_transformers_check: as many answers as questions are needed")
    for messages in questions:
        if any(ch.isdigit() for m in messages for ch in m["content"]):
            raise SystemExit("chat_transformers_check: digits in a question (GPT2Tokenizer splits them otherwise)")
    with open(os.path.join(args.hf_dir, "generation_config.json"), encoding="utf-8") as f:
        eos = json.load(f)["eos_token_id"]
    eos = eos if isinstance(eos, list) else [eos]
    model = transformers.AutoModelForCausalLM.from_pretrained(args.hf_dir, torch_dtype=torch.float32).eval()
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        tok = slow_tokenizer(args.hf_dir, work)
        for messages, expected in zip(questions, answers):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True)
            with torch.no_grad():
                prompt = torch.tensor([ids])
                out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=args.max_new_tokens,
                                     do_sample=False, eos_token_id=eos, pad_token_id=eos[0])
            new = out[0, len(ids):].tolist()
            while new and new[-1] in eos:
                new.pop()
            got = tok.decode(new)
            ok = got == expected
            failures += not ok
            print(f"{'PASS' if ok else 'FAIL'} {json.dumps(messages[-1]['content'])}: transformers "
                  f"{json.dumps(got)}, lmzoo {json.dumps(expected)} ({len(ids)} prompt ids)")
    print(f"transformers {transformers.__version__}: {len(questions) - failures}/{len(questions)} answers equal")
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
