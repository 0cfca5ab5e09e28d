#!/usr/bin/env python3
"""Prints, for every Strata benchmark case, its throughput over the plain CUB call on one
device over the same total size, measured in the same run (benchmarks/bench_main.cu).

    scripts/bench_ratios.py bench.json            # table
    scripts/bench_ratios.py bench.json --csv      # machine-readable
"""
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parts = b["name"].split("/")
        if parts[-1] == "manual_time":
            parts = parts[:-1]
        impl, case, args = parts[0], parts[1], [int(a) for a in parts[2:]]
        rows[(impl, case, tuple(args))] = b
    return data.get("context", {}), rows


def main():
    path = sys.argv[1]
    csv = "--csv" in sys.argv
    ctx, rows = load(path)
    out = []
    for (impl, case, args), b in sorted(rows.items()):
        if impl != "strata":
            continue
        lg, places = args[0], args[1]
        anchor = rows.get(("cub", case, (lg,)))
        if anchor is None:  # no CUB call for it (find_if, is_sorted, gather, lower_bound): Thrust's is the anchor
            anchor = rows.get(("thrust", case, (lg,)))
            case = case + " (vs thrust)"
        if anchor is None:
            continue
        s_bw, c_bw = b.get("bytes_per_second", 0), anchor.get("bytes_per_second", 0)
        ratio = s_bw / c_bw if c_bw else float("nan")
        out.append((case, lg, places, s_bw / 1e9, c_bw / 1e9, ratio))
    lat = {}
    for (impl, case, args), b in rows.items():
        if impl.startswith("latency"):
            lat[(impl, args[1] if len(args) > 1 else 1)] = b["real_time"]  # microseconds
    if csv:
        print("case,log2n,places,strata_GBps,cub_GBps,ratio")
        for r in out:
            print("%s,%d,%d,%.1f,%.1f,%.3f" % r)
        return
    print("%-20s %5s %6s %12s %12s %7s" % ("case", "log2n", "places", "strata GB/s", "anchor GB/s", "ratio"))
    for case, lg, places, s, c, r in out:
        print("%-20s %5d %6s %12.1f %12.1f %7.3f" % (case, lg, "all" if places == 0 else places, s, c, r))
    # Where a multi-place sort's time goes (host wall time per phase; each phase ends with a wait).
    sorts = [(case, args, b) for (impl, case, args), b in sorted(rows.items())
             if impl == "strata" and "sort" in case and "local_ms" in b]
    if sorts:
        print("\n%-16s %5s %6s %9s %12s %14s %7s %14s" % ("sort case", "log2n", "places", "local ms", "splitters ms",
                                                         "exch+merge ms", "rounds", "peak extra MiB"))
        for case, args, b in sorts:
            print("%-16s %5d %6s %9.2f %12.2f %14.2f %7.1f %14.0f" % (
                case, args[0], "all" if args[1] == 0 else args[1], b["local_ms"], b["splitters_ms"],
                b["exchange_merge_ms"], b["rounds"], b["peak_extra_MiB"]))
    for (impl, case, args), b in sorted(rows.items()):
        if impl == "thrust" and case == "sort_u32" and ("cub", case, args) in rows:
            c = rows[("cub", case, args)].get("bytes_per_second", 0)
            if c:
                print("thrust::sort / cub radix sort, 2^%d u32: %.3f" % (args[0], b.get("bytes_per_second", 0) / c))
    base = lat.get(("latency_cub", 1))
    if base:
        print("\nreduce 2^20 f32, value on host (wall clock): CUB reduce + copy %.1f us" % base)
        for (impl, p), t in sorted(lat.items()):
            if impl.startswith("latency_strata"):
                mode = "eager" if impl.endswith("eager") else "graph replay"
                print("  strata %-3s places, %-12s: %7.1f us  (%.2fx CUB)" % ("all" if p == 0 else p, mode, t, t / base))


if __name__ == "__main__":
    main()
