#!/usr/bin/env python3
"""Plots throughput against size for Strata and CUB from a benchmark JSON
(benchmarks/bench_main.cu, --benchmark_out). One PNG per case, one line per place count plus
the CUB (and Thrust) anchor; a case measured at one size only (STRATA_BENCH_LOG2_SIZES=28) gets
bars instead: Strata's throughput per place count, the anchors as horizontal lines.

    scripts/plot_bench.py bench.json --out docs/img [--cases reduce_f32,inclusive_scan_f32]

Exits 77 (a CTest skip) when matplotlib is not installed.
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--out", default="plots")
    ap.add_argument("--cases", default="")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plots")
        return 77

    with open(args.json) as f:
        data = json.load(f)
    series = {}  # case -> label -> [(log2n, GB/s)]
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or "bytes_per_second" not in b:
            continue
        parts = [p for p in b["name"].split("/") if p != "manual_time"]
        impl, case, nums = parts[0], parts[1], [int(x) for x in parts[2:]]
        if impl.startswith("latency"):
            continue
        label = impl if impl != "strata" else "strata, %s places" % ("all" if nums[1] == 0 else nums[1])
        series.setdefault(case, {}).setdefault(label, []).append((nums[0], b["bytes_per_second"] / 1e9))
    wanted = [c for c in args.cases.split(",") if c] or sorted(series)
    os.makedirs(args.out, exist_ok=True)
    made = 0
    for case in wanted:
        if case not in series:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        sizes = {p[0] for pts in series[case].values() for p in pts}
        if len(sizes) == 1:  # one size: bars per place count, anchors as lines
            bars = sorted((label, pts[0][1]) for label, pts in series[case].items() if label.startswith("strata"))
            bars.sort(key=lambda b: int(b[0].split()[1]) if b[0].split()[1].isdigit() else 1 << 30)
            ax.bar([b[0].replace("strata, ", "") for b in bars], [b[1] for b in bars], color="tab:blue", label="strata")
            for label, pts in sorted(series[case].items()):
                if not label.startswith("strata"):
                    ax.axhline(pts[0][1], linestyle="--" if label == "cub" else ":", color="k" if label == "cub" else "tab:red",
                               label=label)
            ax.set_xlabel("places (2^%d elements)" % sizes.pop())
        else:
            for label, pts in sorted(series[case].items()):
                pts.sort()
                style = "k--" if label == "cub" else (":" if label == "thrust" else "-")
                ax.plot([2 ** p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=label)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("elements")
        ax.set_ylabel("GB/s (bytes the operation must move)")
        ax.set_title("%s (%s)" % (case, data.get("context", {}).get("host_name", "")))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(args.out, "%s.png" % case)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made += 1
        print("wrote", path)
    if made == 0:
        print("no benchmark cases found in", args.json)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
