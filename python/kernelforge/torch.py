# SPDX-License-Identifier: Apache-2.0
"""PyTorch operators over kernelforge, for autograd, torch.compile and CUDA graphs.

Registered with torch.library.custom_op under the namespace "kernelforge":
relu_threshold, relu_threshold_backward, matmul, conv2d, filter2d (each with a fake
implementation whose shapes and strides match the real op, so torch.compile traces
it without a graph break). Autograd: relu_threshold (backward: relu_threshold_backward),
matmul (backward: two kernelforge matmuls on transposed views, no copies) and conv2d
(backward: PyTorch's own aten.convolution_backward). Modules: ThresholdReLU (drop-in
for torch.nn.Threshold(threshold, 0)) and Conv2d (drop-in for torch.nn.Conv2d).

The ops run on torch's current stream of the input's device and allocate with
torch's caching allocator, so they can be captured in CUDA graphs.
"""

from typing import List, Optional

import torch
import torch.utils.dlpack
from torch import nn

from . import _C
from ._api import conv_padding

__all__ = ["relu_threshold", "relu_threshold_backward", "matmul", "conv2d", "filter2d", "ThresholdReLU", "Conv2d"]

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
# A DLPack capsule made in C++ (cheaper per call than Tensor.__dlpack__); _C takes either.
_dl = getattr(torch.utils.dlpack, "to_dlpack", None) or (lambda t: t)


def _stream(t):
    index = t.get_device()
    if index < 0:
        return 0  # a CPU tensor: _C raises InvalidArgumentError before anything runs
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


def _empty(shape, like):
    return torch.empty(shape, dtype=like.dtype, device=like.device)


# ---- threshold ReLU ------------------------------------------------------------------

@torch.library.custom_op("kernelforge::relu_threshold", mutates_args=())
def relu_threshold(x: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
    """x if x > threshold else 0 (torch.nn.functional.threshold(x, threshold, 0))."""
    x = x.contiguous()
    out = _empty(x.shape, x)
    _C.relu_threshold(_dl(x), _dl(out), threshold, "best", _stream(x))
    return out


@relu_threshold.register_fake
def _(x, threshold=0.0):
    return x.new_empty(x.shape)


@torch.library.custom_op("kernelforge::relu_threshold_backward", mutates_args=())
def relu_threshold_backward(grad: torch.Tensor, x: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
    """grad if x > threshold else 0 (aten.threshold_backward(grad, x, threshold))."""
    grad, x = grad.contiguous(), x.contiguous()
    out = _empty(x.shape, x)
    _C.relu_threshold_backward(_dl(grad), _dl(x), _dl(out), threshold, "best", _stream(x))
    return out


@relu_threshold_backward.register_fake
def _(grad, x, threshold=0.0):
    torch._check(grad.shape == x.shape, lambda: "relu_threshold_backward: grad and x shapes differ")
    return x.new_empty(x.shape)


def _relu_setup(ctx, inputs, output):
    x, threshold = inputs
    ctx.save_for_backward(x)
    ctx.threshold = threshold


def _relu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return relu_threshold_backward(grad, x, ctx.threshold), None


relu_threshold.register_autograd(_relu_backward, setup_context=_relu_setup)


def _relu_bw_setup(ctx, inputs, output):
    _, x, threshold = inputs
    ctx.save_for_backward(x)
    ctx.threshold = threshold


def _relu_bw_backward(ctx, grad_grad):
    # Linear in grad with the same mask; piecewise constant in x (zero gradient).
    (x,) = ctx.saved_tensors
    return relu_threshold_backward(grad_grad, x, ctx.threshold), None, None


relu_threshold_backward.register_autograd(_relu_bw_backward, setup_context=_relu_bw_setup)


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


@torch.library.custom_op("kernelforge::matmul", mutates_args=())
def matmul(a: torch.Tensor, b: torch.Tensor, tf32: bool = False) -> torch.Tensor:
    """a (m, k) @ b (k, n), float32/float64; tf32=True allows TF32 tensor cores."""
    a, b = _gemm_operand(a), _gemm_operand(b)
    out = _empty((a.shape[0], b.shape[1]), a)
    _C.matmul(_dl(a), _dl(b), _dl(out), 1.0, 0.0, tf32, "best", _stream(a))
    return out


@matmul.register_fake
def _(a, b, tf32=False):
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "kernelforge::matmul takes 2-D tensors")
    torch._check(a.shape[1] == b.shape[0], lambda: f"kernelforge::matmul: {a.shape} @ {b.shape}")
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


matmul.register_autograd(_matmul_backward, setup_context=_matmul_setup)


# ---- convolution ---------------------------------------------------------------------

@torch.library.custom_op("kernelforge::conv2d", mutates_args=())
def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], stride: List[int],
           padding: List[int], dilation: List[int], tf32: bool = False) -> torch.Tensor:
    """NCHW x KCRS cross-correlation + bias (torch.nn.functional.conv2d, groups=1), float32."""
    x, weight = x.contiguous(), weight.contiguous()
    bias = None if bias is None else bias.contiguous()
    n, _, h, w = x.shape
    k, _, r, s = weight.shape
    p, q = _C.conv2d_output_shape(n, x.shape[1], h, w, k, r, s, stride[0], stride[1], padding[0], padding[1],
                                  dilation[0], dilation[1])
    out = _empty((n, k, p, q), x)
    _C.conv2d(_dl(x), _dl(weight), None if bias is None else _dl(bias), _dl(out), stride[0], stride[1], padding[0],
              padding[1], dilation[0], dilation[1], tf32, "best", _stream(x))
    return out


def _conv_extent(size, kernel, stride, pad, dilation):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


@conv2d.register_fake
def _(x, weight, bias, stride, padding, dilation, tf32=False):
    torch._check(x.dim() == 4 and weight.dim() == 4, lambda: "kernelforge::conv2d takes NCHW x and KCRS weight")
    p = _conv_extent(x.shape[2], weight.shape[2], stride[0], padding[0], dilation[0])
    q = _conv_extent(x.shape[3], weight.shape[3], stride[1], padding[1], dilation[1])
    return x.new_empty((x.shape[0], weight.shape[0], p, q))


def _conv_setup(ctx, inputs, output):
    x, weight, bias, stride, padding, dilation, _ = inputs
    ctx.save_for_backward(x, weight)
    ctx.bias_sizes = None if bias is None else list(bias.shape)
    ctx.geometry = (list(stride), list(padding), list(dilation))


def _conv_backward(ctx, grad):
    x, weight = ctx.saved_tensors
    stride, padding, dilation = ctx.geometry
    mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.bias_sizes is not None and ctx.needs_input_grad[2]]
    grad_x, grad_w, grad_b = torch.ops.aten.convolution_backward(
        grad, x, weight, ctx.bias_sizes, stride, padding, dilation, False, [0, 0], 1, mask)
    return grad_x, grad_w, grad_b, None, None, None, None


conv2d.register_autograd(_conv_backward, setup_context=_conv_setup)


@torch.library.custom_op("kernelforge::filter2d", mutates_args=())
def filter2d(image: torch.Tensor, kernel: torch.Tensor, border: str = "zero") -> torch.Tensor:
    """image (H, W) or (C, H, W) cross-correlated with kernel (R, S); border zero|clamp|reflect."""
    image, kernel = image.contiguous(), kernel.contiguous()
    out = _empty(image.shape, image)
    _C.filter2d(_dl(image), _dl(kernel), _dl(out), border, "best", _stream(image))
    return out


@filter2d.register_fake
def _(image, kernel, border="zero"):
    return image.new_empty(image.shape)


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
    forward. Inputs other than CUDA float32 fall back to torch's convolution.
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
        if not input.is_cuda or input.dtype != torch.float32:
            return super()._conv_forward(input, weight, bias)
        return conv2d(input, weight, bias, list(self.stride), self._kf_padding, list(self.dilation), self.tf32)
