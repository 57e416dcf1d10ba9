#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The SM clock and power each benchmark row runs at, under sustained load.

    python3 scripts/power_probe.py build-gpu/benchmarks/matmul/bench_matmul \\
        'matmul/fp16/(cublas|wgmma_f16)/4096x4096x4096' --repetitions 15 --json out.json

Runs the rows matching the filter one at a time, each repeated (Google
Benchmark's --benchmark_repetitions) for seconds of load, while nvidia-smi
samples the GPU every 20 ms; prints, per row, the mean SM clock, the power
draw, the temperature and the share of samples with the software power cap
active, over the samples inside the row's run (its first second left out:
setup and the clock's ramp). Two kernels that run at the power cap are
compared at the clocks their own energy leaves them: a kernel that moves more
bytes or issues more instructions per FLOP runs at a lower clock, which a
profiler at its locked base clock does not show.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time

FIELDS = ["clocks.sm", "power.draw", "temperature.gpu", "clocks_event_reasons.sw_power_cap"]
FALLBACK = ["clocks.sm", "power.draw", "temperature.gpu", "clocks_throttle_reasons.sw_power_cap"]


def start_sampler(period_ms):
    """nvidia-smi in the background; returns (process, samples list of (time, [values]))."""
    for fields in (FIELDS, FALLBACK):
        cmd = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits", f"-lms={period_ms}"]
        probe = subprocess.run(cmd[:-1], capture_output=True, text=True)
        if probe.returncode == 0:
            break
    else:
        sys.exit(f"nvidia-smi cannot report {FIELDS}: {probe.stderr.strip()}")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    samples = []

    def read():
        for line in proc.stdout:
            samples.append((time.time(), [v.strip() for v in line.split(",")]))

    threading.Thread(target=read, daemon=True).start()
    return proc, samples


def rows_matching(bench, pattern):
    out = subprocess.run([bench, "--benchmark_list_tests", f"--benchmark_filter={pattern}"], capture_output=True,
                         text=True, check=True)
    # Benchmark names hold no blanks; the binary's own banner lines do.
    return [line.strip() for line in out.stdout.splitlines() if line.strip() and " " not in line.strip()]


def summarize(samples, t0, t1, skip_s):
    window = [v for t, v in samples if t0 + skip_s <= t <= t1]
    if not window:
        return {"samples": 0}
    def num(i):
        return [float(v[i]) for v in window if v[i].replace(".", "", 1).isdigit()]
    capped = [v[3].lower() in ("active", "1", "yes") for v in window]
    return {"samples": len(window), "sm_clock_mhz": statistics.mean(num(0)), "power_w": statistics.mean(num(1)),
            "temperature_c": statistics.mean(num(2)), "power_capped": sum(capped) / len(capped)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench")
    ap.add_argument("filter")
    ap.add_argument("--repetitions", type=int, default=15)
    ap.add_argument("--period-ms", type=int, default=20)
    ap.add_argument("--skip-s", type=float, default=1.0, help="seconds left out at the start of each row")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the rows (A B A B ...)")
    ap.add_argument("--json", help="write the rows' figures here")
    args = ap.parse_args()
    rows = rows_matching(args.bench, args.filter)
    if not rows:
        sys.exit(f"no row of {args.bench} matches {args.filter}")
    proc, samples = start_sampler(args.period_ms)
    time.sleep(1.0)
    results = []
    try:
        for rnd in range(args.rounds):
            for row in rows:
                name = row.split("/iterations:")[0]
                t0 = time.time()
                with tempfile.NamedTemporaryFile(suffix=".json") as out:
                    subprocess.run([args.bench, f"--benchmark_filter=^{name}/",
                                    f"--benchmark_repetitions={args.repetitions}",
                                    "--benchmark_report_aggregates_only=true", f"--benchmark_out={out.name}",
                                    "--benchmark_out_format=json"], capture_output=True, text=True)
                    t1 = time.time()
                    tflops = None
                    try:
                        for b in json.load(open(out.name))["benchmarks"]:
                            if b.get("aggregate_name") == "median":
                                tflops = b.get("TFLOP/s")
                    except (json.JSONDecodeError, KeyError, OSError):
                        pass
                r = {"row": name, "round": rnd, "seconds": t1 - t0, "median_TFLOP/s": tflops}
                r.update(summarize(samples, t0, t1, args.skip_s))
                results.append(r)
                if r["samples"] == 0:
                    print(f"{name} (round {rnd}): {tflops} TFLOP/s, no nvidia-smi sample inside its run", flush=True)
                    continue
                print(f"{name} (round {rnd}): {tflops if tflops is None else round(tflops, 1)} TFLOP/s, "
                      f"SM clock {r['sm_clock_mhz']:.0f} MHz, {r['power_w']:.0f} W, {r['temperature_c']:.0f} C, "
                      f"power-capped {100 * r['power_capped']:.0f}% of {r['samples']} samples", flush=True)
    finally:
        proc.terminate()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
