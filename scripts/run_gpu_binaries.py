#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every GPU test of a build, one process per test binary instead of one per case.

`ctest -L gpu` starts each GoogleTest case in its own process (gtest_discover_tests),
so each of ~2000 cases pays a process start and a CUDA context: on the H200 that
made the suite run past the device tool's 600 s call limit. This runs the same
tests -- the ones ctest lists for the label, read from `ctest --show-only=json-v1`
-- with each binary started once (all its cases, the same flags but no filter), in
parallel, and checks that each binary ran as many cases as ctest registered for it.
Commands that are not GoogleTest binaries (e.g. the doctor's Python test) run as
ctest would run them, with their SKIP_RETURN_CODE. `ctest -L gpu` stays the
reference run: its per-case processes keep a sticky CUDA error in one case from
failing the cases after it, which here fail together (and show where it began).

    scripts/run_gpu_binaries.py --build build-gpu --jobs 8 --out "$OUT"

Writes <out>/gpu_binaries/<binary>.log and <out>/gpu_binaries.json; prints one
line per binary and a total; exits 1 if any binary failed or ran a different
number of cases than ctest lists.
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

RAN = re.compile(r"^\[==========\] (\d+) tests? from .* ran\.", re.M)
COUNT = {kind: re.compile(r"^\[  " + kind + r" +\] (\d+) tests?", re.M) for kind in ("PASSED", "SKIPPED", "FAILED")}
FAILED_NAME = re.compile(r"^\[  FAILED  \] (\S+\.\S+)", re.M)


def ctest_tests(build, label):
    listing = subprocess.run(["ctest", "--test-dir", build, "-L", label, "--show-only=json-v1"], check=True,
                             capture_output=True, text=True).stdout
    return json.loads(listing).get("tests", [])


def groups_of(tests):
    """One group per GoogleTest binary (with its flags and working directory), one per other command."""
    groups = {}
    for test in tests:
        command = test.get("command")
        if not command:
            continue
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        workdir = props.get("WORKING_DIRECTORY", ".")
        gtest = any(a.startswith("--gtest_filter=") for a in command[1:])
        if gtest:
            flags = tuple(a for a in command[1:] if not a.startswith("--gtest_filter="))
            key = ("gtest", command[0], flags, workdir)
        else:
            key = ("command", tuple(command), (), workdir)
        group = groups.setdefault(key, {"names": [], "skip_rc": props.get("SKIP_RETURN_CODE"),
                                        "timeout": props.get("TIMEOUT", 0)})
        group["names"].append(test["name"])
        group["timeout"] = max(group["timeout"], props.get("TIMEOUT", 0))
    return groups


def run_group(key, group, logdir, timeout):
    kind, exe, flags, workdir = key
    command = [exe, *flags, "--gtest_brief=1"] if kind == "gtest" else list(exe)
    name = os.path.basename(command[0] if kind == "gtest" else command[-1])
    if kind == "command":
        name = "command_" + "_".join(os.path.basename(str(a)) for a in exe[1:2])
    log = os.path.join(logdir, name + ".log")
    start = time.time()
    try:
        proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=timeout)
        rc, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        rc, output = "timeout", partial.decode(errors="replace") if isinstance(partial, bytes) else partial
    seconds = round(time.time() - start, 1)
    with open(log, "w") as f:
        f.write(output)
    result = {"binary": name, "registered": len(group["names"]), "rc": rc, "seconds": seconds, "log": log}
    if kind == "gtest":
        ran = RAN.search(output)
        result["ran"] = int(ran.group(1)) if ran else None
        for kind_name, pattern in COUNT.items():
            found = pattern.search(output)
            result[kind_name.lower()] = int(found.group(1)) if found else 0
        result["failed_cases"] = sorted(set(FAILED_NAME.findall(output)))
        result["ok"] = rc == 0 and result["ran"] == result["registered"] and result["failed"] == 0
    else:
        skipped = group["skip_rc"] is not None and rc == group["skip_rc"]
        result.update(ran=1, passed=int(rc == 0), skipped=int(skipped), failed=int(rc != 0 and not skipped),
                      failed_cases=[] if rc == 0 or skipped else group["names"])
        result["ok"] = rc == 0 or skipped
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build-gpu")
    parser.add_argument("--label", default="gpu")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per binary (at least each group's TIMEOUT)")
    parser.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = parser.parse_args()

    groups = groups_of(ctest_tests(args.build, args.label))
    logdir = os.path.join(args.out, "gpu_binaries")
    os.makedirs(logdir, exist_ok=True)
    # The largest groups first: they bound the wall time.
    order = sorted(groups.items(), key=lambda item: -len(item[1]["names"]))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_group, key, group, logdir, max(args.timeout, group["timeout"]))
                   for key, group in order]
        results = [f.result() for f in futures]

    total = {k: sum(r[k] or 0 for r in results) for k in ("registered", "ran", "passed", "skipped", "failed")}
    for r in sorted(results, key=lambda r: r["binary"]):
        mark = "ok  " if r["ok"] else "FAIL"
        print(f"{mark} {r['binary']:36s} registered {r['registered']:5d} ran {r['ran']} passed {r['passed']} "
              f"skipped {r['skipped']} failed {r['failed']} rc {r['rc']} {r['seconds']} s")
        for case in r["failed_cases"][:10]:
            print(f"       failed: {case}")
    print(f"total: {len(results)} binaries, registered {total['registered']}, ran {total['ran']}, "
          f"passed {total['passed']}, skipped {total['skipped']}, failed {total['failed']}")
    with open(os.path.join(args.out, "gpu_binaries.json"), "w") as f:
        json.dump({"total": total, "binaries": results}, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
