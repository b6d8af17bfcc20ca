#!/usr/bin/python3
"""Quantization benchmarks over the CLI: prints numbers, medians of repeated runs and differences
against a baseline measured in the same run (never asserted: machines here are noisy).

1. Peak RSS of `quantize` against model depth on synthetic Llama models (hidden 1024,
   intermediate 2816, 16 heads, vocab 4096, F32) with 2, 4, 8 and 16 blocks, for
   int4_wo_128 (weight-only, no calibration) and int8 (static activations, 16 calibration
   windows of 256 tokens). The pipeline runs block by block, so peak RSS should stay flat in
   depth: about one block plus the calibration activations, not the model. The baseline is the
   depth-2 run of the same scheme; the last column divides the growth by the bytes of one block.
2. Time per block of the same runs (`quantize --json` reports "seconds" and "blocks").

The compiled throughput benchmark of the quantization kernels is `quantscope-bench-quant`
(bench/bench_quant.cpp) in the build's bin folder.

usage: bench/bench_quant.py [--build build/release] [--work /tmp/qs-bench-quant]
                            [--depths 2,4,8,16] [--repeat 1] [--threads 2] [--keep]
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
SHAPE = ["--arch", "llama", "--hidden", "1024", "--intermediate", "2816", "--heads", "16",
         "--kv-heads", "16", "--vocab", "4096"]
MB = 1024 * 1024


def proc_rss(pid):
    """(RssAnon, RssFile) in MB from /proc/PID/status, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if line.startswith("Rss"))
        return (int(fields["RssAnon"].split()[0]) / 1024, int(fields["RssFile"].split()[0]) / 1024)
    except (OSError, KeyError, ValueError):
        return None


def measured(cmd, repeat):
    """Wall times, peak RSS (MB, per child via wait4), sampled peaks (every 20 ms) of RssAnon
    (memory the process owns) and RssFile (mapped file pages: libraries and checkpoints read
    through a mapping, clean and reclaimable) in MB, and stdout of `repeat` runs."""
    times, rss, anon, files, outs = [], [], [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(cmd, stdout=out, stderr=err)
            peak_anon, peak_file = 0.0, 0.0
            while True:
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                sample = proc_rss(p.pid)
                if sample:
                    peak_anon = max(peak_anon, sample[0])
                    peak_file = max(peak_file, sample[1])
                time.sleep(0.02)
            p.returncode = status  # reaped here; keeps Popen from waiting again
            times.append(time.perf_counter() - t0)
            if status != 0:
                err.seek(0)
                sys.exit(f"command failed: {' '.join(cmd)}\n{err.read().decode(errors='replace')}")
            out.seek(0)
            outs.append(out.read().decode())
        rss.append(usage.ru_maxrss / 1024)
        anon.append(peak_anon)
        files.append(peak_file)
    return times, rss, anon, files, outs


def tensor_bytes(model_dir):
    """Bytes of block 0's tensors and of all tensors, read from the safetensors headers (the
    model's own description of itself, independent of the CLI's reports)."""
    block, total = 0, 0
    for name in sorted(os.listdir(model_dir)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(model_dir, name), "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        for key, info in header.items():
            if key == "__metadata__":
                continue
            size = info["data_offsets"][1] - info["data_offsets"][0]
            total += size
            if key.startswith("model.layers.0."):
                block += size
    return block, total


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
               if os.path.isfile(os.path.join(path, f)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="/tmp/qs-bench-quant")
    ap.add_argument("--depths", default="2,4,8,16")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the quantized output folders")
    a = ap.parse_args()
    cli = os.path.join(a.build, "bin", "quantscope-cli")
    depths = [int(d) for d in a.depths.split(",")]
    calib = os.path.join(SHARED, "data", "tinystories-calib.txt")
    schemes = {
        "int4_wo_128": [],
        "int8": ["--calib-data", calib, "--num-calib-data", "16", "--seq-len", "256"],
    }
    os.makedirs(a.work, exist_ok=True)

    version = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {version.splitlines()[0] if version else cli}")
    _, rss0, _, _, _ = measured([cli, "--version"], 1)
    print(f"# threads {a.threads}, repeat {a.repeat} (median time, max RSS); process start-up "
          f"alone (--version, loads LibTorch): {rss0[0]:.1f} MB peak RSS")

    models = {}
    for d in depths:
        out = os.path.join(a.work, f"llama-1024-d{d}")
        if not os.path.exists(os.path.join(out, "config.json")):
            measured([cli, "synth", *SHAPE, "--layers", str(d), "--seed", "1", "--out", out], 1)
        models[d] = (out, dir_bytes(out), *tensor_bytes(out))

    results = {}  # (scheme, depth) -> (rss MB, seconds per block, blocks)
    for scheme, extra in schemes.items():
        for d in depths:
            model = models[d][0]
            out = os.path.join(a.work, f"out-{scheme}-d{d}")
            shutil.rmtree(out, ignore_errors=True)
            _, rss, anon, files, outs = measured([cli, "quantize", model, "--quant-scheme", scheme, *extra,
                                     "--threads", str(a.threads), "--out", out, "--json"],
                                    a.repeat)
            runs = [json.loads(o) for o in outs]
            blocks = runs[0]["blocks"]
            per_block = statistics.median(r["seconds"] / r["blocks"] for r in runs)
            results[(scheme, d)] = (max(rss), per_block, blocks, max(anon), max(files))
            if not a.keep:
                shutil.rmtree(out, ignore_errors=True)

    print("## peak RSS of quantize vs depth; baseline: the depth-2 run of the same scheme")
    print("# RSS: ru_maxrss; anon/file: sampled peaks of RssAnon (owned memory) and RssFile "
          "(mapped files: libraries, a checkpoint read through a mapping); growth/block: "
          "(RSS - RSS at depth 2) / bytes of one block")
    for scheme, extra in schemes.items():
        print(f"### {scheme} {' '.join(os.path.basename(x) for x in extra)}".rstrip())
        print(f"{'depth':>5}{'model MB':>10}{'block MB':>10}{'RSS MB':>9}{'anon MB':>9}{'file MB':>9}"
              f"{'RSS-d2 MB':>11}{'model-d2 MB':>13}{'growth/block':>14}")
        base = results[(scheme, depths[0])][0]
        base_model = models[depths[0]][1]
        for d in depths:
            _, disk, block, _ = models[d]
            rss, _, _, anon, filemb = results[(scheme, d)]
            print(f"{d:>5}{disk / MB:>10.1f}{block / MB:>10.1f}{rss:>9.1f}{anon:>9.1f}{filemb:>9.1f}"
                  f"{rss - base:>11.1f}{(disk - base_model) / MB:>13.1f}"
                  f"{(rss - base) * MB / block:>14.2f}")

    print("## seconds per block (calibration + quantization, from quantize --json)")
    print(f"{'depth':>5}{'blocks':>8}" + "".join(f"{s + ' s/block':>22}" for s in schemes))
    for d in depths:
        blocks = results[(next(iter(schemes)), d)][2]
        print(f"{d:>5}{blocks:>8}" + "".join(f"{results[(s, d)][1]:>22.3f}" for s in schemes))
    print(f"{'median':>13}" + "".join(
        f"{statistics.median(results[(s, d)][1] for d in depths):>22.3f}" for s in schemes))


if __name__ == "__main__":
    main()
