#!/usr/bin/env python3
"""AMD Quark 0.13's AWQ on the AWQ rows of docs/results.md, as shipped and with the ways it
departs from Quantscope's AWQ undone one by one (issue 32, item 2): where the gap between the two
programs' AWQ rows comes from.

Variants (cumulative, each also does the ones before it):
  stock                 Quark as installed.
  inputs                the q/k/v scale search runs the decoder layer on the block's inputs:
                        awq.py's _get_input_feat has already advanced self.inps to the block's
                        outputs when _search_best_scale reads it for attention modules.
  inputs+clip           o_proj's clip search reads its inputs divided by the scales applied to it
                        (under GQA the constrained ones), not the unconstrained ones.
  inputs+clip+stream    the next block's inputs come from this block with its scaled and clipped
                        (unquantized) weights, as Quantscope's reference stream does, not from the
                        block as loaded.

usage: quark_awq_variants.py SHARED_DIR VARIANT [SCHEME,...] [--model DIR]
       (default schemes uint4_wo_32,int4_wo_32; *down_proj and lm_head excluded as in results.sh;
       --model: a copy of stories260K elsewhere, as scripts/rounding_spread.py writes them)
Run with the venv of scripts/make-quark-venv.sh; prints one tab-separated line per row.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import quark_rows as qr  # noqa: E402


def search_on_block_inputs():
    from quark.torch.algorithm.awq.awq import AwqProcessor

    get_input_feat = AwqProcessor._get_input_feat
    search_best_scale = AwqProcessor._search_best_scale

    def get(self, layer, named):
        self._block_inputs, self._current_layer = list(self.inps), layer
        return get_input_feat(self, layer, named)

    def search(self, module, *args, **kwargs):
        outputs, self.inps = self.inps, self._block_inputs
        try:
            return search_best_scale(self, module, *args, **kwargs)
        finally:
            self.inps = outputs

    AwqProcessor._get_input_feat, AwqProcessor._search_best_scale = get, search


def clip_inputs_by_applied_scales():
    import quark.torch.algorithm.awq.awq as awq

    apply_scale = awq.apply_scale

    def constrained(module, scales_list, input_feat_dict=None, device=None,
                    num_attention_heads=1, num_key_value_heads=1):
        out = []
        for prev, names, s in scales_list:
            op = module.get_submodule(prev)
            if (isinstance(op, torch.nn.Linear) and op.weight.shape[0] != s.numel()
                    and num_attention_heads != num_key_value_heads):
                repeats = num_attention_heads // num_key_value_heads
                head = s.numel() // num_attention_heads
                s = (s.view(num_key_value_heads, repeats, head).max(dim=1, keepdim=True)[0]
                     .expand(num_key_value_heads, repeats, head).reshape(-1))
            out.append((prev, names, s))
        return apply_scale(module, out, input_feat_dict=input_feat_dict, device=device,
                           num_attention_heads=num_attention_heads,
                           num_key_value_heads=num_key_value_heads)

    awq.apply_scale = constrained


def stream_through_clipped_weights():
    import quark.torch.algorithm.awq.awq as awq
    from quark.torch.algorithm.awq.awq import AwqProcessor

    apply_quant = AwqProcessor._apply_quant

    def quantize(self, named_linears):
        layer = self._current_layer
        kwargs = awq.resolve_per_layer_kwargs(layer, self.module_kwargs)
        with torch.no_grad():
            outputs = [layer(x, **kwargs) for x in self._block_inputs]
        self.inps = [o[0] if isinstance(o, tuple) else o for o in outputs]
        return apply_quant(self, named_linears)

    AwqProcessor._apply_quant = quantize


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("shared")
    ap.add_argument("variant")
    ap.add_argument("schemes", nargs="?", default="uint4_wo_32,int4_wo_32")
    ap.add_argument("--model")
    args = ap.parse_args()
    shared, variant, schemes = args.shared, args.variant, args.schemes.split(",")
    steps = variant.split("+")
    if (steps[0] not in ("stock", "inputs") or any(s not in ("clip", "stream") for s in steps[1:])
            or ("stream" in steps and steps[0] != "inputs")):
        sys.exit(f"unknown variant '{variant}' (stock, inputs, inputs+clip, inputs+clip+stream)")
    if steps[0] == "inputs":
        search_on_block_inputs()
    if "clip" in steps:
        clip_inputs_by_applied_scales()
    if "stream" in steps:
        stream_through_clipped_weights()
    torch.manual_seed(0)
    model_dir = args.model or f"{shared}/models/stories260K"
    tokenizer = qr.AutoTokenizer.from_pretrained(model_dir)
    calib = qr.windows(qr.token_ids(tokenizer, f"{shared}/data/tinystories-calib.txt"), qr.SEQ,
                       qr.NUM_CALIB)
    evaluation = qr.windows(qr.token_ids(tokenizer, f"{shared}/data/tinystories-eval.txt"), qr.SEQ)
    for scheme in schemes:
        ppl = qr.run_row(model_dir, scheme, ["awq"], ["*down_proj"], calib, evaluation)
        print(f"{variant}\t{scheme}\t{ppl:.6f}", flush=True)


if __name__ == "__main__":
    main()
