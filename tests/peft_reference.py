#!/usr/bin/python3
# An independent reference of Hugging Face PEFT's LoRA files (naming, scaling, fan_in_fan_out), in plain Python +
# torch: no peft, no transformers. Checks that an adapter directory, applied to a base HF directory the way peft's
# LoraLayer.merge() does, gives exactly the merged HF directory.
"""Usage: peft_reference.py merge BASE_HF_DIR ADAPTER_DIR MERGED_HF_DIR [--tol 1e-6]

For each adapter_model.safetensors key base_model.model.<M>.lora_A.weight (r, in) / .lora_B.weight (out, r), <M>
must be one of adapter_config.json's target_modules (exactly or as a dotted suffix, peft's match) and <M>.weight a
tensor of BASE_HF_DIR; peft merges W + (B @ A) * lora_alpha / r (transposed when fan_in_fan_out, GPT-2's Conv1D).
Every tensor of MERGED_HF_DIR must equal that (adapted) or the base tensor bit for bit (the rest). Prints JSON:
{"modules": adapted modules, "max_abs_diff": ..., "unchanged": tensors equal to the base}; exits 1 on a mismatch.
Run with /usr/bin/python3 (Debian's python3-torch).
"""
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_reference import decode_tensor, read_dir_raw, read_safetensors_raw  # noqa: E402

KEY = re.compile(r"^base_model\.model\.(.+)\.lora_([AB])\.weight$")


def tensors(raw):
    return {name: decode_tensor(dtype, shape, chunk) for name, (dtype, shape, chunk) in raw.items()}


def targeted(module, targets):
    """peft's check_target_module_exists for a list: the name itself or a dotted suffix of it."""
    return any(module == t or module.endswith("." + t) for t in targets)


def merge(base_dir, adapter_dir, merged_dir, tol):
    with open(os.path.join(adapter_dir, "adapter_config.json")) as f:
        cfg = json.load(f)
    assert cfg["peft_type"] == "LORA", cfg["peft_type"]
    assert not cfg.get("use_rslora") and not cfg.get("rank_pattern") and not cfg.get("alpha_pattern")
    r, alpha, fan_in_fan_out = cfg["r"], cfg["lora_alpha"], cfg["fan_in_fan_out"]
    scaling = alpha / r
    adapter = tensors(read_safetensors_raw(os.path.join(adapter_dir, "adapter_model.safetensors")))
    base, merged = tensors(read_dir_raw(base_dir)), tensors(read_dir_raw(merged_dir))
    pairs = {}
    for key, value in adapter.items():
        m = KEY.match(key)
        if not m:
            raise SystemExit("unexpected adapter key %s" % key)
        pairs.setdefault(m.group(1), {})[m.group(2)] = value
    expected = dict(base)
    for module, ab in sorted(pairs.items()):
        if set(ab) != {"A", "B"}:
            raise SystemExit("%s lacks lora_A or lora_B" % module)
        if not targeted(module, cfg["target_modules"]):
            raise SystemExit("%s is not among target_modules" % module)
        A, B = ab["A"], ab["B"]
        if A.shape[0] != r or B.shape[1] != r:
            raise SystemExit("%s: rank %d/%d, config r %d" % (module, A.shape[0], B.shape[1], r))
        delta = (B @ A) * scaling
        if fan_in_fan_out:
            delta = delta.T
        w = module + ".weight"
        if w not in base:
            raise SystemExit("the base has no %s" % w)
        if delta.shape != base[w].shape:
            raise SystemExit("%s: delta %s vs weight %s" % (module, list(delta.shape), list(base[w].shape)))
        expected[w] = base[w] + delta
    if set(merged) != set(base):
        raise SystemExit("merged and base hold different tensor names")
    worst, unchanged = 0.0, 0
    for name, value in merged.items():
        if name in [m + ".weight" for m in pairs]:
            worst = max(worst, (value - expected[name]).abs().max().item())
        else:
            if not torch.equal(value, base[name]):
                raise SystemExit("%s changed though no adapter targets it" % name)
            unchanged += 1
    print(json.dumps({"modules": len(pairs), "max_abs_diff": worst, "unchanged": unchanged, "r": r,
                      "lora_alpha": alpha, "fan_in_fan_out": fan_in_fan_out}))
    return 0 if worst <= tol else 1


def main(argv):
    if len(argv) < 5 or argv[1] != "merge":
        print(__doc__, file=sys.stderr)
        return 2
    tol = float(argv[argv.index("--tol") + 1]) if "--tol" in argv else 1e-6
    return merge(argv[2], argv[3], argv[4], tol)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
