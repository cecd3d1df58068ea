#!/usr/bin/env python3
# Writes the config.json that this transformers version saves for each tiny model of tools/hf_transformers_check.py.
"""The fixtures of tests/test_hf_config_versions.cpp: run once under each transformers version
(../shared/hf-reference env.sh = 4.48, env5.sh = 5.16, Debian 13):

    python3 tools/hf_config_fixtures.py tests/fixtures/hf_configs

writes OUT/transformers-MAJOR.MINOR/ARCH.json (config.save_pretrained's config.json, as that version writes it,
with transformers_version removed so that the fixtures do not change with a patch release).
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_transformers_check as check  # noqa: E402


def main(out):
    import transformers as tf
    version = ".".join(tf.__version__.split(".")[:2])
    folder = os.path.join(out, "transformers-" + version)
    os.makedirs(folder, exist_ok=True)
    for arch in check.ARCHS:
        config = check.hf_config(tf, arch, check.VOCAB)
        config.architectures = [check.MODEL_CLASS[arch]]
        with tempfile.TemporaryDirectory() as tmp:
            config.save_pretrained(tmp)
            with open(os.path.join(tmp, "config.json"), encoding="utf-8") as f:
                saved = json.load(f)
        saved.pop("transformers_version", None)
        with open(os.path.join(folder, arch + ".json"), "w", encoding="utf-8") as f:
            json.dump(saved, f, indent=2, sort_keys=True)
            f.write("\n")
        print("wrote", os.path.join(folder, arch + ".json"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
