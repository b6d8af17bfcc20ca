"""transformers' eager forward over evaluation windows: the baseline of bench/bench_forward.py.

Run with the venv of scripts/make-bench-venv.sh (PyPI's torch and transformers), never Debian's
python3-torch. The windows are the ones `quantscope-cli eval` scores: the ids of
`quantscope-cli tokenize MODEL --data TEXT`, cut into floor(N / SEQ_LEN) non-overlapping windows,
the first MAX_WINDOWS of them (0: all). Per batch size, the timed region is the forward over
every window plus the NLL of positions 1..L-1, after one untimed warm-up forward of one window
(model loading excluded); it is repeated and the median tokens/s printed with the perplexity,
as JSON on one line.

usage: hf_eager_forward.py MODEL_DIR IDS_FILE SEQ_LEN MAX_WINDOWS THREADS REPEAT BATCH [BATCH...]
"""
import json
import math
import statistics
import sys
import time

import torch
import transformers


def main():
    model_dir, ids_path = sys.argv[1], sys.argv[2]
    seq, maxw, threads, repeat = (int(x) for x in sys.argv[3:7])
    batches = [int(x) for x in sys.argv[7:]] or [1]
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    ids = [int(t) for t in open(ids_path).read().split()]
    n = len(ids) // seq
    if maxw:
        n = min(n, maxw)
    windows = torch.tensor(ids[: n * seq]).view(n, seq)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    model(input_ids=windows[:1], use_cache=False)  # warm-up: one-time initialisation untimed
    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "threads": torch.get_num_threads(), "windows": n, "seq_len": seq, "modes": {}}
    for batch in batches:
        rates, nll = [], 0.0
        for _ in range(repeat):
            nll = 0.0
            t0 = time.perf_counter()
            for b in range(0, n, batch):
                x = windows[b:b + batch]
                logits = model(input_ids=x, use_cache=False).logits
                logp = torch.log_softmax(logits[:, :-1].float(), -1)
                nll -= logp.gather(-1, x[:, 1:].unsqueeze(-1)).double().sum().item()
            rates.append(n * seq / (time.perf_counter() - t0))
        mean = nll / (n * (seq - 1))
        out["modes"][str(batch)] = {"tokens_per_second": statistics.median(rates),
                                    "all": rates, "perplexity": math.exp(mean)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
