#!/usr/bin/env bash
# The layering of the sources, checked from their #include lines (run by scripts/test.sh).
#
#   scripts/check-layers.sh          prints every violation and exits 1 if there is one
#
# Rules:
# - every folder of core/ has a floor (the table below); a file may include headers of its own
#   folder and of folders on lower floors only. An include of a folder on the same floor or a
#   higher one "climbs" and is an error, so folder cycles cannot form;
# - no cycle of includes between files, inside a folder either;
# - core/ never includes Qt Widgets;
# - views/ never reaches Torch (ATen, c10, torch), directly or through a core header;
# - a core/ folder missing from the table is an error (a new room gets a floor when it is made).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys

# The floors, lowest first. Adding a folder to core/ means adding it here.
FLOORS = {
    "util": 0,      # errors, files, threads, host tensors: needed by everything
    "quant": 1,     # schemes, numerics, observers
    "tokenize": 1,  # tokenizers
    "dist": 1,      # the processes of a distributed run (c10d's store and Gloo group)
    "io": 2,        # safetensors, GGUF, GGML types, checkpoints on disk
    "recipe": 3,    # recipes as data: patterns, Quark configs, algorithm catalog, evaluation spec
    "model": 4,     # families, configs, the block-by-block decoder, opening quantized exports
    "analysis": 4,  # per-layer metrics (Torch-free reports, accumulators)
    "synth": 4,     # synthetic checkpoints
    "eval": 5,      # perplexity protocol, generation
    "calib": 6,     # the calibration pipeline: plans and passes
    "algo": 7,      # transforms the pipeline runs (GPTQ, AWQ, SmoothQuant, rotation)
    "export": 7,    # writers the pipeline streams blocks to
    "run": 8,       # whole runs: prepare, run, evaluate, export, sensitivity
    "engine": 9,    # the GUI's job thread over runs
}
SKIP = {"pch"}  # the precompiled header includes only system headers
TORCH = re.compile(r'#\s*include\s*<(ATen|c10|torch)/')
WIDGETS = re.compile(r'#\s*include\s*<(QtWidgets|QWidget|QMainWindow|QDialog|QAbstractButton|'
                     r'QApplication|QLabel|QPushButton|QComboBox|QLineEdit|QSpinBox)\b')
LOCAL = re.compile(r'#\s*include\s*"([^"]+)"')

errors = []
files = {}
for root in ("core", "views", "app", "plugins"):
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n.endswith((".h", ".cpp")):
                p = os.path.join(dirpath, n)
                with open(p, encoding="utf-8") as f:
                    files[p] = f.read().splitlines()

def resolve(path, inc):
    for base in ("core", os.path.dirname(path), "views", "app/gui", "app/cli"):
        cand = os.path.normpath(os.path.join(base, inc))
        if cand in files:
            return cand
    return None

graph = {p: [] for p in files}
for p, lines in files.items():
    for no, line in enumerate(lines, 1):
        m = LOCAL.match(line.strip())
        if m:
            q = resolve(p, m.group(1))
            if q:
                graph[p].append((q, no))

def folder(p):
    parts = p.split(os.sep)
    return parts[1] if parts[0] == "core" and len(parts) > 2 else None

for p in sorted(files):
    if not p.startswith("core" + os.sep):
        continue
    f = folder(p)
    if f is None or f in SKIP:
        continue
    if f not in FLOORS:
        errors.append(f"{p}: core/{f}/ has no floor in scripts/check-layers.sh's table")
        continue
    for no, line in enumerate(files[p], 1):
        if WIDGETS.match(line.strip()):
            errors.append(f"{p}:{no}: core includes Qt Widgets ({line.strip()})")
    for q, no in graph[p]:
        g = folder(q)
        if g is None or g == f or g in SKIP:
            continue
        if g not in FLOORS:
            continue  # reported for the file itself
        if FLOORS[g] >= FLOORS[f]:
            errors.append(f"{p}:{no}: {f} (floor {FLOORS[f]}) includes {q} of {g} "
                          f"(floor {FLOORS[g]}): includes go down only")

# views never reach Torch, through any chain of includes
reach = {}
def torch_chain(p, stack=()):
    if p in reach:
        return reach[p]
    reach[p] = None  # cut cycles (reported below)
    for no, line in enumerate(files[p], 1):
        if TORCH.match(line.strip()):
            reach[p] = [f"{p}:{no}"]
            return reach[p]
    for q, no in graph[p]:
        c = torch_chain(q)
        if c:
            reach[p] = [f"{p}:{no}"] + c
            return reach[p]
    return None
for p in sorted(files):
    if p.startswith("views" + os.sep):
        c = torch_chain(p)
        if c:
            errors.append("views reach Torch: " + " -> ".join(c))

# no cycles between files
WHITE, GREY, BLACK = 0, 1, 2
colour = {p: WHITE for p in files}
def visit(p, path):
    colour[p] = GREY
    path.append(p)
    for q, _ in graph[p]:
        if colour[q] == GREY:
            errors.append("include cycle: " + " -> ".join(path[path.index(q):] + [q]))
        elif colour[q] == WHITE:
            visit(q, path)
    path.pop()
    colour[p] = BLACK
sys.setrecursionlimit(10000)
for p in sorted(files):
    if colour[p] == WHITE:
        visit(p, [])

for e in errors:
    print("check-layers: " + e)
n = sum(1 for p in files if p.startswith("core"))
if errors:
    print(f"check-layers: {len(errors)} violation(s) in {len(files)} files")
    sys.exit(1)
print(f"check-layers: {len(files)} files ({n} in core/, {len(FLOORS)} floors): "
      "no climbing include, no cycle, views free of Torch, core free of widgets")
PY
