#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The main loops of each kernel in a SASS listing, counted by opcode.

A loop is a backward branch; a main loop is one whose body holds at least one
instruction of --op (HGMMA for the wgmma kernels, FFMA for the SIMT ones). The
count per k-step is what the descriptor and copier changes in
benchmarks/tuning/matmul.md were judged by before the GPU ran them.

    nvcc ... -gencode=arch=compute_90a,code=sm_90a -cubin -o k.cubin src/matmul/wgmma_sm90a_f16.cu
    cuobjdump -sass k.cubin > k.sass
    scripts/sass_loops.py k.sass --kernel 'I6__halfLi1ELb1' --op HGMMA

This machine's toolkit has no cuobjdump; the PyPI wheels nvidia-cuda-cuobjdump
and nvidia-cuda-nvdisasm carry both (pip download --no-deps, unzip, and put
nvidia/cu13/bin on PATH). --min drops loops with fewer --op instructions
(e.g. --op FFMA --min 100 for large_tile's k-slice).
"""

import argparse
import collections
import re
import sys

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);")


def opcode(text):
    words = text.split()
    if words and words[0].startswith("@"):  # predicate
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sass", help="cuobjdump -sass output")
    parser.add_argument("--kernel", default="", help="substring of the mangled kernel names to report")
    parser.add_argument("--op", default="HGMMA", help="opcode a main loop contains (default HGMMA)")
    parser.add_argument("--min", type=int, default=1, help="fewest --op instructions a reported loop holds")
    args = parser.parse_args()

    text = open(args.sass).read()
    for function in re.split(r"\n\s*Function : ", text)[1:]:
        name = function.split("\n", 1)[0].strip()
        if args.kernel not in name:
            continue
        code = [(int(m.group(1), 16), m.group(2).strip()) for m in INSTRUCTION.finditer(function)]
        index = {address: i for i, (address, _) in enumerate(code)}
        for i, (address, text_i) in enumerate(code):
            if "BRA" not in text_i:
                continue
            target = re.search(r"0x([0-9a-f]+)", text_i.split("BRA", 1)[1])
            if not target or int(target.group(1), 16) >= address or int(target.group(1), 16) not in index:
                continue
            body = code[index[int(target.group(1), 16)]:i + 1]
            ops = collections.Counter(opcode(t) for _, t in body)
            if ops.get(args.op, 0) < args.min:
                continue
            common = ", ".join(f"{op} {n}" for op, n in ops.most_common(12))
            print(f"{name}\n  loop {body[0][0]:#x}-{address:#x}: {len(body)} instructions ({common})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
