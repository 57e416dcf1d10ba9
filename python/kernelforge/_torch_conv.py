# SPDX-License-Identifier: Apache-2.0
"""conv2d and its gradients on torch tensors: the layout rule, the torch paths of
kernelforge.conv2d, conv2d_backward_data and conv2d_backward_filter, and the bodies and
fake kernels of the operators kernelforge::conv2d, conv2d_backward_data and
conv2d_backward_filter (registered, with their autograd formulas, in _torch_conv_op.py,
which kernelforge.torch imports).

The layout rule (kernelforge.conv2d's layout="auto", and the operator's; the gradients
apply it to the forward's x, which conv2d_backward_data, without x, reads from dy):
  - float16 and bfloat16 convolve in the channels_last layout, the only one kernelforge
    runs them in;
  - float32 convolves in channels_last when torch reads x's strides as channels_last
    (Tensor.suggest_memory_format(), the reading that also makes torch's own F.conv2d
    return a channels_last output), else in NCHW.
A dense channels_last x with C > 1 and H * W > 1 always reads as channels_last. Where
both orders hold the same memory (C == 1, or H == W == 1) torch tells them apart by the
strides of the size-1 dimensions: .to(memory_format=torch.channels_last) and tensors
torch allocates channels_last read as channels_last, .contiguous() ones as NCHW.

In channels_last memory a torch tensor's .permute(0, 2, 3, 1) is a dense (N, H, W, C)
view, no copy: that is what _C.conv2d convolves with layout "nhwc"; the tensors go to _C as
they are, with layout "channels_last" (C_LAYOUTS), and the binding takes that view. A (K, C, R, S)
weight in channels_last memory is the (K, R, S, C) filter the NHWC kernels read; a
weight in the other memory format is copied into it on each call (a filter is small;
convert the module or weight once with .to(memory_format=torch.channels_last) to
save that copy). The output is channels_last when the layout is, else contiguous; so are
the gradients dx and dweight.
"""

import torch

from . import _C
from ._api import _math_name
from ._api_conv import _pair, conv_padding
from ._errors import InvalidArgumentError
from ._torch_support import current_stream, plain, to_dlpack

HALF_DTYPES = (torch.float16, torch.bfloat16)
_FORMATS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}


def strides_like_channels_last(t):
    """Whether torch reads the 4-D tensor t as channels_last (c10's
    is_channels_last_strides_2d, behind Tensor.suggest_memory_format()): strides
    growing in the order C, W, H, N, a size-1 dimension's stride compared as torch does."""
    size, stride = t.shape, t.stride()
    if stride[1] == 0:
        return False
    least = 0
    for d in (1, 3, 2, 0):
        if size[d] == 0 or stride[d] < least or (d == 0 and least == stride[1]):
            return False
        least = stride[d] * size[d] if size[d] > 1 else stride[d]
    return True


def layout_of(x):
    """'nhwc' or 'nchw' for x by the layout rule (see the top of this file)."""
    return "nhwc" if x.dtype in HALF_DTYPES or strides_like_channels_last(x) else "nchw"


# The layout argument of _C's conv entries for torch tensors, which _C takes as they are, in
# torch's (N, C, H, W) order: "channels_last" is _C's "nhwc" with each 4-D array in that
# order and channels_last memory (the binding views it as (N, H, W, C); a .permute(0, 2, 3, 1)
# view per tensor here cost ~1 us of host time each).
C_LAYOUTS = {"nchw": "nchw", "nhwc": "channels_last"}


def output_extent(size, kernel, stride, pad, dilation):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def output_shape(x, weight, stride, padding, dilation):
    """(N, K, P, Q): P and Q from _C.conv2d_output_shape, whose errors name bad geometry."""
    n, c, h, w = x.shape
    k, _, r, s = weight.shape
    p, q = _C.conv2d_output_shape(n, c, h, w, k, r, s, stride[0], stride[1], padding[0], padding[1], dilation[0],
                                  dilation[1])
    return n, k, p, q


def empty_output(x, shape, layout):
    """y of `shape` in the layout's memory format (the fake kernels' allocation; the real
    kernels' new_output gives the same strides)."""
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=_FORMATS[layout])


def new_output(x, shape, layout):
    """empty_output(x, shape, layout) for int extents, cheaper: x.new_empty_strided with the
    strides torch gives that memory format (c10's get_channels_last_strides_2d, and
    contiguous strides, which take a size-0 extent as 1), ~1 us of host time less a call
    than torch.empty(..., memory_format=) (profile_conv_host_cpu.py). Any other shape goes
    to empty_output, whose errors it keeps. Not for the fake kernels: max() on a symbolic
    extent would guard on it."""
    if len(shape) != 4:
        return empty_output(x, shape, layout)
    n, k, p, q = shape
    if not type(n) is type(k) is type(p) is type(q) is int:
        return empty_output(x, shape, layout)
    if layout == "nhwc":
        return x.new_empty_strided(shape, (p * q * k, 1, q * k, k))
    q1, pq1 = max(q, 1), max(p, 1) * max(q, 1)
    return x.new_empty_strided(shape, (max(k, 1) * pq1, pq1, q1, 1))


# ---- kernelforge.conv2d (the DLPack API) on torch tensors ------------------------------

def _in_format(t, layout, stream, explicit):
    """t dense in the layout's memory format: t itself, or a copy made on the stream the
    kernel runs on (an explicit stream= is not torch's current one)."""
    memory_format = _FORMATS[layout]
    if t.is_contiguous(memory_format=memory_format):
        return t
    if not explicit or not t.is_cuda:
        return t.contiguous(memory_format=memory_format)
    with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=t.device)):
        return t.contiguous(memory_format=memory_format)


def run(x, weight, bias, stride, padding, dilation, layout, math, relu, relu_threshold, out, variant, stream,
        explicit_stream):
    """kernelforge.conv2d for torch tensors (shapes NCHW / KCRS whatever the memory
    format): resolves the layout, copies a weight in the other memory format, allocates
    out and calls _C.conv2d (math: the mode's name). x is never
    copied: an x not dense in the layout's memory format is an InvalidArgumentError."""
    if layout == "auto":
        layout = layout_of(x)
    if layout == "nhwc" and not x.is_contiguous(memory_format=torch.channels_last):
        why = f"{x.dtype} convolves in channels_last memory only" if x.dtype in HALF_DTYPES else "layout is 'nhwc'"
        raise InvalidArgumentError(f"kernelforge.conv2d: {why}, but 'x' of shape {tuple(x.shape)} has strides "
                                   f"{x.stride()}; call x.contiguous(memory_format=torch.channels_last) first")
    if weight.shape[1] != x.shape[1]:
        raise InvalidArgumentError(f"kernelforge.conv2d: 'weight' {tuple(weight.shape)} has {weight.shape[1]} input "
                                   f"channels but 'x' {tuple(x.shape)} has {x.shape[1]} (groups are not supported)")
    padding = conv_padding(padding, stride, dilation, tuple(weight.shape[2:]))
    shape = output_shape(x, weight, stride, padding, dilation)
    if out is None:
        out = new_output(x, shape, layout)
    elif tuple(out.shape) != shape:
        raise InvalidArgumentError(f"kernelforge.conv2d: 'out' has shape {tuple(out.shape)}; this convolution gives "
                                   f"(N, K, P, Q) = {shape}")
    elif layout == "nhwc" and not out.is_contiguous(memory_format=torch.channels_last):
        raise InvalidArgumentError(f"kernelforge.conv2d: layout 'nhwc' writes 'out' in channels_last memory, but its "
                                   f"strides are {out.stride()}; allocate it with "
                                   f"memory_format=torch.channels_last")
    weight = _in_format(weight, layout, stream, explicit_stream)
    _C.conv2d(plain(x), plain(weight), None if bias is None else plain(bias), plain(out), *stride, *padding,
              *dilation, C_LAYOUTS[layout], math, bool(relu), float(relu_threshold), variant, stream)
    return out


def _require_channels_last(what, name, t, layout, reason_of):
    """InvalidArgumentError unless t, read in place, is dense in the layout's memory format;
    the message gives reason_of's tensor's _layout_reason (formatted only on failure: these
    checks run on every call)."""
    if layout == "nhwc" and not t.is_contiguous(memory_format=torch.channels_last):
        reason = _layout_reason(reason_of, layout)
        raise InvalidArgumentError(f"kernelforge.{what}: {reason}, but '{name}' of shape {tuple(t.shape)} has "
                                   f"strides {t.stride()}; call {name}.contiguous(memory_format=torch.channels_last) "
                                   f"first")


def _layout_reason(t, layout):
    return f"{t.dtype} convolves in channels_last memory only" if t.dtype in HALF_DTYPES else f"layout is '{layout}'"


def _require_y_shape(what, name, t, shape):
    if t.shape != shape:  # shape: output_shape's tuple, which a torch.Size compares equal to
        raise InvalidArgumentError(f"kernelforge.{what}: '{name}' has shape {tuple(t.shape)}; this convolution gives "
                                   f"(N, K, P, Q) = {tuple(shape)}")


def _require_out(what, name, out, layout):
    """out's memory format (its shape is checked by kernelforge's _api_conv._shape_for, the one
    caller of run_backward_data and run_backward_filter, before they run)."""
    if layout == "nhwc" and not out.is_contiguous(memory_format=torch.channels_last):
        raise InvalidArgumentError(f"kernelforge.{what}: layout 'nhwc' writes '{name}' in channels_last memory, but "
                                   f"its strides are {out.stride()}; allocate it with "
                                   f"memory_format=torch.channels_last")


def _require_dy(what, dy, relu_y, y_shape):
    """dy (and relu_y, where given) of the forward's output shape."""
    _require_y_shape(what, "dy", dy, y_shape)
    if relu_y is not None:
        _require_y_shape(what, "relu_y", relu_y, y_shape)


def _output(what, out, like, shape, layout):
    """A gradient's output: `out` (of `shape`, see _require_out) checked against the layout,
    or a new one like `like`."""
    if out is None:
        return new_output(like, shape, layout)
    _require_out(what, "out", out, layout)
    return out


def _relu_view(relu_y, layout, what):
    if relu_y is None:
        return None
    _require_channels_last(what, "relu_y", relu_y, layout, relu_y)
    return plain(relu_y)


def run_backward_data(dy, weight, x_shape, stride, padding, dilation, layout, tf32, relu, relu_threshold, relu_y,
                      out, variant, stream, explicit_stream):
    """kernelforge.conv2d_backward_data for torch tensors (shapes NCHW / KCRS / NKPQ whatever
    the memory format): the layout from dy, a weight in the other memory format copied,
    dx allocated in the layout's memory format; dy and relu_y are never copied."""
    what = "conv2d_backward_data"
    if layout == "auto":
        layout = layout_of(dy)
    _require_channels_last(what, "dy", dy, layout, dy)
    if weight.shape[1] != x_shape[1]:
        raise InvalidArgumentError(f"kernelforge.{what}: 'weight' {tuple(weight.shape)} has {weight.shape[1]} input "
                                   f"channels but x_shape {tuple(x_shape)} has {x_shape[1]} (groups are not "
                                   f"supported)")
    stride, padding, dilation = _geometry(stride, padding, dilation, tuple(weight.shape[2:]))
    y_shape = output_shape(_Shape(x_shape), weight, stride, padding, dilation)
    _require_dy(what, dy, relu_y, y_shape)
    out = _output(what, out, dy, x_shape, layout)
    weight = _in_format(weight, layout, stream, explicit_stream)
    _C.conv2d_backward_data(plain(dy), plain(weight), _relu_view(relu_y, layout, what), plain(out), *stride,
                            *padding, *dilation, C_LAYOUTS[layout], bool(tf32), bool(relu), float(relu_threshold),
                            variant, stream)
    return out


def run_backward_filter(x, dy, weight_shape, stride, padding, dilation, bias, layout, tf32, relu, relu_threshold,
                        relu_y, out, out_bias, variant, stream, explicit_stream):
    """kernelforge.conv2d_backward_filter for torch tensors: the layout from x (the
    forward's), dweight allocated in its memory format and dbias (K,) when asked; x, dy and
    relu_y are never copied."""
    what = "conv2d_backward_filter"
    if layout == "auto":
        layout = layout_of(x)
    _require_channels_last(what, "x", x, layout, x)
    _require_channels_last(what, "dy", dy, layout, x)
    if weight_shape[1] != x.shape[1]:
        raise InvalidArgumentError(f"kernelforge.{what}: weight_shape {tuple(weight_shape)} has {weight_shape[1]} "
                                   f"input channels but 'x' {tuple(x.shape)} has {x.shape[1]} (groups are not "
                                   f"supported)")
    stride, padding, dilation = _geometry(stride, padding, dilation, tuple(weight_shape[2:]))
    y_shape = output_shape(x, _Shape(weight_shape), stride, padding, dilation)
    _require_dy(what, dy, relu_y, y_shape)
    out = _output(what, out, x, weight_shape, layout)
    if bias and out_bias is None:
        out_bias = torch.empty(weight_shape[0], dtype=x.dtype, device=x.device)
    _C.conv2d_backward_filter(plain(x), plain(dy), _relu_view(relu_y, layout, what), plain(out),
                              None if out_bias is None else plain(out_bias), *stride, *padding, *dilation,
                              C_LAYOUTS[layout], bool(tf32), bool(relu), float(relu_threshold), variant, stream)
    return out, out_bias


class _Shape:
    """A shape where output_shape takes a tensor (it reads .shape only)."""

    def __init__(self, shape):
        self.shape = tuple(shape)


def _geometry(stride, padding, dilation, kernel_size):
    stride, dilation = _pair("stride", stride), _pair("dilation", dilation)
    return stride, conv_padding(padding, stride, dilation, kernel_size), dilation


# ---- the kernelforge::conv2d operator (registered in _torch_conv_op.py) ----------------

def conv_kernel(x, weight, bias, stride, padding, dilation, tf32=False, math=None):
    """The operator's body: the layout by the rule, x and weight made dense in its memory
    format (a copy only where they are not), torch's current stream; math as kernelforge.conv2d's
    (None: "tf32" or "exact" from the tf32 flag)."""
    math = _math_name("conv2d", tf32, math)
    layout = layout_of(x)
    memory_format = _FORMATS[layout]
    x, weight = x.contiguous(memory_format=memory_format), weight.contiguous(memory_format=memory_format)
    bias = None if bias is None else bias.contiguous()
    out = new_output(x, output_shape(x, weight, stride, padding, dilation), layout)
    _C.conv2d(to_dlpack(x), to_dlpack(weight), None if bias is None else to_dlpack(bias), to_dlpack(out), stride[0],
              stride[1], padding[0], padding[1], dilation[0], dilation[1], C_LAYOUTS[layout], math, False, 0.0,
              "best", current_stream(x))
    return out


def conv_fake(x, weight, bias, stride, padding, dilation, tf32=False, math=None):
    torch._check(x.dim() == 4 and weight.dim() == 4, lambda: "kernelforge::conv2d takes 4-D x and weight")
    p = output_extent(x.shape[2], weight.shape[2], stride[0], padding[0], dilation[0])
    q = output_extent(x.shape[3], weight.shape[3], stride[1], padding[1], dilation[1])
    return empty_output(x, (x.shape[0], weight.shape[0], p, q), layout_of(x))


def resolve_layout(layout, t):
    """An operator's layout argument: "nchw" or "nhwc" as given, or by the rule from t for "auto"."""
    return layout_of(t) if layout == "auto" else layout


def _check_layout(layout, what):
    if layout not in ("auto", "nchw", "nhwc"):
        raise InvalidArgumentError(f"kernelforge::{what}: layout {layout!r} is not one of: auto, nchw, nhwc")


def _dense(t, layout):
    return None if t is None else t.contiguous(memory_format=_FORMATS[layout])


def backward_data_kernel(grad, weight, x_size, stride, padding, dilation, tf32=False, relu_y=None,
                         relu_threshold=0.0, layout="auto"):
    """The body of kernelforge::conv2d_backward_data: dx (x_size, in the layout's memory
    format) from grad = dL/dy and the weight, each made dense in that format (a copy only
    where it is not); the ReLU mask where relu_y (the forward's output) is given."""
    _check_layout(layout, "conv2d_backward_data")
    layout = resolve_layout(layout, grad)
    grad, weight, relu_y = _dense(grad, layout), _dense(weight, layout), _dense(relu_y, layout)
    dx = new_output(grad, tuple(x_size), layout)
    _C.conv2d_backward_data(to_dlpack(grad), to_dlpack(weight), None if relu_y is None else to_dlpack(relu_y),
                            to_dlpack(dx), stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1],
                            C_LAYOUTS[layout], tf32, relu_y is not None, relu_threshold, "best", current_stream(grad))
    return dx


def backward_data_fake(grad, weight, x_size, stride, padding, dilation, tf32=False, relu_y=None, relu_threshold=0.0,
                       layout="auto"):
    _check_layout(layout, "conv2d_backward_data")
    torch._check(grad.dim() == 4 and weight.dim() == 4 and len(x_size) == 4,
                 lambda: "kernelforge::conv2d_backward_data takes 4-D grad and weight and a 4-D x_size")
    return empty_output(grad, tuple(x_size), resolve_layout(layout, grad))


def backward_filter_kernel(grad, x, weight_size, stride, padding, dilation, bias=False, tf32=False, relu_y=None,
                           relu_threshold=0.0, layout="auto"):
    """The body of kernelforge::conv2d_backward_filter: (dweight (weight_size, in the
    layout's memory format), dbias ((K,) with bias, else (0,))) from grad = dL/dy and the
    forward's x, each made dense in that format; the ReLU mask where relu_y is given."""
    _check_layout(layout, "conv2d_backward_filter")
    layout = resolve_layout(layout, x)
    grad, x, relu_y = _dense(grad, layout), _dense(x, layout), _dense(relu_y, layout)
    dw = new_output(x, tuple(weight_size), layout)
    db = x.new_empty((weight_size[0] if bias else 0,))
    _C.conv2d_backward_filter(to_dlpack(x), to_dlpack(grad), None if relu_y is None else to_dlpack(relu_y),
                              to_dlpack(dw), to_dlpack(db) if bias else None, stride[0], stride[1], padding[0],
                              padding[1], dilation[0], dilation[1], C_LAYOUTS[layout], tf32, relu_y is not None,
                              relu_threshold, "best", current_stream(x))
    return dw, db


def backward_filter_fake(grad, x, weight_size, stride, padding, dilation, bias=False, tf32=False, relu_y=None,
                         relu_threshold=0.0, layout="auto"):
    _check_layout(layout, "conv2d_backward_filter")
    torch._check(grad.dim() == 4 and x.dim() == 4 and len(weight_size) == 4,
                 lambda: "kernelforge::conv2d_backward_filter takes 4-D grad and x and a 4-D weight_size")
    return (empty_output(x, tuple(weight_size), resolve_layout(layout, x)),
            x.new_empty((weight_size[0] if bias else 0,)))


def module_runs(x):
    """Whether kernelforge.torch.Conv2d runs kernelforge on x: CUDA float32 in any memory
    format, CUDA float16 and bfloat16 dense in channels_last memory; else torch's own
    convolution (contiguous NCHW 16-bit inputs keep it, with no layout copy)."""
    if not x.is_cuda:
        return False
    if x.dtype in HALF_DTYPES:
        return x.is_contiguous(memory_format=torch.channels_last)
    return x.dtype == torch.float32
