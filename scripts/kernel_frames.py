#!/usr/bin/env python3
"""Fails if a kernel that runs one of Strata's functors has a stack frame.

Compiles SOURCE (tests/kernel_frames/kernels.cu: Strata's algorithms instantiated) with nvcc and
`ptxas -v`, reads each kernel's stack frame, and fails on any kernel whose mangled name names
Strata with a frame larger than --max-bytes (0 by default). A functor that carries an array by
value and indexes it by a computed position makes every thread copy the whole functor into local
memory: gather and the searches ran 1.5-9x slower than Thrust's that way until 2026-12-07.

    kernel_frames.py NVCC INCLUDE_DIR SOURCE [--arch 90] [--max-bytes 0] [--extra-flag F ...]

Exit status 0: every kernel clean (and at least one of Strata's checked); 1: a frame too large or
no kernel found; 2: the compilation failed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def demangle(names):
    tool = shutil.which("c++filt")
    if tool is None:
        return names
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return out if len(out) == len(names) else names


def frames(ptxas_output):
    """(mangled kernel name, stack frame bytes) for every entry function ptxas reports."""
    kernel = None
    for line in ptxas_output.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            kernel = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame", line)
        if m and kernel is not None:
            yield kernel, int(m.group(1))
            kernel = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nvcc")
    ap.add_argument("include")
    ap.add_argument("source")
    ap.add_argument("--arch", default="90")
    ap.add_argument("--max-bytes", type=int, default=0)
    ap.add_argument("--extra-flag", action="append", default=[])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [args.nvcc, "-std=c++17", "--extended-lambda", f"-arch=sm_{args.arch}", f"-I{args.include}", *args.extra_flag,
               "-c", args.source, "-o", os.path.join(tmp, "kernels.o"), "-Xptxas", "-v"]
        run = subprocess.run(cmd, capture_output=True, text=True)
    text = run.stdout + run.stderr
    if run.returncode != 0:
        print(" ".join(cmd), "\n", text[-4000:], file=sys.stderr)
        return 2
    all_frames = list(frames(text))
    ours = [(k, b) for k, b in all_frames if "strata" in k]
    bad = [(k, b) for k, b in ours if b > args.max_bytes]
    print(f"{len(all_frames)} kernels, {len(ours)} running Strata's functors, {len(bad)} with a stack frame over "
          f"{args.max_bytes} bytes")
    if not ours:
        print("no kernel names Strata: nothing was checked", file=sys.stderr)
        return 1
    for name, (kernel, b) in zip(demangle([k for k, _ in bad]), bad):
        print(f"  {b} bytes: {name[:400]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
