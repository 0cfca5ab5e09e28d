# Shared by gpu-check.sh and sanitize-probe.sh (sourced, run from the repository root): the one
# GPU build and the one set of compute-sanitizer options, so the probe checks what the sweep does.

# strata_build BUILD_DIR [TARGET ...]: configure (Ninja, Release, STRATA_CUDA_ARCHITECTURES,
# default native; STRATA_CMAKE_EXTRA: further options) and build the targets given, or everything,
# with all cores.
strata_build() {
  local build=$1 targets=()
  shift
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_DEVELOPER=ON -DSTRATA_FULL_TESTS=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${STRATA_CUDA_ARCHITECTURES:-native}" ${STRATA_CMAKE_EXTRA:-} &&
    cmake --build "$build" -j"$(nproc)" "${targets[@]}"
}

# The compute-sanitizer to run: the one on PATH, else the toolkit's.
strata_sanitizer() { command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer; }

# strata_sanitizer_args TOOL: sets the array sanitizer_args to the options for TOOL. Any finding
# fails the run; memcheck also checks for leaks; initcheck also follows the bulk copies that CUB's
# DeviceTransform makes on sm_90.
strata_sanitizer_args() {
  sanitizer_args=(--tool "$1" --error-exitcode 1)
  [ "$1" = memcheck ] && sanitizer_args+=(--leak-check full)
  [ "$1" = initcheck ] && sanitizer_args+=(--check-bulk-copy yes)
  return 0
}
