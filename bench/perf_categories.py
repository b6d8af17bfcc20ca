#!/usr/bin/python3
"""Where a `quantscope-cli eval` spends its CPU samples, by category (docs/performance.md).

Reads `perf report --no-children --sort dso,symbol --stdio -g none` of a `perf record` of the
command and sums the self samples per category, matched on library and symbol names. Categories:
matmul (the BLAS), attention (the fused loop, or the softmax and exp of the materialised
scores), NLL, threading (OpenMP spin-wait, BLAS yield loops, scheduler), memory (page faults,
brk/munmap, malloc), start-up (dynamic linking and LibTorch's operator registration, outside
eval's own timer), other LibTorch (elementwise ops, norms, RoPE, dispatch) and the rest.

usage: perf record -F 1000 -g -o perf.data quantscope-cli eval ...
       bench/perf_categories.py perf.data
"""
import re
import subprocess
import sys

CATEGORIES = [
    ("matmul (BLAS)", re.compile(r"libopenblas|libblis|libblas|sgemm|gemm_", re.I)),
    ("attention", re.compile(r"attendUnits|softmax|Sleef_.*exp|scaled_dot_product", re.I)),
    ("NLL", re.compile(r"rowNll|log_softmax|gather", re.I)),
    ("threading (spin, yield, scheduler)",
     re.compile(r"libgomp|sched_yield|__schedule|futex|finish_task_switch|pthreadpool|"
                r"_raw_spin_unlock_irqrestore|do_syscall_64|entry_SYSCALL", re.I)),
    ("memory (page faults, brk/munmap, malloc)",
     re.compile(r"page_fault|clear_page|do_anonymous_page|handle_mm_fault|alloc_pages|"
                r"folio|unmap|munmap|brk|_int_malloc|_int_free|malloc|unlink_chunk|memcg|"
                r"lruvec|tlb|mas_walk|rmqueue|get_page_from_freelist|__list_del_entry|"
                r"lock_vma|swap_cache|charge", re.I)),
    ("start-up (dynamic linking, operator registration)",
     re.compile(r"ld-linux|do_lookup_x|_dl_|OperatorEntry|Dispatcher::|Library::|"
                r"DispatchKeyExtractor|registerKernel|RegisterOperators", re.I)),
    ("other LibTorch (elementwise, norms, RoPE, dispatch)", re.compile(r"libtorch|libc10", re.I)),
]


def main():
    out = subprocess.run(["perf", "report", "-i", sys.argv[1], "--no-children", "--sort",
                          "dso,symbol", "--stdio", "-g", "none"], capture_output=True,
                         text=True).stdout
    totals = {name: 0.0 for name, _ in CATEGORIES}
    rest = 0.0
    for line in out.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s+(\S+)\s+\[.\]\s+(.*)", line)
        if not m:
            continue
        pct, text = float(m.group(1)), m.group(2) + " " + m.group(3)
        for name, pattern in CATEGORIES:
            if pattern.search(text):
                totals[name] += pct
                break
        else:
            rest += pct
    for name, _ in CATEGORIES:
        print(f"| {name} | {totals[name]:.1f}% |")
    print(f"| the rest | {rest:.1f}% |")


if __name__ == "__main__":
    main()
