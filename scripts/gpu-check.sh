#!/usr/bin/env bash
# The GPU check: on a machine with a GPU, configure (Ninja), build everything with all cores,
# run every test (GPU ones for real, then again with host staging forced through
# STRATA_DISABLE_P2P=1), print strata-info, run the benchmarks, and write logs and a JSON
# summary into the folder given (default gpu-check-out/).
#
#   scripts/gpu-check.sh [OUT_DIR] [--sanitize]
#   (the direct pass also runs the multi-rank NCCL tests with 2-4 ranks where the machine allows)
#   STRATA_BENCH_LOG2_SIZES=20,28   sizes to benchmark (log2; default 16,20,24,28,30)
#   STRATA_SKIP_BENCH=1             tests only
#   STRATA_CHECK_PASSES=direct|staged  run only that ctest pass (default: both), to split the tests
#                                   over two device calls when one would pass the per-call time limit
#                                   (direct includes the multi-rank runs; direct-only leaves them out,
#                                   ranks runs only them: a fresh machine's build, the direct pass and
#                                   the 2-4-rank runs together passed 600 s on 2026-12-04)
#   STRATA_SKIP_TESTS=1             benchmarks only (builds only the benchmark and strata-info), for a
#                                   second device call when tests and benchmarks together would pass
#                                   the per-call time limit
#   STRATA_NCCL_LIB=PATH            an NCCL (libnccl.so.2, or .xz of it) for the multi-rank runs only:
#                                   2.30+ lets them share one GPU (scripts/nccl_for_one_gpu.py makes one
#                                   small enough to carry to the GPU machine); the rest keeps the
#                                   NCCL the build found
#   STRATA_CTEST_JOBS=4             tests run at once
#   STRATA_SKIP_PACKAGE_TESTS=1     leave the packaging tests (no GPU needed; CI runs them) out of the
#                                   direct pass
#   STRATA_ALLOW_MISSING_RANKS=1    a multi-rank run (2-4 ranks, ranks on threads) that this machine
#                                   cannot make is reported and does not fail the check (by default
#                                   coverage asked for and not run fails it)
#   STRATA_CHECK_BUNDLE=1           leave only summary.json and report.tar.gz (every log) in OUT_DIR
#   STRATA_TEST_TIMEOUT=300         seconds any one ctest test may run before it counts as failed
#   STRATA_CUDA_ARCHITECTURES=90    what to build for (default native: the GPU present)
#   --sanitize                      instead of the tests and benchmarks, run every GPU test
#                                   binary (STRATA_TEST_QUICK sizes) under compute-sanitizer's
#                                   memcheck (leak check on), racecheck, initcheck and synccheck,
#                                   one run at a time, failing on any finding or on a run that hits
#                                   its time cap; log in OUT_DIR/sanitize.log
#   STRATA_SANITIZE_RANKS=0         leave out the sweep's 2-rank memcheck of gpu_nccl_ranks under mpirun
#   STRATA_SANITIZE_TESTS, STRATA_SANITIZE_TOOLS, STRATA_SANITIZE_FILTER, STRATA_SANITIZE_TIMEOUT (s per binary and tool,
#   default 240), STRATA_SANITIZE_JOBS (runs at a time, default 1), STRATA_SANITIZE_PLACES (the
#   quick sets' place counts, default 1,3, and 1,3,8 under memcheck)
#                                   choose the binaries, the tools, the gtest filter, the cap, the parallelism,
#                                   the sets
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
sanitize=0
args=()
for a in "$@"; do
  if [ "$a" = --sanitize ]; then sanitize=1; else args+=("$a"); fi
done
out=${args[0]:-gpu-check-out}
mkdir -p "$out"
build=${STRATA_GPU_BUILD:-build-gpu}
status=0
# The NCCL of the multi-rank runs: STRATA_NCCL_LIB's (unpacked into the build folder), else the
# build's own. ranks_env holds the environment those runs take.
ranks_env=()
if [ -n "${STRATA_NCCL_LIB:-}" ]; then
  mkdir -p "$build/nccl-multirank"
  case "$STRATA_NCCL_LIB" in
    *.xz) xz -dc "$STRATA_NCCL_LIB" >"$build/nccl-multirank/libnccl.so.2" ;;
    *) cp "$STRATA_NCCL_LIB" "$build/nccl-multirank/libnccl.so.2" ;;
  esac
  ranks_env=(LD_LIBRARY_PATH="$(cd "$build/nccl-multirank" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
# Several MPI ranks with NCCL: allowed with as many GPUs as ranks, or NCCL 2.30+ (several ranks
# on one GPU with NCCL_MULTI_RANK_GPU_ENABLE=1). ranks_allowed N sets ranks_why when it says no.
ranks_allowed() {
  local gpus ver
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  ver=$(env "${ranks_env[@]}" "$build/tests/strata_nccl_host_tests" --gtest_filter='*Version*' 2>/dev/null |
    sed -n 's/^NCCL \([0-9]*\)\.\([0-9]*\)\..*/\1\2/p')
  ranks_why="$gpus GPU(s), NCCL ${ver:-?} (several ranks on one GPU need 2.30+)"
  [ "$gpus" -ge "$1" ] || [ "${ver:-0}" -ge 230 ]
}
run_ranks() {  # run_ranks N PROGRAM [ARGS]
  local np=$1
  shift
  env "${ranks_env[@]}" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    NCCL_NVLS_ENABLE=0 timeout "${STRATA_RANKS_TIMEOUT:-180}" mpirun --oversubscribe ${ranks_env[0]:+-x LD_LIBRARY_PATH} -np "$np" "$@"
}
sanitize_names=(${STRATA_SANITIZE_TESTS:-gpu_reduce gpu_scan gpu_transform gpu_compact gpu_gather gpu_sort gpu_container gpu_errors gpu_faults gpu_nccl})
targets=()
[ $sanitize -eq 1 ] && targets=("${sanitize_names[@]}")  # the sweep needs only its binaries
[ "${STRATA_SKIP_TESTS:-0}" = 1 ] && targets=(strata_bench strata_info)

# Tests only (STRATA_SKIP_BENCH=1, no sweep): the benchmarks are not built (their translation unit
# is the build's longest); a later run that benchmarks turns them back on.
bench_opt=-DSTRATA_BUILD_BENCHMARKS=ON
[ "${STRATA_SKIP_BENCH:-0}" = 1 ] && [ $sanitize -eq 0 ] && [ "${STRATA_SKIP_TESTS:-0}" != 1 ] && bench_opt=-DSTRATA_BUILD_BENCHMARKS=OFF
# The header self-containment checks are CI's (they need no GPU): not built here.
{
  nvidia-smi || true
  STRATA_CMAKE_EXTRA="$bench_opt -DSTRATA_HEADER_CHECKS=OFF" strata_build "$build" "${targets[@]}"
} >"$out/build.log" 2>&1 || { echo "BUILD FAILED (see $out/build.log)"; tail -40 "$out/build.log"; status=1; }

if [ $status -eq 0 ] && [ $sanitize -eq 1 ]; then
  cs=$(strata_sanitizer)
  tools=(${STRATA_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck})
  names=("${sanitize_names[@]}")
  # Each run's log lands in OUT_DIR/sanitize-runs as it finishes, so a sweep cut short by a
  # device-call limit still reports the runs it completed.
  logs="$out/sanitize-runs"
  mkdir -p "$logs"
  # One (tool, binary) run per job, STRATA_SANITIZE_JOBS at a time. One at a time by default
  # (about 1.5-2.5 min): with 12 side by side (about 60-80 s) the tools misbehaved in 5 of 14
  # sweeps (lost kernel launches, hangs, reports on data that read back right, and initcheck
  # faulting in 8 of 456 runs of the two-thread test where one thread allocates while the other
  # launches; docs/errors.md), and in none of the 4 sweeps run one at a time.
  sanitize_one() {
    local tool=$1 name=$2
    strata_sanitizer_args "$tool"
    # (The out-of-memory test is left out: its cudaMalloc fails on purpose, which the tools report
    # as an API error, and the tools' own device memory defeats its free-memory comparison.)
    local skip=-*OutOfMemory*
    # racecheck looks for shared-memory hazards inside kernels, and the two-host-thread tests
    # launch the same CUB kernels the other tests check. Under racecheck they made the tool
    # itself fail ("Internal Sanitizer Error: Detected a failure to track a kernel launch", then
    # sometimes a hang) in 2 of 26 runs of one such test alone and in 2 of 5 sweeps, always with
    # 0 hazards (docs/errors.md); they run under the other three tools.
    [ "$tool" = racecheck ] && skip=$skip:Concurrency.*
    # initcheck tracks every copy, so measure_topology's bandwidth copies run at about 28 GB/s
    # under it (H200, 2026-12-04) and that test's hardware-sanity floor (100 GB/s) fails with 0
    # errors reported; it runs under the other three tools.
    [ "$tool" = initcheck ] && skip=$skip:DeviceSet.MeasuredTopologyAndPolicy
    # gpu_nccl runs its one-rank tests (the group's wait, all-gather, a spanning set of one rank);
    # the ones that start several ranks (threads sharing the GPU, rank processes) stay out.
    skip=$skip:Nccl.RanksOnThreadsOfOneProcess*:Nccl.ThreadRankThatStops*:Nccl.ARankKilledMidOperation*:Nccl.AnNcclCallFailingOnOneRank*:Nccl.SurvivorsShrink*
    # Typed cases: int32 (0), int64 (1) and float (3), double (4); uint32 (2) shares int32's kernels.
    local filter="${STRATA_SANITIZE_FILTER:-*Typed/0.*:*Typed/1.*:*Typed/3.*:*Typed/4.*:Nccl.*:Reduce.*:Histogram.*:Scan.*:Transform.*:Copy.*:Compact.*:ReduceByKey.*:Gather.*:Scatter.*:GatherScatter.*:Search.*:Sort.*:Redistribute.*:Container.*:DeviceSet.*:Errors.*:Concurrency.*:*Faults*:$skip}"
    # racecheck over the whole sort suite ran past a 200 s cap on the H200 (2026-12-03): under it
    # the sorts run one radix and one comparison-path test, which launch every sort kernel
    # (radix sort, merge sort, DeviceMerge, the exchange's copies) with several places.
    [ "$tool" = racecheck ] && [ "$name" = gpu_sort ] && [ -z "${STRATA_SANITIZE_FILTER:-}" ] &&
      filter="Sort.Uint32KeysRadix:Sort.StructsAndDeviceLambdasOnTheComparisonPath"
    # racecheck over the fault-injection suite ran past 170-200 s on the H200 even as the only job
    # (2026-12-04), and its direct half alone past 170 s with 4 jobs (H100, 2026-12-07: until then
    # this filter named a renamed test and ran nothing). The 65-operation loop launches the kernels
    # the other suites' racecheck runs cover, so racecheck runs the graph-capture test and the
    # staged sort's allocation failures; the other tools run the whole suite.
    [ "$tool" = racecheck ] && [ "$name" = gpu_faults ] && [ -z "${STRATA_SANITIZE_FILTER:-}" ] &&
      filter="Faults.AFailureDuringGraphCapture*:Faults.AFirstStagedSort*"
    # NCCL probes during ncclCommInitRank with CUDA calls it expects to fail (cudaFuncGetAttributes
    # on kernels without an image for this GPU, cudaGetDriverEntryPointByVersion of entry points the
    # driver lacks) and handles them: memcheck reported 4 with the GPU machine's libnccl and 66 with
    # NCCL 2.32.6 (H100, 2026-12-07), every one inside libnccl. Under memcheck gpu_nccl's API errors
    # are not reported (Strata checks every CUDA call it makes and throws, so its own would fail the
    # test); its memory errors and leaks are.
    [ "$tool" = memcheck ] && [ "$name" = gpu_nccl ] && sanitizer_args+=(--report-api-errors no)
    # (Every test's start and time are logged, so a capped run shows where it was.)
    local t0=$SECONDS
    # memcheck also sees a set of 8 places (the other tools, slower, keep 1 and 3).
    local places=1,3
    [ "$tool" = memcheck ] && places=1,3,8
    STRATA_TEST_QUICK=1 STRATA_TEST_QUICK_PLACES=${STRATA_SANITIZE_PLACES:-$places} timeout "${STRATA_SANITIZE_TIMEOUT:-240}" "$cs" "${sanitizer_args[@]}" "$build/tests/$name" \
      --gtest_filter="$filter" \
      >"$logs/$tool.$name.log" 2>&1
    local rc=$?
    # A filter that matches nothing (a test renamed) runs nothing and exits 0: a failure here.
    [ "$rc" -eq 0 ] && grep -q "Running 0 tests" "$logs/$tool.$name.log" && rc=1 && echo "no test matched the filter" >>"$logs/$tool.$name.log"
    echo $rc >"$logs/$tool.$name.rc"
    echo $((SECONDS - t0)) >"$logs/$tool.$name.s"
  }
  start=$SECONDS
  for tool in "${tools[@]}"; do
    for name in "${names[@]}"; do
      [ -x "$build/tests/$name" ] || continue
      while [ "$(jobs -rp | wc -l)" -ge "${STRATA_SANITIZE_JOBS:-1}" ]; do wait -n; done
      sanitize_one "$tool" "$name" &
    done
  done
  wait
  : >"$out/sanitize.log"
  for tool in "${tools[@]}"; do
    for name in "${names[@]}"; do
      [ -f "$logs/$tool.$name.rc" ] || continue
      rc=$(cat "$logs/$tool.$name.rc")
      { echo "=== $tool $name ==="; cat "$logs/$tool.$name.log"; } >>"$out/sanitize.log"
      echo "=== $tool $name rc=$rc === ($(cat "$logs/$tool.$name.s") s)" | tee -a "$out/sanitize.log"
      [ "$rc" -eq 124 ] && echo "    (time cap reached: this run is incomplete, which fails the sweep too)" | tee -a "$out/sanitize.log"
      [ "$rc" -ne 0 ] && status=1
    done
  done
  # Several ranks, one sanitizer per rank under mpirun (memcheck, API errors not reported as for
  # gpu_nccl): the multi-rank tests of gpu_nccl_ranks with 2 ranks, where the machine can run them
  # (STRATA_SANITIZE_RANKS=0 leaves them out). A run that cannot start is reported and fails too.
  if [ "${STRATA_SANITIZE_RANKS:-1}" = 1 ]; then
    cmake --build "$build" --target gpu_nccl_ranks strata_nccl_host_tests >/dev/null 2>&1 || true  # (ranks_allowed asks the latter)
    if [ -x "$build/tests/gpu_nccl_ranks" ] && ranks_allowed 2; then
      t0=$SECONDS
      STRATA_TEST_QUICK=1 run_ranks 2 "$cs" --tool memcheck --error-exitcode 1 --leak-check full --report-api-errors no \
        "$build/tests/gpu_nccl_ranks" >"$logs/memcheck.gpu_nccl_ranks.log" 2>&1
      rc=$?
      [ "$rc" -eq 0 ] && grep -q "Running 0 tests" "$logs/memcheck.gpu_nccl_ranks.log" && rc=1
      { echo "=== memcheck gpu_nccl_ranks, 2 ranks ==="; cat "$logs/memcheck.gpu_nccl_ranks.log"; } >>"$out/sanitize.log"
      echo "=== memcheck gpu_nccl_ranks (2 ranks, one sanitizer each) rc=$rc === ($((SECONDS - t0)) s)" | tee -a "$out/sanitize.log"
      [ "$rc" -eq 124 ] && echo "    (time cap reached: this run is incomplete, which fails the sweep too)" | tee -a "$out/sanitize.log"
      [ "$rc" -ne 0 ] && status=1
    else
      echo "memcheck of gpu_nccl_ranks with 2 ranks not run: ${ranks_why:-no gpu_nccl_ranks binary (no MPI?)}" | tee -a "$out/sanitize.log"
      [ "${STRATA_ALLOW_MISSING_RANKS:-0}" = 1 ] || status=1
    fi
  fi
  echo "sanitizer sweep: $((SECONDS - start)) s"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|Internal Sanitizer Error" "$out/sanitize.log" | sort | uniq -c
elif [ $status -eq 0 ]; then
  passes=${STRATA_CHECK_PASSES:-both}
  # Both passes: a per-test cap, so one hang (as gpu_nccl's once did) fails its test and not the
  # whole call.
  ctest_args=(--test-dir "$build" --output-on-failure -j"${STRATA_CTEST_JOBS:-4}" --timeout "${STRATA_TEST_TIMEOUT:-300}")
  # STRATA_SKIP_PACKAGE_TESTS=1: the packaging tests (installs and consumers, no GPU needed; CI runs
  # them) stay out of the direct pass, to save a device call's time.
  direct_args=()
  [ "${STRATA_SKIP_PACKAGE_TESTS:-0}" = 1 ] && direct_args=(-LE package)
  [ "${STRATA_SKIP_TESTS:-0}" = 1 ] || {
    if [ "$passes" = both ] || [ "$passes" = direct ] || [ "$passes" = direct-only ]; then
      echo "=== ctest (peer access / direct where available) ==="
      ctest "${ctest_args[@]}" "${direct_args[@]}"
      echo "ctest_rc=$?"
    fi
    if [ "$passes" = both ] || [ "$passes" = direct ] || [ "$passes" = ranks ]; then
      # Several ranks (the NCCL layer): as many GPUs as ranks, or several ranks on one GPU with
      # NCCL 2.30+ (NCCL_MULTI_RANK_GPU_ENABLE=1); ctest ran one rank.
      if [ -x "$build/tests/gpu_nccl_ranks" ]; then
        for np in 2 3 4; do
          if ranks_allowed $np; then
            echo "=== gpu_nccl_ranks, $np ranks ==="
            run_ranks $np "$build/tests/gpu_nccl_ranks"
            echo "ranks${np}_rc=$?"
            if [ $np -eq 2 ] && [ -x "$build/examples/multi_process" ]; then
              echo "=== example multi_process, 2 ranks ==="
              run_ranks 2 "$build/examples/multi_process"
              echo "example_ranks2_rc=$?"
            fi
          else
            # Coverage asked for and not run is a failure, not a pass (STRATA_ALLOW_MISSING_RANKS=1:
            # a machine known to lack it).
            echo "gpu_nccl_ranks with $np ranks not run: $ranks_why"
            [ "${STRATA_ALLOW_MISSING_RANKS:-0}" = 1 ] || echo "ranks${np}_rc=1 (not run)"
          fi
        done
      fi
      # Several ranks in one process, one host thread each (process_group::create_all), with the
      # multi-rank NCCL: ctest's run of gpu_nccl skips this test where its NCCL cannot share a GPU.
      if [ -x "$build/tests/gpu_nccl" ]; then
        echo "=== gpu_nccl, ranks on threads of one process ==="
        env "${ranks_env[@]}" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_NVLS_ENABLE=0 timeout "${STRATA_RANKS_TIMEOUT:-180}" \
          "$build/tests/gpu_nccl" --gtest_filter='Nccl.RanksOnThreadsOfOneProcess*:Nccl.ThreadRankThatStops*' |
          tee "$out/threads.log"
        rc=${PIPESTATUS[0]}
        # A skipped test is coverage that did not run (an NCCL too old to share a GPU): a failure here.
        if [ "$rc" -eq 0 ] && grep -q "\[  SKIPPED \]" "$out/threads.log" && [ "${STRATA_ALLOW_MISSING_RANKS:-0}" != 1 ]; then
          echo "threaded tests skipped (see above): not run"
          rc=1
        fi
        echo "threads_rc=$rc"
        # Three rank processes, one killed mid-operation or failing one of its NCCL calls, and the
        # survivors shrinking the group
        # (tests/gpu/test_nccl.cu): its own line, so
        # that a hang there (bounded by the test: 45 s per scenario, none after the first hang)
        # does not hide the threaded tests' result.
        echo "=== gpu_nccl, a rank process killed mid-operation ==="
        env "${ranks_env[@]}" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_NVLS_ENABLE=0 timeout 300 \
          "$build/tests/gpu_nccl" --gtest_filter='Nccl.ARankKilledMidOperation*:Nccl.AnNcclCallFailingOnOneRank*:Nccl.SurvivorsShrink*' >"$out/rank_death.log" 2>&1
        rc=$?
        grep -E "^\[  (OK|FAILED|SKIPPED) |Failure|hung|exit code|rank [0-9]:" "$out/rank_death.log" | head -90
        if [ "$rc" -eq 0 ] && grep -q "\[  SKIPPED \]" "$out/rank_death.log" && [ "${STRATA_ALLOW_MISSING_RANKS:-0}" != 1 ]; then
          echo "rank-death test skipped (see above): not run"
          rc=1
        fi
        echo "rank_death_rc=$rc"
        if [ -x "$build/examples/survive_rank_loss" ]; then
          echo "=== example survive_rank_loss, 3 ranks, the last one killed ==="
          env "${ranks_env[@]}" timeout 120 "$build/examples/survive_rank_loss" 3 2>&1 | tee "$out/survive.log"
          rc=${PIPESTATUS[0]}
          if [ "$rc" -eq 0 ] && grep -q "not run" "$out/survive.log" && [ "${STRATA_ALLOW_MISSING_RANKS:-0}" != 1 ]; then
            rc=1
          fi
          echo "example_survive_rc=$rc"
        fi
      fi
    fi
    if [ "$passes" = both ] || [ "$passes" = staged ]; then
      echo "=== ctest, host staging forced (STRATA_DISABLE_P2P=1) ==="
      STRATA_DISABLE_P2P=1 ctest "${ctest_args[@]}" -L gpu
      echo "staged_rc=$?"
    fi
  } >"$out/tests.log" 2>&1
  if [ "${STRATA_SKIP_TESTS:-0}" != 1 ]; then
    grep -E "tests passed|tests failed|_rc=" "$out/tests.log"
    # Every pass that ran must pass; a run with no pass at all fails.
    grep -q "_rc=" "$out/tests.log" && ! grep -qE "_rc=[1-9]" "$out/tests.log" || status=1
  fi

  "$build/examples/strata-info" --json "$out/topology.json" >"$out/strata-info.txt" 2>&1 || status=1
  cat "$out/strata-info.txt"

  if [ "${STRATA_SKIP_BENCH:-0}" != 1 ]; then
    "$build/benchmarks/strata_bench" --benchmark_out="$out/bench.json" --benchmark_out_format=json \
      --benchmark_min_time=0.05s >"$out/bench.log" 2>&1 || status=1
    python3 scripts/bench_ratios.py "$out/bench.json" | tee "$out/ratios.txt" || status=1
    # The cost of crossing ranks (NCCL layer, where built): one rank, then 2 and 4 where allowed.
    cmake --build "$build" --target strata_bench_ranks >/dev/null 2>&1 || true
    if [ -x "$build/benchmarks/strata_bench_ranks" ]; then
      for np in 1 2 4; do
        if [ $np -eq 1 ] || ranks_allowed $np; then
          run_ranks $np "$build/benchmarks/strata_bench_ranks" "$out/bench_ranks_$np.json" || echo "bench_ranks_rc=1"
        else
          echo "strata_bench_ranks with $np ranks not run: $ranks_why"
        fi
      done 2>&1 | tee "$out/bench_ranks.txt"
      grep -q "bench_ranks_rc=1" "$out/bench_ranks.txt" && status=1
    fi
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
           "sanitizer_runs": re.findall(r"=== \w+ \S+ rc=\d+ ===", read("sanitize.log")),
           "gtest_failures": re.findall(r"\[  FAILED  \] .*", tests)[:50],
           "ratios": read("ratios.txt").splitlines()}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
# STRATA_CHECK_BUNDLE=1: everything but summary.json (and a console.log the caller writes there)
# goes into one report.tar.gz, for places that bring back only a few files.
if [ "${STRATA_CHECK_BUNDLE:-0}" = 1 ]; then
  (cd "$out" && find . -mindepth 1 -maxdepth 1 ! -name summary.json ! -name console.log ! -name report.tar.gz -print0 |
    xargs -0 tar -czf report.tar.gz && find . -mindepth 1 -maxdepth 1 ! -name summary.json ! -name console.log \
    ! -name report.tar.gz -exec rm -rf {} +)
fi
echo "gpu-check: $([ $status -eq 0 ] && echo PASS || echo FAIL); report in $out"
exit $status
