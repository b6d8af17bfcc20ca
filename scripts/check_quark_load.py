#!/usr/bin/env python3
"""Loads a Quantscope `--format quark` export with transformers' AutoModelForCausalLM (amd-quark
0.13 installed: transformers dispatches `quant_method: quark` to it) and prints its perplexity on
the eval windows of docs/evaluation.md, one float on stdout. Used by scripts/check-quark-load.sh.

usage: check_quark_load.py EXPORT_DIR EVAL_TEXT [SEQ_LEN]
"""
import os
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quark_rows import perplexity, token_ids, windows  # noqa: E402


def main():
    export, text = sys.argv[1], sys.argv[2]
    seq = int(sys.argv[3]) if len(sys.argv) > 3 else 256
    tokenizer = AutoTokenizer.from_pretrained(export)
    model = AutoModelForCausalLM.from_pretrained(export, torch_dtype=torch.float32).eval()
    quantized = [n for n, m in model.named_modules() if "Quant" in type(m).__name__]
    if not quantized:
        sys.exit(f"{export}: transformers loaded no quantized module (quant_method not honoured?)")
    print(f"{perplexity(model, windows(token_ids(tokenizer, text), seq)):.6f}")


if __name__ == "__main__":
    main()
