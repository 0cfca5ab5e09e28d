#!/usr/bin/env python3
"""An NCCL that runs several ranks on one GPU, small enough to carry to the GPU machine.

NCCL 2.30+ lets several ranks share one GPU (NCCL_MULTI_RANK_GPU_ENABLE=1); the CUDA toolkit's
NCCL (2.28) refuses ("Duplicate GPU detected"). The PyPI wheel nvidia-nccl-cu13 has it, but its
libnccl.so.2 is about 190 MiB (device code for sm_75 to sm_120), more than the 64 MiB that travel
to the device machine. This script downloads the wheel with pip, keeps the device code of one
architecture (the other entries of both fatbin sections are zeroed, headers kept, so the CUDA
runtime still reads every container and finds no image for the other GPUs, as it would on them),
and writes OUT_DIR/libnccl.so.2.xz (about 25 MiB for sm_90). scripts/gpu-check.sh takes it
through STRATA_NCCL_LIB for its multi-rank runs only; everything else keeps the toolkit's NCCL.

    scripts/nccl_for_one_gpu.py OUT_DIR [--arch 90] [--version '>=2.30']
"""
import argparse
import glob
import lzma
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

MAGIC = 0xBA55ED50  # a fatbin container's header
SECTIONS = (".nv_fatbin", "__nv_relfatbin")


def elf_sections(data):
    """name -> (file offset, size) of every section of a 64-bit little-endian ELF image."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for h in headers:
        name_end = data.index(b"\0", names_at + h[0])
        out[data[names_at + h[0]:name_end].decode()] = (h[4], h[5])
    return out


def entries(data, offset, size):
    """(kind, arch, payload offset, payload size) of every entry of every container in a section."""
    p, end = offset, offset + size
    while p + 16 <= end:
        magic, _version, header, fat_size = struct.unpack_from("<IHHQ", data, p)
        if magic != MAGIC:  # padding between containers
            p += 8
            continue
        q, container_end = p + header, p + header + fat_size
        while q < container_end:
            kind, _u, entry_header, payload = struct.unpack_from("<HHIQ", data, q)
            arch = struct.unpack_from("<I", data, q + 28)[0]
            yield kind, arch, q + entry_header, payload
            q += entry_header + payload
        p = container_end


def keep_one_arch(data, arch):
    """Zeroes every fatbin entry but the SASS (kind 2) of `arch`; returns the bytes zeroed."""
    sections = elf_sections(data)
    zeroed = 0
    for name in SECTIONS:
        if name not in sections:
            continue
        for kind, a, at, size in list(entries(data, *sections[name])):
            if kind == 2 and a == arch:
                continue
            data[at:at + size] = bytes(size)
            zeroed += size
    return zeroed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--version", default=">=2.30")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                               "nvidia-nccl-cu13" + args.version])
        wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
        with zipfile.ZipFile(wheel) as z:
            data = bytearray(z.read("nvidia/nccl/lib/libnccl.so.2"))
    zeroed = keep_one_arch(data, args.arch)
    out = os.path.join(args.out_dir, "libnccl.so.2.xz")
    with lzma.open(out, "wb", preset=6) as f:
        f.write(data)
    print(f"{os.path.basename(wheel)}: kept sm_{args.arch}, zeroed {zeroed / 2**20:.1f} of "
          f"{len(data) / 2**20:.1f} MiB; wrote {out} ({os.path.getsize(out) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
