#!/usr/bin/env python3
"""Checks scripts/nccl_for_one_gpu.py's fatbin surgery on a real shared library, without a GPU:
nvcc builds a small library with device code for two architectures (and relocatable device code,
so both fatbin sections exist); keep_one_arch must keep the chosen architecture's SASS byte for
byte, zero every other entry's payload, and leave everything else (headers, host code, size)
alone.

    scripts/test_nccl_for_one_gpu.py NVCC
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nccl_for_one_gpu as trim  # noqa: E402

SOURCE = r"""
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
__device__ int twice(int v) { return 2 * v; }
__global__ void doubled(int* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }
extern "C" void launch(float* x, float a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
"""


def fatbin_entries(data):
    sections = trim.elf_sections(data)
    out = []
    for name in trim.SECTIONS:
        if name in sections:
            out += [(name,) + e for e in trim.entries(data, *sections[name])]
    return out


def main():
    nvcc = sys.argv[1] if len(sys.argv) > 1 else "nvcc"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "lib.cu")
        lib = os.path.join(tmp, "libtwo.so")
        with open(src, "w") as f:
            f.write(SOURCE)
        subprocess.check_call([nvcc, "-shared", "-Xcompiler", "-fPIC", "-rdc=true", "-o", lib, src,
                               "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90"])
        before = bytearray(open(lib, "rb").read())
    after = bytearray(before)
    zeroed = trim.keep_one_arch(after, 90)
    entries = fatbin_entries(before)
    kinds = {(kind, arch) for _, kind, arch, _, _ in entries}
    assert (2, 90) in kinds and (2, 80) in kinds, f"expected SASS for sm_80 and sm_90, found {sorted(kinds)}"
    assert len(after) == len(before)
    expected_zero = 0
    touched = bytearray(len(before))  # 1 where a payload was allowed to change
    for name, kind, arch, at, size in entries:
        payload = after[at:at + size]
        if kind == 2 and arch == 90:
            assert payload == before[at:at + size], f"{name}: the sm_90 SASS changed"
        else:
            assert payload == bytes(size), f"{name}: kind {kind} arch {arch} was not zeroed"
            expected_zero += size
            touched[at:at + size] = b"\1" * size
    assert zeroed == expected_zero, (zeroed, expected_zero)
    assert zeroed > 0
    assert all(t or a == b for t, a, b in zip(touched, after, before)), "bytes outside the payloads changed"
    # The trimmed library still parses to the same entries (headers intact).
    assert [e[:3] for e in fatbin_entries(after)] == [e[:3] for e in entries]
    print(f"kept sm_90 SASS of {len(entries)} fatbin entries, zeroed {zeroed} bytes; headers and host code intact")
    return 0


if __name__ == "__main__":
    sys.exit(main())
