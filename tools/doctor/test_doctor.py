#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests for kernelforge-doctor, run by ctest (tools/doctor/CMakeLists.txt).

    test_doctor.py cli       DOCTOR   argument handling: --help, --version, bad arguments (any machine)
    test_doctor.py no-device DOCTOR   without a usable GPU: exit 2, text and JSON say why (skips, exit 77, on a GPU)
    test_doctor.py gpu       DOCTOR   with a GPU: the whole run (--all, text and --json) is OK (skips without one)

Python 3 standard library only.
"""
import json
import subprocess
import sys

SKIP = 77


def run(doctor, *args, env=None):
    p = subprocess.run([doctor, *args], capture_output=True, text=True, timeout=570, env=env)
    return p.returncode, p.stdout, p.stderr


def expect(condition, message, output=""):
    if not condition:
        print("FAILED:", message)
        if output:
            print("---- output ----\n" + output)
        sys.exit(1)


def probe(doctor):
    """The doctor's own verdict on this machine: its JSON exit code."""
    code, out, _ = run(doctor, "--json")
    return code, json.loads(out)


def test_cli(doctor):
    code, out, _ = run(doctor, "--help")
    expect(code == 0, f"--help exits {code}, expected 0", out)
    for text in ("--bandwidth", "--self-test", "--json", "--device", "Exit codes", "0 ", "1 ", "2 ", "64"):
        expect(text in out, f"--help does not mention {text!r}", out)
    code, out, _ = run(doctor, "--version")
    expect(code == 0 and out.startswith("kernelforge-doctor "), "--version", out)
    for bad in (["--frobnicate"], ["--device"], ["--device", "x"], ["--device=-1"], ["positional"]):
        code, out, err = run(doctor, *bad)
        expect(code == 64, f"{bad}: exit {code}, expected 64 (bad command line)", out + err)
        expect("kernelforge-doctor:" in err and "usage:" in err, f"{bad}: no reason and usage on stderr", err)
    print("doctor CLI: PASSED")


def test_no_device(doctor):
    code, doc = probe(doctor)
    if code != 2:
        print(f"SKIPPED: a usable GPU is present (doctor exit {code}); the no-device path needs a machine without one")
        sys.exit(SKIP)
    # JSON: one document with the facts, the checks and the verdict.
    expect(doc["tool"] == "kernelforge-doctor", "JSON tool name")
    expect(doc["summary"]["exit_code"] == 2 and doc["summary"]["verdict"] == "NO USABLE DEVICE", "JSON summary",
           json.dumps(doc["summary"]))
    fails = [c for c in doc["checks"] if c["status"] == "FAIL"]
    expect(fails and fails[0]["section"] in ("driver", "devices"), "the first FAIL is about the driver or devices")
    expect(all(c["fix"] for c in fails), "every FAIL carries a fix", json.dumps(fails, indent=1))
    expect(doc["facts"]["kernelforge"]["compiled_architectures"], "JSON lists the compiled architectures")
    expect("environment" in doc["facts"] and "CUDA_VISIBLE_DEVICES" in doc["facts"]["environment"], "JSON environment")
    # --bandwidth and --self-test cannot run: still exit 2, nothing crashes.
    code, out, _ = run(doctor, "--all")
    expect(code == 2, f"--all without a device: exit {code}, expected 2", out)
    # Text: the sections in order, each FAIL with its fix, the summary last.
    code, out, _ = run(doctor)
    expect(code == 2, f"text: exit {code}, expected 2", out)
    expect(out.index("CUDA driver") < out.index("Environment") < out.index("Summary:"), "text sections in order", out)
    expect("[FAIL] driver:" in out or "[FAIL] devices:" in out, "text names the FAIL", out)
    expect("fix:" in out and "(exit 2)" in out, "text gives the fix and the exit code", out)
    # An environment variable that changes what CUDA sees is reported when set.
    code, out, _ = run(doctor, env={"PATH": "/usr/bin:/bin", "CUDA_LAUNCH_BLOCKING": "1", "CUDA_VISIBLE_DEVICES": ""})
    expect("[WARN] environment: CUDA_LAUNCH_BLOCKING=\"1\"" in out, "CUDA_LAUNCH_BLOCKING=1 is a WARN", out)
    expect("CUDA_VISIBLE_DEVICES=\"\"" in out, "CUDA_VISIBLE_DEVICES is reported", out)
    print("doctor no-device path: PASSED")


def test_gpu(doctor):
    code, doc = probe(doctor)
    if code == 2:
        print("SKIPPED: no usable GPU here (doctor exit 2)")
        sys.exit(SKIP)
    code, out, _ = run(doctor, "--all")
    print(out)
    expect(code == 0, f"doctor --all exits {code} on this GPU machine, expected 0", out)
    code, out, _ = run(doctor, "--all", "--json")
    doc = json.loads(out)
    expect(code == 0 and doc["summary"]["exit_code"] == 0, "JSON --all exit 0", json.dumps(doc["summary"]))
    expect(doc["facts"]["devices"], "JSON lists the devices")
    for dev in doc["facts"]["devices"]:
        expect(dev["kernel_image"] in ("machine code", "ptx"), f"device {dev['ordinal']} has code")
    for bw in doc["facts"]["bandwidth"]:
        expect(bw["device-to-device (read + write)"] > 0, "a device-to-device rate")
    for st in doc["facts"]["self_test"]:
        expect(st["failed"] == 0 and st["passed"] > 0, f"self-test on device {st['device']}", json.dumps(st, indent=1))
    print("doctor on the GPU: PASSED")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("cli", "no-device", "gpu"):
        sys.exit(__doc__)
    {"cli": test_cli, "no-device": test_no_device, "gpu": test_gpu}[sys.argv[1]](sys.argv[2])
