#!/usr/bin/env bash
# Repeats one GPU test under compute-sanitizer, many processes at once, with CUDA graphs on and
# off, to tell an intermittent tool failure from a library bug (docs/errors.md, sweeps 10-14).
# Builds the binary first (into build-gpu, as gpu-check.sh does), and runs each tool with the
# sweep's options (scripts/common.sh).
#
#   scripts/sanitize-probe.sh OUT_DIR [TOOL ...]     (tools default: racecheck initcheck)
#   STRATA_PROBE_BINARY=gpu_errors                    test binary
#   STRATA_PROBE_FILTER=Concurrency.TwoHostThreadsShareOneDeviceSet   gtest filter
#   STRATA_PROBE_RUNS=12                              processes per batch (all at once)
#   STRATA_PROBE_REPEAT=50                            repeats without tools first
#   STRATA_PROBE_BATCHES=1                            batches per tool and graphs setting
#   STRATA_PROBE_TIMEOUT=180                          seconds each run may take (12 racecheck
#                                                     runs at once take about 55-59 s each)
#   STRATA_PROBE_UNTIL=150                            start no batch after this many seconds
#   STRATA_CUDA_ARCHITECTURES=native                  what to build for
#
# Prints, per batch (tool, graphs on/off), how many runs ended with each exit status and how
# many logs had an illegal address or an "Internal Sanitizer Error"; the logs stay in OUT_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
out=${1:?usage: scripts/sanitize-probe.sh OUT_DIR [TOOL ...]}
shift
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(racecheck initcheck)
mkdir -p "$out"
build=${STRATA_GPU_BUILD:-build-gpu}
binary=${STRATA_PROBE_BINARY:-gpu_errors}
filter=${STRATA_PROBE_FILTER:-Concurrency.TwoHostThreadsShareOneDeviceSet}
runs=${STRATA_PROBE_RUNS:-12}
batches=${STRATA_PROBE_BATCHES:-1}
run_timeout=${STRATA_PROBE_TIMEOUT:-180}
until=${STRATA_PROBE_UNTIL:-150}
cs=$(strata_sanitizer)
[ -x "$cs" ] || { echo "compute-sanitizer not found (looked on PATH and in /usr/local/cuda/bin)"; exit 1; }
strata_build "$build" "$binary" >"$out/build.log" 2>&1 || { echo "BUILD FAILED (see $out/build.log)"; tail -20 "$out/build.log"; exit 1; }
echo "built in ${SECONDS}s"
repeat=${STRATA_PROBE_REPEAT:-50}
timeout $((30 + repeat / 2)) "$build/tests/$binary" --gtest_filter="$filter" --gtest_repeat="$repeat" \
  >"$out/without-tools.log" 2>&1
echo "without tools, $repeat repeats: rc=$?, $(grep -c '^\[  PASSED' "$out/without-tools.log") passed," \
  "$(grep -c '^\[  FAILED  \] [0-9]* test' "$out/without-tools.log") failed; $(tail -1 "$out/without-tools.log")"

batch() {  # tool graphs_off tag
  local tool=$1 off=$2 tag=$3 b i
  strata_sanitizer_args "$tool"
  rm -f "$out/$tag".*  # count these batches only, not an earlier probe's runs in the same folder
  for b in $(seq 1 "$batches"); do
    [ "$b" -gt 1 ] && [ "$SECONDS" -ge "$until" ] && break
    for i in $(seq $(((b - 1) * runs + 1)) $((b * runs))); do
      (
        STRATA_DISABLE_GRAPHS=$off STRATA_TEST_QUICK=1 timeout "$run_timeout" "$cs" "${sanitizer_args[@]}" \
          "$build/tests/$binary" --gtest_filter="$filter" >"$out/$tag.$i.log" 2>&1
        rc=$?
        echo "rc=$rc illegal_address=$(grep -c 'illegal memory access' "$out/$tag.$i.log")" \
          "internal_error=$(grep -c 'Internal Sanitizer Error' "$out/$tag.$i.log")" >"$out/$tag.$i.result"
      ) &
    done
    wait
  done
  echo "$tool, STRATA_DISABLE_GRAPHS=$off, $(ls "$out/$tag".*.result | wc -l) runs, $runs at once (at ${SECONDS}s):"
  cat "$out"/"$tag".*.result | sort | uniq -c
}
for tool in "${tools[@]}"; do
  for off in 0 1; do
    [ "$SECONDS" -lt "$until" ] && batch "$tool" "$off" "$tool.graphs$((1 - off))"
  done
done
exit 0
