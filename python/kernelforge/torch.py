# SPDX-License-Identifier: Apache-2.0
"""PyTorch operators over kernelforge, for autograd, torch.compile and CUDA graphs.

Six operators are registered with torch.library under the namespace "kernelforge":
torch.ops.kernelforge.relu_threshold, relu_threshold_backward, matmul (float32, float64,
float16, bfloat16), scaled_matmul (FP8, see kernelforge.scaled_matmul), conv2d (float32;
float16 and bfloat16 in channels_last memory; channels_last in, channels_last out) and
filter2d, each with a fake implementation whose shapes and strides match the real op
(torch.compile traces it without a graph break) and, for relu_threshold, matmul and
conv2d, an autograd formula (relu_threshold_backward; two kernelforge matmuls on
transposed views; PyTorch's own aten.convolution_backward). Modules: ThresholdReLU
(drop-in for torch.nn.Threshold(threshold, 0)) and Conv2d (drop-in for torch.nn.Conv2d).

The functions of this module (relu_threshold, ...) are what to call. Where nothing
needs PyTorch's dispatcher (eager mode, plain CUDA tensors, no gradient to record, no
dispatch mode or functorch transform active) they run the kernel directly; otherwise
(torch.compile, autograd, FakeTensor, vmap, ...) they call the registered operator.
Both run the same code below, on torch's current stream of the input's device, with
outputs from torch's caching allocator, so they can be captured in CUDA graphs.

Why torch.library.Library and not torch.library.custom_op: measured on the H200
(benchmarks/python/profile_torch_op.py, n = 2^10), a custom_op call cost 43 us of
host time against 15 us for F.threshold; custom_op's wrappers (a dynamo-disable
guard, aliasing checks, its autograd layer that redispatches below autograd) were
most of it. Here an operator call is one Python kernel on the Autograd key, and an
eager call of the functions below skips the dispatcher altogether.
"""

import operator
from typing import List, Optional

import torch
from torch import nn

from . import _C
from . import _scaled_matmul as _scaled
from . import _torch_conv as _conv
from ._api import conv_padding
from ._torch_support import DTYPE_CODES as _dtype_codes
from ._torch_support import current_stream as _stream
from ._torch_support import device_stream as _device_stream
from ._torch_support import to_dlpack as _dl

__all__ = ["relu_threshold", "relu_threshold_backward", "matmul", "scaled_matmul", "conv2d", "filter2d",
           "ThresholdReLU", "Conv2d"]

_functorch = getattr(torch._C, "_functorch", None)
_is_functorch_wrapped = getattr(_functorch, "is_functorch_wrapped_tensor", None) or (lambda t: False)
_dispatch_mode_count = getattr(torch._C, "_len_torch_dispatch_stack", None) or (lambda: 1)


_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_is_functional = torch._is_functional_tensor
_Tensor = torch.Tensor
# t.is_cuda, as a C callable under a module-level name (benchmarks/python/profile_torch_op_cpu.py
# swaps in is_cpu to time these paths, the same code, on a machine with no GPU).
_on_device = operator.attrgetter("is_cuda")


def _direct(*tensors):
    """True when the kernel may run without PyTorch's dispatcher: eager mode, no
    dispatch mode active, and plain CUDA tensors (no subclass, no functional or
    functorch wrapper) with no gradient to record. (Every call of an op pays for this
    test: the names above are looked up once.)"""
    if _is_compiling() or _dispatch_mode_count():
        return False
    grad = _grad_enabled()
    for t in tensors:
        if t is None:
            continue
        if (type(t) is not _Tensor or not _on_device(t) or (grad and t.requires_grad) or _is_functional(t) or
                _is_functorch_wrapped(t)):
            return False
    return True


_lib = torch.library.Library("kernelforge", "DEF")  # lives as long as the module


def _register(name, schema, kernel, fake, backward=None, setup_context=None, lib=_lib):
    """Defines kernelforge::<name>: `kernel` for every backend (_C rejects CPU tensors
    with a clear error), `fake` for FakeTensor/meta tracing, and an autograd formula.
    (`lib`: another namespace, for benchmarks/python/profile_torch_op_cpu.py's probes.)"""
    lib.define(name + schema)
    torch.library.register_fake(f"{lib.ns}::{name}", fake, lib=lib)
    lib.impl(name, kernel, "CompositeExplicitAutograd")
    op = getattr(getattr(torch.ops, lib.ns), name).default
    if backward is not None:
        lib.impl(name, _autograd_kernel(op, kernel, backward, setup_context), "Autograd")
    return op


def _autograd_kernel(op, kernel, backward, setup_context):
    """The operator's kernel on the Autograd key (what torch.library.register_autograd
    installs, without one dispatcher round trip): with a gradient to record, an
    autograd.Function whose forward runs the operator below autograd; without one,
    the kernel itself for plain CUDA tensors (a compiled graph's call lands here),
    else the operator below autograd (FakeTensor, functionalization, dispatch modes)."""

    def below_autograd(*args):
        with torch._C._AutoDispatchBelowAutograd():
            return op(*args)

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(*args):
            return below_autograd(*args)

        @staticmethod
        def setup_context(ctx, inputs, output):
            setup_context(ctx, inputs, output)

        @staticmethod
        def backward(ctx, *grads):
            return backward(ctx, *grads)

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
    # the checks are _direct's, inline, on the Tensor arguments alone, with no Python
    # call but the kernel's; torch.compiler.is_compiling() is left out: while
    # torch.compile traces, this kernel sees FakeTensors or FunctionalTensors
    # (subclasses) or a dispatch mode.
    def autograd(*args):
        if len(args) < count:
            args = args + defaults[len(args):]
        if _grad_enabled():
            for i in positions:
                t = args[i]
                if t is not None and t.requires_grad:
                    return Function.apply(*args)
        if not _dispatch_mode_count():
            for i in positions:
                t = args[i]
                if t is not None and (type(t) is not _Tensor or not _on_device(t) or _is_functional(t) or
                                      _is_functorch_wrapped(t)):
                    break
            else:
                return kernel(*args)
        return below_autograd(*args)

    return autograd


# ---- threshold ReLU ------------------------------------------------------------------

# The bodies take _C's raw entries (pointers, element count, dtype code, device index:
# no DLPack export and import per call) for what they can take: CUDA tensors of a
# shipped dtype, and for the backward, grad of x's dtype, shape and device. Anything
# else goes to the DLPack entry, whose checks name the problem (a CPU tensor, int32, a
# shape mismatch) as kernelforge.relu_threshold would.
#
# Elementwise, the kernels read dense memory in any order as a flat array: a channels_last
# x is taken as it is, out comes in x's memory format (empty_like) and grad is brought to
# it, so a channels_last network takes no layout copy here; other strides are copied to
# contiguous first.

_CHANNELS_LAST = torch.channels_last


def _row_major(t):
    """t, or for a dense channels_last t its (N, H, W, C) view: what the DLPack entries take."""
    return t if t.is_contiguous() else t.permute(0, 2, 3, 1)


def _relu_threshold_kernel(x, threshold=0.0):
    if not x.is_contiguous():
        x = x if x.is_contiguous(memory_format=_CHANNELS_LAST) else x.contiguous()
    out = torch.empty_like(x)  # x is dense, so out has its strides (and empty_like is the cheap allocation)
    code = _dtype_codes.get(x.dtype)
    device = x.get_device()
    if code is None or device < 0:
        _C.relu_threshold(_dl(_row_major(x)), _dl(_row_major(out)), threshold, "best", _stream(x))
    else:
        _C.relu_threshold_raw(x.data_ptr(), out.data_ptr(), x.numel(), code, device, threshold,
                              _device_stream(device))
    return out


def _relu_threshold_backward_kernel(grad, x, threshold=0.0):
    if x.is_contiguous():
        grad = grad.contiguous()
    elif x.is_contiguous(memory_format=_CHANNELS_LAST) and grad.dim() == 4:
        grad = grad.contiguous(memory_format=_CHANNELS_LAST)
    else:
        grad, x = grad.contiguous(), x.contiguous()
    out = torch.empty_like(x)
    code = _dtype_codes.get(x.dtype)
    device = x.get_device()
    if code is None or device < 0 or grad.dtype != x.dtype or grad.shape != x.shape or grad.get_device() != device:
        _C.relu_threshold_backward(_dl(_row_major(grad)), _dl(_row_major(x)), _dl(_row_major(out)), threshold, "best",
                                   _stream(x))
    else:
        _C.relu_threshold_backward_raw(grad.data_ptr(), x.data_ptr(), out.data_ptr(), x.numel(), code, device,
                                       threshold, _device_stream(device))
    return out


def _same_shape_fake(x, *args, **kwargs):
    return x.new_empty(x.shape)


def _relu_fake(x, threshold=0.0):
    # The kernels' output: x's strides where x is dense (contiguous or channels_last), else contiguous.
    if x.is_contiguous() or x.is_contiguous(memory_format=_CHANNELS_LAST):
        return torch.empty_like(x)
    return x.new_empty(x.shape)


def _relu_bw_fake(grad, x, threshold=0.0):
    torch._check(grad.shape == x.shape, lambda: "relu_threshold_backward: grad and x shapes differ")
    return _relu_fake(x)


def _relu_setup(ctx, inputs, output):  # inputs: (x, threshold) or (grad, x, threshold)
    ctx.save_for_backward(inputs[-2])  # x
    ctx.threshold = inputs[-1]


def _relu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return relu_threshold_backward(grad, x, ctx.threshold), None


def _relu_bw_backward(ctx, grad_grad):
    # Linear in grad with the same mask; piecewise constant in x (zero gradient).
    (x,) = ctx.saved_tensors
    return relu_threshold_backward(grad_grad, x, ctx.threshold), None, None


_relu_op = _register("relu_threshold", "(Tensor x, float threshold=0.0) -> Tensor", _relu_threshold_kernel,
                     _relu_fake, _relu_backward, _relu_setup)
_relu_bw_op = _register("relu_threshold_backward", "(Tensor grad, Tensor x, float threshold=0.0) -> Tensor",
                        _relu_threshold_backward_kernel, _relu_bw_fake, _relu_bw_backward, _relu_setup)


def relu_threshold(x: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
    """x if x > threshold else 0 (torch.nn.functional.threshold(x, threshold, 0))."""
    if _direct(x):
        return _relu_threshold_kernel(x, float(threshold))
    return _relu_op(x, threshold)


def relu_threshold_backward(grad: torch.Tensor, x: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
    """grad if x > threshold else 0 (aten.threshold_backward(grad, x, threshold))."""
    if _direct(grad, x):
        return _relu_threshold_backward_kernel(grad, x, float(threshold))
    return _relu_bw_op(grad, x, threshold)


# ---- matrix product ------------------------------------------------------------------

def _gemm_operand(t):
    """t itself when kernelforge reads it directly (row-major or a transposed view), else a copy."""
    rows, cols = t.shape
    s0, s1 = t.stride()
    if (cols <= 1 or s1 == 1) and (rows <= 1 or s0 >= cols):
        return t
    if (rows <= 1 or s0 == 1) and (cols <= 1 or s1 >= rows):
        return t
    return t.contiguous()


def _matmul_kernel(a, b, tf32=False):
    a, b = _gemm_operand(a), _gemm_operand(b)
    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _C.matmul(_dl(a), _dl(b), _dl(out), 1.0, 0.0, tf32, "best", _stream(a))
    return out


def _matmul_fake(a, b, tf32=False):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "kernelforge::matmul takes 2-D tensors")
    torch._check(a.shape[1] == b.shape[0], lambda: f"kernelforge::matmul: {a.shape} @ {b.shape}")
    torch._check(a.dtype == b.dtype, lambda: f"kernelforge::matmul: a is {a.dtype} but b is {b.dtype}")
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_setup(ctx, inputs, output):
    a, b, tf32 = inputs
    ctx.save_for_backward(a, b)
    ctx.tf32 = tf32


def _matmul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = matmul(grad, b.t(), ctx.tf32) if ctx.needs_input_grad[0] else None  # (m,n) @ (n,k)
    grad_b = matmul(a.t(), grad, ctx.tf32) if ctx.needs_input_grad[1] else None  # (k,m) @ (m,n)
    return grad_a, grad_b, None


_matmul_op = _register("matmul", "(Tensor a, Tensor b, bool tf32=False) -> Tensor", _matmul_kernel, _matmul_fake,
                       _matmul_backward, _matmul_setup)


def matmul(a: torch.Tensor, b: torch.Tensor, tf32: bool = False) -> torch.Tensor:
    """a (m, k) @ b (k, n), float32/float64/float16/bfloat16 (the result in a's dtype; the
    16-bit types accumulate in fp32); tf32=True allows TF32 tensor cores (float32)."""
    if _direct(a, b):
        return _matmul_kernel(a, b, bool(tf32))
    return _matmul_op(a, b, tf32)


# ---- FP8 matrix product ----------------------------------------------------------------

# The body is kernelforge.scaled_matmul's (_scaled_matmul.run: checks, stride -> op
# mapping, the raw entry); the operator takes no out= and no alpha/beta (functional, like
# torch._scaled_mm) and mutates amax when given one. No autograd formula.

def _scaled_matmul_kernel(a, b, scale_a, scale_b, bias=None, out_dtype=None, scaling=None, relu=False,
                          relu_threshold=0.0, amax=None):
    return _scaled.run(a, b, scale_a, scale_b, out_dtype=out_dtype, scaling=scaling, bias=bias, relu=relu,
                       relu_threshold=relu_threshold, amax=amax)


_FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


def _scaled_matmul_fake(a, b, scale_a, scale_b, bias=None, out_dtype=None, scaling=None, relu=False,
                        relu_threshold=0.0, amax=None):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "kernelforge::scaled_matmul takes 2-D a and b")
    torch._check(a.shape[1] == b.shape[0], lambda: f"kernelforge::scaled_matmul: {a.shape} @ {b.shape}")
    torch._check(a.dtype in _FP8_DTYPES and b.dtype in _FP8_DTYPES,
                 lambda: f"kernelforge::scaled_matmul: a and b must be float8_e4m3fn or float8_e5m2; got "
                         f"{a.dtype} and {b.dtype}")
    dtype = torch.bfloat16 if out_dtype is None else out_dtype
    torch._check(dtype in (torch.bfloat16, torch.float16, torch.float32),
                 lambda: f"kernelforge::scaled_matmul: out_dtype {dtype} is not bfloat16, float16 or float32")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=dtype)


_scaled_matmul_op = _register(
    "scaled_matmul", "(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
    "ScalarType? out_dtype=None, str? scaling=None, bool relu=False, float relu_threshold=0.0, "
    "Tensor(a!)? amax=None) -> Tensor", _scaled_matmul_kernel, _scaled_matmul_fake)


def scaled_matmul(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
                  bias: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None,
                  scaling: Optional[str] = None, relu: bool = False, relu_threshold: float = 0.0,
                  amax: Optional[torch.Tensor] = None) -> torch.Tensor:
    """FP8 a (m, k) @ b (k, n) with dequantization scales, torch._scaled_mm's conventions:
    see kernelforge.scaled_matmul (this is it without out=, alpha, beta, variant, stream).
    out_dtype: bfloat16 (default), float16 or float32. amax, when given, is written in place."""
    if _direct(a, b, scale_a, scale_b, bias, amax):
        return _scaled_matmul_kernel(a, b, scale_a, scale_b, bias, out_dtype, scaling, bool(relu),
                                     float(relu_threshold), amax)
    return _scaled_matmul_op(a, b, scale_a, scale_b, bias, out_dtype, scaling, relu, relu_threshold, amax)


# ---- convolution ---------------------------------------------------------------------

# The body, fake kernel and autograd formula are in _torch_conv.py, with the layout rule:
# float16 and bfloat16 run channels_last, float32 runs channels_last where torch reads x's
# strides so (else NCHW), and the output comes in that memory format.

_conv_op = _register("conv2d", "(Tensor x, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
                     "int[] dilation, bool tf32=False) -> Tensor", _conv.conv_kernel, _conv.conv_fake,
                     _conv.conv_backward, _conv.conv_setup)


def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: List[int],
           padding: List[int], dilation: List[int], tf32: bool = False) -> torch.Tensor:
    """x (N, C, H, W) cross-correlated with weight (K, C, R, S), + bias (K,)
    (torch.nn.functional.conv2d, groups=1): float32, and float16 and bfloat16.

    The layout (kernelforge.conv2d's layout="auto"): float16 and bfloat16 in channels_last
    memory, float32 in channels_last where torch reads x's strides as channels_last (a
    channels_last tensor), else NCHW; the output is channels_last or contiguous to match.
    An x or weight not dense in that memory format is copied into it first (16-bit NCHW
    inputs too: their output is channels_last). tf32=True allows TF32 tensor cores for
    float32. Backward: PyTorch's convolution_backward (gradients in the inputs' dtypes)."""
    if _direct(x, weight, bias):
        return _conv.conv_kernel(x, weight, bias, list(stride), list(padding), list(dilation), bool(tf32))
    return _conv_op(x, weight, bias, stride, padding, dilation, tf32)


# ---- image filter --------------------------------------------------------------------

def _filter2d_kernel(image, kernel, border="zero"):
    image, kernel = image.contiguous(), kernel.contiguous()
    out = torch.empty_like(image)
    _C.filter2d(_dl(image), _dl(kernel), _dl(out), border, "best", _stream(image))
    return out


_filter2d_op = _register("filter2d", '(Tensor image, Tensor kernel, str border="zero") -> Tensor', _filter2d_kernel,
                         _same_shape_fake)


def filter2d(image: torch.Tensor, kernel: torch.Tensor, border: str = "zero") -> torch.Tensor:
    """image (H, W) or (C, H, W) cross-correlated with kernel (R, S); border zero|clamp|reflect.
    No autograd formula: inputs that require grad are an error at backward time."""
    if _direct(image, kernel):
        return _filter2d_kernel(image, kernel, border)
    return _filter2d_op(image, kernel, border)
# ---- modules -------------------------------------------------------------------------

class ThresholdReLU(nn.Module):
    """y = x if x > threshold else 0: drop-in for torch.nn.Threshold(threshold, 0).

    CUDA tensors run kernelforge (float32, float64, float16, bfloat16); CPU tensors
    fall back to torch.nn.functional.threshold.
    """

    def __init__(self, threshold: float = 0.0):
        super().__init__()
        self.threshold = float(threshold)

    def forward(self, x):
        if not x.is_cuda:
            return torch.nn.functional.threshold(x, self.threshold, 0.0)
        return relu_threshold(x, self.threshold)

    def extra_repr(self):
        return f"threshold={self.threshold}"


class Conv2d(nn.Conv2d):
    """torch.nn.Conv2d whose forward runs kernelforge's conv2d (backward: PyTorch's).

    Same constructor, parameters and state_dict as torch.nn.Conv2d (groups=1 and
    padding_mode="zeros" only), plus tf32=False: allow TF32 tensor cores in the
    forward (float32). kernelforge runs CUDA float32 inputs (channels_last ones in
    channels_last, others in NCHW) and CUDA float16 and bfloat16 inputs in channels_last
    memory, and returns the output in the input's memory format; other inputs (CPU,
    float64, 16-bit NCHW) fall back to torch's convolution. For channels_last inputs
    convert the module too (.to(memory_format=torch.channels_last)): a weight in the
    other memory format is copied on each call.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, *, tf32=False):
        if groups != 1:
            raise ValueError("kernelforge.torch.Conv2d supports groups=1 only")
        if padding_mode != "zeros":
            raise ValueError("kernelforge.torch.Conv2d supports padding_mode='zeros' only")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.tf32 = tf32
        self._kf_padding = list(conv_padding(self.padding, tuple(self.stride), tuple(self.dilation),
                                             tuple(self.kernel_size)))

    def _conv_forward(self, input, weight, bias):
        if not _conv.module_runs(input):
            return super()._conv_forward(input, weight, bias)
        return conv2d(input, weight, bias, list(self.stride), self._kf_padding, list(self.dilation), self.tf32)
