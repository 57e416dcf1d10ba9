# SPDX-License-Identifier: Apache-2.0
"""The threshold ReLU operators, kernelforge::relu_threshold and relu_threshold_backward
(registered at import; kernelforge.torch imports this module and re-exports the
functions): their bodies, fake kernels and autograd formulas."""

import torch

from . import _C
from ._torch_ops import direct as _direct
from ._torch_ops import register as _register
from ._torch_support import DTYPE_CODES as _dtype_codes
from ._torch_support import current_stream as _stream
from ._torch_support import device_stream as _device_stream
from ._torch_support import to_dlpack as _dl

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
