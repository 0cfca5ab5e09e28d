#!/usr/bin/env bash
# The GPU tests against other CCCL releases than the toolkit's: for each CCCL given (a folder
# holding cub/, thrust/, cuda/ headers, or a .tar.xz of one: scripts/device-carry.sh makes them from
# the PyPI pins in scripts/cccl-pins.txt, which .ci/run builds with),
# build the GPU test binaries and examples that CI compiles with it (its headers put before the
# toolkit's), run them (STRATA_TEST_QUICK sizes; staged as well with STRATA_DISABLE_P2P=1) and the
# host tests, and write the logs into OUT_DIR. Prints NAME_rc=N per CCCL (0: built and passed).
#
#   scripts/gpu-cccl-check.sh OUT_DIR CCCL [CCCL ...]
#   STRATA_CCCL_TARGETS   the binaries (default: CI's list below)
#   STRATA_CUDA_ARCHITECTURES=90   what to build for (default native)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-cccl-check.sh OUT_DIR CCCL [CCCL ...]}
shift
mkdir -p "$out"
tests=(${STRATA_CCCL_TARGETS:-gpu_smoke gpu_reduce gpu_scan gpu_sort gpu_gather gpu_compact})
examples=(quick_start nstream sort group_by histogram)
status=0
for cccl in "$@"; do
  name=$(basename "$cccl")
  name=${name%.tar.xz}
  build=build-gpu-$name
  mkdir -p "$build"
  if [ -f "$cccl" ]; then
    rm -rf "$build/cccl" && mkdir -p "$build/cccl" && tar -C "$build/cccl" -xJf "$cccl"
    root="$build/cccl"
  else
    root=$cccl
  fi
  inc=$(dirname "$(dirname "$(find "$root" -path '*/cub/version.cuh' | head -1)")")
  inc=$(cd "$inc" && pwd)
  version=$(sed -n 's/^#define CUB_VERSION \([0-9]*\).*/\1/p' "$inc/cub/version.cuh")
  echo "=== $name: CUB_VERSION $version from $inc ==="
  rc=0
  s=$SECONDS
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_FULL_TESTS=ON -DSTRATA_FETCH_DEPENDENCIES=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="${STRATA_CUDA_ARCHITECTURES:-native}" "-DCMAKE_CUDA_FLAGS=-I$inc" >"$out/$name-build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" --target strata_host_tests "${tests[@]}" "${examples[@]}" >>"$out/$name-build.log" 2>&1 ||
    { echo "$name: BUILD FAILED"; grep -E "error" "$out/$name-build.log" | head -20; rc=1; }
  echo "$name: build $((SECONDS - s)) s"
  if [ $rc -eq 0 ]; then
    "$build/tests/strata_host_tests" >"$out/$name-host.log" 2>&1 || rc=1
    tail -1 "$out/$name-host.log"
    for t in "${tests[@]}"; do
      for pass in direct staged; do
        env STRATA_TEST_QUICK=1 $([ $pass = staged ] && echo STRATA_DISABLE_P2P=1) timeout 300 "$build/tests/$t" \
          >"$out/$name-$t-$pass.log" 2>&1
        r=$?
        echo "$name $t ($pass): rc=$r, $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+|^\[  SKIPPED \] [0-9]+ test' "$out/$name-$t-$pass.log" | tr '\n' ' ')"
        grep -E "^\[  FAILED  \] [A-Z]" "$out/$name-$t-$pass.log" | head -5
        [ $r -eq 0 ] || rc=1
      done
    done
    for e in "${examples[@]}"; do
      timeout 120 "$build/examples/$e" >"$out/$name-example-$e.log" 2>&1 || { echo "$name example $e failed"; tail -5 "$out/$name-example-$e.log"; rc=1; }
    done
  fi
  echo "${name}_rc=$rc"
  [ $rc -eq 0 ] || status=1
done
exit $status
