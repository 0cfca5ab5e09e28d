#!/usr/bin/env bash
# The GPU check: on a machine with a GPU, configure (Ninja), build everything with all cores,
# run every test (GPU ones for real, then again with host staging forced through
# STRATA_DISABLE_P2P=1), print strata-info, run the benchmarks, and write logs and a JSON
# summary into the folder given (default gpu-check-out/).
#
#   scripts/gpu-check.sh [OUT_DIR]
#   STRATA_BENCH_LOG2_SIZES=20,28   sizes to benchmark (log2; default 16,20,24,28,30)
#   STRATA_SKIP_BENCH=1             tests only
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-check-out}
mkdir -p "$out"
build=${STRATA_GPU_BUILD:-build-gpu}
jobs=$(nproc)
status=0

{
  nvidia-smi || true
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native &&
    cmake --build "$build" -j"$jobs"
} >"$out/build.log" 2>&1 || { echo "BUILD FAILED (see $out/build.log)"; tail -40 "$out/build.log"; status=1; }

if [ $status -eq 0 ]; then
  {
    echo "=== ctest (peer access / direct where available) ==="
    ctest --test-dir "$build" --output-on-failure -j2
    echo "ctest_rc=$?"
    echo "=== ctest, host staging forced (STRATA_DISABLE_P2P=1) ==="
    STRATA_DISABLE_P2P=1 ctest --test-dir "$build" --output-on-failure -L gpu -j2
    echo "staged_rc=$?"
  } >"$out/tests.log" 2>&1
  grep -E "tests passed|tests failed|_rc=" "$out/tests.log"
  grep -q "ctest_rc=0" "$out/tests.log" && grep -q "staged_rc=0" "$out/tests.log" || status=1

  "$build/examples/strata-info" >"$out/strata-info.txt" 2>&1 || status=1
  cat "$out/strata-info.txt"

  if [ "${STRATA_SKIP_BENCH:-0}" != 1 ]; then
    "$build/benchmarks/strata_bench" --benchmark_out="$out/bench.json" --benchmark_out_format=json \
      --benchmark_min_time=0.05s >"$out/bench.log" 2>&1 || status=1
    python3 scripts/bench_ratios.py "$out/bench.json" | tee "$out/ratios.txt" || status=1
  fi
fi

python3 - "$out" "$status" <<'PY'
import json, re, sys, os
out, status = sys.argv[1], int(sys.argv[2])
def read(name):
    p = os.path.join(out, name)
    return open(p).read() if os.path.exists(p) else ""
tests = read("tests.log")
summary = {"status": "pass" if status == 0 else "fail",
           "ctest_summaries": re.findall(r"\d+% tests passed.*", tests),
           "gtest_failures": re.findall(r"\[  FAILED  \] .*", tests)[:50],
           "ratios": read("ratios.txt").splitlines()}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "gpu-check: $([ $status -eq 0 ] && echo PASS || echo FAIL); report in $out"
exit $status
