# SPDX-License-Identifier: Apache-2.0
"""conv2d on torch tensors: the layout rule, kernelforge.conv2d's torch path, and the
body, fake kernel and autograd formula of the kernelforge::conv2d operator (registered
in _torch_conv_op.py, which kernelforge.torch imports).

The layout rule (kernelforge.conv2d's layout="auto", and the operator's):
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
view, no copy: that is what _C.conv2d receives with layout "nhwc". A (K, C, R, S)
weight in channels_last memory is the (K, R, S, C) filter the NHWC kernels read; a
weight in the other memory format is copied into it on each call (a filter is small;
convert the module or weight once with .to(memory_format=torch.channels_last) to
save that copy). The output is channels_last when the layout is, else contiguous.
"""

import torch

from . import _C
from ._api import conv_padding
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


def memory_order(t, layout):
    """t as _C.conv2d takes it: in "nhwc", the (N, H, W, C) view of its channels_last memory."""
    return t.permute(0, 2, 3, 1) if layout == "nhwc" else t


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
    """y of `shape` in the layout's memory format (the real and the fake kernel allocate
    it alike, so their strides agree)."""
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=_FORMATS[layout])


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


def run(x, weight, bias, stride, padding, dilation, layout, tf32, relu, relu_threshold, out, variant, stream,
        explicit_stream):
    """kernelforge.conv2d for torch tensors (shapes NCHW / KCRS whatever the memory
    format): resolves the layout, copies a weight in the other memory format, allocates
    out and calls _C.conv2d with the memory-order views. x is never copied: an x not
    dense in the layout's memory format is an InvalidArgumentError."""
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
        out = empty_output(x, shape, layout)
    elif tuple(out.shape) != shape:
        raise InvalidArgumentError(f"kernelforge.conv2d: 'out' has shape {tuple(out.shape)}; this convolution gives "
                                   f"(N, K, P, Q) = {shape}")
    elif layout == "nhwc" and not out.is_contiguous(memory_format=torch.channels_last):
        raise InvalidArgumentError(f"kernelforge.conv2d: layout 'nhwc' writes 'out' in channels_last memory, but its "
                                   f"strides are {out.stride()}; allocate it with "
                                   f"memory_format=torch.channels_last")
    weight = _in_format(weight, layout, stream, explicit_stream)
    _C.conv2d(plain(memory_order(x, layout)), plain(memory_order(weight, layout)),
              None if bias is None else plain(bias), plain(memory_order(out, layout)), *stride, *padding, *dilation,
              layout, bool(tf32), bool(relu), float(relu_threshold), variant, stream)
    return out


# ---- the kernelforge::conv2d operator (registered in _torch_conv_op.py) ----------------

def conv_kernel(x, weight, bias, stride, padding, dilation, tf32=False):
    """The operator's body: the layout by the rule, x and weight made dense in its memory
    format (a copy only where they are not), torch's current stream."""
    layout = layout_of(x)
    memory_format = _FORMATS[layout]
    x, weight = x.contiguous(memory_format=memory_format), weight.contiguous(memory_format=memory_format)
    bias = None if bias is None else bias.contiguous()
    out = empty_output(x, output_shape(x, weight, stride, padding, dilation), layout)
    _C.conv2d(to_dlpack(memory_order(x, layout)), to_dlpack(memory_order(weight, layout)),
              None if bias is None else to_dlpack(bias), to_dlpack(memory_order(out, layout)), stride[0], stride[1],
              padding[0], padding[1], dilation[0], dilation[1], layout, tf32, False, 0.0, "best", current_stream(x))
    return out


def conv_fake(x, weight, bias, stride, padding, dilation, tf32=False):
    torch._check(x.dim() == 4 and weight.dim() == 4, lambda: "kernelforge::conv2d takes 4-D x and weight")
    p = output_extent(x.shape[2], weight.shape[2], stride[0], padding[0], dilation[0])
    q = output_extent(x.shape[3], weight.shape[3], stride[1], padding[1], dilation[1])
    return empty_output(x, (x.shape[0], weight.shape[0], p, q), layout_of(x))


def conv_setup(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, _ = inputs
    ctx.save_for_backward(x, weight)
    ctx.bias_sizes = None if bias is None else list(bias.shape)
    ctx.geometry = (list(stride), list(padding), list(dilation))


def conv_backward(ctx, grad):
    """PyTorch's convolution_backward on the saved x and weight as given (its gradients
    come in their dtype, and in channels_last memory where they are channels_last)."""
    x, weight = ctx.saved_tensors
    stride, padding, dilation = ctx.geometry
    mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.bias_sizes is not None and ctx.needs_input_grad[2]]
    grad_x, grad_w, grad_b = torch.ops.aten.convolution_backward(
        grad, x, weight, ctx.bias_sizes, stride, padding, dilation, False, [0, 0], 1, mask)
    return grad_x, grad_w, grad_b, None, None, None, None


def module_runs(x):
    """Whether kernelforge.torch.Conv2d runs kernelforge on x: CUDA float32 in any memory
    format, CUDA float16 and bfloat16 dense in channels_last memory; else torch's own
    convolution (contiguous NCHW 16-bit inputs keep it, with no layout copy)."""
    if not x.is_cuda:
        return False
    if x.dtype in HALF_DTYPES:
        return x.is_contiguous(memory_format=torch.channels_last)
    return x.dtype == torch.float32
