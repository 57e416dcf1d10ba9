# SPDX-License-Identifier: Apache-2.0
"""The host time of the calls a conv2d training step makes, on a CPU-only machine.

What a training step through kernelforge.torch.Conv2d runs on the host: the forward
(kernelforge.torch.conv2d with a gradient to record: the operator, its autograd.Function,
the body) and, in its backward, conv2d_backward_data and conv2d_backward_filter (the
direct path: the autograd engine runs backward with grad mode off). And what
bench_python.py's conv2d_train rows time: kernelforge's DLPack API (kf.conv2d,
kf.conv2d_backward_data, kf.conv2d_backward_filter, each with out=). As
profile_torch_op_cpu.py does: CPU tensors, a stub in place of _C (every entry a no-op;
conv2d_output_shape returns the layer's (P, Q)), and kernelforge.torch's device test
(_torch_ops._on_device) swapped to is_cpu, so what is timed is the Python and PyTorch
around the kernel, on the same code paths as a GPU call, minus the binding's own time
(timed apart: --binding needs the built _C, and times its conv entries up to the device
check on CPU tensors). Times are the calling thread's CPU time (time.thread_time), the
fastest of interleaved rounds: the machine is shared; with the cyclic garbage collector
off during the rounds (as timeit does) and glibc's malloc kept from returning the large
CPU outputs to the system each call (steady_malloc). --instructions counts instructions
under callgrind instead: deterministic, for before/after comparisons.

Rows, per mode (fp16, bf16, TF32 in channels_last; exact fp32 in NCHW: bench's modes), on
N32 C64 56x56 K64 3x3 p1 (the host path does not depend on the size):
  - Conv2d forward: kernelforge.torch.conv2d(x, w, None, ...) with x and w requiring grad;
  - dgrad, wgrad: kernelforge.torch.conv2d_backward_data / _filter as conv2d's backward
    calls them (grad mode off, the forward's layout);
  - step: y = conv2d(x, w); torch.autograd.grad(y, (x, w), dy): the three calls and the
    autograd engine (no gradient accumulated into .grad: that would be a CPU add);
  - op, no grad: torch.ops.kernelforge.conv2d.default (the dispatcher, as a compiled
    graph calls it);
  - kf.conv2d / kf.conv2d_backward_data / kf.conv2d_backward_filter with out= (bench's rows).

Measured (torch 2.15, Python 3.11, this 2-core shared machine, 1 thread), before -> after
the branch conv-host-time (a1fa6cc -> its last commit; --python gave each its package):
  instructions per call, thousands (--instructions, --calls 50; the calling thread):
                                            fp16          bf16          tf32     fp32 nchw
    Conv2d forward, grad               288 ->  90    289 ->  91    305 -> 108    273 -> 106
    dgrad (backward's call)             76 ->  42     76 ->  42     76 ->  42     48 ->  47
    wgrad (backward's call)             86 ->  53     87 ->  53     86 ->  53     58 ->  57
    step: forward + autograd.grad      621 -> 359    622 -> 360    638 -> 378    551 -> 385
    op.default, no grad                105 ->  73    105 ->  73    113 ->  81     84 ->  84
    kf.conv2d(out=)                     90 ->  55     90 ->  55     99 ->  64     64 ->  57
    kf.conv2d_backward_data(out=)      106 ->  66    106 ->  66    115 ->  75     80 ->  67
    kf.conv2d_backward_filter(out=)    104 ->  63    104 ->  63    113 ->  72     76 ->  63
  thread time, us per call (the fastest of 3 alternating runs of 10 rounds each; the
  times move by 10-30% with the machine's load, the instruction counts do not):
                                            fp16          bf16          tf32     fp32 nchw
    Conv2d forward, grad              88 -> 10.9    62 -> 16.4    59 -> 13.7    81 -> 19.8
    dgrad (backward's call)         11.5 ->  4.5  11.5 ->  5.5   8.4 ->  4.4   6.3 ->  6.2
    wgrad (backward's call)         13.0 ->  5.7  13.0 ->  7.5   9.7 ->  5.9   8.1 ->  8.2
    step: forward + autograd.grad    197 -> 49.9   192 -> 50.7   118 -> 59.2   176 -> 90.5
    op.default, no grad             18.1 ->  8.7  18.1 ->  8.8  13.2 ->  9.6  13.6 ->  9.7
    kf.conv2d(out=)                 12.9 ->  5.2  12.6 ->  5.4  10.5 ->  5.9   7.6 ->  5.7
    kf.conv2d_backward_data(out=)   15.4 ->  6.6  15.4 ->  6.3  12.0 ->  7.5  10.2 ->  6.4
    kf.conv2d_backward_filter(out=) 14.6 ->  6.0  15.2 ->  6.1  11.4 ->  6.8   9.6 ->  6.0
  Where it went: torch binding forward's arguments with inspect.signature on each apply of
  an autograd.Function with setup_context, and a second dispatcher round trip (together
  ~165k instructions a forward: _torch_ops.autograd_kernel's EagerFunction); a
  .permute(0, 2, 3, 1) view per channels_last tensor for _C (~10k instructions, ~1 us
  each, 3 a call: _C takes layout "channels_last"); torch.empty(..., memory_format=)
  (new_output); an import statement, a repeated shape check and tuple copies in kf.*.
  The step's other ~175k instructions are torch's: autograd.grad, the engine, the
  backward's Python glue. --binding (the built _C's entries on CPU tensors, up to
  NoDeviceError): ~15 us a call given the tensors as they are, ~21 us with the permuted
  views, most of either the NoDeviceError path itself.

Run: python benchmarks/python/profile_conv_host_cpu.py [--python DIR] [--modes fp16,bf16]
        [--rounds N] [--calls N] [--instructions] [--binding] [--json FILE]
(needs torch; kernelforge's _C need not be built, but --binding needs it built into DIR.
--python DIR: the folder holding the kernelforge package to time, e.g. an older
checkout's python/, for a before/after table; --instructions needs valgrind and cc, and
takes minutes; --compare A.json B.json prints two runs' --json side by side).
"""

import argparse
import json
import operator
import os
import sys
import time

from c_stub import stub_module

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, N, C, H, W, K, R, S, stride, padding)
LAYER = ("N32_C64_56x56_K64_3x3_p1", 32, 64, 56, 56, 64, 3, 3, 1, 1)


clock = time.thread_time


def steady_malloc():
    """glibc's malloc set to keep freed blocks (no mmap per large block, no trim of the
    heap's top): the outputs here are 6-26 MB CPU tensors, and with glibc's defaults their
    allocation cost swung by microseconds from call to call (a system call or two when a
    block goes back to the system), where a GPU call's comes from torch's caching allocator.
    Returns whether mallopt took the settings (not glibc: nothing is changed)."""
    import ctypes
    import ctypes.util
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30))
    except (OSError, AttributeError):
        return False


def per_call_us(rows, calls, rounds):
    """{name: us per call} for {name: (fn, grad mode)}: the rows take turns, `rounds` runs
    of `calls` calls each in the row's grad mode (set around the loop, as the autograd
    engine sets it around a backward, not per call), and each keeps its fastest run (the
    figure least disturbed by other processes)."""
    import gc
    import torch
    best = {}
    saved = torch.is_grad_enabled()
    gc.disable()  # as timeit does: a collection of torch's ~10^6 objects would land in one row's run
    try:
        for fn, grad in rows.values():
            torch.set_grad_enabled(grad)
            for _ in range(100):
                fn()
        if _under_callgrind is not None:
            for name, (fn, grad) in rows.items():
                torch.set_grad_enabled(grad)
                label = f"{_label}: {name}".encode() if _label else name.encode()
                gc.collect()
                _under_callgrind.kf_zero()
                for _ in range(calls):
                    fn()
                _under_callgrind.kf_dump(label)
                best[name] = 0.0
            return best
        for _ in range(rounds):
            gc.collect()
            for name, (fn, grad) in rows.items():
                torch.set_grad_enabled(grad)
                start = clock()
                for _ in range(calls):
                    fn()
                best[name] = min(best.get(name, float("inf")), (clock() - start) / calls * 1e6)
    finally:
        torch.set_grad_enabled(saved)
        gc.enable()
    return best


_label = None  # the mode whose rows run (for the callgrind dumps' names)
_under_callgrind = None  # under --instructions: the marker library (callgrind_marks)

_MARKS_C = r"""
#include <valgrind/callgrind.h>
void kf_zero(void) { CALLGRIND_ZERO_STATS; }
void kf_dump(const char* name) { CALLGRIND_DUMP_STATS_AT(name); }
"""


def callgrind_marks(folder):
    """A two-function C library (built here with cc, from valgrind's callgrind.h) whose
    calls zero callgrind's counters and dump them under a row's name: each row's count is
    then exactly its calls'."""
    import ctypes
    import subprocess
    src, lib = os.path.join(folder, "marks.c"), os.path.join(folder, "marks.so")
    with open(src, "w") as f:
        f.write(_MARKS_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", lib, src], check=True)
    marks = ctypes.CDLL(lib)
    marks.kf_dump.argtypes = [ctypes.c_char_p]
    return marks


def instructions(argv, calls):
    """{name: instructions per call}: this script re-run under valgrind's callgrind, which
    counts the instructions each row executes (one dump per row, see callgrind_marks): the
    same count on every run, whatever else the shared machine is doing, where the times
    move by 10-30% from run to run."""
    import subprocess
    import tempfile
    out = tempfile.mkdtemp(prefix="kf_conv_host_")
    # The calling thread's counts only (--separate-threads: a dump per thread, "-01" the
    # main one's): torch's idle worker threads spin, and what they count follows the
    # run's duration, not the code under test.
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}/cg.out",
           sys.executable, os.path.abspath(__file__), "--under-callgrind", out] + argv
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    counts = {}
    for name in os.listdir(out):
        if not (name.startswith("cg.out.") and name.endswith("-01")):
            continue
        with open(os.path.join(out, name)) as f:
            lines = f.read().splitlines()
        trigger = [line for line in lines if line.startswith("desc: Trigger: Client Request: ")]
        totals = [line for line in lines if line.startswith(("totals:", "summary:"))]
        if trigger and totals:
            counts[int(name[len("cg.out."):-len("-01")])] = (trigger[0].split(": ", 3)[3], int(totals[0].split()[1]))
    return {row: count / calls for _, (row, count) in sorted(counts.items())}


def modes(torch):
    # (label, dtype, tf32, memory format): bench_python's conv2d_train modes.
    return [("fp16", torch.float16, False, torch.channels_last), ("bf16", torch.bfloat16, False, torch.channels_last),
            ("tf32", torch.float32, True, torch.channels_last), ("fp32 nchw", torch.float32, False,
                                                                 torch.contiguous_format)]


def probe(rounds, calls, labels=None):
    global _label
    import torch
    import kernelforge as kf
    import kernelforge.torch as kft
    from kernelforge import _torch_conv, _torch_ops

    torch.set_num_threads(1)
    _torch_ops._on_device = operator.attrgetter("is_cpu")  # kernelforge.torch's plain-tensor test, for CPU tensors
    _, n, c, h, w, k, r, s, stride, pad = LAYER
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    st, pd, dl = [stride, stride], [pad, pad], [1, 1]
    results = {}
    for label, dtype, tf32, fmt in modes(torch):
        if labels and label not in labels:
            continue
        _label = label
        x = torch.randn(n, c, h, w).to(dtype).to(memory_format=fmt)
        wt = torch.randn(k, c, r, s).to(dtype).to(memory_format=fmt)
        dy = torch.randn(n, k, p, q).to(dtype).to(memory_format=fmt)
        y = torch.empty(n, k, p, q, dtype=dtype, memory_format=fmt)
        dx, dw = torch.empty_like(x), torch.empty_like(wt)
        xg, wg = x.detach().requires_grad_(), wt.detach().requires_grad_()
        layout = _torch_conv.layout_of(x)
        op = torch.ops.kernelforge.conv2d.default
        kw = dict(stride=stride, padding=pad, tf32=tf32)

        def forward():
            return kft.conv2d(xg, wg, None, st, pd, dl, tf32)

        def step():
            return torch.autograd.grad(kft.conv2d(xg, wg, None, st, pd, dl, tf32), (xg, wg), dy)

        rows = {
            "Conv2d forward (kft.conv2d, grad)": (forward, True),
            "dgrad (kft.conv2d_backward_data, no grad)": (
                lambda: kft.conv2d_backward_data(dy, wt, [n, c, h, w], st, pd, dl, tf32, layout=layout), False),
            "wgrad (kft.conv2d_backward_filter, no grad)": (
                lambda: kft.conv2d_backward_filter(dy, x, [k, c, r, s], st, pd, dl, False, tf32, layout=layout), False),
            "step (forward + autograd.grad)": (step, True),
            "op.default, no grad": (lambda: op(x, wt, None, st, pd, dl, tf32), False),
            "kf.conv2d(out=)": (lambda: kf.conv2d(x, wt, out=y, **kw), True),
            "kf.conv2d_backward_data(out=)": (lambda: kf.conv2d_backward_data(dy, wt, x.shape, out=dx, **kw), True),
            "kf.conv2d_backward_filter(out=)": (lambda: kf.conv2d_backward_filter(x, dy, wt.shape, out=dw, **kw), True),
        }
        for name, us in per_call_us(rows, calls, rounds).items():
            results[f"{label}: {name}"] = us
    return results


def binding_rows(rounds, calls):
    """The built _C's conv entries on CPU fp16 channels_last tensors: every check, then
    NoDeviceError at the device check (so each figure includes raising and catching that
    error, also timed alone), each given the tensors both ways: layout "nhwc" with the
    .permute(0, 2, 3, 1) views (made in the row, as the Python code made them before), and
    layout "channels_last" with the tensors as they are (the binding makes the views)."""
    import torch
    import kernelforge as kf
    from kernelforge import _C
    from torch.utils.dlpack import to_dlpack

    torch.set_num_threads(1)
    _, n, c, h, w, k, r, s, stride, pad = LAYER
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    cl = torch.channels_last
    x = torch.randn(n, c, h, w).half().to(memory_format=cl)
    wt = torch.randn(k, c, r, s).half().to(memory_format=cl)
    dy = torch.randn(n, k, p, q).half().to(memory_format=cl)
    geometry = (stride, stride, pad, pad, 1, 1)

    def caught(fn):
        def run():
            try:
                fn()
            except kf.NoDeviceError:
                pass
        return run

    def raise_only():
        raise kf.NoDeviceError("x")

    def views(*tensors):
        return [to_dlpack(t.permute(0, 2, 3, 1)) for t in tensors]

    def as_they_are(*tensors):
        return [to_dlpack(t) for t in tensors]

    rows = {
        "_C.conv2d_output_shape": lambda: _C.conv2d_output_shape(n, c, h, w, k, r, s, *geometry),
        "to_dlpack (one tensor)": lambda: to_dlpack(x),
        "raise + catch NoDeviceError (Python)": caught(raise_only),
    }
    for layout, arrays in (("nhwc", views), ("channels_last", as_they_are)):
        rows[f"_C.conv2d, {layout}, to the device check"] = caught(
            lambda layout=layout, arrays=arrays: _C.conv2d(*arrays(x, wt), None, *arrays(dy), *geometry, layout,
                                                           "exact", False, 0.0, "best", 0))
        rows[f"_C.conv2d_backward_data, {layout}, to the device check"] = caught(
            lambda layout=layout, arrays=arrays: _C.conv2d_backward_data(*arrays(dy, wt), None, *arrays(x), *geometry,
                                                                         layout, False, False, 0.0, "best", 0))
        rows[f"_C.conv2d_backward_filter, {layout}, to the device check"] = caught(
            lambda layout=layout, arrays=arrays: _C.conv2d_backward_filter(*arrays(x, dy), None, *arrays(wt), None,
                                                                           *geometry, layout, False, False, 0.0,
                                                                           "best", 0))
    rows = {name: (fn, False) for name, fn in rows.items()}
    return {f"binding: {name}": us for name, us in per_call_us(rows, calls, rounds).items()}


def compare(a_path, b_path):
    with open(a_path) as f:
        a = json.load(f)
    with open(b_path) as f:
        b = json.load(f)
    print(f"{'row':<72} {'before':>8} {'after':>8} {'after/before':>12}")
    for name, before in a["rows"].items():
        after = b["rows"].get(name)
        if after is None:
            continue
        print(f"{name:<72} {before:8.2f} {after:8.2f} {after / before:12.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=os.path.join(HERE, "..", "..", "python"),
                        help="the folder that holds the kernelforge package to time")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--modes", help="the modes to run, comma-separated (default: fp16,bf16,tf32,fp32 nchw)")
    parser.add_argument("--binding", action="store_true", help="time the built _C's conv entries (no stub)")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per call under valgrind's callgrind in place of times (slow: minutes)")
    parser.add_argument("--under-callgrind", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print two --json files side by side")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return 0

    if args.instructions:
        argv = (["--python", args.python, "--calls", str(args.calls)] + (["--binding"] if args.binding else []) +
                (["--modes", args.modes] if args.modes else []))
        results = instructions(argv, args.calls)
        print(f"instructions per call (callgrind), {LAYER[0]}, kernelforge from {os.path.abspath(args.python)}")
        for name, value in results.items():
            print(f"  {name:<72} {value:10.0f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"unit": "instructions", "layer": LAYER[0], "rows": results}, f, indent=1)
        return 0

    global _under_callgrind
    if args.under_callgrind:
        _under_callgrind = callgrind_marks(args.under_callgrind)
    sys.path.insert(0, os.path.abspath(args.python))
    malloc = "steady malloc" if steady_malloc() else "malloc as is"
    if args.binding:
        results = binding_rows(args.rounds, args.calls)
    else:
        _, n, c, h, w, k, r, s, stride, pad = LAYER
        sys.modules["kernelforge._C"] = stub_module(((h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1))
        results = probe(args.rounds, args.calls, args.modes and args.modes.split(","))
    import torch
    if not args.under_callgrind:
        print(f"torch {torch.__version__}, CPU tensors, {'_C built' if args.binding else '_C stubbed'}, "
              f"{torch.get_num_threads()} thread(s), {malloc}, {LAYER[0]}, kernelforge from "
              f"{os.path.abspath(args.python)}")
    for name, value in results.items():
        print(f"row: {name}" if args.under_callgrind else f"  {name:<72} {value:8.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "layer": LAYER[0], "rows": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
