#!/usr/bin/env bash
# What the GPU checks need on the device machine that git does not hold (the device tool carries
# ignored paths, 64 MiB at most), made from PyPI in one command on a fresh checkout:
#   DIR/nccl/libnccl.so.2.xz   an NCCL 2.30+ that runs several ranks on one GPU, its device code
#                              trimmed to one architecture (scripts/nccl_for_one_gpu.py, ~24 MiB):
#                              STRATA_NCCL_LIB for scripts/gpu-check.sh's multi-rank runs
#   DIR/cccl/NAME.tar.xz       the headers (cub, thrust, cuda) of each CCCL in scripts/cccl-pins.txt
#                              (~1-1.5 MiB each): the arguments of scripts/gpu-cccl-check.sh
#
#   scripts/device-carry.sh [DIR]   (default .carry, which .gitignore lists)
#   STRATA_CARRY_ARCH=90            the architecture whose NCCL device code is kept
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.carry}
mkdir -p "$dir/nccl" "$dir/cccl"
python3 scripts/nccl_for_one_gpu.py "$dir/nccl" --arch "${STRATA_CARRY_ARCH:-90}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
while read -r name spec version <&3; do
  case "$name" in '' | \#*) continue ;; esac
  python3 -m pip install -q --target "$work/$name" "$spec"
  inc=$(dirname "$(dirname "$(find "$work/$name" -path '*/cub/version.cuh' | head -1)")")
  grep -q "define CUB_VERSION $version" "$inc/cub/version.cuh" || { echo "$name: CUB $version not found"; exit 1; }
  tar -C "$inc" -cJf "$dir/cccl/$name.tar.xz" cub thrust cuda
  echo "wrote $dir/cccl/$name.tar.xz ($(du -h "$dir/cccl/$name.tar.xz" | cut -f1))"
done 3<scripts/cccl-pins.txt
du -sh "$dir"
