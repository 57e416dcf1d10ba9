# SPDX-License-Identifier: Apache-2.0
"""The Python layers of a kernelforge torch op, timed on a CPU-only machine.

profile_torch_op.py times the real op on a GPU; this script times what is around the
kernel call with no GPU at all: CPU tensors, and a stub in place of _C (every _C
function a no-op), so what it measures is the layers of Python and PyTorch a call goes
through, not the launch. The op body is the raw path's Python (the x.is_contiguous() test,
torch.empty_like, the dtype-code look-up, data_ptr/numel/get_device, one _C call).

Rows (per-call microseconds, the fastest of several repeats; n = 2^10 float32):
  - the body called as a plain function, and kernelforge.torch's functions' direct path;
  - the same body registered as kernelforge.torch registers its ops (one Python
    kernel on the Autograd key that calls the body, CompositeExplicitAutograd for the
    rest), called as torch.ops.<ns>.<op>.default, with and without grad mode;
  - alternatives: the body on the backend key only (no Python autograd kernel: the
    dispatcher's C++ autograd fallback), the body on the backend key with the Python
    autograd kernel on the backend's Autograd key (AutogradCPU; AutogradCUDA on a
    GPU), an Autograd kernel that calls the body with no checks, custom_op;
  - torch.compile (inductor) of `act(x) + 1.0` with each activation, against
    F.threshold and against the model without the activation; inductor's wrapper
    code (--code) shows how the compiled graph calls the op;
  - the cost of one Python function call made inside an op's kernel, eager and while
    a compiled graph runs;
  - the frame hypothesis tested on the whole call (kernel_swap_rows): one op compiled
    once, its Autograd kernel swapped between a C callable (torch.neg) and Python
    functions reaching it through 1 and 3 frames, eager and in the compiled graph;
  - cold calls (cold_rows): the op and F.threshold called eagerly right after a
    compiled add-only call, against the op in the graph and both in a hot loop.
Times are the calling thread's CPU time (time.thread_time), not wall time: see `clock`.

Measured (torch 2.15 on a shared 2-core machine, 1 thread, no_grad, us per call):
  - eager torch.ops.<ns>.relu.default with kernelforge.torch's registration: 3.3-4.4;
    compiled `act(x) + 1.0`: add only 10.6-18.3, with the op 15.7-37.4, so the op costs
    5-19 us in the graph, 2-4x its eager call; the spread is the machine's load.
  - a Python call inside the kernel: 0.035-0.042 us eager, 0.063-0.085 us in the graph.
    The op's kernel makes 2 Python calls of ours (the Autograd closure and the body): the
    frames account for < 0.1 us of the gap.
  - kernel swap: a C callable Autograd kernel costs the same in the graph as Python ones
    (op + add - add only: 10.4 C callable, 11.6 one frame, 11.3 three frames; eager
    2.5 / 2.6 / 2.8). So the frame hypothesis is refuted: no Python-free kernel would
    close the gap.
  - instructions (valgrind --tool=callgrind, 200 calls, deterministic): eager op call
    30.2k; compiled add only 97.9k, with the op 131.4k: the op executes 33.5k in the
    graph, +11% over eager (OpOverload.__call__ and inductor's assert_tensor_metadata).
    Of the eager 30.2k, the Python kernel (closure + body) is ~17k, the dispatcher,
    OpOverload and argument conversion ~13k. strace: no system call in 1000 compiled
    calls. So in the graph the op runs the same instructions 2-4x slower: its code runs
    cold there (the compiled call's other ~100k instructions evict it from the caches
    and branch predictors between calls), where an eager loop keeps it hot. Callgrind's
    cache and branch simulation agrees, per call of the op: D1 misses 907 in the graph
    against 424 eagerly, branch mispredictions 1237 against 794 (I1 misses 1132 / 1191).
  - cold_rows, the check: the op called eagerly right after a compiled add-only call
    (outside any graph) costs what it costs in the graph: 19.8 us against 21.7 in the
    graph and 4.6 in a hot loop; F.threshold after the same compiled call 14.6 us
    against 3.8 hot. Against an equally cold F.threshold the op's in-graph cost is
    1.5x, not 5.7x: bench_python's ratio divides a cold cost by a hot one.
  What would cut it: fewer instructions on the op's path (a Python-free kernel would
  remove ~1/3 of them, not the dispatcher's share), no dispatcher in the graph (an
  inductor lowering that calls the kernel directly: private inductor API), or letting
  inductor fuse the op (a decomposition: then the compiled graph does not run
  kernelforge's kernel). profile_torch_op.py's in-graph rows measure the same on the GPU.

Run: python benchmarks/python/profile_torch_op_cpu.py [--no-compile] [--code]
(needs torch; kernelforge's _C need not be built: a stub module stands in for it).
"""

import argparse
import operator
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


from c_stub import stub_module  # noqa: E402

sys.modules["kernelforge._C"] = stub_module()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kernelforge.torch  # noqa: E402,F401  (every operator registered, as a user's import does)
from kernelforge import _torch_ops, _torch_relu  # noqa: E402
from neg_probe import neg_probe  # noqa: E402  (this script's folder: sys.path[0])

_C = sys.modules["kernelforge._C"]


# The calling thread's CPU time, not wall time: on a shared 2-core machine (other builds
# running, load averages of 10-60 seen) wall-clock runs of a compiled graph varied 3-10x
# from run to run, its CPU time far less (every row runs on one thread: set_num_threads(1)).
clock = time.thread_time


def per_call_us(rows, calls, rounds=15):
    """{name: us per call} for {name: fn}: the rows take turns, `rounds` runs of `calls`
    calls each, and each keeps its fastest run. On a shared machine the minimum of
    interleaved runs is the figure least disturbed by other processes."""
    best = {}
    for fn in rows.values():
        for _ in range(200):
            fn()
    for _ in range(rounds):
        for name, fn in rows.items():
            start = clock()
            for _ in range(calls):
                fn()
            best[name] = min(best.get(name, float("inf")), (clock() - start) / calls * 1e6)
    return best


def body(x, threshold=0.0):
    """kernelforge._torch_relu._relu_threshold_kernel's raw path, on any device (the stub ignores it)."""
    if not x.is_contiguous():
        x = x if x.is_contiguous(memory_format=torch.channels_last) else x.contiguous()
    out = torch.empty_like(x)
    code = _torch_relu._dtype_codes.get(x.dtype)
    device = x.get_device()
    _C.relu_threshold_raw(x.data_ptr(), out.data_ptr(), x.numel(), code, device, threshold, 0)
    return out


def fake(x, threshold=0.0):
    return x.new_empty(x.shape)


def register_probes(backend):
    """The same body behind each way of registering it, in the namespace kfprobe."""
    lib = torch.library.Library("kfprobe", "DEF")
    ops = {}
    # As kernelforge.torch registers its ops (_torch_ops.register and its autograd kernel).
    ops["kernelforge.torch registration"] = _torch_ops.register("relu", "(Tensor x, float threshold=0.0) -> Tensor",
                                                                body, fake, _torch_relu._relu_backward,
                                                                _torch_relu._relu_setup, lib=lib)

    # The body on the backend key only: the Autograd key gets the dispatcher's C++ fallback.
    lib.define("relu_backend_only(Tensor x, float threshold=0.0) -> Tensor")
    lib.impl("relu_backend_only", body, backend)
    torch.library.register_fake("kfprobe::relu_backend_only", fake, lib=lib)
    ops["backend key only (C++ autograd fallback)"] = torch.ops.kfprobe.relu_backend_only.default

    # The body on the backend key, the Python autograd kernel on that backend's Autograd key.
    lib.define("relu_backend_autograd(Tensor x, float threshold=0.0) -> Tensor")
    lib.impl("relu_backend_autograd", body, backend)
    torch.library.register_fake("kfprobe::relu_backend_autograd", fake, lib=lib)
    op = torch.ops.kfprobe.relu_backend_autograd.default
    lib.impl("relu_backend_autograd",
             _torch_ops.autograd_kernel(op, body, _torch_relu._relu_backward, _torch_relu._relu_setup),
             "Autograd" + backend)
    ops["backend key + Autograd" + backend + " Python kernel"] = op

    # An Autograd kernel that calls the body with no checks at all: the floor of a Python autograd layer.
    lib.define("relu_bare_autograd(Tensor x, float threshold=0.0) -> Tensor")
    lib.impl("relu_bare_autograd", body, "CompositeExplicitAutograd")
    lib.impl("relu_bare_autograd", body, "Autograd")
    torch.library.register_fake("kfprobe::relu_bare_autograd", fake, lib=lib)
    ops["Autograd kernel = body, no checks (floor)"] = torch.ops.kfprobe.relu_bare_autograd.default

    @torch.library.custom_op("kfprobe::relu_custom_op", mutates_args=())
    def relu_custom_op(x: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
        return body(x, threshold)

    relu_custom_op.register_fake(fake)
    relu_custom_op.register_autograd(_torch_relu._relu_backward, setup_context=_torch_relu._relu_setup)
    ops["torch.library.custom_op"] = torch.ops.kfprobe.relu_custom_op.default
    return lib, ops


def model_of(act, name):
    """t -> act(t) + 1.0 with a code object of its own: dynamo keeps its compiled code per
    code object, so every model compiles once and no model's guards are checked for another."""
    def model(t):
        return act(t) + 1.0

    model.__code__ = model.__code__.replace(co_name="model_" + "".join(c if c.isalnum() else "_" for c in name))
    return model


def python_call_cost(lib, x, nested=20):
    """us per Python function call made inside an op's kernel, eager and in a compiled
    graph (where dynamo's frame evaluator is installed while the graph runs)."""
    clock = time.perf_counter  # a short interval: wall time is precise enough, and cheaper to read
    spent = [0.0, 0]

    def leaf(t):
        return t

    def kernel(t):
        start = clock()
        for _ in range(nested):
            leaf(t)
        spent[0] += clock() - start
        spent[1] += 1
        return t.clone()

    lib.define("calls(Tensor x) -> Tensor")
    lib.impl("calls", kernel, "CompositeExplicitAutograd")
    torch.library.register_fake("kfprobe::calls", lambda t: t.new_empty(t.shape), lib=lib)
    op = torch.ops.kfprobe.calls.default
    compiled = torch.compile(model_of(lambda t: op(t), "calls"), fullgraph=True)
    rows = {}
    with torch.no_grad():
        compiled(x)
        for name, fn in (("eager", lambda: op(x)), ("in a compiled graph", lambda: compiled(x))):
            best = float("inf")
            for _ in range(9):
                spent[:] = [0.0, 0]
                for _ in range(2000):
                    fn()
                best = min(best, spent[0] / spent[1] / nested)
            rows[f"one Python call inside the op's kernel, {name}"] = best * 1e6
    return rows


def kernel_swap_rows(x):
    """The frame hypothesis, tested on the whole call: one op, kfprobe_neg::neg(Tensor x),
    compiled once into `op(x) + 1.0`; then its Autograd kernel is swapped between a C
    callable (torch.neg: no Python frame at all) and Python functions that reach torch.neg
    through 1 and 3 frames. The compiled graph calls the op by name through the
    dispatcher, so it runs whichever kernel is registered now, in the same graph. If a
    Python frame cost microseconds inside a compiled graph, the compiled rows would spread
    apart by far more than the eager rows do."""
    lib, op, kernels = neg_probe()

    compiled = torch.compile(model_of(op, "neg"), fullgraph=True)
    add_only = torch.compile(model_of(lambda t: t, "neg_add_only"), fullgraph=True)
    results = {}
    with torch.no_grad():
        compiled(x)
        add_only(x)
        for name, kernel in kernels.items():
            impl = torch.library.Library("kfprobe_neg", "IMPL")
            impl.impl("neg", kernel, "Autograd")
            rows = per_call_us({"eager": lambda: op(x), "compiled": lambda: compiled(x),
                                "add only": lambda: add_only(x)}, calls=1000)
            impl._destroy()  # frees the Autograd key for the next kernel
            results[f"neg op, Autograd kernel = {name}: eager op call"] = rows["eager"]
            results[f"neg op, Autograd kernel = {name}: compiled op + add"] = rows["compiled"]
            results[f"neg op, Autograd kernel = {name}: compiled op + add - compiled add only"] = (rows["compiled"] -
                                                                                                 rows["add only"])
    del lib
    return results


def cold_rows(op, x):
    """The op's eager call made right after a compiled add-only call (outside any graph),
    against the op inside the graph: if the two cost the same, the in-graph cost is the
    op's code running cold after the compiled call's machinery, not anything the graph
    does to the call. F.threshold gets the same treatment: the fair baseline for "the
    op's cost in a graph" is a torch op that is just as cold."""
    with torch.no_grad():
        add_only = torch.compile(model_of(lambda t: t, "cold_add_only"), fullgraph=True)
        with_op = torch.compile(model_of(lambda t: op(t, 0.5), "cold_with_op"), fullgraph=True)
        add_only(x)
        with_op(x)
        rows = per_call_us({
            "eager op": lambda: op(x, 0.5),
            "compiled add only": lambda: add_only(x),
            "compiled op + add": lambda: with_op(x),
            "compiled add only, then the eager op": lambda: (add_only(x), op(x, 0.5)),
            "compiled add only, then F.threshold": lambda: (add_only(x), F.threshold(x, 0.5, 0.0)),
            "F.threshold": lambda: F.threshold(x, 0.5, 0.0),
        }, calls=1000)
    base = rows["compiled add only"]
    return {
        "cold: the op, eager, hot loop": rows["eager op"],
        "cold: the op in the graph (compiled op + add - compiled add only)": rows["compiled op + add"] - base,
        "cold: the op, eager, right after a compiled add-only call":
            rows["compiled add only, then the eager op"] - base,
        "cold: F.threshold, eager, hot loop": rows["F.threshold"],
        "cold: F.threshold, eager, right after a compiled add-only call":
            rows["compiled add only, then F.threshold"] - base,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows")
    parser.add_argument("--code", action="store_true", help="print inductor's wrapper code for the op's model")
    args = parser.parse_args()

    torch.set_num_threads(1)
    _torch_ops._on_device = operator.attrgetter("is_cpu")  # kernelforge.torch's plain-tensor test, for CPU tensors
    lib, ops = register_probes("CPU")
    x = torch.randn(1 << 10)
    rows = {
        "F.threshold (eager)": lambda: F.threshold(x, 0.5, 0.0),
        "torch.empty_like (in the body)": lambda: torch.empty_like(x),
        "x.data_ptr() (in the body)": lambda: x.data_ptr(),
        "stub _C call, 7 args (in the body)": lambda: _C.relu_threshold_raw(1, 2, 3, 4, 5, 0.5, 0),
        "body, plain function": lambda: body(x, 0.5),
        "kernelforge.torch's direct path (_direct + body)": lambda: _torch_ops.direct(x) and body(x, 0.5),
    }
    for name, op in ops.items():
        rows[name + ": op.default(x, t)"] = (lambda op: lambda: op(x, 0.5))(op)

    results = {}
    for mode, ctx in (("grad", torch.enable_grad), ("no_grad", torch.no_grad)):
        with ctx():
            for name, us in per_call_us(rows, calls=5000).items():
                results[f"{name} [{mode}]"] = us

    if not args.no_compile:
        acts = {"F.threshold": lambda t: F.threshold(t, 0.5, 0.0), "no activation (add only)": lambda t: t}
        for name, op in ops.items():
            if "floor" not in name:  # that kernel takes FakeTensors at trace time, which it cannot
                acts[name] = (lambda op: lambda t: op(t, 0.5))(op)
        for mode, ctx in (("no_grad", torch.no_grad), ("grad", torch.enable_grad)):
            compiled = {}
            with ctx():
                for name, act in acts.items():
                    model = torch.compile(model_of(act, f"{name}_{mode}"), fullgraph=True)
                    if args.code and name == "kernelforge.torch registration" and mode == "no_grad":
                        from torch._inductor.utils import run_and_get_code
                        _, code = run_and_get_code(model, x)
                        print("\n".join(line for line in code[0].splitlines() if "kfprobe" in line))
                    model(x)
                    compiled[f"compiled: {name} [{mode}]"] = (lambda model: lambda: model(x))(model)
                results.update(per_call_us(compiled, calls=1000))

    if not args.no_compile:
        results.update(python_call_cost(lib, x))
        results.update(kernel_swap_rows(x))
        results.update(cold_rows(ops["kernelforge.torch registration"], x))

    print(f"torch {torch.__version__}, CPU tensors, _C stubbed, {torch.get_num_threads()} thread(s)")
    for name, us in results.items():
        print(f"  {name:<86} {us:7.3f} us")
    del lib
    return 0


if __name__ == "__main__":
    sys.exit(main())
