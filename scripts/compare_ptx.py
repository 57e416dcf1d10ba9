#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a KERNELFORGE_PTX_SHARING pair: equal PTX in every library file.

    scripts/compare_ptx.py --build build --pair 110:100 [--jobs 2]
    scripts/compare_ptx.py --build build --pair 103:100 --files cmake/ptx_sharing_103_100.txt
    scripts/compare_ptx.py --build build --pair 89:86 --files cmake/ptx_sharing_89_86.txt  (.ci/run)

With --files (a KERNELFORGE_PTX_SHARING_BY_FILE pair), only the files its list
names (one path from the repository root a line, # comments) are compared: the
ones that build sm_<real> from compute_<ptx>'s PTX.

For each CUDA source of the library target (from <build>/compile_commands.json:
a configured tree, nothing needs to be built), writes its PTX for compute_<real>
and compute_<ptx> with the build's own flags and compares them, the `.target`
line and comments aside. The library may build sm_<real>'s machine code from
compute_<ptx>'s PTX only where every file gives the same PTX (ptxas then gives
the same instructions; kernels/arch/ptx_sharing.hpp). Run it when the toolkit
changes. Exit 0: equal everywhere; 1: a file differs (named, with the number of
differing lines); 2: usage. About a minute an architecture on two cores.
"""

import argparse
import concurrent.futures
import json
import pathlib
import shlex
import subprocess
import sys
import tempfile

DROPPED_WITH_VALUE = {"-o", "-MT", "-MF", "-time"}
DROPPED = {"-c", "-MD"}


def ptx_command(entry, arch, out):
    args = shlex.split(entry["command"])
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in DROPPED_WITH_VALUE:
            skip = True
            continue
        if a in DROPPED or a.startswith("--generate-code=") or a.startswith("-gencode") or a.startswith("--threads"):
            continue
        kept.append(a)
    return kept + ["-ptx", f"-arch=compute_{arch}", "-o", str(out)]


def body(path):
    lines = pathlib.Path(path).read_text().splitlines()
    return [line for line in lines if not line.startswith(".target") and not line.startswith("//")]


def compare(entry, real, ptx, tmp):
    name = pathlib.Path(entry["file"]).relative_to(entry["root"]).as_posix()
    outs = {}
    for arch in (real, ptx):
        out = pathlib.Path(tmp) / (name.replace("/", "_") + f".{arch}.ptx")
        run = subprocess.run(ptx_command(entry, arch, out), cwd=entry["directory"], capture_output=True, text=True)
        if run.returncode != 0:
            return name, f"nvcc failed for compute_{arch}:\n{run.stderr[-2000:]}"
        outs[arch] = body(out)
    if outs[real] == outs[ptx]:
        return name, None
    # Position by position (difflib's alignment takes minutes on 100,000-line files).
    a, b = outs[ptx], outs[real]
    changed = sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))
    return name, f"{changed} of {len(b)} lines differ"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="a configured build tree (compile_commands.json)")
    parser.add_argument("--pair", required=True, help="<real>:<ptx>, e.g. 110:100")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--files", help="compare only the files this list names (cmake/ptx_sharing_<real>_<ptx>.txt)")
    opts = parser.parse_args()
    try:
        real, ptx = (int(x) for x in opts.pair.split(":"))
    except ValueError:
        parser.error("--pair is <real>:<ptx>, e.g. 110:100")
    build = pathlib.Path(opts.build).resolve()
    if not (build / "compile_commands.json").is_file():
        print(f"{build}/compile_commands.json not found: configure the tree first (cmake --preset default)",
              file=sys.stderr)
        return 2
    commands = json.loads((build / "compile_commands.json").read_text())
    root = pathlib.Path(__file__).resolve().parent.parent
    entries = [
        dict(e, root=root)
        for e in commands
        if e["file"].endswith(".cu")
        and "CMakeFiles/kernelforge.dir/" in e.get("output", e["command"])
        and pathlib.Path(e["file"]).resolve().is_relative_to(root / "src")
    ]
    if opts.files:
        listed = {
            line.strip()
            for line in pathlib.Path(opts.files).read_text().splitlines()
            if line.strip() and not line.startswith("#")
        }
        entries = [e for e in entries if pathlib.Path(e["file"]).resolve().relative_to(root).as_posix() in listed]
        missing = listed - {pathlib.Path(e["file"]).resolve().relative_to(root).as_posix() for e in entries}
        if missing:
            print(f"{opts.files} names files the kernelforge target does not compile: {sorted(missing)}",
                  file=sys.stderr)
            return 2
    if not entries:
        print(f"no CUDA source of the kernelforge target in {build}/compile_commands.json", file=sys.stderr)
        return 2
    failed = 0
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        for name, problem in pool.map(lambda e: compare(e, real, ptx, tmp), entries):
            print(f"{'equal' if problem is None else 'DIFFERS'}  {name}" + (f": {problem}" if problem else ""))
            failed += problem is not None
    print(f"compute_{real} vs compute_{ptx}: {len(entries) - failed} of {len(entries)} files give the same PTX")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
