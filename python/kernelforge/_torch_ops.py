# SPDX-License-Identifier: Apache-2.0
"""How kernelforge's PyTorch operators are registered with torch.library and called:
the library of the namespace "kernelforge", register (an operator's schema, kernel,
fake kernel and autograd formula), the kernel it installs on the Autograd key, and
direct (whether a call may run the kernel without PyTorch's dispatcher).

Each family's module registers its operators with these at its import (_torch_relu,
_torch_matmul, _torch_conv_op, _torch_filter); kernelforge.torch imports them all.

Why torch.library.Library and not torch.library.custom_op: measured on the H200
(benchmarks/python/profile_torch_op.py, n = 2^10), a custom_op call cost 43 us of
host time against 15 us for F.threshold; custom_op's wrappers (a dynamo-disable
guard, aliasing checks, its autograd layer that redispatches below autograd) were
most of it. Here an operator call is one Python kernel on the Autograd key, and an
eager call of kernelforge.torch's functions skips the dispatcher altogether.
"""

import operator

import torch

_functorch = getattr(torch._C, "_functorch", None)
_is_functorch_wrapped = getattr(_functorch, "is_functorch_wrapped_tensor", None) or (lambda t: False)
_dispatch_mode_count = getattr(torch._C, "_len_torch_dispatch_stack", None) or (lambda: 1)


_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_is_functional = torch._is_functional_tensor
# Missing (an old torch): taken as active, so the gradient path stays the one for functorch.
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", None) or (lambda: True)
# The plain tensor types, the one definition every eager check below reads: torch.Tensor, and
# nn.Parameter (a module's weight), a subclass that overrides no torch function. Any other
# subclass goes through the dispatcher.
_PLAIN_TYPES = frozenset((torch.Tensor, torch.nn.Parameter))
# t.is_cuda, as a C callable under a module-level name (benchmarks/python/profile_torch_op_cpu.py
# and the CPU tests swap in is_cpu to run these paths, the same code, on a machine with no GPU).
_on_device = operator.attrgetter("is_cuda")


def direct(*tensors):
    """True when the kernel may run without PyTorch's dispatcher: eager mode, no
    dispatch mode active, and plain CUDA tensors (no subclass, no functional or
    functorch wrapper; nn.Parameter counts as plain) with no gradient to record. (Every call of an op pays for this
    test: the names above are looked up once.)"""
    if _is_compiling() or _dispatch_mode_count():
        return False
    grad = _grad_enabled()
    for t in tensors:
        if t is None:
            continue
        if (type(t) not in _PLAIN_TYPES or not _on_device(t) or (grad and t.requires_grad) or _is_functional(t) or
                _is_functorch_wrapped(t)):
            return False
    return True


def eager_grad(*tensors):
    """True when direct(*tensors) fails only for a gradient to record, with no functorch
    transform active: then the operator's eager autograd.Function (eager_function) may
    record it without PyTorch's dispatcher (one dispatcher round trip less per call)."""
    if _is_compiling() or _dispatch_mode_count() or not _grad_enabled() or _functorch_active():
        return False
    needs = False
    for t in tensors:
        if t is None:
            continue
        if type(t) not in _PLAIN_TYPES or not _on_device(t) or _is_functional(t) or _is_functorch_wrapped(t):
            return False
        needs = needs or t.requires_grad
    return needs


_lib = torch.library.Library("kernelforge", "DEF")  # lives as long as the module

# "ns::name" -> the apply of that operator's eager autograd.Function (see autograd_kernel).
_eager_functions = {}


def register(name, schema, kernel, fake, backward=None, setup_context=None, lib=_lib):
    """Defines kernelforge::<name>: `kernel` for every backend (_C rejects CPU tensors
    with a clear error), `fake` for FakeTensor/meta tracing, and an autograd formula.
    (`lib`: another namespace, for benchmarks/python/profile_torch_op_cpu.py's probes.)"""
    lib.define(name + schema)
    torch.library.register_fake(f"{lib.ns}::{name}", fake, lib=lib)
    lib.impl(name, kernel, "CompositeExplicitAutograd")
    op = getattr(getattr(torch.ops, lib.ns), name).default
    if backward is not None:
        autograd = autograd_kernel(op, kernel, backward, setup_context)
        lib.impl(name, autograd, "Autograd")
        _eager_functions[f"{lib.ns}::{name}"] = autograd.eager
    return op


def eager_function(qualified_name):
    """The operator's eager autograd.Function's apply, for calls where eager_grad() holds:
    it takes every argument of the schema, positionally, as the dispatcher would pass them."""
    return _eager_functions[qualified_name]


def autograd_kernel(op, kernel, backward, setup_context):
    """The operator's kernel on the Autograd key (what torch.library.register_autograd
    installs, without one dispatcher round trip): with a gradient to record, an
    autograd.Function; without one, the kernel itself for plain CUDA tensors (a compiled
    graph's call lands here), else the operator below autograd (FakeTensor,
    functionalization, dispatch modes).

    Two autograd.Functions with the same backward: for plain CUDA tensors in eager mode
    (no dispatch mode, no functorch transform), EagerFunction, whose forward runs the
    kernel itself and sets up ctx (forward(ctx, *args)); otherwise Function, whose forward
    runs the operator below autograd and whose setup_context sets up ctx (what functorch's
    transforms require of an autograd.Function). Function.apply costs ~20 us more per call
    (torch binds the arguments to forward's signature with inspect.signature on each apply
    of a Function that overrides setup_context; measured on CPU,
    benchmarks/python/profile_conv_host_cpu.py). The returned kernel's `eager` is
    EagerFunction.apply (eager_function). Both are named after the operator."""

    def below_autograd(*args):
        with torch._C._AutoDispatchBelowAutograd():
            return op(*args)

    def forward(*args):
        return below_autograd(*args)

    def setup(ctx, inputs, output):
        setup_context(ctx, inputs, output)

    def eager_forward(ctx, *args):
        output = kernel(*args)
        setup_context(ctx, args, output)
        return output

    def backward_formula(ctx, *grads):
        return backward(ctx, *grads)

    # Both named after the operator ("kernelforge::conv2d"): the name profiles give the
    # forward's apply, and grad_fn's ("kernelforge::conv2dBackward").
    name = op._schema.name
    Function = type(name, (torch.autograd.Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_formula)})
    EagerFunction = type(name, (torch.autograd.Function,), {
        "forward": staticmethod(eager_forward), "backward": staticmethod(backward_formula)})

    # The dispatcher hands a Python kernel the arguments as the caller passed them;
    # fill in the schema's defaults so setup_context always sees every input.
    arguments = op._schema.arguments
    defaults = tuple(a.default_value if a.has_default_value() else None for a in arguments)
    count = len(defaults)
    optional_tensor = torch._C.OptionalType.ofTensor()
    positions = tuple(i for i, a in enumerate(arguments) if a.type.isSubtypeOf(optional_tensor))

    # A compiled graph calls the operator through the dispatcher, so this kernel runs on
    # each of its calls. There the call costs ~4x its eager time in a hot loop, but not for
    # its Python frames (measured on CPU, benchmarks/python/profile_torch_op_cpu.py: a
    # Python call costs ~0.04 us more in a graph; a C callable as the Autograd kernel costs
    # the graph as much as this one): the op runs about the instructions of an eager call
    # (+11%), with caches left cold by the compiled call's machinery (called eagerly right
    # after a compiled call it costs as much; so does F.threshold, ~4x its hot time).
    # So what pays there is fewer instructions:
    # the checks are direct's, inline, on the Tensor arguments alone, with no Python
    # call but the kernel's; torch.compiler.is_compiling() is left out: while
    # torch.compile traces, this kernel sees FakeTensors or FunctionalTensors
    # (subclasses) or a dispatch mode.
    def autograd(*args):
        if len(args) < count:
            args = args + defaults[len(args):]
        plain = not _dispatch_mode_count()
        if plain:
            for i in positions:
                t = args[i]
                if t is not None and (type(t) not in _PLAIN_TYPES or not _on_device(t) or _is_functional(t) or
                                      _is_functorch_wrapped(t)):
                    plain = False
                    break
        if _grad_enabled():
            for i in positions:
                t = args[i]
                if t is not None and t.requires_grad:
                    if plain and not _functorch_active():
                        return EagerFunction.apply(*args)
                    return Function.apply(*args)
        return kernel(*args) if plain else below_autograd(*args)

    autograd.eager = EagerFunction.apply
    return autograd


def same_shape_fake(x, *args, **kwargs):
    """A fake kernel for operators whose output has the shape of their first input."""
    return x.new_empty(x.shape)
